# WorldMemBench's human study (Appendix F): the annotation page of each study (Figure 8: blinded
# A/B pairs; Figure 9: the event-gated checklist), built from the study set, its hidden key and
# the rollouts; opened from disk or served by `python -m http.server`.

# what annotators may see, per study (the human-study file contract)
WMB_STUDY_SETS = {"static": "pairs.json", "dynamic": "instances.json"}


rule worldmembench_annotation_page:
    input:
        study_set=lambda wc: f"results/worldmembench/human_study/{wc.study}/{WMB_STUDY_SETS[wc.study]}",
        key="results/worldmembench/human_study/{study}/key.json",
        manifests=expand("results/worldmembench/rollouts/{model}/manifest.json", model=WMB_MODELS),
    output:
        page="results/worldmembench/human_study/{study}/index.html",
        data="results/worldmembench/human_study/{study}/data.js",
        script="results/worldmembench/human_study/{study}/annotate.js",
        style="results/worldmembench/human_study/{study}/style.css",
        media=directory("results/worldmembench/human_study/{study}/media"),
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
    shell:
        "python -m worldmemory.worldmembench.human_study.pages --study {wildcards.study:q} --set {input.study_set:q}"
        " --key {input.key:q} --rollouts results/worldmembench/rollouts --out results/worldmembench/human_study/{wildcards.study:q}"
        " 2>&1 | tee {log:q}"
