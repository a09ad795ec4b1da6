# PersistBench: 360-degree sequences -> per-model rollouts -> per-model scores -> Table 1, ablation, figure.

PB = config["persistbench"]
PB_MODELS = PB["models"]
PB_CATEGORY = "PersistBench (persistbench)"


rule persistbench_sequences:
    input:
        [] if PB["sequences"]["source"] == "embedded" else PB["sequences"]["source"],
    output:
        directory("results/persistbench/sequences"),
    log:
        "results/logs/persistbench/sequences.log",
    benchmark:
        benchmark_tsv("persistbench/sequences")
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        source=PB["sequences"]["source"],
        per_kind=PB["sequences"]["per_kind"],
        n_frames=PB["sequences"]["n_frames"],
        pano_width=PB["sequences"]["pano_width"],
        invisible=PB["sequences"]["invisible"],
        camera=json.dumps(PB["camera"], sort_keys=True),
    shell:
        "python -m worldmemory.persistbench.prepare --out {output:q} --source {params.source:q}"
        " --per-kind {params.per_kind:q}"
        " --n-frames {params.n_frames:q} --pano-width {params.pano_width:q} --invisible {params.invisible:q}"
        " --camera {params.camera:q} 2>&1 | tee {log:q}"


rule persistbench_rollout:
    input:
        sequences="results/persistbench/sequences",
    output:
        directory("results/persistbench/rollouts/{model}"),
    log:
        "results/logs/persistbench/rollout_{model}.log",
    benchmark:
        benchmark_tsv("persistbench/rollout_{model}")
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: PB_MODELS[wc.model]["mem_mb"],
        runtime=lambda wc: PB_MODELS[wc.model]["runtime"],
        gpu=lambda wc: PB_MODELS[wc.model]["gpu"],
    params:
        # an external command's log is copied here, where it outlives a failed job's output
        log_dir=lambda wc: f"results/logs/persistbench/commands/{wc.model}",
        model_args=lambda wc: model_args("persistbench", wc),
    shell:
        "python -m worldmemory.persistbench.rollout --sequences {input.sequences:q} --model {wildcards.model:q}"
        " {params.model_args}"
        " --timeout-minutes {resources.runtime:q} --log-dir {params.log_dir:q} --out {output:q} 2>&1 | tee {log:q}"


rule persistbench_score:
    input:
        sequences="results/persistbench/sequences",
        rollouts="results/persistbench/rollouts/{model}",
        features=features_input("persistbench"),
    output:
        scores="results/persistbench/scores/{model}.csv",
        frames="results/persistbench/frames/{model}.csv",
        info="results/persistbench/scores/{model}.json",
    log:
        "results/logs/persistbench/score_{model}.log",
    benchmark:
        benchmark_tsv("persistbench/score_{model}")
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=8000 if uses_dinov2("persistbench") else 4000,
        runtime=60,
        gpu=GPU if uses_dinov2("persistbench") else 0,
    params:
        features_args=features_args("persistbench"),
        alpha=PB["alpha"],
    shell:
        "python -m worldmemory.persistbench.score --sequences {input.sequences:q} --rollouts {input.rollouts:q}"
        " {params.features_args} --alpha {params.alpha:q} --out-scores {output.scores:q} --out-frames {output.frames:q}"
        " --out-info {output.info:q}"
        " 2>&1 | tee {log:q}"


rule persistbench_tables:
    input:
        scores=expand("results/persistbench/scores/{model}.csv", model=sorted(PB_MODELS)),
        frames=expand("results/persistbench/frames/{model}.csv", model=sorted(PB_MODELS)),
        infos=expand("results/persistbench/scores/{model}.json", model=sorted(PB_MODELS)),
        paper=repo_path("resources", "paper_values", "persistbench_table1.csv"),
        ablation=repo_path("resources", "paper_values", "persistbench_ablation.csv"),
        config=CONFIG_STAMP,
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
        paper="results/persistbench/table1_vs_paper.csv",
        paper_ablation="results/persistbench/table_ablation_vs_paper.csv",
    log:
        "results/logs/persistbench/tables.log",
    benchmark:
        benchmark_tsv("persistbench/tables")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        config_sha=CONFIG_SHA,
        paper_args=lambda wc, input, output: paper_args(paper_runs("persistbench"), input, output, ablation=True),
    shell:
        "(python -m worldmemory.persistbench.tables --scores {input.scores:q} --frames {input.frames:q}"
        " --table1 {output.table1:q} --reasons {output.reasons:q} --ablation {output.ablation:q}"
        " --figure-png {output.figure_png:q} --figure-pdf {output.figure_pdf:q} {params.paper_args}"
        " && python -m worldmemory.common.provenance --config {input.config:q} --model-info {input.infos:q}"
        " --outputs {output.table1:q} {output.ablation:q} {output.figure_png:q} {output.figure_pdf:q}"
        " --out {output.provenance:q})"
        " 2>&1 | tee {log:q}"
