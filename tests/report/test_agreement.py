"""Known answers of the rows every perception-agreement table is made of (report/agreement.py)."""

import math

import numpy as np
import pytest
from worldmemory.report.agreement import (
    absent_mask_row,
    absent_masks,
    agreement_arguments,
    agreement_table,
    compared,
    iou_rows,
    mask_ious,
    of_replay,
    table_rows,
)


def test_compared_says_within_only_inside_the_tolerance():
    row = compared("m", "q", 0.50, 0.54, tolerance=0.05)
    assert row["difference"] == pytest.approx(0.04) and row["within"] is True
    assert compared("m", "q", 0.50, 0.44, tolerance=0.05)["within"] is False  # estimated - oracle, both signs
    assert compared("m", "q", 0.50, 0.60)["within"] == ""  # no tolerance: no verdict
    assert compared("m", "q", 0.50, math.nan, "why", 0.05)["within"] == ""  # NaN: no verdict, the note says why


def test_mask_ious_over_the_frames_the_target_is_in_view():
    true = np.zeros((3, 4, 4), bool)
    true[0, :2, :2] = True  # 4 px: in view
    true[1, 0, 0] = True  # 1 px: below min_pixels, left out
    estimated = np.zeros_like(true)
    estimated[0, :2, :1] = True  # half of it
    estimated[2] = True  # frame 2: nothing true in view, left out
    assert mask_ious(true, estimated, min_pixels=2).tolist() == [0.5]


def test_absent_masks_count_masks_where_the_target_is_not_drawn():
    true = np.zeros((4, 4, 4), bool)
    true[0, :2, :2] = True  # drawn: not counted
    true[1, 0, 0] = True  # 1 px: below min_pixels, absent
    estimated = np.zeros_like(true)
    estimated[0] = True
    estimated[1, :2, :1] = True  # 2 px: a mask where it is absent
    estimated[2, 0, 0] = True  # 1 px: no valid mask
    # frames 1, 2, 3 are absent; frame 1 has a valid mask
    assert absent_masks(true, estimated, min_pixels=2) == (1, 3)
    row = absent_mask_row("m", 1, 3)
    assert (row["oracle"], row["estimated"]) == (0.0, pytest.approx(1 / 3))
    assert row["note"] == "1 of 3 frames without the target"
    assert math.isnan(absent_mask_row("m", 0, 0)["estimated"])


def test_iou_rows_give_median_and_tenth_percentile():
    rows = iou_rows("m", [1.0] * 9 + [0.0])
    assert [r["estimated"] for r in rows] == [1.0, pytest.approx(0.9)]
    assert rows[0]["note"] == "10 frames in view"
    assert all(math.isnan(r["estimated"]) for r in iou_rows("m", [], "no tracker configured"))


def test_agreement_table_rounds_and_keeps_the_column_order():
    table = agreement_table(of_replay([compared("m", "q", 1 / 3, 2 / 3, tolerance=0.05)], "h264"))
    assert list(table.columns) == ["model", "replay", "quantity", "oracle", "estimated", "difference", "within", "note"]
    assert table.loc[0, "difference"] == round(1 / 3, 6) and not table.loc[0, "within"]
    assert table.loc[0, "replay"] == "h264"


def test_pairs_are_split_at_the_first_equals_sign():
    args = agreement_arguments("d", "worldmembench", 0.05).parse_args(
        ["--pairs", "a=a.replay", "a=a.replay-h264", "b=b=c", "--scores", "s", "--rollouts", "r", "--estimates", "e",
         "--out", "o"])
    assert args.pairs == [["a", "a.replay"], ["a", "a.replay-h264"], ["b", "b=c"]] and args.tolerance == 0.05


def test_table_rows_say_why_a_value_is_missing():
    ours = {"a": 0.5, "b": 0.5, "c": math.nan}
    theirs = {"a": 0.52, "b": math.nan, "c": 0.3}
    rows = table_rows("m", ["a", "b", "c"], ours, theirs, {"b": "b is 'none'"}, 0.05)
    assert [(r["quantity"], r["within"], r["note"]) for r in rows] == [
        ("a", True, ""), ("b", "", "b is 'none'"), ("c", "", "the oracle has none")]

