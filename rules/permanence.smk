# Tracking Is Not Permanence: render -> (train | prefetch) -> probe -> Table 3, Figure 2.

# The study's category in `snakemake --report` (captions under report/).
PERM_REPORT = "Tracking Is Not Permanence (permanence)"

rule permanence_scenes:
    output:
        directory("results/permanence/scenes"),
    params:
        radii=" ".join(map(str, PERM["scenes"]["radii"])),
        distractors=" ".join(map(str, PERM["scenes"]["distractors"])),
        seeds=PERM["scenes"]["seeds"],
    log:
        "results/logs/permanence/scenes.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        "../envs/torch.yaml"
    shell:
        "python -m worldmemory.permanence.render --out {output} --radii {params.radii}"
        " --distractors {params.distractors} --seeds {params.seeds} 2>&1 | tee {log}"


rule permanence_train:
    output:
        directory("results/models/{model}"),
    wildcard_constraints:
        model=models_with("train"),
    params:
        config=lambda wc: json.dumps(PERM_MODELS[wc.model]["config"], sort_keys=True),
        settings=lambda wc: json.dumps(PERM_MODELS[wc.model]["train"], sort_keys=True),
        device=DEVICE,
    log:
        "results/logs/permanence/train_{model}.log",
    threads: THREADS
    resources:
        mem_mb=6000,
        runtime=60,
        gpu=GPU,
    conda:
        "../envs/torch.yaml"
    shell:
        "python -m worldmemory.permanence.train --model-config {params.config:q} --settings {params.settings:q}"
        " --threads {threads} --device {params.device} --out {output} 2>&1 | tee {log}"


rule prefetch_model:
    output:
        directory("resources/models/{model}"),
    wildcard_constraints:
        model=models_with("hf"),
    params:
        id=lambda wc: PERM_MODELS[wc.model]["id"],
    log:
        "results/logs/prefetch_{model}.log",
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120,
    conda:
        "../envs/torch.yaml"
    shell:
        "python -m worldmemory.models.prefetch --id {params.id} --out {output} 2>&1 | tee {log}"


rule permanence_probe:
    input:
        scenes="results/permanence/scenes",
        weights=model_weights,
    output:
        csv="results/permanence/probe/{model}.csv",
        info="results/permanence/probe/{model}.json",
    params:
        spec=lambda wc: json.dumps(PERM_MODELS[wc.model], sort_keys=True),
        weights=lambda wc, input: f"--weights {input.weights}" if input.weights else "",
        batch=PERM["batch_size"],
        margin=PERM["readout_margin_px"],
        device=DEVICE,
    log:
        "results/logs/permanence/probe_{model}.log",
    threads: THREADS
    resources:
        mem_mb=8000,
        runtime=120,
        gpu=GPU,
    conda:
        "../envs/torch.yaml"
    shell:
        "python -m worldmemory.permanence.probe --scenes {input.scenes} --model-name {wildcards.model}"
        " --spec {params.spec:q} {params.weights} --device {params.device} --threads {threads}"
        " --batch-size {params.batch} --margin {params.margin} --out {output.csv} --out-info {output.info}"
        " 2>&1 | tee {log}"


rule permanence_table3:
    input:
        probes=expand("results/permanence/probe/{model}.csv", model=sorted(PERM_MODELS)),
        infos=expand("results/permanence/probe/{model}.json", model=sorted(PERM_MODELS)),
        paper=repo_path("resources", "paper_values", "permanence_table3.csv"),
    output:
        wide=report("results/permanence/table3.csv", caption="../report/permanence_table3.rst",
                    category=PERM_REPORT, subcategory="Table 3"),
        long=report("results/permanence/table3_long.csv", caption="../report/permanence_table3_long.rst",
                    category=PERM_REPORT, subcategory="Table 3"),
        provenance="results/permanence/table3.json",
        **({"paper": report("results/permanence/table3_vs_paper.csv",
                            caption="../report/permanence_table3_vs_paper.rst",
                            category=PERM_REPORT, subcategory="Table 3")} if PAPER_MODELS else {}),
    params:
        # The paper's numbers print beside ours only for runs of the paper's checkpoints.
        paper=lambda wc, input, output: (
            f"--paper {input.paper} --out-paper {output.paper} --paper-models "
            + " ".join(f"{m}={PERM_MODELS[m]['id']}" for m in PAPER_MODELS)
            if PAPER_MODELS
            else ""
        ),
        config=config_json,
        seeds=json.dumps({"scenes_per_cell": PERM["scenes"]["seeds"], "scene_seed": "sha256 of the scene id",
                          "train": {m: s["train"]["seed"] for m, s in PERM_MODELS.items() if "train" in s}},
                         sort_keys=True),
    log:
        "results/logs/permanence/table3.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    shell:
        "(python -m worldmemory.report.tables --probe {input.probes} --out-wide {output.wide}"
        " --out-long {output.long} {params.paper}"
        " && python -m worldmemory.common.provenance --config {params.config:q} --seeds {params.seeds:q}"
        " --model-info {input.infos} --outputs {output.wide} {output.long} --out {output.provenance})"
        " 2>&1 | tee {log}"


rule permanence_figure2:
    input:
        long="results/permanence/table3_long.csv",
        infos=expand("results/permanence/probe/{model}.json", model=sorted(PERM_MODELS)),
    output:
        png=report("results/permanence/figure2.png", caption="../report/permanence_figure2.rst",
                   category=PERM_REPORT, subcategory="Figure 2"),
        pdf="results/permanence/figure2.pdf",
        provenance="results/permanence/figure2.json",
    params:
        config=config_json,
    log:
        "results/logs/permanence/figure2.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    shell:
        "(python -m worldmemory.report.figures --long {input.long} --png {output.png} --pdf {output.pdf}"
        " && python -m worldmemory.common.provenance --config {params.config:q}"
        " --model-info {input.infos} --outputs {output.png} {output.pdf} --out {output.provenance})"
        " 2>&1 | tee {log}"
