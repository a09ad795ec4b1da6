"""Reading the prepared sequences (prepare.py writes them).

Apart from prepare.py so that the rollout, perception and score jobs, which only read them, do
not import the camera planner and its scipy modules (about 1.5 s of every such job's start).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from worldmemory.common.video import read_video_at


def load_sequences(directory) -> tuple[list[dict], Path]:
    """The kept sequences' sequence.json contents, in manifest order, and the directory."""
    directory = Path(directory)
    manifest = json.loads((directory / "manifest.json").read_text())
    return ([json.loads((directory / s["id"] / "sequence.json").read_text())
             for s in manifest["sequences"]], directory)


def read_generated(path, seq: dict) -> np.ndarray:
    """A model's video of sequence ``seq`` at the reference camera's size (``cameras`` width and
    height; common.video.read_video_at): a model may generate at any resolution, and its frames
    are compared pixel by pixel with the reference's masks (perception and scoring both read it so)."""
    return read_video_at(path, seq["cameras"]["width"], seq["cameras"]["height"])
