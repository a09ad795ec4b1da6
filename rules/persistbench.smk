# PersistBench: 360-degree sequences -> per-model rollouts -> per-model scores -> Table 1, ablation, figure.

PB = config["persistbench"]
PB_MODELS = PB["models"]
PB_CATEGORY = "PersistBench (persistbench)"


rule persistbench_sequences:
    input:
        [] if PB["sequences"]["source"] == "embedded" else PB["sequences"]["source"],
    output:
        directory("results/persistbench/sequences"),
    params:
        source=PB["sequences"]["source"],
        per_kind=PB["sequences"]["per_kind"],
        n_frames=PB["sequences"]["n_frames"],
        pano_width=PB["sequences"]["pano_width"],
        invisible=" ".join(str(f) for f in PB["sequences"]["invisible"]),
        camera=json.dumps(PB["camera"], sort_keys=True),
    log:
        "results/logs/persistbench/sequences.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../envs/torch.yaml"
    shell:
        "python -m worldmemory.persistbench.prepare --out {output} --source {params.source:q}"
        " --per-kind {params.per_kind}"
        " --n-frames {params.n_frames} --pano-width {params.pano_width} --invisible {params.invisible}"
        " --camera {params.camera:q} 2>&1 | tee {log}"


rule persistbench_rollout:
    input:
        sequences="results/persistbench/sequences",
    output:
        directory("results/persistbench/rollouts/{model}"),
    params:
        model=lambda wc: model_args("persistbench", wc),
    log:
        "results/logs/persistbench/rollout_{model}.log",
    threads: 1
    resources:
        mem_mb=lambda wc: PB_MODELS[wc.model]["mem_mb"],
        runtime=lambda wc: PB_MODELS[wc.model]["runtime"],
        gpu=lambda wc: PB_MODELS[wc.model]["gpu"],
    conda:
        "../envs/torch.yaml"
    shell:
        "python -m worldmemory.persistbench.rollout --sequences {input.sequences} --model {wildcards.model}"
        " {params.model} --out {output} 2>&1 | tee {log}"


rule persistbench_score:
    input:
        sequences="results/persistbench/sequences",
        rollouts="results/persistbench/rollouts/{model}",
        features=features_input("persistbench"),
    output:
        scores="results/persistbench/scores/{model}.csv",
        frames="results/persistbench/frames/{model}.csv",
    params:
        features=features_args("persistbench"),
        alpha=PB["alpha"],
    log:
        "results/logs/persistbench/score_{model}.log",
    threads: 1
    resources:
        mem_mb=8000 if uses_dinov2("persistbench") else 4000,
        runtime=60,
        gpu=GPU if uses_dinov2("persistbench") else 0,
    conda:
        "../envs/torch.yaml"
    shell:
        "python -m worldmemory.persistbench.score --sequences {input.sequences} --rollouts {input.rollouts}"
        " {params.features} --alpha {params.alpha} --out-scores {output.scores} --out-frames {output.frames}"
        " 2>&1 | tee {log}"


rule persistbench_tables:
    input:
        scores=expand("results/persistbench/scores/{model}.csv", model=sorted(PB_MODELS)),
        frames=expand("results/persistbench/frames/{model}.csv", model=sorted(PB_MODELS)),
        paper=repo_path("resources", "paper_values", "persistbench_table1.csv"),
        ablation=repo_path("resources", "paper_values", "persistbench_ablation.csv"),
    output:
        table1=report(
            "results/persistbench/table1.csv",
            caption="../report/persistbench_table1.rst",
            category=PB_CATEGORY,
            subcategory="Table 1",
        ),
        reasons="results/persistbench/table1_nan_reasons.csv",
        ablation=report(
            "results/persistbench/table_ablation.csv",
            caption="../report/persistbench_ablation.rst",
            category=PB_CATEGORY,
            subcategory="Ablation",
        ),
        figure_png=report(
            "results/persistbench/figure_perm_exit.png",
            caption="../report/persistbench_figure.rst",
            category=PB_CATEGORY,
            subcategory="Figure: Perm around the exit",
        ),
        figure_pdf="results/persistbench/figure_perm_exit.pdf",
        provenance="results/persistbench/table1.json",
        **(
            {
                "paper": "results/persistbench/table1_vs_paper.csv",
                "paper_ablation": "results/persistbench/table_ablation_vs_paper.csv",
            }
            if paper_runs("persistbench")
            else {}
        ),
    params:
        paper=lambda wc, input, output: paper_args("persistbench", input, output, ablation=True),
        config=config_json,
    log:
        "results/logs/persistbench/tables.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    shell:
        "(python -m worldmemory.persistbench.tables --scores {input.scores} --frames {input.frames}"
        " --table1 {output.table1} --reasons {output.reasons} --ablation {output.ablation}"
        " --figure-png {output.figure_png} --figure-pdf {output.figure_pdf} {params.paper}"
        " && python -m worldmemory.common.provenance --config {params.config:q}"
        " --outputs {output.table1} {output.ablation} {output.figure_png} {output.figure_pdf}"
        " --out {output.provenance})"
        " 2>&1 | tee {log}"
