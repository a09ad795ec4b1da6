# WorldMemBench: cases -> rollouts -> perception (the configured estimators) -> scores (every metric
# family), each one job per (model, case), then per model its manifest and per-family score files,
# then Tables 2, 4, 5, 8-13, Figure 5 and the perception-agreement table. At the papers' size a
# model's cases are hundreds of GPU jobs that a cluster runs at once and that fail one at a time.

from worldmemory.worldmembench.perceive import APPLIES as WMB_APPLIES
from worldmemory.worldmembench.agreement import FAMILIES_COMPARED as WMB_AGREEMENT_FAMILIES
from worldmemory.worldmembench.perception import FAMILIES as WMB_FAMILIES, NEEDS as WMB_NEEDS

WMB = config["worldmembench"]
WMB_MODELS = WMB["models"]
# the models, plus each reference model replayed as an external model (perception agreement)
WMB_RUNS = benchmark_runs("worldmembench")
WMB_REPLAYS = agreement_replays("worldmembench", WMB_RUNS, ["clean"])  # perception_agreement.csv (main job)
WMB_ALL_REPLAYS = agreement_replays(
    "worldmembench", WMB_RUNS, ["clean", *WMB["agreement_degradations"]]
)  # ..._degraded.csv
WMB_STRESS = stress_runs(WMB_RUNS)  # stress.csv (outside the main job): stress model -> run
WMB_STRESS_REFERENCES = stress_reference_runs("worldmembench")  # its reference rows -> their runs
WMB_CASES = worldmembench_cases()  # case id -> family, trajectories (sorted by id)
WMB_CASE_DIR = worldmembench_case_dir()
STUDY_UNITS["worldmembench"] = len(WMB_CASES)
WMB_ESTIMATED = sorted(run for run, spec in WMB_RUNS.items() if spec["kind"] == "external")
# The study's category in `snakemake --report` (captions under report/).
WMB_REPORT = "WorldMemBench (worldmembench)"
# The metric families scored per run: a replay's (or a stress model's) General Video Quality has no
# oracle to agree with, nor an expectation.
WMB_SCORED = {run: WMB_AGREEMENT_FAMILIES if "sources" in spec else WMB_FAMILIES for run, spec in WMB_RUNS.items()}
# the estimators that read anything of a case's family (perceive.APPLIES) for a family the run scores
WMB_APPLYING = applying_estimators(
    "worldmembench",
    lambda wc, c: WMB_CASES[wc.case]["family"] in WMB_APPLIES[c]
    and any(c in WMB_NEEDS[f] for f in WMB_SCORED[wc.model]),
)
WMB_PERCEIVE_RESOURCES = perceive_resources(WMB_APPLYING)
# The imaging-quality calibration (clean > blur > blur + noise on every reference video) runs for a
# weight-free backend; a learned one's options are perception's (not built here).
WMB_QUALITY = configured_estimator("worldmembench", "imaging_quality")
WMB_QUALITY_CALIBRATED = WMB_QUALITY.backend != "none" and WMB_QUALITY.model is None
WMB_REFERENCES = sorted(m for m, spec in WMB_MODELS.items() if spec["kind"] == "reference")


wildcard_constraints:
    case=unit_constraint(WMB_CASES),


# A model's lists of its cases' files are seconds of reading: on a cluster they run where Snakemake
# runs rather than waiting in the queue.
localrules:
    worldmembench_rollouts,
    worldmembench_scores,


rule worldmembench_case:
    output:
        directory("results/worldmembench/cases/{case}"),
    log:
        "results/logs/worldmembench/cases/{case}.log",
    benchmark:
        benchmark_tsv("worldmembench/cases/{case}")
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        family=lambda wc: WMB_CASES[wc.case]["family"],
        category_args=lambda wc: shlex.join(
            ["--category", WMB_CASES[wc.case]["category"]] if WMB_CASES[wc.case]["category"] else []
        ),
        width=WMB["cases"]["width"],
        height=WMB["cases"]["height"],
        trajectories=lambda wc: json.dumps(WMB_CASES[wc.case]["trajectories"]),
        trajectory_params=json.dumps(WMB["trajectory_params"], sort_keys=True),
    shell:
        "python -m worldmemory.worldmembench.cases --out {output:q} --case {wildcards.case:q} --family {params.family:q}"
        " {params.category_args} --width {params.width:q} --height {params.height:q}"
        " --trajectories {params.trajectories:q} --trajectory-params {params.trajectory_params:q} 2>&1 | tee {log:q}"


