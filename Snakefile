# Memory in video world models: every table and figure of the three papers as a file target.
# Quick start and targets: README.md. Design: one .smk per study under rules/, logic in scripts/.

import os

# A --configfile replaces the embedded default instead of merging into it; --config KEY=VALUE
# alone overrides keys of the embedded default.
if not workflow.overwrite_configfiles:
    configfile: os.path.join(workflow.basedir, "config", "config.yaml")


include: "rules/common.smk"
include: "rules/permanence.smk"


rule all:
    default_target: True
    input:
        "results/permanence/table3.csv",
        "results/permanence/figure2.png",
