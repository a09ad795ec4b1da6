# Tracking Is Not Permanence: render -> (train | prefetch) -> probe -> Table 3, Figure 2.
# The chain of the pretraining and the probe is the longest of the main job: its rules have
# priority, so the pretraining starts first and the probe runs beside the other studies' jobs.
# The pretraining's is the highest: a job on both cores never starts once one-core jobs hold one
# (the greedy scheduler refills a freed core at once), and on a tie with the scenes Snakemake
# started either one first (seen: the pretraining waited until 67 of 78 jobs were done).
CHAIN_PRIORITY = 10
TRAIN_PRIORITY = CHAIN_PRIORITY + 1

# The study's category in `snakemake --report` (captions under report/).
PERM_REPORT = "Tracking Is Not Permanence (permanence)"
# As the paper draws its figures: released checkpoints grey, ViT-H thick with its control red.
FIGURE_STYLE_ARGS = shlex.join(
    ["--released", *models_of_source("hf")]
    + [a for m in PAPER_MODELS if PERM_MODELS[m]["id"] == FIGURE2_HIGHLIGHT for a in ("--highlight", m)]
)


# Scene sets: the main scenes, a frame rate's (Appendix I, "Frame rate") and the tube query's
# (Appendix I, pretraining-consistent query: 1.1 or 2.1 s of visible approach) -> render arguments.
SCENE_SETS = {
    "scenes": [],
    "scenes_fps15": ["--fps", "15"],
    "scenes_fps30": ["--fps", "30"],
    "scenes_tube11": ["--approach-frames", "8"],
    "scenes_tube21": ["--approach-frames", "16"],
}
# Queries beyond the main one, each outside the main job -> (the scene set it reads, probe --query).
QUERIES = {
    "reveal": ("scenes", "reveal"),
    "fps15": ("scenes_fps15", "main"),
    "fps30": ("scenes_fps30", "main"),
    "tube11": ("scenes_tube11", "tube"),
    "tube21": ("scenes_tube21", "tube"),
    "tube21_sparse": ("scenes_tube21", "tube_sparse"),
    "container": ("scenes_container", "container"),
}


rule permanence_scenes:
    output:
        directory("results/permanence/{scenes}"),
    log:
        "results/logs/permanence/{scenes}.log",
    benchmark:
        benchmark_tsv("permanence/{scenes}")
    wildcard_constraints:
        scenes="|".join(SCENE_SETS),
    priority: CHAIN_PRIORITY
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        radii=PERM["scenes"]["radii"],
        distractors=PERM["scenes"]["distractors"],
        seeds=PERM["scenes"]["seeds"],
        set_args=lambda wc: shlex.join(SCENE_SETS[wc.scenes]),
    shell:
        "python -m worldmemory.permanence.render --out {output:q} --radii {params.radii:q}"
        " --distractors {params.distractors:q} --seeds {params.seeds:q} {params.set_args} 2>&1 | tee {log:q}"


# A trained model is protected: Snakemake makes it read-only and never deletes it to rebuild; after
# changing its config, remove the directory yourself to retrain.
rule permanence_train:
    output:
        protected(directory("results/models/{model}")),
    log:
        "results/logs/permanence/train_{model}.log",
    benchmark:
        benchmark_tsv("permanence/train_{model}")
    wildcard_constraints:
        model=models_with("train", LATENT_MODELS),
    priority: TRAIN_PRIORITY
    conda:
        "../envs/torch.yaml"
    threads: lambda wc: PERM_MODELS[wc.model]["train"].get("threads", THREADS)
    resources:
        mem_mb=6000,
        runtime=60,
        gpu=GPU,
    params:
        config=lambda wc: json.dumps(PERM_MODELS[wc.model]["config"], sort_keys=True),
        settings=lambda wc: json.dumps(PERM_MODELS[wc.model]["train"], sort_keys=True),
        device=DEVICE,
    shell:
        "gpu_slot {resources.gpu:q}"
        " python -m worldmemory.permanence.train --model-config {params.config:q} --settings {params.settings:q}"
        " --threads {threads:q} --device {params.device:q} --out {output:q} 2>&1 | tee {log:q}"