# One job per (model, case): its videos along every trajectory of the case. An external model's
# rollouts are made in results/worldmembench/rollout_store/ first and linked in once finished, so
# a rerun after a failure redoes only the rollout that failed (worldmemory/common/rollout_store.py).
rule worldmembench_rollout:
    input:
        case=WMB_CASE_DIR,
        replayed=replayed_unit(WMB_RUNS, "worldmembench", "case"),
    output:
        directory("results/worldmembench/rollouts/{model}/{case}"),
    log:
        "results/logs/worldmembench/rollouts/{model}/{case}.log",
    benchmark:
        benchmark_tsv("worldmembench/rollout/{model}/{case}")
    wildcard_constraints:
        model=unit_constraint(WMB_RUNS),
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: WMB_RUNS[wc.model]["mem_mb"],
        runtime=lambda wc: WMB_RUNS[wc.model]["runtime"],
        gpu=lambda wc: WMB_RUNS[wc.model]["gpu"],
    params:
        # an external command's log is copied here, where it outlives a failed job's output
        log_dir=lambda wc: f"results/logs/worldmembench/commands/{wc.model}",
        model_args=worldmembench_rollout_args,
        store_args=store_args(WMB_RUNS, "worldmembench", lambda wc: wc.case),
    shell:
        "gpu_slot {resources.gpu:q}"
        " python -m worldmemory.worldmembench.rollout --case {input.case:q} --model {wildcards.model:q}"
        " {params.model_args} {params.store_args} --timeout-minutes {resources.runtime:q}"
        " --log-dir {params.log_dir:q} --out {output:q} 2>&1 | tee {log:q}"


# A model's rollouts listed: its manifest.json (every case's, as Table 4 and the agreement table
# read them) and costs.csv (each rollout's wall time and peak memory).
rule worldmembench_rollouts:
    input:
        lambda wc: expand("results/worldmembench/rollouts/{{model}}/{case}", case=WMB_CASES),
    output:
        manifest="results/worldmembench/rollouts/{model}/manifest.json",
        costs="results/worldmembench/rollouts/{model}/costs.csv",
    log:
        "results/logs/worldmembench/rollouts/{model}.log",
    wildcard_constraints:
        model=unit_constraint(WMB_RUNS),
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        cases=list(WMB_CASES),
    shell:
        "python -m worldmemory.common.rollout_index --model-dir results/worldmembench/rollouts/{wildcards.model:q}"
        " --units {params.cases:q} 2>&1 | tee {log:q}"


# The configured estimators over one case's rollouts of a run without truth channels (an external
# model or a replay); reference models need none (their scores read the truth channels).
rule worldmembench_perceive:
    input:
        case=WMB_CASE_DIR,
        rollouts="results/worldmembench/rollouts/{model}/{case}",
        weights=perceive_weights("worldmembench", WMB_APPLYING),
    output:
        directory("results/worldmembench/perception/{model}/{case}"),
    log:
        "results/logs/worldmembench/perception/{model}/{case}.log",
    benchmark:
        benchmark_tsv("worldmembench/perceive/{model}/{case}")
    wildcard_constraints:
        model=unit_constraint(WMB_ESTIMATED),
    conda:
        "../envs/perception.yaml"
    threads: 1
    resources:
        **WMB_PERCEIVE_RESOURCES,
    params:
        estimators_args=perceive_args("worldmembench", WMB_APPLYING),
    shell:
        "export HF_HUB_OFFLINE=1; gpu_slot {resources.gpu:q}"
        " python -m worldmemory.worldmembench.perceive --case {input.case:q} --rollouts {input.rollouts:q}"
        " {params.estimators_args} --out {output:q} 2>&1 | tee {log:q}"


