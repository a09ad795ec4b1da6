"""Known answers for PersistBench's per-frame and per-segment metrics (persistbench/metrics.py)."""

import math

import numpy as np
import pandas as pd
import pytest
from worldmemory.perception.descriptor import ColourGradientPatches
from worldmemory.perception.features import pool_under_mask
from worldmemory.persistbench import metrics as pm

T, H, W, SIDE = 10, 32, 40, 4
VISIBLE = np.array([True] * 4 + [False] * 6)  # the target leaves the input view at frame 4


def square_masks(offset=(0, 0), side=SIDE, frames=T):
    """A side x side square drifting right one pixel a frame, shifted by ``offset`` (dy, dx)."""
    masks = np.zeros((frames, H, W), dtype=bool)
    for t in range(frames):
        y, x = 10 + offset[0], 5 + t + offset[1]
        masks[t, y:y + side, x:x + side] = True
    return masks


def features(seed=0, dim=16):
    return np.random.default_rng(seed).normal(size=(T, dim)) + 3.0


def by_key(rows):
    return {(r["segment"], r["metric"], r["aggregation"]): r for r in rows}


def test_a_perfect_model_scores_one_everywhere():
    ref, feats = square_masks(), features()
    ones = np.ones(T, dtype=bool)
    per_frame = pm.frame_scores(ones, ones, ref.copy(), ref, feats.copy(), feats)
    for metric in pm.METRICS:
        assert np.allclose(per_frame[metric], 1.0)
    rows = pm.sequence_rows(per_frame, VISIBLE)
    assert len(rows) == 2 * 3 * 2
    assert [(r["segment"], r["metric"], r["aggregation"]) for r in rows[:3]] == [
        ("invisible", "perm", "tracked"), ("invisible", "perm", "all_frames"),
        ("invisible", "cont", "tracked")]
    for r in rows:
        assert r["value"] == pytest.approx(1.0, abs=1e-12), r
        assert r["reason"] == ""
        assert (r["n_frames"], r["n_tracked"]) == ((4, 4) if r["segment"] == "visible" else (6, 6))


def test_a_model_that_drops_the_target_when_it_leaves_the_input_view():
    ref, feats = square_masks(), features()
    pred = ref.copy()
    pred[~VISIBLE] = False  # the tracker finds nothing once the target left the input
    per_frame = pm.frame_scores(VISIBLE, np.ones(T, bool), pred, ref, feats, feats)
    assert np.isnan(per_frame["cont"][~VISIBLE]).all() and np.isnan(per_frame["app"][~VISIBLE]).all()
    rows = by_key(pm.sequence_rows(per_frame, VISIBLE))
    for aggregation in pm.AGGREGATIONS:
        assert rows[("invisible", "perm", aggregation)]["value"] == 0.0
        assert rows[("visible", "perm", aggregation)]["value"] == 1.0
        for metric in ("cont", "app"):
            assert rows[("visible", metric, aggregation)]["value"] == pytest.approx(1.0)
    for metric in ("cont", "app"):
        tracked = rows[("invisible", metric, "tracked")]
        assert math.isnan(tracked["value"]) and tracked["reason"] == pm.NO_TRACKED
        assert tracked["n_tracked"] == 0 and tracked["n_frames"] == 6
        assert rows[("invisible", metric, "all_frames")]["value"] == 0.0
        assert rows[("invisible", metric, "all_frames")]["reason"] == ""


def test_tracked_means_tracker_and_judge_and_a_non_empty_mask():
    ref = square_masks()
    pred = ref.copy()
    pred[2] = False  # tracker "valid" but the mask is empty: not a valid mask
    tracked = np.ones(T, bool)
    tracked[0] = False
    judge = np.ones(T, bool)
    judge[1] = False  # tracker follows something the judge says is another entity
    per_frame = pm.frame_scores(tracked, judge, pred, ref)
    assert per_frame["perm"].tolist() == [0, 0, 0] + [1] * 7
    assert np.isnan(per_frame["cont"][:3]).all() and np.allclose(per_frame["cont"][3:], 1.0)


