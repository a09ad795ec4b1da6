# WorldMemBench's human study (Appendix F, Tables 6 and 7): the study sets and their hidden keys,
# simulated annotators' exports (or a real study's, worldmembench.human_study.exports), Tables 6
# and 7 beside the paper's values, and the simulated-annotator curve (agreement vs noise). Outside
# the main job: `snakemake worldmembench_human` builds them all.

import glob

from worldmemory.worldmembench.human_study.exports import STUDY_FILES
from worldmemory.worldmembench.human_study.study_sets import study_models

WMB_HUMAN = WMB["human_study"]
WMB_HUMAN_MODELS = study_models(list(WMB_MODELS), WMB_HUMAN.get("models"))
WMB_HUMAN_DIR = "results/worldmembench/human_study"
WMB_HUMAN_STUDY = [f"{WMB_HUMAN_DIR}/{name}" for name in STUDY_FILES]
# the exports the tables read: a real study's directory, or the simulated annotators'
WMB_HUMAN_EXPORTS = {
    study: (os.path.join(WMB_HUMAN["exports"], study) if "exports" in WMB_HUMAN else f"{WMB_HUMAN_DIR}/{study}/exports")
    for study in ("static", "dynamic")
}
# a real study's export files, listed when the workflow is read: inputs of the tables, so that an
# export added, removed or corrected in place rebuilds them (the simulated ones are a rule's output)
WMB_HUMAN_EXPORT_FILES = (
    [f for d in WMB_HUMAN_EXPORTS.values() for f in sorted(glob.glob(os.path.join(glob.escape(d), "*.json")))]
    if "exports" in WMB_HUMAN
    else list(WMB_HUMAN_EXPORTS.values())
)
WMB_HUMAN_NOTE = (
    f"real exports from {WMB_HUMAN['exports']} (worldmembench.human_study.exports)"
    if "exports" in WMB_HUMAN
    else f"simulated: {WMB_HUMAN['annotators']} annotators at noise {WMB_HUMAN['noise']} (worldmembench.human_study.noise)"
)


rule worldmembench_human_study_sets:
    input:
        scores=score_files("worldmembench", WMB_HUMAN_MODELS, ["static.csv", "dynamic.csv"]),
        manifests=expand("results/worldmembench/rollouts/{model}/manifest.json", model=WMB_HUMAN_MODELS),
        cases=expand(WMB_CASE_DIR, case=[c for c, spec in WMB_CASES.items() if spec["family"] == "dynamic"]),
        config=CONFIG_STAMP,
    output:
        WMB_HUMAN_STUDY,
    log:
        "results/logs/worldmembench/human_study/study_sets.log",
    benchmark:
        benchmark_tsv("worldmembench/human_study/study_sets")
    conda:
        "../envs/torch.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        config_sha=CONFIG_SHA,
        # the study's directory, above static/ and dynamic/
        dir=lambda wc, output: os.path.dirname(os.path.dirname(output[0])),
        models=WMB_HUMAN_MODELS,
        seed=WMB_HUMAN["seed"],
        pairs=WMB_HUMAN["pairs_per_metric"],
        instances=WMB_HUMAN["instances"],
    shell:
        "python -m worldmemory.worldmembench.human_study.study_sets --scores results/worldmembench/scores"
        " --models {params.models:q} --cases {input.cases:q} --rollouts results/worldmembench/rollouts"
        " --seed {params.seed:q} --pairs-per-metric {params.pairs:q} --instances {params.instances:q}"
        " --out {params.dir:q} 2>&1 | tee {log:q}"


