# WorldMemBench's human study (Appendix F): the annotation page of each study (Figure 8: blinded
# A/B pairs; Figure 9: the event-gated checklist), built from the study set, its hidden key and
# the rollouts, into its own folder <study>/page (the key stays outside what is served), every clip
# and image at worldmembench.cases.width x height; opened from disk or served by
# `python -m http.server -d results/worldmembench/human_study/<study>/page`.

# what annotators may see, per study (the human-study file contract)
WMB_STUDY_SETS = {"static": "pairs.json", "dynamic": "instances.json"}


rule worldmembench_annotation_page:
    input:
        study_set=lambda wc: f"results/worldmembench/human_study/{wc.study}/{WMB_STUDY_SETS[wc.study]}",
        key="results/worldmembench/human_study/{study}/key.json",
        manifests=expand("results/worldmembench/rollouts/{model}/manifest.json", model=WMB_MODELS),
    output:
        page="results/worldmembench/human_study/{study}/page/index.html",
        data="results/worldmembench/human_study/{study}/page/data.js",
        script="results/worldmembench/human_study/{study}/page/annotate.js",
        style="results/worldmembench/human_study/{study}/page/style.css",
        media=directory("results/worldmembench/human_study/{study}/page/media"),
    log:
        "results/logs/worldmembench/human_study/{study}_page.log",
    benchmark:
        benchmark_tsv("worldmembench/human_study/{study}_page")
    wildcard_constraints:
        study="static|dynamic",
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        width=WMB["cases"]["width"],
        height=WMB["cases"]["height"],
    shell:
        "python -m worldmemory.worldmembench.human_study.pages --study {wildcards.study:q} --set {input.study_set:q}"
        " --key {input.key:q} --rollouts results/worldmembench/rollouts --width {params.width:q} --height {params.height:q}"
        " --out results/worldmembench/human_study/{wildcards.study:q}/page"
        " 2>&1 | tee {log:q}"
