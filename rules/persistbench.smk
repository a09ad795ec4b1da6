# PersistBench: 360-degree sequences -> rollouts -> perception (estimators) -> scores (Perm / Cont
# / App, one family), each one job per (model, sequence), then per model its manifest and score
# files, then Table 1, the ablation, the figure and the perception-agreement table.

from worldmemory.persistbench.perception import FAMILY as PB_FAMILY
from worldmemory.workflow.runs import persistbench_sequences

PB = config["persistbench"]
PB_MODELS = PB["models"]
# the models, plus each reference model replayed as an external model (perception agreement)
PB_RUNS = benchmark_runs("persistbench")
PB_REPLAYS = agreement_replays("persistbench", PB_RUNS, ["clean"])  # perception_agreement.csv (main job)
PB_ALL_REPLAYS = agreement_replays(
    "persistbench", PB_RUNS, ["clean", *PB["agreement_degradations"]]
)  # ..._degraded.csv
PB_STRESS = stress_runs(PB_RUNS)  # stress.csv (outside the main job): stress model -> run
PB_STRESS_REFERENCES = stress_reference_runs("persistbench")  # its reference rows -> their runs
PB_ESTIMATED = sorted(run for run, spec in PB_RUNS.items() if spec["kind"] == "external")
# the sequences, known before any is prepared, in preparation order (the score files' order)
PB_SEQUENCES = persistbench_sequences(PB)
STUDY_UNITS["persistbench"] = len(PB_SEQUENCES)
PB_CATEGORY = "PersistBench (persistbench)"
PB_APPLYING = applying_estimators("persistbench", lambda wc, c: True)  # every sequence is tracked and judged
PB_TRACKING = applying_estimators("persistbench", lambda wc, c: c == "tracking")
PB_TRACKED = "tracking" in estimators("persistbench")  # tracking_input_copy.csv (main job)
# the preparation's arguments, shared by each sequence's job and the manifest's
PB_PREPARE_ARGS = shlex.join(
    [
        "--source",
        PB["sequences"]["source"],
        "--n-frames",
        str(PB["sequences"]["n_frames"]),
        "--pano-width",
        str(PB["sequences"]["pano_width"]),
        "--invisible",
        *map(str, PB["sequences"]["invisible"]),
        # the relative schedule ({shape, bounds}), which replaces `invisible` when set; null if not
        "--schedule",
        json.dumps(PB["sequences"].get("schedule"), sort_keys=True),
        "--camera",
        json.dumps(PB["camera"], sort_keys=True),
    ]
)


wildcard_constraints:
    sequence=unit_constraint(PB_SEQUENCES),


# Lists of a model's sequences' files, seconds of reading: on a cluster they run where Snakemake
# runs rather than waiting in the queue.
localrules:
    persistbench_sequences,
    persistbench_rollouts,
    persistbench_scores,


rule persistbench_sequence:
    input:
        [] if PB["sequences"]["source"] == "embedded" else os.path.join(PB["sequences"]["source"], "{sequence}"),
    output:
        directory("results/persistbench/sequences/{sequence}"),
    log:
        "results/logs/persistbench/sequences/{sequence}.log",
    benchmark:
        benchmark_tsv("persistbench/sequences/{sequence}")
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        prepare_args=PB_PREPARE_ARGS,
    shell:
        "python -m worldmemory.persistbench.prepare --out results/persistbench/sequences --sequence {wildcards.sequence:q}"
        " {params.prepare_args} 2>&1 | tee {log:q}"


# The prepared sequences listed, the dropped ones with their reasons (manifest.json); fails,
# naming the keys to change, when every sequence was dropped.
rule persistbench_sequences:
    input:
        expand("results/persistbench/sequences/{sequence}", sequence=PB_SEQUENCES),
    output:
        "results/persistbench/sequences/manifest.json",
    log:
        "results/logs/persistbench/sequences.log",
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        prepare_args=PB_PREPARE_ARGS,
        sequences=PB_SEQUENCES,
    shell:
        "python -m worldmemory.persistbench.prepare --out results/persistbench/sequences --collect {params.sequences:q}"
        " {params.prepare_args} 2>&1 | tee {log:q}"


rule persistbench_rollout:
    input:
        sequence="results/persistbench/sequences/{sequence}",
        replayed=replayed_unit(PB_RUNS, "persistbench", "sequence"),
    output:
        directory("results/persistbench/rollouts/{model}/{sequence}"),
    log:
        "results/logs/persistbench/rollouts/{model}/{sequence}.log",
    benchmark:
        benchmark_tsv("persistbench/rollout/{model}/{sequence}")
    wildcard_constraints:
        model=unit_constraint(PB_RUNS),
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: PB_RUNS[wc.model]["mem_mb"],
        runtime=lambda wc: PB_RUNS[wc.model]["runtime"],
        gpu=lambda wc: PB_RUNS[wc.model]["gpu"],
    params:
        # an external command's log is copied here, where it outlives a failed job's output
        log_dir=lambda wc: f"results/logs/persistbench/commands/{wc.model}",
        model_args=lambda wc: model_args(PB_RUNS[wc.model]),
        store_args=store_args(PB_RUNS, "persistbench", lambda wc: ""),
    shell:
        "gpu_slot {resources.gpu:q}"
        " python -m worldmemory.persistbench.rollout --sequence {input.sequence:q} --model {wildcards.model:q}"
        " {params.model_args} {params.store_args} --timeout-minutes {resources.runtime:q}"
        " --log-dir {params.log_dir:q} --out {output:q} 2>&1 | tee {log:q}"


