# Table 3 (Section 5.5, Appendix H): controlled comparisons of one model's variants
# (worldmembench.comparisons). Outside the main job: the variants' rollouts take minutes.

WMB_COMPARISONS = WMB["comparisons"]


rule worldmembench_comparison:
    input:
        scores=lambda wc: score_files(
            "worldmembench", WMB_COMPARISONS[wc.comparison]["models"], [f"{f}.csv" for f in WMB_FAMILIES]
        ),
        infos=lambda wc: score_files(
            "worldmembench", WMB_COMPARISONS[wc.comparison]["models"], [f"{f}.json" for f in WMB_FAMILIES]
        ),
        # each model's costs.csv (the rollouts' wall time) beside its manifest.json
        costs=lambda wc: expand(
            "results/worldmembench/rollouts/{model}/costs.csv", model=WMB_COMPARISONS[wc.comparison]["models"]
        ),
        manifests=lambda wc: expand(
            "results/worldmembench/rollouts/{model}/manifest.json", model=WMB_COMPARISONS[wc.comparison]["models"]
        ),
        paper=repo_path("resources", "paper_values", "worldmembench_table3.csv"),
        config=CONFIG_STAMP,
    output:
        table3=report(
            "results/worldmembench/comparisons/{comparison}/table3.csv",
            caption="../report/worldmembench_table3.rst",
            category=WMB_REPORT,
            subcategory="Table 3",
        ),
        reasons="results/worldmembench/comparisons/{comparison}/table3_nan_reasons.csv",
        paper=report(
            "results/worldmembench/comparisons/{comparison}/table3_vs_paper.csv",
            caption="../report/worldmembench_table3_vs_paper.rst",
            category=WMB_REPORT,
            subcategory="Table 3",
        ),
        provenance="results/worldmembench/comparisons/{comparison}/table3.json",
    log:
        "results/logs/worldmembench/comparisons/{comparison}.log",
    benchmark:
        benchmark_tsv("worldmembench/comparisons/{comparison}")
    wildcard_constraints:
        comparison=unit_constraint(WMB_COMPARISONS),
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        config_sha=CONFIG_SHA,
        models=lambda wc: WMB_COMPARISONS[wc.comparison]["models"],
        baseline=lambda wc: WMB_COMPARISONS[wc.comparison]["baseline"],
        rollouts=lambda wc, input: [os.path.dirname(c) for c in input.costs],
        # the paper's Table 3 rows beside the models labelled with them (paper_names)
        paper_args=lambda wc, input, output: paper_args(WMB_COMPARISONS[wc.comparison]["paper_names"], input, output),
    shell:
        "(python -m worldmemory.worldmembench.comparison --comparison {wildcards.comparison:q}"
        " --scores {input.scores:q} --rollouts {params.rollouts:q} --models {params.models:q}"
        " --baseline {params.baseline:q} --out {output.table3:q} --reasons {output.reasons:q} {params.paper_args}"
        " && python -m worldmemory.common.provenance --config {input.config:q} --model-info {input.infos:q}"
        " --outputs {output.table3:q} {output.reasons:q} {output.paper:q} --out {output.provenance:q})"
        " 2>&1 | tee {log:q}"


# every comparison's Table 3 stacked (its comparison column tells them apart)
rule worldmembench_table3:
    input:
        expand("results/worldmembench/comparisons/{comparison}/table3.csv", comparison=WMB_COMPARISONS),
    output:
        report(
            "results/worldmembench/table3.csv",
            caption="../report/worldmembench_table3.rst",
            category=WMB_REPORT,
            subcategory="Table 3",
        ),
    log:
        "results/logs/worldmembench/table3.log",
    benchmark:
        benchmark_tsv("worldmembench/table3")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "python -m worldmemory.report.tables --concat {input:q} --out {output:q} 2>&1 | tee {log:q}"


# Figure 10 (Appendix H): the qualitative figure of worldmembench.figures' cases (and trajectories)
# with a comparison's models as rows, top to bottom in the comparison's order
use rule worldmembench_figure as worldmembench_comparison_figure with:
    input:
        case=WMB_CASE_DIR,
        runs=figure_runs(lambda wc: WMB_COMPARISONS[wc.comparison]["models"], WMB_RUNS),
        config=CONFIG_STAMP,
    output:
        png=report(
            "results/worldmembench/comparisons/{comparison}/figures/{case}.png",
            caption="../report/worldmembench_figures.rst",
            category=WMB_REPORT,
            subcategory="Figure 10",
        ),
        pdf="results/worldmembench/comparisons/{comparison}/figures/{case}.pdf",
        provenance="results/worldmembench/comparisons/{comparison}/figures/{case}.json",
    log:
        "results/logs/worldmembench/comparisons/{comparison}/figures/{case}.log",
    benchmark:
        benchmark_tsv("worldmembench/comparisons/{comparison}/figures/{case}")
    wildcard_constraints:
        case=unit_constraint(WMB_FIGURES),
        comparison=unit_constraint(WMB_COMPARISONS),
    params:
        config_sha=CONFIG_SHA,
        models=lambda wc: WMB_COMPARISONS[wc.comparison]["models"],
        trajectory=lambda wc: WMB_FIGURES[wc.case][0],


# every comparison's Figure 10 over every case of worldmembench.figures
rule worldmembench_comparison_figures:
    input:
        expand(
            "results/worldmembench/comparisons/{comparison}/figures/{case}.png",
            comparison=WMB_COMPARISONS,
            case=WMB_FIGURES,
        ),
