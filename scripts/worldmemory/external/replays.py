"""The names of replay runs, without the replay's video stack: the agreement tables read them in
the core environment (worldmemory.external.replay makes the videos)."""

from __future__ import annotations

REPLAY = ".replay"  # a reference model replayed as an external model: <model>.replay[-<recipe>]
CLEAN = "clean"


def replay_name(model: str, recipe: str = CLEAN) -> str:
    """The run that replays ``model``'s video, clean or degraded by ``recipe``."""
    return model + REPLAY + ("" if recipe == CLEAN else f"-{recipe}")


def replay_recipe(run: str) -> str:
    """The degradation of replay run ``run`` (replay_name's inverse): "clean" or a recipe."""
    suffix = run.rsplit(REPLAY, 1)[1]
    return suffix[1:] if suffix else CLEAN
