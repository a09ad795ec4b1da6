"""Perception-agreement tables: a value read through the estimators beside the oracle's reading of
the same video, in one tidy layout shared by the studies (no study logic)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pandas as pd

from worldmemory.report.tables import DECIMALS

# replay: how the replayed video was delivered, "clean" or a degradation (common.degrade)
COLUMNS = ["model", "replay", "quantity", "oracle", "estimated", "difference", "within", "note"]


def compared(model: str, quantity: str, oracle: float, estimated: float, note: str = "",
             tolerance: float | None = None) -> dict:
    """One row: ``difference`` = estimated - oracle; ``within`` whether |difference| <=
    ``tolerance`` (empty without a tolerance or where either value is NaN)."""
    difference = estimated - oracle
    within = "" if tolerance is None or math.isnan(difference) else bool(abs(difference) <= tolerance)
    return {"model": model, "quantity": quantity, "oracle": oracle, "estimated": estimated,
            "difference": difference, "within": within, "note": note}


def table_rows(model: str, quantities, ours, theirs, reasons: dict, tolerance: float) -> list[dict]:
    """One row per table quantity: the oracle's value (``ours``) and the estimators' (``theirs``)
    of the same videos; the note of an estimated NaN is its reason, of an oracle NaN that the
    oracle has none."""
    rows = []
    for quantity in quantities:
        a, b = float(ours[quantity]), float(theirs[quantity])
        note = reasons.get(quantity, "") if math.isnan(b) else ("the oracle has none" if math.isnan(a) else "")
        rows.append(compared(model, quantity, a, b, note, tolerance))
    return rows


def mask_ious(true: np.ndarray, estimated: np.ndarray, min_pixels: int) -> np.ndarray:
    """Per-frame IoU of (T, H, W) masks over the frames where the true mask covers >= min_pixels."""
    shown = true.sum(axis=(1, 2)) >= min_pixels
    inter = (true & estimated).sum(axis=(1, 2))[shown]
    union = (true | estimated).sum(axis=(1, 2))[shown]
    return inter / union


def iou_rows(model: str, ious, note: str = "") -> list[dict]:
    """The tracker's median and 10th-percentile IoU with the truth (the oracle's IoU is 1)."""
    ious = np.asarray(ious, dtype=float)
    if not len(ious):
        return [compared(model, f"tracking_iou_{s}", 1.0, math.nan, note or "no tracked frames")
                for s in ("median", "p10")]
    note = note or f"{len(ious)} frames in view"
    return [compared(model, "tracking_iou_median", 1.0, float(np.median(ious)), note),
            compared(model, "tracking_iou_p10", 1.0, float(np.percentile(ious, 10)), note)]


def absent_masks(true: np.ndarray, estimated: np.ndarray, min_pixels: int) -> tuple[int, int]:
    """(frames where the tracker reports a valid mask, of those where the target is not drawn):
    frames of (T, H, W) masks whose true mask covers < min_pixels (out of view, faded, gone) and
    whose estimated one covers >= min_pixels."""
    absent = true.sum(axis=(1, 2)) < min_pixels
    return int((estimated.sum(axis=(1, 2))[absent] >= min_pixels).sum()), int(absent.sum())


def absent_mask_row(model: str, masked: int, absent: int) -> dict:
    """The tracker's false-positive rate from ``absent_masks`` counts (the oracle's is 0)."""
    if not absent:
        return compared(model, "tracking_absent_masks", 0.0, math.nan, "no frame without the target")
    return compared(model, "tracking_absent_masks", 0.0, masked / absent,
                    f"{masked} of {absent} frames without the target")


def of_replay(rows: list[dict], replay: str) -> list[dict]:
    """``rows`` labelled with the replay they read ("clean" or the degradation's name)."""
    return [{**row, "replay": replay} for row in rows]


def agreement_table(rows: list[dict]) -> pd.DataFrame:
    table = pd.DataFrame(rows, columns=COLUMNS)
    numeric = ["oracle", "estimated", "difference"]
    table[numeric] = table[numeric].astype(float).round(DECIMALS)
    return table


def agreement_arguments(description: str, study: str, tolerance: float) -> argparse.ArgumentParser:
    """The command line both studies' agreement modules share (pairs MODEL=REPLAY, a model once
    per replay of it; the result directories of ``study``, the tolerance, the output)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--pairs", nargs="+", required=True, metavar="MODEL=REPLAY", type=lambda p: p.split("=", 1))
    for name in ("scores", "rollouts", "estimates"):
        folder = "perception" if name == "estimates" else name
        ap.add_argument(f"--{name}", required=True, type=Path, help=f"results/{study}/{folder}")
    ap.add_argument("--tolerance", type=float, default=tolerance)
    ap.add_argument("--out", required=True)
    return ap
