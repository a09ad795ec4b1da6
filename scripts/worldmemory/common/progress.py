"""How far a model is through a study's cases: one line per model, read off the files on disk.

At the papers' size a job is one case of one model, so Snakemake's "N of M steps" says little
about a model. Every per-case job therefore ends by printing its model's line for its stage,

    [progress] worldmembench rollouts of amnesic: 37/260 cases

and ``./run.sh progress`` (worldmemory.workflow.progress) prints every model's lines at any time,
from Snakemake's own view of which jobs are still to run. In a job's line a case counts as done at
a stage when its marker file exists (written last by that stage's job; Snakemake deletes a failed
job's output, marker included). A job learns its study's number of
cases from ``WORLDMEMORY_UNITS`` (JSON, study -> count), which the workflow's shell prefix
exports: not a rule parameter, so that adding a case reruns none of the existing ones.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

UNITS_VARIABLE = "WORLDMEMORY_UNITS"
# each stage's marker in a case's directory, written last by its job
ROLLED_OUT, PERCEIVED, SCORED = "rollouts.json", "done.json", "info.json"


def count_done(model_dir: Path, marker: str) -> int:
    """How many cases have ``model_dir``/<case>/``marker``."""
    return sum(1 for _ in Path(model_dir).glob(f"*/{marker}"))


def line(study: str, stage: str, model: str, done: int, total: int) -> str:
    return f"[progress] {study} {stage} of {model}: {done}/{total} cases"


def report(study: str, stage: str, model: str, model_dir: Path, marker: str) -> None:
    """Print the progress line of ``model`` at ``stage``: its cases with ``marker`` of the study's
    number of cases (WORLDMEMORY_UNITS); nothing outside the workflow, where it is not set."""
    total = json.loads(os.environ.get(UNITS_VARIABLE, "{}")).get(study)
    if total:
        print(line(study, stage, model, min(count_done(model_dir, marker), total), total), flush=True)