# VideoMAE's pretraining from scratch (its own recipe: 90% tube masking, norm_pix_loss; Figure 5a's
# embedded stand-in), protected like the V-JEPA 2 pretraining.
rule permanence_videomae_train:
    output:
        protected(directory("results/models/{model}")),
    log:
        "results/logs/permanence/train_{model}.log",
    benchmark:
        benchmark_tsv("permanence/train_{model}")
    wildcard_constraints:
        model=models_with("train", VIDEOMAE_MODELS),
    conda:
        "../envs/torch.yaml"
    threads: lambda wc: VIDEOMAE_MODELS[wc.model]["train"].get("threads", THREADS)
    resources:
        mem_mb=6000,
        runtime=60,
        gpu=GPU,
    params:
        config=lambda wc: json.dumps(VIDEOMAE_MODELS[wc.model]["config"], sort_keys=True),
        settings=lambda wc: json.dumps(VIDEOMAE_MODELS[wc.model]["train"], sort_keys=True),
        device=DEVICE,
    shell:
        "gpu_slot {resources.gpu:q}"
        " python -m worldmemory.permanence.videomae_train --model-config {params.config:q}"
        " --settings {params.settings:q} --threads {threads:q} --device {params.device:q} --out {output:q}"
        " 2>&1 | tee {log:q}"


# A curriculum (Section 3.5 (ii)-(iii), Appendix C): predictor-only training of another model's
# checkpoint on clips rendered on the fly, or on your own video ((i); (iv) with the encoder and an
# EMA target); protected like a pretrained model.
rule permanence_curriculum:
    input:
        init=lambda wc: weights_of(CURRICULA[wc.model]["init"]),
        clips=lambda wc: CURRICULA[wc.model]["train"].get("clips_dir", []),
    output:
        protected(directory("results/models/{model}")),
    log:
        "results/logs/permanence/curriculum_{model}.log",
    benchmark:
        benchmark_tsv("permanence/curriculum_{model}")
    wildcard_constraints:
        model=models_with("curriculum"),
    conda:
        "../envs/torch.yaml"
    threads: lambda wc: CURRICULA[wc.model]["train"].get("threads", THREADS)
    resources:
        mem_mb=6000,
        runtime=240,
        gpu=GPU,
    params:
        settings=lambda wc: json.dumps(CURRICULA[wc.model]["train"], sort_keys=True),
        device=DEVICE,
    shell:
        "gpu_slot {resources.gpu:q}"
        " python -m worldmemory.permanence.curriculum_train --init {input.init:q} --settings {params.settings:q}"
        " --threads {threads:q} --device {params.device:q} --out {output:q} 2>&1 | tee {log:q}"


# Needs the network: runs where Snakemake runs (the login node), never as a cluster job.
localrules:
    prefetch_model,


rule prefetch_model:
    output:
        directory("resources/models/{model}"),
    log:
        "results/logs/prefetch_{model}.log",
    benchmark:
        benchmark_tsv("prefetch_{model}")
    wildcard_constraints:
        model=models_with("hf"),
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        id=lambda wc: PROBE_MODELS[wc.model]["id"],
        revision=lambda wc: PROBE_MODELS[wc.model].get("revision", "main"),
    shell:
        "python -m worldmemory.models.prefetch --id {params.id:q} --revision {params.revision:q}"
        " --target {output:q} --out {output:q} 2>&1 | tee {log:q}"


# The visible container (Section 3.3, Table 6): a box closes over the ball, moves or stays, opens
# after 0.53, 1.07, 2.00 or 2.93 s; with the never-shown-box and exit controls.
rule permanence_container_scenes:
    output:
        directory("results/permanence/scenes_container"),
    log:
        "results/logs/permanence/scenes_container.log",
    benchmark:
        benchmark_tsv("permanence/scenes_container")
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=60,
    params:
        radii=PERM["scenes"]["radii"],
        distractors=PERM["scenes"]["distractors"],
        seeds=PERM["scenes"]["seeds"],
    shell:
        "python -m worldmemory.permanence.containers --out {output:q} --radii {params.radii:q}"
        " --distractors {params.distractors:q} --seeds {params.seeds:q} 2>&1 | tee {log:q}"


