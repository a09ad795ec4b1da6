# PersistBench: 360-degree sequences -> per-model rollouts -> perception (estimators) -> scores
# (Perm / Cont / App, one family) -> Table 1, ablation, figure and the perception-agreement table.

from worldmemory.persistbench.perceive import CAPABILITIES as PB_PERCEIVED
from worldmemory.persistbench.perception import CAPABILITIES as PB_NEEDS

PB = config["persistbench"]
PB_MODELS = PB["models"]
# the models, plus each reference model replayed as an external model (perception agreement)
PB_RUNS = benchmark_runs("persistbench")
PB_REPLAYS = sorted(run for run, spec in PB_RUNS.items() if "replays" in spec)
PB_FAMILY = "persistence"  # Perm, Cont and App: one family, as Cont and App average the frames Perm keeps
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
        # the relative schedule ({shape, bounds}), which replaces `invisible` when set; null if not
        schedule=json.dumps(PB["sequences"].get("schedule"), sort_keys=True),
        camera=json.dumps(PB["camera"], sort_keys=True),
    shell:
        "python -m worldmemory.persistbench.prepare --out {output:q} --source {params.source:q}"
        " --per-kind {params.per_kind:q}"
        " --n-frames {params.n_frames:q} --pano-width {params.pano_width:q} --invisible {params.invisible:q}"
        " --schedule {params.schedule:q} --camera {params.camera:q} 2>&1 | tee {log:q}"


rule persistbench_rollout:
    input:
        sequences="results/persistbench/sequences",
        replayed=replayed_rollouts(PB_RUNS, "persistbench"),
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
        mem_mb=lambda wc: PB_RUNS[wc.model]["mem_mb"],
        runtime=lambda wc: PB_RUNS[wc.model]["runtime"],
        gpu=lambda wc: PB_RUNS[wc.model]["gpu"],
    params:
        # an external command's log is copied here, where it outlives a failed job's output
        log_dir=lambda wc: f"results/logs/persistbench/commands/{wc.model}",
        model_args=lambda wc: model_args(PB_RUNS[wc.model]),
    shell:
        "python -m worldmemory.persistbench.rollout --sequences {input.sequences:q} --model {wildcards.model:q}"
        " {params.model_args}"
        " --timeout-minutes {resources.runtime:q} --log-dir {params.log_dir:q} --out {output:q} 2>&1 | tee {log:q}"


# One estimator over every generated video of a run without truth channels; reference models
# need none (their scores read the truth channels).
rule persistbench_perceive:
    input:
        sequences="results/persistbench/sequences",
        rollouts="results/persistbench/rollouts/{model}",
        weights=perceive_weights("persistbench"),
        # the same-entity judge looks at the tracker's crops
        tracking=lambda wc: (
            f"results/persistbench/perception/{wc.model}/tracking.npz" if wc.capability == "judge" else []
        ),
    output:
        "results/persistbench/perception/{model}/{capability}.npz",
    log:
        "results/logs/persistbench/perceive_{model}_{capability}.log",
    benchmark:
        benchmark_tsv("persistbench/perceive_{model}_{capability}")
    wildcard_constraints:
        capability="|".join(PB_PERCEIVED),
    conda:
        "../envs/perception.yaml"
    threads: 1
    resources:
        mem_mb=perceive_resource("persistbench", "mem_mb"),
        runtime=perceive_resource("persistbench", "runtime"),
        gpu=perceive_resource("persistbench", "gpu"),
    params:
        backend_args=perceive_args("persistbench"),
        estimates_args=lambda wc, input: (
            shlex.join(["--estimates", os.path.dirname(input.tracking)]) if input.tracking else ""
        ),
    shell:
        "export HF_HUB_OFFLINE=1; python -m worldmemory.persistbench.perceive --sequences {input.sequences:q} --rollouts {input.rollouts:q}"
        " --capability {wildcards.capability:q} {params.backend_args} {params.estimates_args}"
        " --out {output:q} 2>&1 | tee {log:q}"


rule persistbench_score:
    input:
        sequences="results/persistbench/sequences",
        rollouts="results/persistbench/rollouts/{model}",
        estimates=estimate_files("persistbench", PB_RUNS, lambda wc: PB_NEEDS),
        features=features_input("persistbench"),
    output:
        scores=f"results/persistbench/scores/{{model}}/{PB_FAMILY}.csv",
        frames=f"results/persistbench/scores/{{model}}/{PB_FAMILY}_frames.csv",
        info=f"results/persistbench/scores/{{model}}/{PB_FAMILY}.json",
    log:
        "results/logs/persistbench/score_{model}.log",
    benchmark:
        benchmark_tsv("persistbench/score_{model}")
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=8000 if uses_learned_features("persistbench") else 4000,
        runtime=60,
        gpu=GPU if uses_learned_features("persistbench") else 0,
    params:
        features_args=features_args("persistbench"),
        perception_args=perception_args("persistbench", PB_RUNS),
        alpha=PB["alpha"],
    shell:
        "python -m worldmemory.persistbench.score --sequences {input.sequences:q} --rollouts {input.rollouts:q}"
        " {params.perception_args}"
        " {params.features_args} --alpha {params.alpha:q} --out-scores {output.scores:q} --out-frames {output.frames:q}"
        " --out-info {output.info:q} 2>&1 | tee {log:q}"


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
        scores=score_files(
            "persistbench",
            [*PB_REPLAYS, *(PB_RUNS[r]["replays"] for r in PB_REPLAYS)],
            [f"{PB_FAMILY}.csv"],
        ),
        estimates=[
            f"results/persistbench/perception/{r}/tracking.npz"
            for r in PB_REPLAYS
            if "tracking" in estimators("persistbench")
        ],
        rollouts=[f"results/persistbench/rollouts/{PB_RUNS[r]['replays']}" for r in PB_REPLAYS],
        sequences="results/persistbench/sequences",
        config=CONFIG_STAMP,
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
        " --rollouts results/persistbench/rollouts --sequences {input.sequences:q}"
        " --estimates results/persistbench/perception --out {output.table:q}"
        " && python -m worldmemory.common.provenance --config {input.config:q} --outputs {output.table:q}"
        " --out {output.provenance:q}) 2>&1 | tee {log:q}"
