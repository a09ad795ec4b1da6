import math

import numpy as np
import pytest
from worldmemory.worldmembench.metrics.video_quality import (
    NORMALISATION,
    NotComputed,
    benchmark_score,
    normalise,
    sampled_frames,
    unavailable,
    video_score,
)


class FrameValue:
    """A scorer returning each frame's (constant) pixel value, so frames encode their score."""

    def score(self, frames):
        return np.array([frame.flat[0] for frame in frames], dtype=float)


def video(values):
    return [np.full((2, 3), v, dtype=float) for v in values]


def test_every_fourth_frame_from_zero():
    assert sampled_frames(10) == [0, 4, 8]
    assert sampled_frames(9) == [0, 4, 8]
    assert sampled_frames(1) == [0]


def test_sampling_rejects_empty_video():
    with pytest.raises(ValueError):
        sampled_frames(0)


def test_video_score_uses_only_sampled_frames():
    # Frame i scores i: mean of 0, 4, 8 is 4, while all ten frames would give 4.5.
    assert video_score(video(range(10)), FrameValue()) == 4.0


def test_scorer_must_return_one_score_per_frame():
    class Pooled:
        def score(self, frames):
            return np.array([1.0])

    with pytest.raises(ValueError):
        video_score(video(range(10)), Pooled())


def test_cases_weigh_equally_whatever_their_length():
    short = video_score(video([1.0] * 10), FrameValue())  # 3 sampled frames scoring 1
    long = video_score(video([0.0] * 40), FrameValue())  # 10 sampled frames scoring 0
    # Pooling the 13 sampled frames would give 3 / 13.
    assert benchmark_score([short, long]) == 0.5


def test_missing_video_makes_benchmark_nan():
    assert math.isnan(benchmark_score([0.5, unavailable("imaging_quality", "no weights").value]))


@pytest.mark.parametrize("metric", sorted(NORMALISATION))
def test_normalise_maps_endpoints_and_clips(metric):
    low, high = NORMALISATION[metric]["low"], NORMALISATION[metric]["high"]
    assert normalise(metric, low) == 0.0
    assert normalise(metric, high) == 1.0
    assert normalise(metric, (low + high) / 2) == 0.5
    assert normalise(metric, low - 5) == 0.0
    assert normalise(metric, high + 5) == 1.0
    assert math.isnan(normalise(metric, math.nan))


def test_vbench_scales():
    assert normalise("imaging_quality", 65.0) == pytest.approx(0.65)
    assert normalise("aesthetic_quality", 5.5) == pytest.approx(0.55)


def test_unknown_metric_is_an_error():
    with pytest.raises(ValueError):
        normalise("sharpness", 1.0)
    with pytest.raises(ValueError):
        unavailable("sharpness", "no backend")


def test_not_computed_is_nan_with_its_reason():
    record = unavailable("aesthetic_quality", "LAION predictor not installed")
    assert isinstance(record, NotComputed)
    assert math.isnan(record.value)
    assert record.reason == "LAION predictor not installed"
    assert record.metric == "aesthetic_quality"
