"""The stress gallery's transforms (known answers on small arrays) and its expectation checker."""

import math

import numpy as np
import pytest
from worldmemory.external.stress import (
    SOURCES,
    blacken,
    exit_frames,
    first_revisit_end,
    frozen,
    mirrored,
    persistbench_video,
    spliced,
    worldmembench_video,
)
from worldmemory.report.stress import Expectation, check, expectations


def video(T=4, H=2, W=3):
    return (np.arange(T * H * W * 3) % 251).astype(np.uint8).reshape(T, H, W, 3)


def test_frozen_repeats_frame_0_and_mirrored_flips_columns():
    v = video()
    assert (frozen(v) == v[0]).all() and frozen(v).shape == v.shape
    m = mirrored(v)
    assert (m[:, :, 0] == v[:, :, 2]).all() and (m[:, :, 1] == v[:, :, 1]).all()
    masks = np.zeros((2, 2, 3), np.int16)
    masks[:, 0, 0] = 7
    assert (mirrored(masks)[:, 0, 2] == 7).all() and mirrored(masks)[:, 0, 0].sum() == 0  # a truth mask too


def test_spliced_takes_the_first_until_start_then_the_second():
    a, b = video(), 255 - video()
    s = spliced(a, b, 2)
    assert (s[:2] == a[:2]).all() and (s[2:] == b[2:]).all()
    with pytest.raises(ValueError, match="differ in shape"):
        spliced(a, b[:3], 2)


def test_the_splice_is_after_the_first_revisit():
    phases = [{"name": n, "start": s, "end": e} for n, s, e in
              [("V", 0, 2), ("D1", 2, 5), ("R1", 5, 9), ("D2", 9, 12), ("R2", 12, 14), ("H", 14, 16)]]
    assert first_revisit_end({"name": "LRLR", "phases": phases}) == 9
    v = worldmembench_video("spliced", {"omniscient": video(16), "amnesic": 255 - video(16)}, 9)
    assert (v[:9] == video(16)[:9]).all() and (v[9:] == 255 - video(16)[9:]).all()


def test_content_out_of_frame_blackens_what_the_conditioning_view_never_showed():
    v = video() + 1
    seen = np.ones(v.shape[:3], bool)
    seen[2:, :, 1:] = False
    out = worldmembench_video("content-out-of-frame", {"omniscient": v}, 2, seen)
    assert (out[~seen] == 0).all() and (out[seen] == v[seen]).all()
    # after a frame with nothing of the conditioning view, the content comes back as a strip first
    v = video(3, 2, 8) + 1
    seen = np.ones(v.shape[:3], bool)
    seen[1] = False
    seen[2, :, 6:] = False
    out = worldmembench_video("content-out-of-frame", {"omniscient": v}, 2, seen)
    assert (out[0] == v[0]).all() and not out[1].any()
    assert (out[2, :, 4:6] == v[2, :, 4:6]).all() and not out[2, :, :4].any() and not out[2, :, 6:].any()


def test_exit_and_window_of_the_input_cameras_visibility():
    visible = np.array([1, 1, 0, 0, 0, 1, 1, 0], bool)
    after, window = exit_frames(visible)
    assert after.tolist() == [0, 0, 1, 1, 1, 1, 1, 1]
    assert window.tolist() == [0, 0, 1, 1, 1, 0, 0, 0]
    late = np.array([0, 1, 0, 1], bool)  # absent before it is first seen: not an exit
    assert exit_frames(late)[1].tolist() == [0, 0, 1, 0]
    assert not exit_frames(np.ones(3, bool))[0].any()


def test_persistbench_stress_videos():
    omniscient, given = video(8) + 1, 255 - video(8)
    visible = np.array([1, 1, 0, 0, 0, 1, 1, 0], bool)
    assert (persistbench_video("input-copy", omniscient, given, visible) == given).all()
    assert not persistbench_video("black", omniscient, given, visible).any()
    after = persistbench_video("black-after-exit", omniscient, given, visible)
    assert (after[:2] == omniscient[:2]).all() and not after[2:].any()
    window = persistbench_video("black-window", omniscient, given, visible)
    assert not window[2:5].any() and (window[5:] == omniscient[5:]).all() and (window[:2] == omniscient[:2]).all()
    assert (blacken(omniscient, np.zeros(8, bool)) == omniscient).all()
    with pytest.raises(ValueError, match="valid: input-copy, black"):
        persistbench_video("white", omniscient, given, visible)


def test_every_expectation_names_a_stress_model_of_its_study():
    for study, models in SOURCES.items():
        rows = expectations(study)
        assert {e.model for e in rows} == set(models), study
        assert all(e.why for e in rows)


def test_the_checker_says_which_expectations_hold():
    rows = [Expectation("a", "x", ">=", 0.9, "bound"), Expectation("a", "y", "near", 0.05, "ref", "r.replay"),
            Expectation("a", "z", "between", [0, 0], "zero"), Expectation("a", "w", "<=", 0.1, "ref+", "r.replay"),
            Expectation("b", "x", ">=", 0.9, "not measured")]
    measured = {"a": {"x": 0.95, "y": 0.5, "z": 0.0, "w": 0.45}, "r": {"y": 0.52, "w": 0.3}}
    table = check(rows, measured, {"r.replay": "r"}).set_index("column")
    assert table["holds"].tolist() == [True, True, True, False]  # b is not measured: no row
    assert table.loc["y", "bound"] == 0.52 and table.loc["w", "bound"] == pytest.approx(0.4)
    assert table.loc["y", "expected"] == "within 0.05 of r.replay"
    missing = check(rows[:1], {"a": {"x": math.nan}}, {}, {"a": "no rollout"})
    assert missing["holds"].tolist() == [""] and missing["note"].tolist() == ["no rollout"]
    with pytest.raises(ValueError, match="kind '>' is not one of"):
        Expectation("a", "x", ">", 1, "why")