# The probe's command, shared by the main query and the other queries of Section 3.3.
PROBE_CMD = (
    "gpu_slot {resources.gpu:q}"
    " python -m worldmemory.permanence.probe --scenes {input.scenes:q} --model-name {wildcards.model:q}"
    " --spec {params.spec:q} {params.weights_args} --device {params.device:q} --threads {threads:q}"
    " --batch-size {params.batch:q} --margin {params.margin:q} --query {params.query:q}"
    " --out {output.csv:q} --out-info {output.info:q} --out-features {output.features:q} 2>&1 | tee {log:q}"
)


# The main query and its controls (Table 3), with the region means for the linear readouts (Table 9).
rule permanence_probe:
    input:
        scenes="results/permanence/scenes",
        weights=model_weights,
    output:
        csv="results/permanence/probe/{model}.csv",
        info="results/permanence/probe/{model}.json",
        features="results/permanence/probe/{model}.npz",
    log:
        "results/logs/permanence/probe_{model}.log",
    benchmark:
        benchmark_tsv("permanence/probe_{model}")
    priority: CHAIN_PRIORITY
    conda:
        "../envs/torch.yaml"
    threads: lambda wc: probe_threads(wc.model)
    resources:
        mem_mb=8000,
        runtime=120,
        gpu=GPU,
    params:
        spec=lambda wc: json.dumps(probe_spec(wc.model), sort_keys=True),
        weights_args=lambda wc, input: shlex.join(["--weights", input.weights]) if input.weights else "",
        batch=PERM["batch_size"],
        margin=PERM["readout_margin_px"],
        device=DEVICE,
        query="main",
    shell:
        PROBE_CMD


# The other queries (reveal at the end: Figure 3; the frame rates and the tube query of Appendix I).
rule permanence_query:
    input:
        scenes=lambda wc: f"results/permanence/{QUERIES[wc.query][0]}",
        weights=model_weights,
    output:
        csv="results/permanence/queries/{query}/{model}.csv",
        info="results/permanence/queries/{query}/{model}.json",
        features="results/permanence/queries/{query}/{model}.npz",
    log:
        "results/logs/permanence/{query}/{model}.log",
    benchmark:
        benchmark_tsv("permanence/{query}/{model}")
    wildcard_constraints:
        query="|".join(QUERIES),
    conda:
        "../envs/torch.yaml"
    threads: lambda wc: probe_threads(wc.model)
    resources:
        mem_mb=8000,
        runtime=120,
        gpu=GPU,
    params:
        spec=lambda wc: json.dumps(probe_spec(wc.model), sort_keys=True),
        weights_args=lambda wc, input: shlex.join(["--weights", input.weights]) if input.weights else "",
        batch=PERM["batch_size"],
        margin=PERM["readout_margin_px"],
        device=DEVICE,
        query=lambda wc: QUERIES[wc.query][1],
    shell:
        PROBE_CMD