@pytest.mark.parametrize("alpha", [1.0, 0.5])
def test_cont_of_a_known_centroid_offset(alpha):
    ref = square_masks()
    pred = square_masks(offset=(3, 4))  # d = 5 pixels, reference area A = 16
    ones = np.ones(T, bool)
    per_frame = pm.frame_scores(ones, ones, pred, ref, alpha=alpha)
    assert np.allclose(per_frame["cont"], math.exp(-alpha * 5 / math.sqrt(SIDE**2)))
    assert pm.ALPHA == 1.0


def test_cont_scale_is_the_mean_reference_area_over_frames_with_a_reference_mask():
    ref = np.zeros((T, H, W), bool)
    for t in range(T):
        side = 2 if t < 5 else 6  # areas 4 and 36: mean 20
        ref[t, 10:10 + side, 10:10 + side] = True
    pred = np.roll(ref, 2, axis=2)  # 2 pixels to the right
    ref[9] = False  # no reference mask: left out of the mean area and of the scores
    areas = ref.reshape(T, -1).sum(axis=1)
    ones = np.ones(T, bool)
    per_frame = pm.frame_scores(ones, ones, pred, ref)
    scale = math.sqrt(areas[:9].mean())
    assert np.allclose(per_frame["cont"][:9], math.exp(-2 / scale))
    assert math.isnan(per_frame["cont"][9]) and not per_frame["ref_valid"][9]
    rows = by_key(pm.sequence_rows(per_frame, VISIBLE))
    assert rows[("invisible", "cont", "tracked")]["value"] == pytest.approx(math.exp(-2 / scale))
    assert rows[("invisible", "cont", "tracked")]["reason"] == "1 frame(s) without a reference mask left out"
    assert rows[("invisible", "perm", "tracked")]["value"] == 1.0  # frame 9 leaves Perm too
    assert rows[("invisible", "cont", "all_frames")]["value"] == pytest.approx(math.exp(-2 / scale))


def test_app_of_orthogonal_features_is_zero_and_of_scaled_features_one():
    ref = square_masks()
    ones = np.ones(T, bool)
    a = np.zeros((T, 4))
    a[:, 0] = 1.0
    b = np.zeros((T, 4))
    b[:, 1] = 2.0
    assert np.allclose(pm.frame_scores(ones, ones, ref, ref, a, b)["app"], 0.0)
    assert np.allclose(pm.frame_scores(ones, ones, ref, ref, a, 5 * a)["app"], 1.0)


def test_app_without_features_is_nan_under_both_rules_never_zero():
    ref = square_masks()
    pred = ref.copy()
    pred[~VISIBLE] = False
    per_frame = pm.frame_scores(VISIBLE, np.ones(T, bool), pred, ref)
    rows = by_key(pm.sequence_rows(per_frame, VISIBLE))
    for segment in pm.SEGMENTS:
        for aggregation in pm.AGGREGATIONS:
            row = rows[(segment, "app", aggregation)]
            assert math.isnan(row["value"]) and row["reason"] == pm.NO_FEATURES
    assert rows[("invisible", "cont", "all_frames")]["value"] == 0.0


def test_nan_features_under_a_mask_are_an_error():
    ref = square_masks()
    ones = np.ones(T, bool)
    feats = features()
    feats[3] = np.nan
    with pytest.raises(ValueError, match="NaN features under a non-empty mask"):
        pm.frame_scores(ones, ones, ref, ref, feats, features())


def test_all_frames_is_tracked_times_the_tracked_fraction():
    ref = square_masks()
    pred = square_masks(offset=(0, 2))
    tracked = np.array([True, True, False, True, True, False, True, False, False, True])
    ones = np.ones(T, bool)
    rng = np.random.default_rng(1)
    per_frame = pm.frame_scores(tracked, ones, pred, ref, rng.normal(size=(T, 8)), rng.normal(size=(T, 8)))
    rows = by_key(pm.sequence_rows(per_frame, VISIBLE))
    for segment in pm.SEGMENTS:
        inside = VISIBLE if segment == "visible" else ~VISIBLE
        fraction = tracked[inside].mean()
        assert rows[(segment, "perm", "tracked")]["value"] == pytest.approx(fraction)
        for metric in ("cont", "app"):
            assert rows[(segment, metric, "all_frames")]["value"] == pytest.approx(
                rows[(segment, metric, "tracked")]["value"] * fraction)