# Every metric family of one case's rollouts of one run.
rule worldmembench_score:
    input:
        case=WMB_CASE_DIR,
        rollouts="results/worldmembench/rollouts/{model}/{case}",
        estimates=estimate_dir("worldmembench", WMB_RUNS, "case"),
        features=features_input("worldmembench"),
    output:
        directory("results/worldmembench/scores/{model}/cases/{case}"),
    log:
        "results/logs/worldmembench/scores/{model}/{case}.log",
    benchmark:
        benchmark_tsv("worldmembench/score/{model}/{case}")
    wildcard_constraints:
        model=unit_constraint(WMB_RUNS),
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=8000 if uses_learned_features("worldmembench") else 4000,
        runtime=lambda wc: 15 if WMB_CASES[wc.case]["family"] == "dynamic" else 30,
        # only Static Memory reads every frame's features, and nothing of a dynamic case
        gpu=lambda wc: (
            GPU if uses_learned_features("worldmembench") and WMB_CASES[wc.case]["family"] != "dynamic" else 0
        ),
    params:
        features_args=features_args("worldmembench"),
        perception_args=perception_args("worldmembench", WMB_RUNS, "case"),
        families=lambda wc: WMB_SCORED[wc.model],
    shell:
        "gpu_slot {resources.gpu:q}"
        " python -m worldmemory.worldmembench.score --case {input.case:q} --rollouts {input.rollouts:q}"
        " --families {params.families:q} {params.perception_args} {params.features_args}"
        " --out {output:q} 2>&1 | tee {log:q}"


# A run's case scores joined into one file per metric family (what the tables read).
rule worldmembench_scores:
    input:
        lambda wc: expand("results/worldmembench/scores/{{model}}/cases/{case}", case=WMB_CASES),
    output:
        [f"results/worldmembench/scores/{{model}}/{f}.{ext}" for f in WMB_FAMILIES for ext in ("csv", "json")],
    log:
        "results/logs/worldmembench/scores/{model}.log",
    wildcard_constraints:
        model=unit_constraint(WMB_RUNS),
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        cases=list(WMB_CASES),
    shell:
        "python -m worldmemory.worldmembench.gather --scores results/worldmembench/scores/{wildcards.model:q}"
        " --cases {params.cases:q} 2>&1 | tee {log:q}"


rule worldmembench_table2:
    input:
        scores=score_files("worldmembench", WMB_MODELS, [f"{f}.csv" for f in WMB_FAMILIES]),
        infos=score_files("worldmembench", WMB_MODELS, [f"{f}.json" for f in WMB_FAMILIES]),
        paper=repo_path("resources", "paper_values", "worldmembench_table2.csv"),
        config=CONFIG_STAMP,
    output:
        table2=report(
            "results/table2.csv",
            caption="../report/worldmembench_table2.rst",
            category=WMB_REPORT,
            subcategory="Table 2",
        ),
        table5=report(
            "results/worldmembench/table5.csv",
            caption="../report/worldmembench_table5.rst",
            category=WMB_REPORT,
            subcategory="Table 5",
        ),
        reasons=report(
            "results/worldmembench/table2_nan_reasons.csv",
            caption="../report/worldmembench_table2_nan_reasons.rst",
            category=WMB_REPORT,
            subcategory="Table 2",
        ),
        departure=report(
            "results/worldmembench/table2_departure.csv",
            caption="../report/worldmembench_table2_departure.rst",
            category=WMB_REPORT,
            subcategory="Table 2",
        ),
        provenance="results/table2.json",
        paper=report(
            "results/worldmembench/table2_vs_paper.csv",
            caption="../report/worldmembench_table2_vs_paper.rst",
            category=WMB_REPORT,
            subcategory="Table 2",
        ),
    log:
        "results/logs/worldmembench/table2.log",
    benchmark:
        benchmark_tsv("worldmembench/table2")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        config_sha=CONFIG_SHA,
        # The paper's numbers print beside ours only for runs of the paper's models (paper_name).
        paper_args=lambda wc, input, output: paper_args(paper_runs("worldmembench"), input, output),
    shell:
        "(python -m worldmemory.worldmembench.tables --scores {input.scores:q} --table2 {output.table2:q}"
        " --table5 {output.table5:q} --reasons {output.reasons:q} --departure {output.departure:q} {params.paper_args}"
        " && python -m worldmemory.common.provenance --config {input.config:q} --model-info {input.infos:q}"
        " --outputs {output.table2:q} {output.table5:q} {output.reasons:q} {output.departure:q}"
        " --out {output.provenance:q})"
        " 2>&1 | tee {log:q}"


