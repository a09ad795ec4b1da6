# Shared wiring: config validation, paths, resources. No study logic here.

import json
import os
import shlex

from snakemake.utils import min_version, validate

min_version("9.0")

validate(config, os.path.join(workflow.basedir, "config", "schemas", "config.schema.yaml"), set_default=True)

REPO = workflow.basedir
SCRIPTS = os.path.join(REPO, "scripts")
# Every job imports the package from this checkout (pyproject.toml maps scripts/) and prints its
# progress as it goes; the prefix replaces Snakemake's default, so it repeats the strict mode.
shell.prefix(f"set -euo pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH={SCRIPTS}; ")

DEVICE = config["device"]
THREADS = config["threads"]
# Model rules ask the scheduler for a GPU only when the configured device is one (0 on the CPU default).
GPU = 1 if DEVICE.startswith("cuda") else 0
_CONFIG_TEXT = json.dumps(config, sort_keys=True)


def config_json(wildcards):
    """The resolved config as JSON for provenance; a function, so that braces in it (an
    external model's command template) are not read as wildcards."""
    return _CONFIG_TEXT


def repo_path(*parts):
    """A file shipped with the workflow (not produced by it), independent of --directory."""
    return os.path.join(REPO, *parts)


# -- permanence ----------------------------------------------------------------------------------
PERM = config.get("permanence", {"models": {}})
PERM_MODELS = PERM["models"]
PAPER_CHECKPOINTS = {"facebook/vjepa2-vitl-fpc64-256", "facebook/vjepa2-vith-fpc64-256", "facebook/vjepa2-vitg-fpc64-256"}
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
    return "|".join(m for m, s in PERM_MODELS.items() if s["source"] == source) or "^$"


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
    trajectory_args = shlex.quote(json.dumps(trajectory, sort_keys=True))
    return f"{model_args('worldmembench', wildcards)} --trajectory-params {trajectory_args}"


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
            return f"--features {config[study]['features']}"
        return f"--features dinov2 --dinov2 {shlex.quote(input.features)} --device {DEVICE}"

    return args


# -- models of the benchmark studies ------------------------------------------------------------
def model_args(study, wildcards):
    """A rollout CLI's model arguments: a reference model with its parameters, or an external
    command template."""
    spec = config[study]["models"][wildcards.model]
    if spec["kind"] == "reference":
        args = ["--kind", "reference", "--reference", spec["reference"],
                "--params", json.dumps(spec.get("params", {}), sort_keys=True)]
    else:
        args = ["--kind", "external", "--command", spec["command"]]
    return " ".join(shlex.quote(a) for a in args)


def paper_runs(study):
    """Our run -> the paper's model name, for the study's runs labelled with one (paper_name)."""
    models = config[study]["models"]
    return {m: s["paper_name"] for m, s in sorted(models.items()) if "paper_name" in s}


def paper_args(study, input, output, ablation=False):
    """Table CLI arguments that print the paper's numbers beside ours, for runs of its models
    (and, with ``ablation``, its ablation table beside ours)."""
    runs = paper_runs(study)
    if not runs:
        return ""
    pairs = " ".join(shlex.quote(f"{m}={name}") for m, name in runs.items())
    args = f"--paper {input.paper} --out-paper {output.paper} --paper-models {pairs}"
    if ablation:
        args += f" --paper-ablation {input.ablation} --out-paper-ablation {output.paper_ablation}"
    return args
