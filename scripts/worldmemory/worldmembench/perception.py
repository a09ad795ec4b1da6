"""What WorldMemBench's scoring sees in one rollout: the oracle or a model's cached estimates.

The paper reads every metric through estimators (Section 4): target masks from a tracker, depth
and camera poses from DA3 / ViPE, face identity from ArcFace, quality from MUSIQ and the LAION
predictor, the event checklist from a VLM. Scoring (score.py) asks a ``Perception`` for exactly
these needs; appearance features come from a patch feature backend and are computed while
scoring.

  * ``OraclePerception`` reads the truth channels a reference model wrote of what it drew
    (truth.npz: instance ids, z-depth, camera-to-world poses, K, event state). It is exact, so it
    calibrates the metrics; it has no face or quality estimate (the procedural people have no
    faces).
  * ``EstimatedPerception`` reads the estimates the perception jobs cached for a model without
    truth channels (perceive.py, perception.store), one file per capability; a capability
    configured as ``none`` is Unavailable with the reason naming its config key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from worldmemory.perception import registry
from worldmemory.perception.base import Unavailable
from worldmemory.perception.face_detections import FaceDetections
from worldmemory.perception.store import CachedView, cached_sources
from worldmemory.worldmembench.metrics.dynamic_memory import DynamicCase, JudgeAnswer, OracleEventJudge

MIN_PIXELS = 20  # a target is observed in a frame when its mask covers at least this many pixels
# score family -> the capabilities its metrics read (the paper's metric families, Section 4)
NEEDS = {
    "quality": ("imaging_quality", "aesthetic_quality"),
    "static": ("tracking", "faces", "camera", "depth"),
    "dynamic": ("judge",),
    "camera": ("camera", "second_camera"),
}
FAMILIES = tuple(NEEDS)
CONFIG_KEY = "worldmembench.perception"


class Perception(Protocol):
    """What scoring needs to see in one rollout (all arrays indexed by video frame)."""

    def target_masks(self, target: str) -> np.ndarray:
        """(T, H, W) bool mask of ``target`` in every frame (empty where not observed)."""

    def depth(self) -> np.ndarray:
        """(T, H, W) depth of every frame, for rank statistics: z-depth, or any map that decreases
        (per frame, monotonically) with it such as a relative inverse depth (non-finite where unknown)."""

    def metric_depth(self) -> np.ndarray:
        """(T, H, W) float z-depth of every frame (non-finite or <= 0 where unknown), for geometry."""

    def camera(self, translation: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """((T, 4, 4) camera-to-world poses, OpenCV convention; (3, 3) intrinsics K); with
        ``translation``, Unavailable unless the positions are good enough for Eq. 2."""

    def second_camera(self) -> dict[str, np.ndarray]:
        """{name: (T, 4, 4) poses} of a second pose estimator whose translations Eq. 2 averages
        with camera's (the paper's ViPE beside DA3); empty when there is none."""

    def event_judge(self):
        """A judge with dynamic_memory's ``judge(frames, frame_indices, phases, case)``."""

    def faces(self) -> FaceDetections:
        """Every face found in the rollout with its identity embedding (Human Identity)."""

    def quality(self, metric: str) -> float:
        """The rollout's General Video Quality ``metric``, normalised to [0, 1] (Section 4.2)."""


@dataclass
class OraclePerception:
    """Ground truth of what a reference model drew; ``instances`` maps target id -> instance."""

    truth: dict
    instances: dict

    def target_masks(self, target: str) -> np.ndarray:
        return self.truth["instance"] == self.instances[target]

    def depth(self) -> np.ndarray:
        return self.truth["depth"]

    def metric_depth(self) -> np.ndarray:
        return self.truth["depth"]

    def camera(self, translation: bool = False) -> tuple[np.ndarray, np.ndarray]:
        return self.truth["poses"], self.truth["K"]

    def second_camera(self) -> dict[str, np.ndarray]:
        return {}  # the drawn poses are exact: one estimate

    def event_judge(self) -> OracleEventJudge:
        if "event_started" not in self.truth:
            raise ValueError("the truth channels hold no event state")
        return OracleEventJudge([{"started": bool(s), "progress": float(p)} for s, p in
                                 zip(self.truth["event_started"], self.truth["event_progress"])])

    def faces(self) -> FaceDetections:
        raise Unavailable(registry.no_oracle("faces"))

    def quality(self, metric: str) -> float:
        raise Unavailable(registry.no_oracle(metric))


