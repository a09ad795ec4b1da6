# Shared wiring: config validation, paths, resources. No study logic here.

import json
import os

from snakemake.utils import min_version, validate

min_version("9.0")

validate(config, os.path.join(workflow.basedir, "config", "schemas", "config.schema.yaml"), set_default=True)

REPO = workflow.basedir
# The package lives under scripts/ (pyproject.toml); every job imports it from this checkout.
# (Snakemake formats the prefix like a shell command, hence the doubled braces.)
shell.prefix("set -euo pipefail; export PYTHONUNBUFFERED=1 PYTHONPATH=" + os.path.join(REPO, "scripts") + "${{PYTHONPATH:+:$PYTHONPATH}}; ")

DEVICE = config["device"]
THREADS = config["threads"]
# Model rules ask the scheduler for a GPU only when the configured device is one (0 on the CPU default).
GPU = 1 if DEVICE.startswith("cuda") else 0
CONFIG_JSON = json.dumps(config, sort_keys=True)


def repo_path(*parts):
    """A file shipped with the workflow (not produced by it), independent of --directory."""
    return os.path.join(REPO, *parts)