rule permanence_table3:
    input:
        probes=expand("results/permanence/probe/{model}.csv", model=sorted(PERM_MODELS)),
        infos=expand("results/permanence/probe/{model}.json", model=sorted(PERM_MODELS)),
        paper=repo_path("resources", "paper_values", "permanence_table3.csv"),
        config=CONFIG_STAMP,
    output:
        wide=report(
            "results/permanence/table3.csv",
            caption="../report/permanence_table3.rst",
            category=PERM_REPORT,
            subcategory="Table 3",
        ),
        long=report(
            "results/permanence/table3_long.csv",
            caption="../report/permanence_table3_long.rst",
            category=PERM_REPORT,
            subcategory="Table 3",
        ),
        size=report(
            "results/permanence/object_size.csv",
            caption="../report/permanence_object_size.rst",
            category=PERM_REPORT,
            subcategory="Appendix I",
        ),
        provenance="results/permanence/table3.json",
        paper=report(
            "results/permanence/table3_vs_paper.csv",
            caption="../report/permanence_table3_vs_paper.rst",
            category=PERM_REPORT,
            subcategory="Table 3",
        ),
    log:
        "results/logs/permanence/table3.log",
    benchmark:
        benchmark_tsv("permanence/table3")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        config_sha=CONFIG_SHA,
        # The paper's numbers print beside ours only for runs of the paper's checkpoints.
        paper_args=lambda wc, input, output: paper_args({m: PERM_MODELS[m]["id"] for m in PAPER_MODELS}, input, output),
        seeds=json.dumps(
            {
                "scenes_per_cell": PERM["scenes"]["seeds"],
                "scene_seed": "sha256 of the scene id",
                "train": {m: s["train"]["seed"] for m, s in PERM_MODELS.items() if "train" in s},
            },
            sort_keys=True,
        ),
    shell:
        "(python -m worldmemory.permanence.tables --probe {input.probes:q} --out-wide {output.wide:q}"
        " --out-long {output.long:q} --out-size {output.size:q} {params.paper_args}"
        " && python -m worldmemory.common.provenance --config {input.config:q} --seeds {params.seeds:q}"
        " --model-info {input.infos:q} --outputs {output.wide:q} {output.long:q} {output.size:q}"
        " --out {output.provenance:q})"
        " 2>&1 | tee {log:q}"


rule permanence_figure2:
    input:
        long="results/permanence/table3_long.csv",
        infos=expand("results/permanence/probe/{model}.json", model=sorted(PERM_MODELS)),
        config=CONFIG_STAMP,
    output:
        png=report(
            "results/permanence/figure2.png",
            caption="../report/permanence_figure2.rst",
            category=PERM_REPORT,
            subcategory="Figure 2",
        ),
        pdf="results/permanence/figure2.pdf",
        provenance="results/permanence/figure2.json",
    log:
        "results/logs/permanence/figure2.log",
    benchmark:
        benchmark_tsv("permanence/figure2")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        config_sha=CONFIG_SHA,
        style_args=FIGURE_STYLE_ARGS,
    shell:
        "(python -m worldmemory.permanence.figures --long {input.long:q} --png {output.png:q} --pdf {output.pdf:q}"
        " {params.style_args}"
        " && python -m worldmemory.common.provenance --config {input.config:q}"
        " --model-info {input.infos:q} --outputs {output.png:q} {output.pdf:q} --out {output.provenance:q})"
        " 2>&1 | tee {log:q}"


# Belief curves of a query other than the main one, laid out as Table 3 (reveal: the gap under either reveal).
rule permanence_query_table:
    input:
        probes=expand("results/permanence/queries/{{query}}/{model}.csv", model=sorted(PERM_MODELS)),
    output:
        wide="results/permanence/queries/{query}.csv",
        long="results/permanence/queries/{query}_long.csv",
    log:
        "results/logs/permanence/{query}/table.log",
    benchmark:
        benchmark_tsv("permanence/{query}/table")
    wildcard_constraints:
        query="|".join(QUERIES),
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "python -m worldmemory.permanence.tables --probe {input.probes:q} --out-wide {output.wide:q}"
        " --out-long {output.long:q} 2>&1 | tee {log:q}"


rule permanence_figure3:
    input:
        long="results/permanence/table3_long.csv",
        reveal="results/permanence/queries/reveal_long.csv",
        infos=expand("results/permanence/queries/reveal/{model}.json", model=sorted(PERM_MODELS)),
        config=CONFIG_STAMP,
    output:
        png=report(
            "results/permanence/figure3.png",
            caption="../report/permanence_figure3.rst",
            category=PERM_REPORT,
            subcategory="Figure 3",
        ),
        pdf="results/permanence/figure3.pdf",
        provenance="results/permanence/figure3.json",
    log:
        "results/logs/permanence/figure3.log",
    benchmark:
        benchmark_tsv("permanence/figure3")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        config_sha=CONFIG_SHA,
        style_args=FIGURE_STYLE_ARGS,
    shell:
        "(python -m worldmemory.permanence.figures --figure 3 --long {input.long:q} --long {input.reveal:q}"
        " --png {output.png:q} --pdf {output.pdf:q} {params.style_args}"
        " && python -m worldmemory.common.provenance --config {input.config:q}"
        " --model-info {input.infos:q} --outputs {output.png:q} {output.pdf:q} --out {output.provenance:q})"
        " 2>&1 | tee {log:q}"


