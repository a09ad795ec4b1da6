"""Frames where the reference view itself lacks the target leave Perm, Cont and App (metrics.py
module doc; PersistBench Method 2/3 are silent): known answers."""

import math

import numpy as np
import pytest
from worldmemory.common.video import read_video, write_video
from worldmemory.perception.descriptor import ColourGradientPatches
from worldmemory.persistbench import metrics as pm
from worldmemory.persistbench.perception import MIN_PIXELS, OraclePerception
from worldmemory.persistbench.score import frame_scores as score_frames

T, H, W = 10, 32, 40
VISIBLE = np.array([True] * 4 + [False] * 6)  # segments: visible 0-3, invisible 4-9
OCCLUDED = [1, 5, 6, 7]  # the reference view has no target there (occluded in the 360 video)
TINY = 8  # ... and only 2 px of it here: below MIN_PIXELS, no valid mask for a tracker either


def reference_masks():
    masks = np.zeros((T, H, W), dtype=bool)
    for t in range(T):
        masks[t, 10:16, 5 + t:11 + t] = True
    masks[OCCLUDED] = False
    masks[TINY] = False
    masks[TINY, 10, 5:7] = True
    assert masks[TINY].sum() < MIN_PIXELS
    return masks


def by_key(rows):
    return {(r["segment"], r["metric"], r["aggregation"]): r for r in rows}


def copy_scores(pred, ref, features):
    """Scores of ``pred`` as score.py computes them: tracked = a mask of >= MIN_PIXELS, the judge
    agreeing wherever something is drawn."""
    tracked = pred.sum(axis=(1, 2)) >= MIN_PIXELS
    pred_features = np.where(pred.any(axis=(1, 2))[:, None], features, np.nan)
    ref_features = np.where(ref.any(axis=(1, 2))[:, None], features, np.nan)
    per_frame = pm.frame_scores(tracked, np.ones(T, bool), pred, ref, pred_features, ref_features)
    return per_frame, by_key(pm.sequence_rows(per_frame, VISIBLE))


def test_a_perfect_copy_of_a_reference_with_an_occluded_target_reads_exactly_one():
    ref = reference_masks()
    per_frame, rows = copy_scores(ref.copy(), ref, np.random.default_rng(0).normal(size=(T, 8)))
    absent = np.isin(np.arange(T), OCCLUDED + [TINY])
    assert np.isnan(per_frame["perm"][absent]).all() and (per_frame["perm"][~absent] == 1).all()
    left_out = {"visible": 1, "invisible": 4}
    for (segment, metric, aggregation), row in rows.items():
        exact = 1.0 if metric == "perm" else pytest.approx(1.0, abs=1e-12)  # App: a float cosine
        assert row["value"] == exact, (segment, metric, aggregation)
        assert row["reason"] == f"{left_out[segment]} frame(s) without a reference mask left out"
    # counted, the absent frames would give Perm 3/4 (visible) and 2/6 (invisible)


def test_dropping_the_target_where_the_reference_has_it_reads_the_fraction_of_those_frames():
    ref = reference_masks()
    pred = ref.copy()
    pred[[0, 4]] = False  # two frames where the reference shows the target
    _, rows = copy_scores(pred, ref, np.random.default_rng(1).normal(size=(T, 8)))
    # kept: frames 2, 3 of the visible 0, 2, 3 and frame 9 of the invisible 4, 9 with a reference target
    expected = {"visible": 2 / 3, "invisible": 1 / 2}
    for segment, fraction in expected.items():
        for aggregation in pm.AGGREGATIONS:
            assert rows[(segment, "perm", aggregation)]["value"] == pytest.approx(fraction)
    assert rows[("visible", "cont", "tracked")]["value"] == 1.0
    assert rows[("visible", "cont", "all_frames")]["value"] == pytest.approx(2 / 3)
    assert rows[("invisible", "app", "tracked")]["value"] == pytest.approx(1.0, abs=1e-12)
    assert rows[("invisible", "app", "all_frames")]["value"] == pytest.approx(1 / 2)
    assert rows[("invisible", "perm", "tracked")]["n_tracked"] == 1


def test_a_segment_whose_reference_never_shows_the_target_is_nan_with_the_reason():
    ref = reference_masks()
    ref[~VISIBLE] = False
    per_frame, rows = copy_scores(ref.copy(), ref, np.random.default_rng(2).normal(size=(T, 8)))
    assert np.isnan(per_frame["perm"][~VISIBLE]).all()
    for metric in pm.METRICS:
        for aggregation in pm.AGGREGATIONS:
            row = rows[("invisible", metric, aggregation)]
            assert math.isnan(row["value"]) and row["reason"] == pm.NO_REFERENCE, row
            assert row["n_frames"] == 6 and row["n_tracked"] == 0
            assert rows[("visible", metric, aggregation)]["value"] == pytest.approx(1.0, abs=1e-12)
    assert pm.NO_REFERENCE in pm.NOTHING_TO_AVERAGE  # tables leave such a sequence out of a mean


def test_score_py_copy_of_the_reference_video_reads_one(tmp_path):
    """Through score.py with the oracle: the tracker's bar (MIN_PIXELS) and the reference's are
    one, so a copy of the reference video and its masks is kept on every frame that counts."""
    rng = np.random.default_rng(3)
    frames = rng.integers(0, 256, size=(T, H, W, 3), dtype=np.uint8)
    write_video(tmp_path / "seq" / "reference.mkv", frames, 8.0)
    ref = reference_masks()
    per_frame = score_frames(read_video(tmp_path / "seq" / "reference.mkv"), {"id": "seq"}, tmp_path,
                             ref, OraclePerception(ref.copy(), np.ones(T, bool)),
                             ColourGradientPatches(cell=8), pm.ALPHA, MIN_PIXELS)
    for row in pm.sequence_rows(per_frame, VISIBLE):
        assert row["value"] == pytest.approx(1.0, abs=1e-6), row