def test_a_segment_without_frames():
    ref = square_masks()
    ones = np.ones(T, bool)
    rows = by_key(pm.sequence_rows(pm.frame_scores(ones, ones, ref, ref), ones))
    for metric in pm.METRICS:
        row = rows[("invisible", metric, "tracked")]
        assert math.isnan(row["value"]) and row["reason"] == pm.NO_FRAMES and row["n_frames"] == 0


def test_pooled_features_pool_each_frame_under_its_own_mask():
    rng = np.random.default_rng(2)
    frames = rng.integers(0, 256, size=(T, H, W, 3), dtype=np.uint8)
    masks = square_masks()
    masks[5] = False
    backend = ColourGradientPatches(cell=8)
    pooled = pm.pooled_features(backend, frames, masks, batch=3)
    assert pooled.shape == (T, backend.dim) and pooled.dtype == np.float32
    assert np.isnan(pooled[5]).all() and np.isfinite(np.delete(pooled, 5, axis=0)).all()
    grid_features, grid = backend.patch_grid(frames[:1])
    assert np.allclose(pooled[0], pool_under_mask(grid_features[0], masks[0], grid))
    assert np.array_equal(pooled, pm.pooled_features(backend, frames, masks, batch=8),
                          equal_nan=True)
    # identical generated and reference videos: App 1 on every frame with a mask
    ones = np.ones(T, bool)
    per_frame = pm.frame_scores(ones, ones, masks, masks, pooled, pooled.copy())
    assert np.allclose(np.delete(per_frame["app"], 5), 1.0) and math.isnan(per_frame["app"][5])
    empty = pm.pooled_features(backend, frames, np.zeros((T, H, W), bool))
    assert empty.shape == (T, 0)


def test_exit_frame_and_frame_rows():
    assert pm.exit_frame(VISIBLE) == 4
    assert pm.exit_frame([False, False, True, True, False, False]) == 4  # invisible-visible-invisible
    assert pm.exit_frame([True, True, True]) is None
    ref = square_masks()
    ones = np.ones(T, bool)
    rows = pm.frame_rows(pm.frame_scores(ones, ones, ref, ref), VISIBLE)
    assert [r["frame_from_exit"] for r in rows] == list(range(-4, 6))
    assert rows[4]["visible_in_input"] is False and rows[4]["perm"] == 1.0


def test_csvs_are_byte_stable_and_read_back(tmp_path):
    ref = square_masks()
    pred = square_masks(offset=(1, 1))
    pred[~VISIBLE] = False
    per_frame = pm.frame_scores(VISIBLE, np.ones(T, bool), pred, ref, features(), features(3))
    scores = pm.scores_frame(pm.sequence_rows(per_frame, VISIBLE), "NA", "seq_000", "dynamic", "car")
    frames = pd.concat([pm.frames_frame(pm.frame_rows(per_frame, VISIBLE), "NA", "seq_000", "dynamic"),
                        pm.frames_frame(pm.frame_rows(per_frame, np.ones(T, bool)), "NA", "seq_001",
                                        "static")])
    for write, table in ((pm.write_scores, scores), (pm.write_frames, frames)):
        first, second = tmp_path / "a.csv", tmp_path / "b.csv"
        write(table, first)
        write(table, second)
        assert first.read_bytes() == second.read_bytes()
    text = (tmp_path / "a.csv").read_text().splitlines()
    assert text[0] == ",".join(pm.FRAME_COLUMNS)
    assert text[-1].startswith("NA,seq_001,static,9,,True,")  # never leaves: empty frame_from_exit
    with pytest.raises(ValueError, match="kind"):
        pm.scores_frame([], "m", "s", "moving", "car")