rule permanence_figure7:
    input:
        long="results/permanence/table3_long.csv",
        infos=expand("results/permanence/probe/{model}.json", model=sorted(PERM_MODELS)),
        config=CONFIG_STAMP,
    output:
        png=report(
            "results/permanence/figure7.png",
            caption="../report/permanence_figure7.rst",
            category=PERM_REPORT,
            subcategory="Figure 7",
        ),
        pdf="results/permanence/figure7.pdf",
        provenance="results/permanence/figure7.json",
    log:
        "results/logs/permanence/figure7.log",
    benchmark:
        benchmark_tsv("permanence/figure7")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        config_sha=CONFIG_SHA,
    shell:
        "(python -m worldmemory.permanence.figures --figure 7 --long {input.long:q}"
        " --png {output.png:q} --pdf {output.pdf:q}"
        " && python -m worldmemory.common.provenance --config {input.config:q}"
        " --model-info {input.infos:q} --outputs {output.png:q} {output.pdf:q} --out {output.provenance:q})"
        " 2>&1 | tee {log:q}"


# The curriculum tables: the main query (Tables 4 and 5, embedded analogue) or another query (the
# container: Table 6) over each curriculum checkpoint and the checkpoint it continues.
rule permanence_curricula_table:
    input:
        probes=lambda wc: [
            (
                f"results/permanence/probe/{m}.csv"
                if wc.query == "main"
                else f"results/permanence/queries/{wc.query}/{m}.csv"
            )
            for m in CURRICULUM_ROWS
        ],
    output:
        wide="results/permanence/curricula/{query}.csv",
        long="results/permanence/curricula/{query}_long.csv",
    log:
        "results/logs/permanence/curricula_{query}.log",
    benchmark:
        benchmark_tsv("permanence/curricula_{query}")
    wildcard_constraints:
        query="|".join(["main", *QUERIES]),
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "python -m worldmemory.permanence.tables --probe {input.probes:q} --out-wide {output.wide:q}"
        " --out-long {output.long:q} 2>&1 | tee {log:q}"


# Figure 6a: the container curriculum's belief at the opening, per checkpoint, with both controls.
rule permanence_figure6a:
    input:
        long="results/permanence/curricula/container_long.csv",
    output:
        png=report(
            "results/permanence/curricula/figure6a.png",
            caption="../report/permanence_figure6a.rst",
            category=PERM_REPORT,
            subcategory="Figure 6",
        ),
        pdf="results/permanence/curricula/figure6a.pdf",
    log:
        "results/logs/permanence/figure6a.log",
    benchmark:
        benchmark_tsv("permanence/figure6a")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "python -m worldmemory.permanence.figures --figure 6a --long {input.long:q} --png {output.png:q}"
        " --pdf {output.pdf:q} 2>&1 | tee {log:q}"


# Figure 4: the moving and the stationary object per training condition (the curricula's main query).
rule permanence_figure4:
    input:
        long="results/permanence/curricula/main_long.csv",
    output:
        png=report(
            "results/permanence/curricula/figure4.png",
            caption="../report/permanence_figure4.rst",
            category=PERM_REPORT,
            subcategory="Figure 4",
        ),
        pdf="results/permanence/curricula/figure4.pdf",
    log:
        "results/logs/permanence/figure4.log",
    benchmark:
        benchmark_tsv("permanence/figure4")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "python -m worldmemory.permanence.figures --figure 4 --long {input.long:q} --png {output.png:q}"
        " --pdf {output.pdf:q} 2>&1 | tee {log:q}"


