# WorldMemBench: cases -> per-model rollouts -> per-model scores -> Table 2 and Table 5.

WMB = config["worldmembench"]
WMB_MODELS = WMB["models"]
WMB_EMBEDDED = WMB["cases"]["source"] == "embedded"
# The study's category in `snakemake --report` (captions under report/).
WMB_REPORT = "WorldMemBench (worldmembench)"



rule worldmembench_cases:
    output:
        directory("results/worldmembench/cases"),
    params:
        per_family=WMB["cases"]["per_family"],
        width=WMB["cases"]["width"],
        height=WMB["cases"]["height"],
        trajectories=json.dumps(WMB["cases"]["trajectories"], sort_keys=True),
        trajectory_params=json.dumps(WMB["trajectory_params"], sort_keys=True),
    log:
        "results/logs/worldmembench/cases.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    conda:
        "../envs/torch.yaml"
    shell:
        "python -m worldmemory.worldmembench.cases --out {output} --per-family {params.per_family}"
        " --width {params.width} --height {params.height} --trajectories {params.trajectories:q}"
        " --trajectory-params {params.trajectory_params:q} 2>&1 | tee {log}"


rule worldmembench_rollout:
    input:
        cases=worldmembench_cases_dir,
    output:
        directory("results/worldmembench/rollouts/{model}"),
    params:
        model=worldmembench_rollout_args,
    log:
        "results/logs/worldmembench/rollout_{model}.log",
    threads: 1
    resources:
        mem_mb=lambda wc: WMB_MODELS[wc.model]["mem_mb"],
        runtime=lambda wc: WMB_MODELS[wc.model]["runtime"],
        gpu=lambda wc: WMB_MODELS[wc.model]["gpu"],
    conda:
        "../envs/torch.yaml"
    shell:
        "python -m worldmemory.worldmembench.rollout --cases {input.cases} --model {wildcards.model}"
        " {params.model} --out {output} 2>&1 | tee {log}"


rule worldmembench_score:
    input:
        cases=worldmembench_cases_dir,
        rollouts="results/worldmembench/rollouts/{model}",
        features=features_input("worldmembench"),
    output:
        "results/worldmembench/scores/{model}.csv",
    params:
        features=features_args("worldmembench"),
    log:
        "results/logs/worldmembench/score_{model}.log",
    threads: 1
    resources:
        mem_mb=8000 if uses_dinov2("worldmembench") else 4000,
        runtime=60,
        gpu=GPU if uses_dinov2("worldmembench") else 0,
    conda:
        "../envs/torch.yaml"
    shell:
        "python -m worldmemory.worldmembench.score --cases {input.cases} --rollouts {input.rollouts}"
        " {params.features} --out {output} 2>&1 | tee {log}"


rule worldmembench_table2:
    input:
        scores=expand("results/worldmembench/scores/{model}.csv", model=sorted(WMB_MODELS)),
        paper=repo_path("resources", "paper_values", "worldmembench_table2.csv"),
    output:
        table2=report("results/table2.csv", caption="../report/worldmembench_table2.rst",
                      category=WMB_REPORT, subcategory="Table 2"),
        table5=report("results/worldmembench/table5.csv", caption="../report/worldmembench_table5.rst",
                      category=WMB_REPORT, subcategory="Table 5"),
        reasons=report("results/worldmembench/table2_nan_reasons.csv",
                       caption="../report/worldmembench_table2_nan_reasons.rst",
                       category=WMB_REPORT, subcategory="Table 2"),
        provenance="results/table2.json",
        **({"paper": report("results/worldmembench/table2_vs_paper.csv",
                            caption="../report/worldmembench_table2_vs_paper.rst",
                            category=WMB_REPORT, subcategory="Table 2")} if paper_runs("worldmembench") else {}),
    params:
        # The paper's numbers print beside ours only for runs of the paper's models (paper_name).
        paper=lambda wc, input, output: paper_args("worldmembench", input, output),
        config=config_json,
    log:
        "results/logs/worldmembench/table2.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    shell:
        "(python -m worldmemory.worldmembench.tables --scores {input.scores} --table2 {output.table2}"
        " --table5 {output.table5} --reasons {output.reasons} {params.paper}"
        " && python -m worldmemory.common.provenance --config {params.config:q}"
        " --outputs {output.table2} {output.table5} {output.reasons} --out {output.provenance})"
        " 2>&1 | tee {log}"


rule worldmembench_revisits:
    input:
        scores=expand("results/worldmembench/scores/{model}.csv", model=sorted(WMB_MODELS)),
    output:
        table8=report("results/worldmembench/table8.csv", caption="../report/worldmembench_table8.rst",
                      category=WMB_REPORT, subcategory="Table 8"),
        table9=report("results/worldmembench/table9.csv", caption="../report/worldmembench_table9.rst",
                      category=WMB_REPORT, subcategory="Table 9"),
        table10=report("results/worldmembench/table10.csv", caption="../report/worldmembench_table10.rst",
                       category=WMB_REPORT, subcategory="Table 10"),
        figure5_png=report("results/worldmembench/figure5.png", caption="../report/worldmembench_figure5.rst",
                           category=WMB_REPORT, subcategory="Figure 5"),
        figure5_pdf="results/worldmembench/figure5.pdf",
        provenance="results/worldmembench/revisits.json",
    params:
        config=config_json,
    log:
        "results/logs/worldmembench/revisits.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    shell:
        "(python -m worldmemory.worldmembench.revisits --scores {input.scores} --table8 {output.table8}"
        " --table9 {output.table9} --table10 {output.table10} --figure5-png {output.figure5_png}"
        " --figure5-pdf {output.figure5_pdf}"
        " && python -m worldmemory.common.provenance --config {params.config:q}"
        " --outputs {output.table8} {output.table9} {output.table10} {output.figure5_png} {output.figure5_pdf}"
        " --out {output.provenance})"
        " 2>&1 | tee {log}"


rule worldmembench_qualification:
    input:
        scores=expand("results/worldmembench/scores/{model}.csv", model=sorted(WMB_MODELS)),
        paper=repo_path("resources", "paper_values", "worldmembench_table12.csv"),
    output:
        table11=report("results/worldmembench/table11.csv", caption="../report/worldmembench_table11.rst",
                       category=WMB_REPORT, subcategory="Table 11"),
        table12=report("results/worldmembench/table12.csv", caption="../report/worldmembench_table12.rst",
                       category=WMB_REPORT, subcategory="Table 12"),
        table13=report("results/worldmembench/table13.csv", caption="../report/worldmembench_table13.rst",
                       category=WMB_REPORT, subcategory="Table 13"),
        provenance="results/worldmembench/qualification.json",
        **({"paper": report("results/worldmembench/table12_vs_paper.csv",
                            caption="../report/worldmembench_table12_vs_paper.rst",
                            category=WMB_REPORT, subcategory="Table 12")} if paper_runs("worldmembench") else {}),
    params:
        paper=lambda wc, input, output: paper_args("worldmembench", input, output),
        config=config_json,
    log:
        "results/logs/worldmembench/qualification.log",
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../envs/core.yaml"
    shell:
        "(python -m worldmemory.worldmembench.qualification --scores {input.scores}"
        " --table11 {output.table11} --table12 {output.table12} --table13 {output.table13} {params.paper}"
        " && python -m worldmemory.common.provenance --config {params.config:q}"
        " --outputs {output.table11} {output.table12} {output.table13} --out {output.provenance})"
        " 2>&1 | tee {log}"
