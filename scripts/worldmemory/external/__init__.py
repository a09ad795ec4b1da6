"""External models: the command contract the benchmark studies share.

A study's model that the workflow cannot host is a shell command template from the config, run
once per rollout on request files the study writes (its own placeholders and files: see
worldmembench/external.py and persistbench/rollout.py). What is common lives here, below the
studies, which import it and never each other: which placeholders a template may use and
what may fill them (template.py), and how a command runs, is timed out and logged, and its video checked
(command.py).
"""

import importlib

from worldmemory.external.template import check_template, render

# the command runner's names, imported when first used (__getattr__): it reads videos (decord),
# which the jobs that need only replay names or templates (the agreement tables, config checks,
# in the core environment) do not have
_COMMAND = {"KILL_GRACE_S", "KINDS", "OUTPUT_TAIL", "VIDEO_NAME", "TimeLimit", "check_video", "run_model",
            "run_params"}

__all__ = ["KILL_GRACE_S", "KINDS", "OUTPUT_TAIL", "VIDEO_NAME", "TimeLimit", "check_template",  # noqa: F822
           "check_video", "render", "run_model", "run_params"]


def __getattr__(name):
    if name in _COMMAND:
        return getattr(importlib.import_module("worldmemory.external.command"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