rule worldmembench_human_simulated:
    input:
        key=f"{WMB_HUMAN_DIR}/{{study}}/key.json",
    output:
        directory(f"{WMB_HUMAN_DIR}/{{study}}/exports"),
    log:
        "results/logs/worldmembench/human_study/{study}_simulated.log",
    benchmark:
        benchmark_tsv("worldmembench/human_study/{study}_simulated")
    wildcard_constraints:
        study="static|dynamic",
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        config_sha=CONFIG_SHA,
        annotators=WMB_HUMAN["annotators"],
        noise=WMB_HUMAN["noise"],
        seed=WMB_HUMAN["seed"],
    shell:
        "python -m worldmemory.worldmembench.human_study.simulate --study {wildcards.study:q} --key {input.key:q}"
        " --annotators {params.annotators:q} --noise {params.noise:q} --seed {params.seed:q} --out {output:q}"
        " 2>&1 | tee {log:q}"


rule worldmembench_human_tables:
    input:
        study=WMB_HUMAN_STUDY,
        exports=WMB_HUMAN_EXPORT_FILES,
        paper6=repo_path("resources", "paper_values", "worldmembench_table6.csv"),
        paper7=repo_path("resources", "paper_values", "worldmembench_table7.csv"),
        config=CONFIG_STAMP,
    output:
        table6=report(
            "results/worldmembench/table6.csv",
            caption="../report/worldmembench_table6.rst",
            category=WMB_REPORT,
            subcategory="Tables 6, 7",
        ),
        table7=report(
            "results/worldmembench/table7.csv",
            caption="../report/worldmembench_table7.rst",
            category=WMB_REPORT,
            subcategory="Tables 6, 7",
        ),
        paper6="results/worldmembench/table6_vs_paper.csv",
        paper7="results/worldmembench/table7_vs_paper.csv",
        provenance="results/worldmembench/table6_7.json",
    log:
        "results/logs/worldmembench/human_study/tables.log",
    benchmark:
        benchmark_tsv("worldmembench/human_study/tables")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        config_sha=CONFIG_SHA,
        dir=lambda wc, input: os.path.dirname(os.path.dirname(input.study[0])),
        note=WMB_HUMAN_NOTE,
        exports=list(WMB_HUMAN_EXPORTS.values()),
        seeds=json.dumps({"human_study": WMB_HUMAN["seed"]}),
    shell:
        "(python -m worldmemory.worldmembench.human_study.agreement --study-dir {params.dir:q}"
        " --static-exports {params.exports[0]:q} --dynamic-exports {params.exports[1]:q} --exports-note {params.note:q}"
        " --table6 {output.table6:q} --paper6 {input.paper6:q} --out-paper6 {output.paper6:q}"
        " --table7 {output.table7:q} --paper7 {input.paper7:q} --out-paper7 {output.paper7:q}"
        " && python -m worldmemory.common.provenance --config {input.config:q} --seeds {params.seeds:q}"
        " --outputs {output.table6:q} {output.table7:q} {output.paper6:q} {output.paper7:q} {input.study:q}"
        " --out {output.provenance:q})"
        " 2>&1 | tee {log:q}"


rule worldmembench_human_curve:
    input:
        study=WMB_HUMAN_STUDY,
        config=CONFIG_STAMP,
    output:
        f"{WMB_HUMAN_DIR}/simulated_curve.csv",
    log:
        "results/logs/worldmembench/human_study/curve.log",
    benchmark:
        benchmark_tsv("worldmembench/human_study/curve")
    conda:
        "../envs/core.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        config_sha=CONFIG_SHA,
        dir=lambda wc, input: os.path.dirname(os.path.dirname(input.study[0])),
        noise=WMB_HUMAN["noise_curve"],
        annotators=WMB_HUMAN["annotators"],
        seed=WMB_HUMAN["seed"],
    shell:
        "python -m worldmemory.worldmembench.human_study.curve --study-dir {params.dir:q} --noise {params.noise:q}"
        " --annotators {params.annotators:q} --seed {params.seed:q} --out {output:q} 2>&1 | tee {log:q}"


rule worldmembench_human:
    input:
        "results/worldmembench/table6.csv",
        "results/worldmembench/table7.csv",
        f"{WMB_HUMAN_DIR}/simulated_curve.csv",