rule worldmembench_revisits:
    input:
        scores=score_files("worldmembench", WMB_MODELS, [f"{f}.csv" for f in WMB_FAMILIES]),
        infos=score_files("worldmembench", WMB_MODELS, [f"{f}.json" for f in WMB_FAMILIES]),
        config=CONFIG_STAMP,
    output:
        table8=report(
            "results/worldmembench/table8.csv",
            caption="../report/worldmembench_table8.rst",
            category=WMB_REPORT,
            subcategory="Table 8",
        ),
        table9=report(
            "results/worldmembench/table9.csv",
            caption="../report/worldmembench_table9.rst",
            category=WMB_REPORT,
            subcategory="Table 9",
        ),
        table10=report(
            "results/worldmembench/table10.csv",
            caption="../report/worldmembench_table10.rst",
            category=WMB_REPORT,
            subcategory="Table 10",
        ),
        figure5_png=report(
            "results/worldmembench/figure5.png",
            caption="../report/worldmembench_figure5.rst",
            category=WMB_REPORT,
            subcategory="Figure 5",
        ),
        figure5_pdf="results/worldmembench/figure5.pdf",
        provenance="results/worldmembench/revisits.json",
    log:
        "results/logs/worldmembench/revisits.log",
    benchmark:
        benchmark_tsv("worldmembench/revisits")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        config_sha=CONFIG_SHA,
    shell:
        "(python -m worldmemory.worldmembench.revisits --scores {input.scores:q} --table8 {output.table8:q}"
        " --table9 {output.table9:q} --table10 {output.table10:q} --figure5-png {output.figure5_png:q}"
        " --figure5-pdf {output.figure5_pdf:q}"
        " && python -m worldmemory.common.provenance --config {input.config:q} --model-info {input.infos:q}"
        " --outputs {output.table8:q} {output.table9:q} {output.table10:q} {output.figure5_png:q} {output.figure5_pdf:q}"
        " --out {output.provenance:q})"
        " 2>&1 | tee {log:q}"


rule worldmembench_table4:
    input:
        cases=[os.path.join(worldmembench_cases_root(), c) for c in WMB_CASES],
        rollouts=expand("results/worldmembench/rollouts/{model}/manifest.json", model=sorted(WMB_MODELS)),
        costs=expand("results/worldmembench/rollouts/{model}/costs.csv", model=sorted(WMB_MODELS)),
        config=CONFIG_STAMP,
    output:
        table4=report(
            "results/worldmembench/table4.csv",
            caption="../report/worldmembench_table4.rst",
            category=WMB_REPORT,
            subcategory="Table 4",
        ),
        # what each model's rollouts cost (Appendix H's latency): not byte-stable, it is timed
        latency="results/worldmembench/latency.csv",
        provenance="results/worldmembench/table4.json",
    log:
        "results/logs/worldmembench/table4.log",
    benchmark:
        benchmark_tsv("worldmembench/table4")
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        config_sha=CONFIG_SHA,
        cases_root=lambda wc, input: os.path.dirname(input.cases[0]),
        rollouts=lambda wc, input: [os.path.dirname(m) for m in input.rollouts],
    shell:
        "(python -m worldmemory.worldmembench.specs --cases {params.cases_root:q} --rollouts {params.rollouts:q}"
        " --out {output.table4:q} --latency {output.latency:q}"
        " && python -m worldmemory.common.provenance --config {input.config:q}"
        " --outputs {output.table4:q} --out {output.provenance:q})"
        " 2>&1 | tee {log:q}"


