# WorldMemBench's qualitative figures (Figures 4, 6, 7; Appendix E): one job per case of
# worldmembench.figures, a row per model, outside the main job. `snakemake worldmembench_figures`
# builds them all. Figure 10 (a comparison's models as rows) is the same job, in worldmembench_comparisons.smk.

from worldmemory.worldmembench.qualitative import figure_selection

# case -> (trajectory, models): checked here, so a bad id is refused before anything runs
WMB_FIGURES = figure_selection(WMB.get("figures", {}), WMB_CASES, list(WMB_MODELS), WMB_RUNS)


rule worldmembench_figure:
    input:
        case=WMB_CASE_DIR,
        runs=figure_runs(lambda wc: WMB_FIGURES[wc.case][1], WMB_RUNS),
        config=CONFIG_STAMP,
    output:
        png=report(
            "results/worldmembench/figures/{case}.png",
            caption="../report/worldmembench_figures.rst",
            category=WMB_REPORT,
            subcategory="Figures 4, 6, 7",
        ),
        pdf="results/worldmembench/figures/{case}.pdf",
        provenance="results/worldmembench/figures/{case}.json",
    log:
        "results/logs/worldmembench/figures/{case}.log",
    benchmark:
        benchmark_tsv("worldmembench/figures/{case}")
    wildcard_constraints:
        case=unit_constraint(WMB_FIGURES),
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        config_sha=CONFIG_SHA,
        models=lambda wc: WMB_FIGURES[wc.case][1],
        trajectory=lambda wc: WMB_FIGURES[wc.case][0],
    shell:
        "(python -m worldmemory.worldmembench.qualitative --case {input.case:q} --results results/worldmembench"
        " --models {params.models:q} --trajectory {params.trajectory:q}"
        " --out-png {output.png:q} --out-pdf {output.pdf:q}"
        " && python -m worldmemory.common.provenance --config {input.config:q}"
        " --outputs {output.png:q} {output.pdf:q} --out {output.provenance:q})"
        " 2>&1 | tee {log:q}"


rule worldmembench_figures:
    input:
        expand("results/worldmembench/figures/{case}.png", case=WMB_FIGURES),