# A model's rollouts listed (manifest.json, costs.csv); after the sequences' manifest, so that a
# run whose every sequence was dropped stops there with the reason.
rule persistbench_rollouts:
    input:
        sequences="results/persistbench/sequences/manifest.json",
        rollouts=lambda wc: expand("results/persistbench/rollouts/{{model}}/{sequence}", sequence=PB_SEQUENCES),
    output:
        manifest="results/persistbench/rollouts/{model}/manifest.json",
        costs="results/persistbench/rollouts/{model}/costs.csv",
    log:
        "results/logs/persistbench/rollouts/{model}.log",
    wildcard_constraints:
        model=unit_constraint(PB_RUNS),
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        sequences=sorted(PB_SEQUENCES),
    shell:
        "python -m worldmemory.common.rollout_index --model-dir results/persistbench/rollouts/{wildcards.model:q}"
        " --units {params.sequences:q} 2>&1 | tee {log:q}"


# The configured estimators over one generated video of a run without truth channels; reference
# models need none (their scores read the truth channels).
rule persistbench_perceive:
    input:
        sequence="results/persistbench/sequences/{sequence}",
        rollouts="results/persistbench/rollouts/{model}/{sequence}",
        weights=perceive_weights("persistbench", PB_APPLYING),
    output:
        directory("results/persistbench/perception/{model}/{sequence}"),
    log:
        "results/logs/persistbench/perception/{model}/{sequence}.log",
    benchmark:
        benchmark_tsv("persistbench/perceive/{model}/{sequence}")
    wildcard_constraints:
        model=unit_constraint(PB_ESTIMATED),
    conda:
        "../envs/perception.yaml"
    threads: 1
    resources:
        **perceive_resources(PB_APPLYING),
    params:
        estimators_args=perceive_args("persistbench", PB_APPLYING),
    shell:
        "export HF_HUB_OFFLINE=1; gpu_slot {resources.gpu:q}"
        " python -m worldmemory.persistbench.perceive --sequence {input.sequence:q} --rollouts {input.rollouts:q}"
        " {params.estimators_args} --out {output:q} 2>&1 | tee {log:q}"


# The tracker on a model that copies its input video: its false positives in the invisible window.
rule persistbench_input_copy:
    input:
        sequences="results/persistbench/sequences/manifest.json",
        weights=perceive_weights("persistbench", PB_TRACKING),
    output:
        report(
            "results/persistbench/tracking_input_copy.csv",
            caption="../report/persistbench_tracking_input_copy.rst",
            category=PB_CATEGORY,
            subcategory="Perception agreement",
        ),
    log:
        "results/logs/persistbench/input_copy.log",
    benchmark:
        benchmark_tsv("persistbench/input_copy")
    conda:
        "../envs/perception.yaml"
    threads: 1
    resources:
        **perceive_resources(PB_TRACKING),
    params:
        estimators_args=perceive_args("persistbench", PB_TRACKING),
    shell:
        "export HF_HUB_OFFLINE=1; gpu_slot {resources.gpu:q}"
        " python -m worldmemory.persistbench.input_copy --sequences results/persistbench/sequences"
        " {params.estimators_args} --out {output:q} 2>&1 | tee {log:q}"


rule persistbench_score:
    input:
        sequence="results/persistbench/sequences/{sequence}",
        rollouts="results/persistbench/rollouts/{model}/{sequence}",
        estimates=estimate_dir("persistbench", PB_RUNS, "sequence"),
        features=features_input("persistbench"),
    output:
        directory("results/persistbench/scores/{model}/sequences/{sequence}"),
    log:
        "results/logs/persistbench/scores/{model}/{sequence}.log",
    benchmark:
        benchmark_tsv("persistbench/score/{model}/{sequence}")
    wildcard_constraints:
        model=unit_constraint(PB_RUNS),
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=8000 if uses_learned_features("persistbench") else 4000,
        runtime=15,
        gpu=GPU if uses_learned_features("persistbench") else 0,
    params:
        features_args=features_args("persistbench"),
        perception_args=perception_args("persistbench", PB_RUNS, "sequence"),
        alpha=PB["alpha"],
    shell:
        "gpu_slot {resources.gpu:q}"
        " python -m worldmemory.persistbench.score --sequence {input.sequence:q} --rollouts {input.rollouts:q}"
        " {params.perception_args} {params.features_args} --alpha {params.alpha:q}"
        " --out {output:q} 2>&1 | tee {log:q}"