rule worldmembench_qualification:
    input:
        scores=score_files("worldmembench", WMB_MODELS, [f"{f}.csv" for f in WMB_FAMILIES]),
        infos=score_files("worldmembench", WMB_MODELS, [f"{f}.json" for f in WMB_FAMILIES]),
        paper=repo_path("resources", "paper_values", "worldmembench_table12.csv"),
        config=CONFIG_STAMP,
    output:
        table11=report(
            "results/worldmembench/table11.csv",
            caption="../report/worldmembench_table11.rst",
            category=WMB_REPORT,
            subcategory="Table 11",
        ),
        table12=report(
            "results/worldmembench/table12.csv",
            caption="../report/worldmembench_table12.rst",
            category=WMB_REPORT,
            subcategory="Table 12",
        ),
        table13=report(
            "results/worldmembench/table13.csv",
            caption="../report/worldmembench_table13.rst",
            category=WMB_REPORT,
            subcategory="Table 13",
        ),
        provenance="results/worldmembench/qualification.json",
        paper=report(
            "results/worldmembench/table12_vs_paper.csv",
            caption="../report/worldmembench_table12_vs_paper.rst",
            category=WMB_REPORT,
            subcategory="Table 12",
        ),
    log:
        "results/logs/worldmembench/qualification.log",
    benchmark:
        benchmark_tsv("worldmembench/qualification")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        config_sha=CONFIG_SHA,
        paper_args=lambda wc, input, output: paper_args(paper_runs("worldmembench"), input, output),
    shell:
        "(python -m worldmemory.worldmembench.qualification --scores {input.scores:q}"
        " --table11 {output.table11:q} --table12 {output.table12:q} --table13 {output.table13:q} {params.paper_args}"
        " && python -m worldmemory.common.provenance --config {input.config:q} --model-info {input.infos:q}"
        " --outputs {output.table11:q} {output.table12:q} {output.table13:q} --out {output.provenance:q})"
        " 2>&1 | tee {log:q}"


rule worldmembench_agreement:
    input:
        **agreement_inputs(
            "worldmembench", WMB_RUNS, WMB_REPLAYS, [f"{f}.csv" for f in WMB_AGREEMENT_FAMILIES], WMB_CASES
        ),
    output:
        table=report(
            "results/worldmembench/perception_agreement.csv",
            caption="../report/worldmembench_perception_agreement.rst",
            category=WMB_REPORT,
            subcategory="Perception agreement",
        ),
        provenance="results/worldmembench/perception_agreement.json",
    log:
        "results/logs/worldmembench/agreement.log",
    benchmark:
        benchmark_tsv("worldmembench/agreement")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        config_sha=CONFIG_SHA,
        pairs=[f"{WMB_RUNS[r]['replays']}={r}" for r in WMB_REPLAYS],
    shell:
        "(python -m worldmemory.worldmembench.agreement --pairs {params.pairs:q} --scores results/worldmembench/scores"
        " --rollouts results/worldmembench/rollouts --estimates results/worldmembench/perception --out {output.table:q}"
        " && python -m worldmemory.common.provenance --config {input.config:q} --outputs {output.table:q}"
        " --out {output.provenance:q}) 2>&1 | tee {log:q}"


# The same table over the clean and the degraded replays (agreement_degradations): outside the main job.
use rule worldmembench_agreement as worldmembench_agreement_degraded with:
    input:
        **agreement_inputs(
            "worldmembench", WMB_RUNS, WMB_ALL_REPLAYS, [f"{f}.csv" for f in WMB_AGREEMENT_FAMILIES], WMB_CASES
        ),
    output:
        table=report(
            "results/worldmembench/perception_agreement_degraded.csv",
            caption="../report/worldmembench_perception_agreement.rst",
            category=WMB_REPORT,
            subcategory="Perception agreement",
        ),
        provenance="results/worldmembench/perception_agreement_degraded.json",
    log:
        "results/logs/worldmembench/agreement_degraded.log",
    benchmark:
        benchmark_tsv("worldmembench/agreement_degraded")
    params:
        config_sha=CONFIG_SHA,
        pairs=[f"{WMB_RUNS[r]['replays']}={r}" for r in WMB_ALL_REPLAYS],