# VideoMAE's pixel readout (Section 3.4, Appendix E): its models' main query laid out as Table 3, with
# the latent models of permanence.videomae.latent beside them (results/permanence/videomae/).
rule permanence_videomae_table:
    input:
        probes=expand(
            "results/permanence/probe/{model}.csv",
            model=[*sorted(VIDEOMAE_MODELS), *VIDEOMAE.get("latent", [])],
        ),
    output:
        wide="results/permanence/videomae/table.csv",
        long="results/permanence/videomae/table_long.csv",
    log:
        "results/logs/permanence/videomae_table.log",
    benchmark:
        benchmark_tsv("permanence/videomae_table")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "python -m worldmemory.permanence.tables --probe {input.probes:q} --out-wide {output.wide:q}"
        " --out-long {output.long:q} 2>&1 | tee {log:q}"


# Figure 5a: the textured ball under the pixel readout (VideoMAE) beside the latent readout.
rule permanence_figure5a:
    input:
        long="results/permanence/videomae/table_long.csv",
    output:
        png=report(
            "results/permanence/videomae/figure5a.png",
            caption="../report/permanence_figure5a.rst",
            category=PERM_REPORT,
            subcategory="Figure 5",
        ),
        pdf="results/permanence/videomae/figure5a.pdf",
    log:
        "results/logs/permanence/figure5a.log",
    benchmark:
        benchmark_tsv("permanence/figure5a")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        pixel_args=shlex.join(["--pixel", *sorted(VIDEOMAE_MODELS)]),
    shell:
        "python -m worldmemory.permanence.figures --figure 5a --long {input.long:q} --png {output.png:q}"
        " --pdf {output.pdf:q} {params.pixel_args} 2>&1 | tee {log:q}"


# Table 9's readouts of a query's predictions (the container rows: queries/container_table9.csv).
rule permanence_query_table9:
    input:
        features=expand("results/permanence/queries/{{query}}/{model}.npz", model=sorted(PERM_MODELS)),
    output:
        "results/permanence/queries/{query}_table9.csv",
    log:
        "results/logs/permanence/{query}/table9.log",
    benchmark:
        benchmark_tsv("permanence/{query}/table9")
    wildcard_constraints:
        query="|".join(QUERIES),
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=20,
    shell:
        "python -m worldmemory.permanence.linear_readouts --features {input.features:q} --out {output:q} 2>&1 | tee {log:q}"


# Appendix I, Table 9: the encoder's linear probe applied to the prediction, and a probe fitted on it.
rule permanence_table9:
    input:
        features=expand("results/permanence/probe/{model}.npz", model=sorted(PERM_MODELS)),
        infos=expand("results/permanence/probe/{model}.json", model=sorted(PERM_MODELS)),
        config=CONFIG_STAMP,
    output:
        table=report(
            "results/permanence/table9.csv",
            caption="../report/permanence_table9.rst",
            category=PERM_REPORT,
            subcategory="Table 9",
        ),
        provenance="results/permanence/table9.json",
    log:
        "results/logs/permanence/table9.log",
    benchmark:
        benchmark_tsv("permanence/table9")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=20,
    params:
        config_sha=CONFIG_SHA,
    shell:
        "(python -m worldmemory.permanence.linear_readouts --features {input.features:q} --out {output.table:q}"
        " && python -m worldmemory.common.provenance --config {input.config:q}"
        " --model-info {input.infos:q} --outputs {output.table:q} --out {output.provenance:q})"
        " 2>&1 | tee {log:q}"


# IntPhys-2019 (Section 3.5, Appendix I "Protocol"), outside the main job: each model's surprise per
# video on permanence.intphys.dataset, then Table 1 (two context frames), Table 10 (three rules) and
# the scene-bootstrap differences between models, the curriculum checkpoints included.
rule permanence_intphys_fixture:
    output:
        directory(INTPHYS_FIXTURE),
    log:
        "results/logs/permanence/intphys_fixture.log",
    benchmark:
        benchmark_tsv("permanence/intphys_fixture")
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        scenes=INTPHYS.get("fixture_scenes", 8),
    shell:
        "python -m worldmemory.permanence.intphys_fixture --out {output:q} --scenes {params.scenes:q} 2>&1 | tee {log:q}"


