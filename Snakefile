# Memory in video world models: every table and figure of the three papers as a file target.
# Quick start: README.md; every target: docs/targets.md. Design: one .smk per study under rules/, logic in scripts/.

import os
import sys

# This checkout, also when another workflow uses it as a module (workflow.basedir is then theirs).
REPO = os.path.abspath(workflow.current_basedir.get_path_or_uri(secret_free=True))
SCRIPTS = os.path.join(REPO, "scripts")
if SCRIPTS not in sys.path:
    sys.path.insert(0, SCRIPTS)

from worldmemory.workflow.config_files import load_config_file

# A --configfile replaces the embedded default instead of merging into it; --config KEY=VALUE
# alone overrides keys of the embedded default. A YAML error in it names the file and the line.
if not workflow.overwrite_configfiles:
    load_config_file(os.path.join(REPO, "config", "config.yaml"))

    configfile: os.path.join(REPO, "config", "config.yaml")


include: "rules/common.smk"
include: "rules/features.smk"


# `snakemake --report results/report.html` (or .zip): every table and figure, grouped by study,
# with the captions of report/.
report: "report/workflow.rst"


# Each study's rules are included when the config has that study.
MAIN_TARGETS = []
if "permanence" in config:

    include: "rules/permanence.smk"

    MAIN_TARGETS += [
        "results/permanence/table3.csv",
        "results/permanence/figure2.png",
        "results/permanence/figure7.png",
        "results/permanence/table9.csv",
    ]


if "worldmembench" in config:

    include: "rules/worldmembench.smk"

    MAIN_TARGETS += [
        "results/table2.csv",
        "results/worldmembench/figure5.png",
        "results/worldmembench/table12.csv",
        "results/worldmembench/table4.csv",
    ]
    if WMB_REPLAYS:
        MAIN_TARGETS.append("results/worldmembench/perception_agreement.csv")
    if WMB_QUALITY_CALIBRATED and WMB_REFERENCES:
        MAIN_TARGETS.append("results/worldmembench/quality_calibration.csv")


if "persistbench" in config:

    include: "rules/persistbench.smk"

    MAIN_TARGETS += ["results/persistbench/table1.csv"]
    if PB_REPLAYS:
        MAIN_TARGETS.append("results/persistbench/perception_agreement.csv")
    if PB_TRACKED:
        MAIN_TARGETS.append("results/persistbench/tracking_input_copy.csv")


shell.prefix(job_shell_prefix())


rule all:
    default_target: True
    input:
        MAIN_TARGETS,
