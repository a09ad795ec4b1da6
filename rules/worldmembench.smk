# WorldMemBench: cases -> per-model rollouts -> perception (estimators, per capability) ->
# scores (per metric family) -> Tables 2, 5, 8-13, Figure 5 and the perception-agreement table.

from worldmemory.worldmembench.perceive import CAPABILITIES as WMB_PERCEIVED
from worldmemory.worldmembench.agreement import FAMILIES_COMPARED as WMB_AGREEMENT_FAMILIES
from worldmemory.worldmembench.perception import FAMILIES as WMB_FAMILIES, NEEDS as WMB_NEEDS

WMB = config["worldmembench"]
WMB_MODELS = WMB["models"]
# the models, plus each reference model replayed as an external model (perception agreement)
WMB_RUNS = benchmark_runs("worldmembench")
WMB_REPLAYS = sorted(run for run, spec in WMB_RUNS.items() if "replays" in spec)
# The study's category in `snakemake --report` (captions under report/).
WMB_REPORT = "WorldMemBench (worldmembench)"


rule worldmembench_cases:
    output:
        directory("results/worldmembench/cases"),
    log:
        "results/logs/worldmembench/cases.log",
    benchmark:
        benchmark_tsv("worldmembench/cases")
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        per_family=WMB["cases"]["per_family"],
        per_category=WMB["cases"].get("per_category", 0),
        width=WMB["cases"]["width"],
        height=WMB["cases"]["height"],
        trajectories=json.dumps(WMB["cases"]["trajectories"], sort_keys=True),
        trajectory_params=json.dumps(WMB["trajectory_params"], sort_keys=True),
    shell:
        "python -m worldmemory.worldmembench.cases --out {output:q} --per-family {params.per_family:q}"
        " --per-category {params.per_category:q}"
        " --width {params.width:q} --height {params.height:q} --trajectories {params.trajectories:q}"
        " --trajectory-params {params.trajectory_params:q} 2>&1 | tee {log:q}"


rule worldmembench_rollout:
    input:
        cases=worldmembench_cases_dir,
        replayed=replayed_rollouts(WMB_RUNS, "worldmembench"),
    output:
        directory("results/worldmembench/rollouts/{model}"),
    log:
        "results/logs/worldmembench/rollout_{model}.log",
    benchmark:
        benchmark_tsv("worldmembench/rollout_{model}")
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
    shell:
        "python -m worldmemory.worldmembench.rollout --cases {input.cases:q} --model {wildcards.model:q}"
        " {params.model_args}"
        " --timeout-minutes {resources.runtime:q} --log-dir {params.log_dir:q} --out {output:q} 2>&1 | tee {log:q}"


# One estimator over every rollout of a run without truth channels (an external model or a
# replay); reference models need none (their scores read the truth channels).
rule worldmembench_perceive:
    input:
        cases=worldmembench_cases_dir,
        rollouts="results/worldmembench/rollouts/{model}",
        weights=perceive_weights("worldmembench"),
    output:
        "results/worldmembench/perception/{model}/{capability}.npz",
    log:
        "results/logs/worldmembench/perceive_{model}_{capability}.log",
    benchmark:
        benchmark_tsv("worldmembench/perceive_{model}_{capability}")
    wildcard_constraints:
        capability="|".join(WMB_PERCEIVED),
    conda:
        "../envs/perception.yaml"
    threads: 1
    resources:
        mem_mb=perceive_resource("worldmembench", "mem_mb"),
        runtime=perceive_resource("worldmembench", "runtime"),
        gpu=perceive_resource("worldmembench", "gpu"),
    params:
        backend_args=perceive_args("worldmembench"),
    shell:
        "export HF_HUB_OFFLINE=1; python -m worldmemory.worldmembench.perceive --cases {input.cases:q} --rollouts {input.rollouts:q}"
        " --capability {wildcards.capability:q} {params.backend_args} --out {output:q} 2>&1 | tee {log:q}"


rule worldmembench_score:
    input:
        cases=worldmembench_cases_dir,
        rollouts="results/worldmembench/rollouts/{model}",
        estimates=estimate_files("worldmembench", WMB_RUNS, lambda wc: WMB_NEEDS[wc.family]),
        features=features_input("worldmembench"),
    output:
        scores="results/worldmembench/scores/{model}/{family}.csv",
        info="results/worldmembench/scores/{model}/{family}.json",
    log:
        "results/logs/worldmembench/score_{model}_{family}.log",
    benchmark:
        benchmark_tsv("worldmembench/score_{model}_{family}")
    wildcard_constraints:
        family="|".join(WMB_FAMILIES),
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=8000 if uses_learned_features("worldmembench") else 4000,
        runtime=lambda wc: 60 if wc.family == "static" else 15,  # only Static Memory reads every frame's features
        gpu=lambda wc: GPU if uses_learned_features("worldmembench") and wc.family == "static" else 0,
    params:
        features_args=features_args("worldmembench"),
        perception_args=perception_args("worldmembench", WMB_RUNS),
    shell:
        "python -m worldmemory.worldmembench.score --cases {input.cases:q} --rollouts {input.rollouts:q}"
        " --family {wildcards.family:q} {params.perception_args}"
        " {params.features_args} --out {output.scores:q} --out-info {output.info:q} 2>&1 | tee {log:q}"


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
        " --table5 {output.table5:q} --reasons {output.reasons:q} {params.paper_args}"
        " && python -m worldmemory.common.provenance --config {input.config:q} --model-info {input.infos:q}"
        " --outputs {output.table2:q} {output.table5:q} {output.reasons:q} --out {output.provenance:q})"
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
        cases=worldmembench_cases_dir,
        rollouts=expand("results/worldmembench/rollouts/{model}", model=sorted(WMB_MODELS)),
        config=CONFIG_STAMP,
    output:
        table4=report(
            "results/worldmembench/table4.csv",
            caption="../report/worldmembench_table4.rst",
            category=WMB_REPORT,
            subcategory="Table 4",
        ),
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
    shell:
        "(python -m worldmemory.worldmembench.specs --cases {input.cases:q} --rollouts {input.rollouts:q}"
        " --out {output.table4:q}"
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
        scores=score_files(
            "worldmembench",
            [*WMB_REPLAYS, *(WMB_RUNS[r]["replays"] for r in WMB_REPLAYS)],
            [f"{f}.csv" for f in WMB_AGREEMENT_FAMILIES],
        ),
        estimates=[
            f"results/worldmembench/perception/{r}/{c}.npz"
            for r in WMB_REPLAYS
            for c in ("tracking", "camera")
            if c in estimators("worldmembench")
        ],
        rollouts=[f"results/worldmembench/rollouts/{WMB_RUNS[r]['replays']}" for r in WMB_REPLAYS],
        config=CONFIG_STAMP,
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