rule permanence_intphys:
    input:
        dataset=intphys_dataset,
        weights=model_weights,
    output:
        csv="results/permanence/intphys/{model}.csv",
        info="results/permanence/intphys/{model}.json",
    log:
        "results/logs/permanence/intphys_{model}.log",
    benchmark:
        benchmark_tsv("permanence/intphys_{model}")
    conda:
        "../envs/torch.yaml"
    threads: lambda wc: probe_threads(wc.model)
    resources:
        mem_mb=8000,
        runtime=240,
        gpu=GPU,
    params:
        spec=lambda wc: json.dumps(probe_spec(wc.model), sort_keys=True),
        weights_args=lambda wc, input: shlex.join(["--weights", input.weights]) if input.weights else "",
        fps_args=intphys_fps_args,
        protocol=INTPHYS_PROTOCOL,
        device=DEVICE,
    shell:
        "gpu_slot {resources.gpu:q}"
        " python -m worldmemory.permanence.intphys --dataset {input.dataset:q} --model-name {wildcards.model:q}"
        " --spec {params.spec:q} {params.weights_args} {params.fps_args} --protocol {params.protocol:q}"
        " --device {params.device:q} --threads {threads:q} --out {output.csv:q} --out-summary {output.info:q}"
        " 2>&1 | tee {log:q}"


rule permanence_intphys_tables:
    input:
        videos=expand("results/permanence/intphys/{model}.csv", model=sorted(LATENT_MODELS)),
        infos=expand("results/permanence/intphys/{model}.json", model=sorted(LATENT_MODELS)),
        config=CONFIG_STAMP,
    output:
        table1=report(
            "results/permanence/table1.csv",
            caption="../report/permanence_table1.rst",
            category=PERM_REPORT,
            subcategory="Table 1",
        ),
        table10=report(
            "results/permanence/table10.csv",
            caption="../report/permanence_table10.rst",
            category=PERM_REPORT,
            subcategory="Table 10",
        ),
        differences="results/permanence/intphys_differences.csv",
        provenance="results/permanence/table1.json",
    log:
        "results/logs/permanence/intphys_tables.log",
    benchmark:
        benchmark_tsv("permanence/intphys_tables")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=20,
    params:
        config_sha=CONFIG_SHA,
        videos_args=lambda wc, input: shlex.join(f"{m}={p}" for m, p in zip(sorted(LATENT_MODELS), input.videos)),
        baseline_args=shlex.join(["--baseline", INTPHYS["baseline"]]) if INTPHYS.get("baseline") else "",
        protocol=INTPHYS_PROTOCOL,
    shell:
        "(python -m worldmemory.permanence.intphys_tables --videos {params.videos_args} {params.baseline_args}"
        " --protocol {params.protocol:q}"
        " --table1 {output.table1:q} --table10 {output.table10:q} --differences {output.differences:q}"
        " && python -m worldmemory.common.provenance --config {input.config:q} --model-info {input.infos:q}"
        " --outputs {output.table1:q} {output.table10:q} {output.differences:q} --out {output.provenance:q})"
        " 2>&1 | tee {log:q}"


# Cosmos-Predict1's autoregressive readout (Section 4.5, Appendix F), outside the main job: the
# model's teacher-forced evidence per scene, then Table 8 and Figure 5b, and the natural-video
# log-likelihood check. The released model.pt and the tokenizer's TorchScript files are fetched once.
localrules:
    prefetch_cosmos,


rule prefetch_cosmos:
    output:
        model=directory(f"{COSMOS_FETCHED}/model"),
        tokenizer=directory(f"{COSMOS_FETCHED}/tokenizer"),
    log:
        "results/logs/prefetch_cosmos.log",
    benchmark:
        benchmark_tsv("prefetch_cosmos")
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=240,
    params:
        model_args=shlex.join(
            ["--id", COSMOS.get("id", ""), "--revision", COSMOS.get("revision", "main"), "--patterns", "model.pt"]
        ),
        tokenizer_args=shlex.join(
            [
                "--id",
                COSMOS.get("tokenizer_id", ""),
                "--revision",
                COSMOS.get("tokenizer_revision", "main"),
                "--patterns",
                "*.jit",
            ]
        ),
    shell:
        "(python -m worldmemory.models.prefetch {params.model_args} --target {output.model:q} --out {output.model:q}"
        " && python -m worldmemory.models.prefetch {params.tokenizer_args} --target {output.tokenizer:q}"
        " --out {output.tokenizer:q}) 2>&1 | tee {log:q}"