# A run's sequence scores joined into the files the tables read.
rule persistbench_scores:
    input:
        lambda wc: expand("results/persistbench/scores/{{model}}/sequences/{sequence}", sequence=PB_SEQUENCES),
    output:
        scores=f"results/persistbench/scores/{{model}}/{PB_FAMILY}.csv",
        frames=f"results/persistbench/scores/{{model}}/{PB_FAMILY}_frames.csv",
        info=f"results/persistbench/scores/{{model}}/{PB_FAMILY}.json",
    log:
        "results/logs/persistbench/scores/{model}.log",
    wildcard_constraints:
        model=unit_constraint(PB_RUNS),
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        sequences=PB_SEQUENCES,
    shell:
        "python -m worldmemory.persistbench.gather --scores results/persistbench/scores/{wildcards.model:q}"
        " --sequences {params.sequences:q} 2>&1 | tee {log:q}"


rule persistbench_tables:
    input:
        scores=score_files("persistbench", PB_MODELS, [f"{PB_FAMILY}.csv"]),
        frames=score_files("persistbench", PB_MODELS, [f"{PB_FAMILY}_frames.csv"]),
        infos=score_files("persistbench", PB_MODELS, [f"{PB_FAMILY}.json"]),
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


rule persistbench_agreement:
    input:
        **agreement_inputs("persistbench", PB_RUNS, PB_REPLAYS, [f"{PB_FAMILY}.csv"], PB_SEQUENCES),
        sequences="results/persistbench/sequences/manifest.json",
    output:
        table=report(
            "results/persistbench/perception_agreement.csv",
            caption="../report/persistbench_perception_agreement.rst",
            category=PB_CATEGORY,
            subcategory="Perception agreement",
        ),
        provenance="results/persistbench/perception_agreement.json",
    log:
        "results/logs/persistbench/agreement.log",
    benchmark:
        benchmark_tsv("persistbench/agreement")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        config_sha=CONFIG_SHA,
        pairs=[f"{PB_RUNS[r]['replays']}={r}" for r in PB_REPLAYS],
    shell:
        "(python -m worldmemory.persistbench.agreement --pairs {params.pairs:q} --scores results/persistbench/scores"
        " --rollouts results/persistbench/rollouts --sequences results/persistbench/sequences"
        " --estimates results/persistbench/perception --out {output.table:q}"
        " && python -m worldmemory.common.provenance --config {input.config:q} --outputs {output.table:q}"
        " --out {output.provenance:q}) 2>&1 | tee {log:q}"


# The same table over the clean and the degraded replays (agreement_degradations): outside the main job.
use rule persistbench_agreement as persistbench_agreement_degraded with:
    input:
        **agreement_inputs("persistbench", PB_RUNS, PB_ALL_REPLAYS, [f"{PB_FAMILY}.csv"], PB_SEQUENCES),
        sequences="results/persistbench/sequences/manifest.json",
    output:
        table=report(
            "results/persistbench/perception_agreement_degraded.csv",
            caption="../report/persistbench_perception_agreement.rst",
            category=PB_CATEGORY,
            subcategory="Perception agreement",
        ),
        provenance="results/persistbench/perception_agreement_degraded.json",
    log:
        "results/logs/persistbench/agreement_degraded.log",
    benchmark:
        benchmark_tsv("persistbench/agreement_degraded")
    params:
        config_sha=CONFIG_SHA,
        pairs=[f"{PB_RUNS[r]['replays']}={r}" for r in PB_ALL_REPLAYS],


# The stress gallery: each stress model's readings against what the estimators should read
# (worldmemory/external/stress.py, docs/perception.md "Stress gallery"): outside the main job.
rule persistbench_stress:
    input:
        scores=score_files("persistbench", [*PB_STRESS.values(), *PB_STRESS_REFERENCES.values()], [f"{PB_FAMILY}.csv"]),
        config=CONFIG_STAMP,
    output:
        table=report(
            "results/persistbench/stress.csv",
            caption="../report/persistbench_stress.rst",
            category=PB_CATEGORY,
            subcategory="Perception agreement",
        ),
        provenance="results/persistbench/stress.json",
    log:
        "results/logs/persistbench/stress.log",
    benchmark:
        benchmark_tsv("persistbench/stress")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        config_sha=CONFIG_SHA,
        stress=[f"{m}={r}" for m, r in PB_STRESS.items()],
        references=[f"{row}={r}" for row, r in PB_STRESS_REFERENCES.items()],
    shell:
        "(python -m worldmemory.persistbench.stress --stress {params.stress:q} --references {params.references:q}"
        " --scores results/persistbench/scores --out {output.table:q}"
        " && python -m worldmemory.common.provenance --config {input.config:q} --outputs {output.table:q}"
        " --out {output.provenance:q}) 2>&1 | tee {log:q}"
