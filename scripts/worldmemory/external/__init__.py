"""External models: the command contract the benchmark studies share.

A study's model that the workflow cannot host is a shell command template from the config, run
once per rollout on request files the study writes (its own placeholders and files: see
worldmembench/external.py and persistbench/rollout.py). What is common lives here, below the
studies, which import it and never each other: where a template may put its placeholders
(template.py), and how a command runs, is timed out and logged, and its video checked
(command.py).
"""

from worldmemory.external.command import (
    KILL_GRACE_S,
    KINDS,
    OUTPUT_TAIL,
    VIDEO_NAME,
    TimeLimit,
    check_video,
    run_model,
    run_params,
)
from worldmemory.external.template import check_template, quoting_problem, render

__all__ = ["KILL_GRACE_S", "KINDS", "OUTPUT_TAIL", "VIDEO_NAME", "TimeLimit", "check_template",
           "check_video", "quoting_problem", "render", "run_model", "run_params"]