# The readout's command: --out for the per-scene evidence, --loglik-out for the check (out_args).
COSMOS_CMD = (
    "gpu_slot {resources.gpu:q}"
    " python -m worldmemory.permanence.cosmos_readout --spec {params.spec:q} {params.model_args}"
    " --device {params.device:q} --threads {threads:q} {params.out_args} 2>&1 | tee {log:q}"
)


rule permanence_cosmos_evidence:
    input:
        unpack(cosmos_inputs),
    output:
        "results/permanence/cosmos/evidence.csv",
    log:
        "results/logs/permanence/cosmos_evidence.log",
    benchmark:
        benchmark_tsv("permanence/cosmos_evidence")
    conda:
        "../envs/torch.yaml"
    threads: THREADS
    resources:
        mem_mb=40000 if GPU else 4000,
        runtime=120,
        gpu=GPU,
    params:
        spec=json.dumps(COSMOS, sort_keys=True),
        model_args=cosmos_model_args,
        device=DEVICE,
        out_args=lambda wc, output: shlex.join(["--out", output[0]]),
    shell:
        COSMOS_CMD


rule permanence_cosmos_loglik:
    input:
        unpack(cosmos_inputs),
    output:
        report(
            "results/permanence/cosmos/loglik_check.csv",
            caption="../report/permanence_cosmos_loglik.rst",
            category=PERM_REPORT,
            subcategory="Appendix F",
        ),
    log:
        "results/logs/permanence/cosmos_loglik.log",
    benchmark:
        benchmark_tsv("permanence/cosmos_loglik")
    conda:
        "../envs/torch.yaml"
    threads: THREADS
    resources:
        mem_mb=40000 if GPU else 4000,
        runtime=60,
        gpu=GPU,
    params:
        spec=json.dumps(COSMOS, sort_keys=True),
        model_args=cosmos_model_args,
        device=DEVICE,
        out_args=lambda wc, output: shlex.join(["--loglik-out", output[0]]),
    shell:
        COSMOS_CMD


rule permanence_table8:
    input:
        evidence="results/permanence/cosmos/evidence.csv",
        paper=repo_path("resources", "paper_values", "permanence_table8.csv"),
    output:
        table=report(
            "results/permanence/table8.csv",
            caption="../report/permanence_table8.rst",
            category=PERM_REPORT,
            subcategory="Table 8",
        ),
        paper=report(
            "results/permanence/table8_vs_paper.csv",
            caption="../report/permanence_table8_vs_paper.rst",
            category=PERM_REPORT,
            subcategory="Table 8",
        ),
    log:
        "results/logs/permanence/table8.log",
    benchmark:
        benchmark_tsv("permanence/table8")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        resamples=COSMOS.get("resamples", 10000),
        # The paper's numbers print beside ours only for a run of the released model.
        paper_args=lambda wc, input, output: paper_args(COSMOS_PAPER_RUNS, input, output),
    shell:
        "python -m worldmemory.permanence.cosmos_tables --evidence {input.evidence:q} --out {output.table:q}"
        " --resamples {params.resamples:q} {params.paper_args} 2>&1 | tee {log:q}"


rule permanence_figure5b:
    input:
        "results/permanence/table8.csv",
    output:
        png=report(
            "results/permanence/figure5b.png",
            caption="../report/permanence_figure5b.rst",
            category=PERM_REPORT,
            subcategory="Figure 5",
        ),
        pdf="results/permanence/figure5b.pdf",
    log:
        "results/logs/permanence/figure5b.log",
    benchmark:
        benchmark_tsv("permanence/figure5b")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "python -m worldmemory.permanence.figures --figure 5b --long {input:q} --png {output.png:q}"
        " --pdf {output.pdf:q} 2>&1 | tee {log:q}"
