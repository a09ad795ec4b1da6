"""Perception for WorldMemBench scoring: one interface per need, each with backends.

The paper reads every metric through estimators (Section 4): a tracker/segmenter for target
masks through time, DA3 for depth and (with ViPE) camera poses, and a VLM for the event
checklist. Scoring (score.py) asks a ``Perception`` for exactly these; appearance features come
from the patch feature backends (models/features.py) and are not part of it.

Backends here:
  * ``OraclePerception`` reads the ground-truth channels a reference model wrote of what it drew
    (truth.npz: instance ids, z-depth, camera-to-world poses, K, event state). It is exact, so it
    calibrates the metrics; it is refused for a model without such channels.
  * ``MissingPerception`` stands for the estimators no backend implements yet: each need raises
    ``Unavailable`` with the reason, which score.py records beside a NaN value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from worldmemory.worldmembench.metrics.dynamic_memory import OracleEventJudge

LATER = "later issue"
MISSING = {
    "masks": f"no target tracker (SAM2 video segmentation) for a model without ground truth: {LATER}",
    "depth": f"no depth estimator (DA3) for a model without ground truth: {LATER}",
    "camera": f"no camera pose estimator (DA3 / ViPE) for a model without ground truth: {LATER}",
    "judge": f"no VLM event judge (Qwen3.8-27B) for a model without ground truth: {LATER}",
}


class Unavailable(Exception):
    """A perception need without a backend; str(exception) is the reason recorded in scores."""


class Perception(Protocol):
    """What scoring needs to see in one rollout (all arrays indexed by video frame)."""

    def target_masks(self, target: str) -> np.ndarray:
        """(T, H, W) bool mask of ``target`` in every frame (empty where not observed)."""

    def depth(self) -> np.ndarray:
        """(T, H, W) float z-depth of every frame (non-finite or <= 0 where unknown)."""

    def camera(self) -> tuple[np.ndarray, np.ndarray]:
        """((T, 4, 4) camera-to-world poses, OpenCV convention; (3, 3) intrinsics K)."""

    def event_judge(self):
        """A judge with dynamic_memory's ``judge(frames, frame_indices, phases, case)``."""


@dataclass
class OraclePerception:
    """Ground truth of what a reference model drew; ``instances`` maps target id -> instance."""

    truth: dict
    instances: dict

    def target_masks(self, target: str) -> np.ndarray:
        return self.truth["instance"] == self.instances[target]

    def depth(self) -> np.ndarray:
        return self.truth["depth"]

    def camera(self) -> tuple[np.ndarray, np.ndarray]:
        return self.truth["poses"], self.truth["K"]

    def event_judge(self) -> OracleEventJudge:
        if "event_started" not in self.truth:
            raise ValueError("the truth channels hold no event state")
        return OracleEventJudge([{"started": bool(s), "progress": float(p)} for s, p in
                                 zip(self.truth["event_started"], self.truth["event_progress"])])


class MissingPerception:
    """Every need raises Unavailable with the reason from MISSING."""

    def target_masks(self, target: str) -> np.ndarray:
        raise Unavailable(MISSING["masks"])

    def depth(self) -> np.ndarray:
        raise Unavailable(MISSING["depth"])

    def camera(self) -> tuple[np.ndarray, np.ndarray]:
        raise Unavailable(MISSING["camera"])

    def event_judge(self):
        raise Unavailable(MISSING["judge"])
