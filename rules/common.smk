# Shared wiring: config validation, paths, resources. No study logic here.
#
# Shell safety: every value from the config or from data reaches a shell quoted ({x:q}); the only
# unquoted placeholders are params named *_args, argument lists this file builds with
# shlex.join (tests/workflow/test_shell_safety.py enforces both).

import json
import os
import re
import shlex

from snakemake.logging import logger
from snakemake.utils import min_version, validate

min_version("9.0")

# REPO and SCRIPTS (this checkout, on sys.path) come from the Snakefile.
from worldmemory.common.provenance import config_hash as config_sha256
from worldmemory.workflow.conda_envs import export_checkout
from worldmemory.workflow.config_checks import check_config
from worldmemory.workflow.stamp import stamp_differs, update_stamp

validate(config, os.path.join(REPO, "config", "schemas", "config.schema.yaml"), set_default=True)
check_config(config)  # what a schema cannot say: paths exist, free-form keys are the code's
export_checkout(REPO)  # for the conda environments' post-deploy scripts (envs/*.post-deploy.sh)

# Every job imports the package from this checkout (pyproject.toml maps scripts/) and prints its
# progress as it goes; the prefix replaces Snakemake's default, so it repeats the strict mode.
# WORLDMEMORY_WORKDIR marks every process of a job with the working directory it writes to, so
# that ./run.sh can find the jobs a killed Snakemake left running (worldmemory.workflow.launch).
shell.prefix(
    f"set -euo pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH={shlex.quote(SCRIPTS)}" ' WORLDMEMORY_WORKDIR="$PWD"; '
)

DEVICE = config["device"]
THREADS = config["threads"]
# Model rules ask the scheduler for a GPU only when the configured device is one (0 on the CPU default).
GPU = 1 if DEVICE.startswith("cuda") else 0

# Every table and figure depends on the resolved config (worldmemory/workflow/stamp.py): a config
# switch rebuilds them even where Snakemake has no metadata to see it. Provenance reads it too.
# A dry run only writes a missing stamp; the tables' config_sha param shows a rebuild where
# Snakemake has metadata, and a warning where it has not.
CONFIG_STAMP = "results/config/resolved.json"
CONFIG_SHA = config_sha256(config)
DRY_RUN = workflow.output_settings.dryrun  # known while parsing (workflow.dryrun is not yet)
if workflow.is_main_process and (not DRY_RUN or not os.path.exists(CONFIG_STAMP)):
    update_stamp(CONFIG_STAMP, config)
elif workflow.is_main_process and stamp_differs(CONFIG_STAMP, config):
    logger.warning(f"{CONFIG_STAMP} holds another config: a real run rewrites it and rebuilds every table and figure")


def repo_path(*parts):
    """A file shipped with the workflow (not produced by it), independent of --directory."""
    return os.path.join(REPO, *parts)


def benchmark_tsv(name):
    """Where a job's wall time and memory go (results/benchmarks/, read by worldmemory.workflow.performance)."""
    return f"results/benchmarks/{name}.tsv"


# -- permanence ----------------------------------------------------------------------------------
PERM = config.get("permanence", {"models": {}})
PERM_MODELS = PERM["models"]
PAPER_CHECKPOINTS = {
    "facebook/vjepa2-vitl-fpc64-256",
    "facebook/vjepa2-vith-fpc64-256",
    "facebook/vjepa2-vitg-fpc64-256",
}
PAPER_MODELS = sorted(m for m, s in PERM_MODELS.items() if s.get("id") in PAPER_CHECKPOINTS)


def model_weights(wildcards):
    """The directory a model loads from: trained here, prefetched, or none (local path / random)."""
    source = PERM_MODELS[wildcards.model]["source"]
    if source == "train":
        return f"results/models/{wildcards.model}"
    if source == "hf":
        return f"resources/models/{wildcards.model}"
    return []


def models_with(source):
    """Wildcard constraint matching the models of one source (nothing when there are none)."""
    return "|".join(re.escape(m) for m, s in PERM_MODELS.items() if s["source"] == source) or "^$"


# -- worldmembench -------------------------------------------------------------------------------
def worldmembench_cases_dir(wildcards):
    """The embedded cases rendered here, or the user's case directory."""
    source = config["worldmembench"]["cases"]["source"]
    return "results/worldmembench/cases" if source == "embedded" else source


def worldmembench_rollout_args(wildcards):
    """The WorldMemBench rollout CLI's model arguments and the trajectory parameters (the
    study's, updated with the model's own)."""
    study = config["worldmembench"]
    spec = study["models"][wildcards.model]
    trajectory = {**study["trajectory_params"], **spec["trajectory_params"]}
    return (
        model_args("worldmembench", wildcards)
        + " "
        + shlex.join(["--trajectory-params", json.dumps(trajectory, sort_keys=True)])
    )


# -- shared feature backend ----------------------------------------------------------------------
DINOV2_DIR = "resources/models/dinov2"


def uses_dinov2(study):
    return study in config and config[study]["features"] == "dinov2"


def features_input(study):
    """Input function: the DINOv2 directory a study's score jobs read ([] for the non-learned
    descriptor): the user's local directory, or where rule prefetch_dinov2 puts the HF id."""

    def files(wildcards):
        if not uses_dinov2(study):
            return []
        return config["dinov2"] if os.path.isdir(config["dinov2"]) else DINOV2_DIR

    return files


def features_args(study):
    """Params function: the score CLIs' feature arguments."""

    def args(wildcards, input):
        if not uses_dinov2(study):
            return shlex.join(["--features", config[study]["features"]])
        return shlex.join(["--features", "dinov2", "--dinov2", input.features, "--device", DEVICE])

    return args


# -- models of the benchmark studies ------------------------------------------------------------
def model_args(study, wildcards):
    """A rollout CLI's model arguments: a reference model with its parameters, or an external
    command template."""
    spec = config[study]["models"][wildcards.model]
    if spec["kind"] == "reference":
        args = [
            "--kind",
            "reference",
            "--reference",
            spec["reference"],
            "--params",
            json.dumps(spec.get("params", {}), sort_keys=True),
        ]
    else:
        args = ["--kind", "external", "--command", spec["command"]]
    return shlex.join(args)


def paper_runs(study):
    """Our run -> the paper's model name, for the study's runs labelled with one (paper_name)."""
    models = config[study]["models"]
    return {m: s["paper_name"] for m, s in sorted(models.items()) if "paper_name" in s}


def paper_args(runs, input, output, ablation=False):
    """Table CLI arguments that print the paper's numbers beside ours for ``runs`` (our run ->
    the paper's model). The side-by-side files are written for every config (empty of rows when
    no run is one of the paper's models), so that a rule's outputs never depend on the config:
    Snakemake skips the params and input rerun triggers of a job with an output it has no
    metadata for."""
    args = ["--paper", input.paper, "--out-paper", output.paper]
    if runs:
        args += ["--paper-models", *(f"{m}={name}" for m, name in runs.items())]
    if ablation:
        args += ["--paper-ablation", input.ablation, "--out-paper-ablation", output.paper_ablation]
    return shlex.join(args)
