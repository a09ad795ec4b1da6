"""How far the configured estimators read from the oracle on the same pixels: perception agreement.

Neither paper measures its estimators' error. Here each reference model's rollout is also run as
an external model (``<model>.replay``, worldmemory.external.replay: the same frames as an H.264
MP4, without truth channels), scored through the configured estimators, and compared with the
oracle's score of its own video, Table 2 column by column (those with an oracle: General Video
Quality has none; ``difference`` = estimated - oracle;
``within`` says whether |difference| <= the tolerance, empty where the estimated column is NaN,
whose reason is the note). Two rows per model measure the estimators themselves against the
truth the reference model drew: the tracker's per-frame IoU with the true target masks (frames
where the true target covers >= min_pixels, median and 10th percentile over all of them) and the
camera's per-frame orientation error in degrees (the angle of R_drawn(t)^T R_estimated(t), both
relative to frame 0; median and maximum), over every frame and over the frames that show
anything (``_shown``: a degraded replay's black or uniform frames have no recoverable
orientation). Each row carries its replay (``clean`` or the degradation, common.degrade).

    python -m worldmemory.worldmembench.agreement --pairs omniscient=omniscient.replay ... \\
        --scores DIR --rollouts DIR --estimates DIR --out results/worldmembench/perception_agreement.csv
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from worldmemory.common.geometry import rotation_angle
from worldmemory.external.replays import replay_recipe
from worldmemory.perception.store import Estimates, load_model_estimates
from worldmemory.report.agreement import (
    agreement_arguments,
    agreement_table,
    compared,
    iou_rows,
    mask_ious,
    of_replay,
    table_rows,
)
from worldmemory.report.tables import write_csv
from worldmemory.worldmembench.perception import FAMILIES, MIN_PIXELS
from worldmemory.worldmembench.tables import QUALITY, TABLE2_COLUMNS, read_scores, table2, table2_reasons

TOLERANCE = 0.05  # the bar: every column an estimator supports within 0.05 of the oracle
# General Video Quality has no oracle (a reference model's truth holds no quality estimate): its
# columns have nothing to agree with, so the replays are scored in the other families only.
FAMILIES_COMPARED = tuple(f for f in FAMILIES if f != "quality")
COLUMNS_COMPARED = [c for c in TABLE2_COLUMNS[1:] if c not in QUALITY]


def column_agreement(oracle: pd.DataFrame, estimated: pd.DataFrame, model: str,
                     tolerance: float = TOLERANCE) -> list[dict]:
    """One row per Table 2 column with an oracle: the oracle's and the estimators' value of the
    same videos; the note of an estimated NaN is its reason."""
    ours, theirs = table2(oracle).iloc[0], table2(estimated).iloc[0]
    reasons = dict(zip(*table2_reasons(estimated)[["metric", "reason"]].T.to_numpy()))
    return table_rows(model, COLUMNS_COMPARED, ours, theirs, reasons, tolerance)


def tracker_rows(model: str, rollouts: Path, estimates: Estimates | None, min_pixels: int = MIN_PIXELS) -> list[dict]:
    """The tracker's per-frame IoU with the true masks, over every tracked target and frame where
    the true target is in view."""
    if estimates is None:
        return iou_rows(model, [], "no tracker configured")
    manifest = json.loads((rollouts / "manifest.json").read_text())
    ious = []
    for entry in manifest["rollouts"]:
        key = f"{entry['case']}/{entry['trajectory']}"
        if not any(name.startswith(f"{key}/") for name in estimates.arrays):
            continue  # environment and dynamic cases have no tracked targets
        fields = estimates.of(key)
        with np.load(rollouts / entry["truth"], allow_pickle=False) as truth:
            instance = truth["instance"]
        for target, masks in zip(fields["targets"], fields["masks"]):
            ious += list(mask_ious(instance == entry["instances"][str(target)], masks, min_pixels))
    return iou_rows(model, ious)


def camera_rows(model: str, rollouts: Path, estimates: Estimates | None) -> list[dict]:
    """The camera estimator's per-frame orientation error against the drawn poses, in degrees, over
    the rollouts it estimated (perceive.py: not LR-Hold, nor the translation loops of a backend
    whose translations are too coarse): over every frame, and over the frames that show anything
    (``shown``, recorded by the perception job: a blank frame's orientation cannot be recovered,
    perception.base.shown_frames)."""
    quantities = ("camera_rotation_error_deg_median", "camera_rotation_error_deg_max")
    if estimates is None:
        return [compared(model, q + part, 0.0, math.nan, "no camera estimator configured")
                for part in ("", "_shown") for q in quantities]
    manifest = json.loads((rollouts / "manifest.json").read_text())
    errors, shown = [], []
    estimated = estimates.videos()
    for entry in manifest["rollouts"]:
        key = f"{entry['case']}/{entry['trajectory']}"
        if key not in estimated:
            continue
        fields = estimates.of(key)
        if "shown" not in fields:
            raise ValueError(f"{model}'s camera estimates of {key} do not record which frames show anything "
                             "(written before this field existed): delete its perception directory "
                             "(results/worldmembench/perception/<replay>/) and run the target again")
        poses = fields["poses"][:, :3, :3]
        with np.load(rollouts / entry["truth"], allow_pickle=False) as truth:
            drawn = truth["poses"][:, :3, :3]
        drawn, poses = drawn[0].T @ drawn, poses[0].T @ poses
        errors += list(np.degrees(rotation_angle(np.swapaxes(drawn, 1, 2) @ poses)))
        shown += list(fields["shown"])
    errors, shown = np.asarray(errors), np.asarray(shown, bool)
    rows = []
    for part, which in (("", np.ones_like(shown)), ("_shown", shown)):
        picked = errors[which]
        note = f"{len(picked)} frames" + (" with content" if part else "")
        median, largest = (float(np.median(picked)), float(np.max(picked))) if len(picked) else (math.nan, math.nan)
        rows += [compared(model, quantities[0] + part, 0.0, median, note),
                 compared(model, quantities[1] + part, 0.0, largest, note)]
    return rows


def agreement(pairs: list[tuple[str, str]], scores_dir: Path, rollouts_dir: Path, estimates_dir: Path,
              tolerance: float = TOLERANCE) -> pd.DataFrame:
    """The agreement table of ``pairs`` (reference model, one of its replays: clean or degraded)."""
    rows = []
    for model, replay in pairs:
        oracle = read_scores([scores_dir / model / f"{f}.csv" for f in FAMILIES_COMPARED])
        estimated = read_scores([scores_dir / replay / f"{f}.csv" for f in FAMILIES_COMPARED])
        own = estimates_dir / replay
        rows += of_replay([*column_agreement(oracle, estimated.assign(model=model), model, tolerance),
                           *tracker_rows(model, rollouts_dir / model, load_model_estimates(own, "tracking")),
                           *camera_rows(model, rollouts_dir / model, load_model_estimates(own, "camera"))],
                          replay_recipe(replay))
    return agreement_table(rows)


def main(argv=None) -> None:
    args = agreement_arguments(__doc__.splitlines()[0], "worldmembench", TOLERANCE).parse_args(argv)
    table = agreement(args.pairs, args.scores, args.rollouts, args.estimates, args.tolerance)
    write_csv(table, args.out)
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
