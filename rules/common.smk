# Shared wiring: config validation, paths, resources. No study logic here.

import json
import os

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
CONFIG_JSON = json.dumps(config, sort_keys=True)


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