class EstimatedPerception(CachedView):
    """One rollout's view of a model's cached estimates (perception.store.CachedView)."""

    def target_masks(self, target: str) -> np.ndarray:
        fields = self.fields("tracking")
        ids = list(fields["targets"])
        if target not in ids:
            raise ValueError(f"{self.sources['tracking'].path}: no track of target {target!r} in {self.key}")
        return fields["masks"][ids.index(target)]

    def depth(self) -> np.ndarray:
        return self.fields("depth")["depth"]

    def metric_depth(self) -> np.ndarray:
        fields = self.fields("depth")
        if bool(fields["relative_inverse"]):
            raise Unavailable(f"{self.sources['depth'].backend} gave relative inverse depth (a relative "
                              "checkpoint); the Reconstruction score needs metric z-depth: configure a "
                              "metric checkpoint at worldmembench.perception.depth")
        return fields["depth"]

    def camera(self, translation: bool = False) -> tuple[np.ndarray, np.ndarray]:
        source = self.sources["camera"]  # the reason it is missing, where it is a string
        if translation and not isinstance(source, str) and (reason := _unreliable_translation(source.backend)):
            raise Unavailable(reason)  # asked first: the perceive job skipped such rollouts
        fields = self.fields("camera")
        return fields["poses"], fields["K"]

    def second_camera(self) -> dict[str, np.ndarray]:
        source = self.sources.get("second_camera")
        if source is None or isinstance(source, str):
            return {}  # not read by this family, or configured as none
        if _unreliable_translation(source.backend):
            return {}  # its translations would only add noise to the mean
        return {f"second_camera ({source.backend})": self.fields("second_camera")["poses"]}

    def event_judge(self) -> CachedEventJudge:
        return CachedEventJudge(self.fields("judge"), str(self.sources["judge"].path), self.key)

    def faces(self) -> FaceDetections:
        return FaceDetections.from_fields(self.fields("faces"))

    def quality(self, metric: str) -> float:
        """The backend's normalisation of the mean raw score over the sampled frames that have one
        (a frame without texture has none; perception.quality); NaN if none has."""
        raw = self.fields(metric)["raw"]
        finite = raw[np.isfinite(raw)]
        if not len(finite):
            return math.nan
        scorer = registry.backend_class(metric, self.sources[metric].backend)
        return scorer.normalise(float(finite.mean()))


def _unreliable_translation(backend: str) -> str:
    """Why camera ``backend``'s translations are not good enough for Eq. 2 ('' when they are): a
    backend may estimate rotations well and translations too coarsely."""
    return getattr(registry.backend_class("camera", backend), "unreliable_translation", "")


@dataclass
class CachedEventJudge:
    """The event judge's answers of one rollout as its perception job cached them (perceive.py)."""

    fields: dict
    path: str
    key: str

    def judge(self, frames, frame_indices, phases, case: DynamicCase) -> JudgeAnswer:
        ids = [str(q) for q in self.fields["questions"]]
        if ids != [q.id for q in case.questions]:
            raise ValueError(f"{self.path}: the judge of {self.key} answered questions {ids}, but the case "
                             f"asks {[q.id for q in case.questions]}; rebuild it")
        return JudgeAnswer(bool(self.fields["started"]), dict(zip(ids, map(bool, self.fields["answers"]))))


def estimated_sources(family: str, backends: dict[str, str], directory) -> dict:
    """The cached estimates (or reasons) of the capabilities ``family`` reads."""
    return cached_sources(NEEDS[family], backends, directory, CONFIG_KEY)
