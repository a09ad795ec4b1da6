"""General Video Quality of WorldMemBench (Section 4.2).

Every fourth frame of a rollout is scored; scores are averaged over those frames within each
video, then equally across cases. Imaging Quality is MUSIQ-SPAQ, Aesthetic Quality the LAION
aesthetic predictor on CLIP features; both are reported normalised to [0, 1]. The paper does not
give the normalisation, so NORMALISATION follows VBench, whose Imaging and Aesthetic Quality use
the same two predictors: MUSIQ / 100 and LAION / 10 (low 0, not the nominal minimum 1 of the
LAION scale, so values stay comparable with VBench-style reports). Normalise a video's mean
score (VBench divides the mean); clipping only guards against predictor outputs outside the
nominal range.

The predictors themselves are backends still to come (FrameQuality); until one runs, a metric is
reported as NotComputed rather than a number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

QUALITY_STRIDE = 4  # Section 4.2: "every fourth frame"

NORMALISATION = {
    "imaging_quality": {
        "low": 0.0, "high": 100.0,
        "source": "MUSIQ-SPAQ outputs a 0-100 score; VBench imaging_quality divides by 100"},
    "aesthetic_quality": {
        "low": 0.0, "high": 10.0,
        "source": "LAION aesthetic predictor, 1-10 scale; VBench aesthetic_quality divides by 10"},
}


class FrameQuality(Protocol):
    """A per-frame quality predictor (MUSIQ-SPAQ, LAION aesthetic): one raw score per frame."""

    def score(self, frames: Sequence[np.ndarray]) -> np.ndarray: ...


@dataclass(frozen=True)
class NotComputed:
    """A metric that could not be computed: its value is NaN and the reason says why, so a table
    can print the reason instead of a number and any mean over it stays NaN."""

    metric: str
    reason: str
    value: float = field(default=math.nan, init=False)


def sampled_frames(n_frames: int, stride: int = QUALITY_STRIDE) -> list[int]:
    """Indices of the frames scored (Section 4.2): 0, stride, 2 * stride, ... (the last frame
    only when it falls on the stride, unlike the judge sampling of Appendix D.1)."""
    if n_frames < 1 or stride < 1:
        raise ValueError("n_frames and stride must be at least 1")
    return list(range(0, n_frames, stride))


def video_score(frames: Sequence[np.ndarray], scorer: FrameQuality,
                stride: int = QUALITY_STRIDE) -> float:
    """Mean raw score over one rollout's sampled frames (Section 4.2)."""
    picked = [frames[i] for i in sampled_frames(len(frames), stride)]
    scores = np.asarray(scorer.score(picked), dtype=float)
    if scores.shape != (len(picked),):
        raise ValueError(f"scorer returned shape {scores.shape} for {len(picked)} frames")
    return float(scores.mean())


def benchmark_score(video_scores: Sequence[float]) -> float:
    """Mean over cases, each video weighing the same whatever its length (Section 4.2). A NaN
    (a video not computed) makes the result NaN rather than silently dropping the case."""
    if len(video_scores) == 0:
        raise ValueError("no video scores to average")
    return float(np.mean(video_scores))


def normalise(metric: str, value: float) -> float:
    """Map a raw score of metric to [0, 1] with NORMALISATION, clipping; NaN stays NaN."""
    if metric not in NORMALISATION:
        raise ValueError(f"unknown metric {metric!r}; valid: {', '.join(NORMALISATION)}")
    low, high = NORMALISATION[metric]["low"], NORMALISATION[metric]["high"]
    return float(np.clip((value - low) / (high - low), 0.0, 1.0))


def unavailable(metric: str, reason: str) -> NotComputed:
    """The record for a metric whose backend could not run (value NaN, with the reason)."""
    if metric not in NORMALISATION:
        raise ValueError(f"unknown metric {metric!r}; valid: {', '.join(NORMALISATION)}")
    return NotComputed(metric, reason)