# The stress gallery: each stress model's readings against what the estimators should read
# (worldmemory/external/stress.py, docs/perception.md "Stress gallery"): outside the main job.
# torch.yaml: its transforms' module (external/stress.py) reads videos in the functions it does not use
rule worldmembench_stress:
    input:
        scores=score_files(
            "worldmembench",
            [*WMB_STRESS.values(), *WMB_STRESS_REFERENCES.values()],
            [f"{f}.csv" for f in WMB_AGREEMENT_FAMILIES],
        ),
        estimates_dirs=[
            f"results/worldmembench/perception/{r}/{c}"
            for r in [*WMB_STRESS.values(), *WMB_STRESS_REFERENCES.values()]
            for c in WMB_CASES
        ],
        # the truth the tracker's IoU is read against: the omniscient's and each replayed model's
        rollouts=[
            f"results/worldmembench/rollouts/{m}/manifest.json"
            for m in sorted(
                {stress_truth("worldmembench"), *(WMB_RUNS[r]["replays"] for r in WMB_STRESS_REFERENCES.values())}
            )
        ],
        config=CONFIG_STAMP,
    output:
        table=report(
            "results/worldmembench/stress.csv",
            caption="../report/worldmembench_stress.rst",
            category=WMB_REPORT,
            subcategory="Perception agreement",
        ),
        provenance="results/worldmembench/stress.json",
    log:
        "results/logs/worldmembench/stress.log",
    benchmark:
        benchmark_tsv("worldmembench/stress")
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        config_sha=CONFIG_SHA,
        stress=[f"{m}={r}" for m, r in WMB_STRESS.items()],
        references=[f"{row}={r}" for row, r in WMB_STRESS_REFERENCES.items()],
        truth=stress_truth("worldmembench"),
    shell:
        "(python -m worldmemory.worldmembench.stress --stress {params.stress:q} --references {params.references:q}"
        " --truth {params.truth:q} --scores results/worldmembench/scores --rollouts results/worldmembench/rollouts"
        " --estimates results/worldmembench/perception --out {output.table:q}"
        " && python -m worldmemory.common.provenance --config {input.config:q} --outputs {output.table:q}"
        " --out {output.provenance:q}) 2>&1 | tee {log:q}"


rule worldmembench_quality_calibration:
    input:
        manifests=[f"results/worldmembench/rollouts/{m}/manifest.json" for m in WMB_REFERENCES],
        config=CONFIG_STAMP,
    output:
        table=report(
            "results/worldmembench/quality_calibration.csv",
            caption="../report/worldmembench_quality_calibration.rst",
            category=WMB_REPORT,
            subcategory="Perception agreement",
        ),
    log:
        "results/logs/worldmembench/quality_calibration.log",
    benchmark:
        benchmark_tsv("worldmembench/quality_calibration")
    conda:
        "../envs/perception.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        backend=WMB_QUALITY.backend,
    shell:
        "python -m worldmemory.perception.quality_calibration --backend {params.backend:q}"
        " --manifests {input.manifests:q} --out {output.table:q} 2>&1 | tee {log:q}"


# the qualitative figures (Figures 4, 6, 7)
include: "worldmembench_figures.smk"
# the human study's annotation pages (Appendix F, Figures 8 and 9)
include: "worldmembench_annotation.smk"
# Table 3's controlled comparisons of a model's variants (Section 5.5, Appendix H)
include: "worldmembench_comparisons.smk"
# the human study's sets, simulated annotators and Tables 6, 7 (Appendix F)
include: "worldmembench_human.smk"
