"""Reading the prepared sequences (prepare.py writes them).

Apart from prepare.py so that the rollout, perception and score jobs, which only read them, do
not import the camera planner and its scipy modules (about 1.5 s of every such job's start).
"""

from __future__ import annotations

import json
from pathlib import Path


def load_sequences(directory) -> tuple[list[dict], Path]:
    """The kept sequences' sequence.json contents, in manifest order, and the directory."""
    directory = Path(directory)
    manifest = json.loads((directory / "manifest.json").read_text())
    return ([json.loads((directory / s["id"] / "sequence.json").read_text())
             for s in manifest["sequences"]], directory)
