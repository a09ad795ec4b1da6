"""How far the configured estimators read from the oracle on the same pixels: perception agreement.

Each reference model's generated videos are also run as an external model (``<model>.replay``,
worldmemory.external.replay: the same frames as an H.264 MP4, without truth channels), scored
through the configured estimators, and compared with the oracle's scores of its own videos,
Table 1 cell by cell (percent; ``within``: |difference| <= 5 points, empty where the estimated
cell is NaN, whose reason is the note). Perm needs the same-entity judge as well as the tracker,
and Cont and App average the frames Perm keeps, so without a judge every cell is NaN. Three rows
per model measure the tracker itself: its per-frame IoU with the masks the model drew (frames
where the drawn target covers >= perception.MIN_PIXELS; median and 10th percentile), and
``tracking_absent_masks``, the share of the frames without the drawn target where it reports a
mask (its false-positive rate; warp-only and the forgetting models leave the target out).

    python -m worldmemory.persistbench.agreement --pairs omniscient=omniscient.replay ... \\
        --scores DIR --rollouts DIR --sequences DIR --estimates DIR --out results/persistbench/perception_agreement.csv
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from worldmemory.external.replays import replay_recipe
from worldmemory.perception.store import Estimates, load_model_estimates
from worldmemory.persistbench.perception import FAMILY, MIN_PIXELS
from worldmemory.persistbench.tables import CELLS, read_scores, table1, table1_reasons
from worldmemory.report.agreement import (
    absent_mask_row,
    absent_masks,
    agreement_arguments,
    agreement_table,
    iou_rows,
    mask_ious,
    of_replay,
    table_rows,
)
from worldmemory.report.tables import write_csv

TOLERANCE = 5.0  # points of Table 1's percent scale: the 0.05 of the WorldMemBench table


def cell_agreement(oracle, estimated, model: str, tolerance: float = TOLERANCE) -> list[dict]:
    """One row per Table 1 cell: the oracle's and the estimators' value of the same videos."""
    ours, theirs = table1(oracle).iloc[0], table1(estimated).iloc[0]
    reasons = dict(zip(*table1_reasons(estimated)[["cell", "reason"]].T.to_numpy()))
    return table_rows(model, CELLS, ours, theirs, reasons, tolerance)


def tracker_rows(model: str, rollouts: Path, sequences: Path, estimates: Estimates | None) -> list[dict]:
    """The tracker's per-frame IoU with the masks the model drew, and its false-positive rate
    where the model did not draw the target (Method 2's invisible window: no mask there)."""
    if estimates is None:
        return [*iou_rows(model, [], "no tracker configured"),
                {**absent_mask_row(model, 0, 0), "note": "no tracker configured"}]
    manifest = json.loads((rollouts / "manifest.json").read_text())
    ious, masked, absent = [], 0, 0
    for entry in manifest["rollouts"]:
        seq = json.loads((sequences / entry["sequence"] / "sequence.json").read_text())
        with np.load(rollouts / entry["truth"], allow_pickle=False) as truth:
            drawn = truth["instance"] == seq["target_instance"]
        masks = estimates.of(entry["sequence"])["masks"]
        ious += list(mask_ious(drawn, masks, MIN_PIXELS))
        masked, absent = np.add((masked, absent), absent_masks(drawn, masks, MIN_PIXELS))
    return [*iou_rows(model, ious), absent_mask_row(model, int(masked), int(absent))]


def agreement(pairs: list[tuple[str, str]], scores_dir: Path, rollouts_dir: Path, sequences_dir: Path,
              estimates_dir: Path, tolerance: float = TOLERANCE):
    """The agreement table of ``pairs`` (reference model, one of its replays: clean or degraded)."""
    rows = []
    for model, replay in pairs:
        oracle = read_scores([scores_dir / model / f"{FAMILY}.csv"])
        estimated = read_scores([scores_dir / replay / f"{FAMILY}.csv"]).assign(model=model)
        tracking = load_model_estimates(estimates_dir / replay, "tracking")
        rows += of_replay([*cell_agreement(oracle, estimated, model, tolerance),
                           *tracker_rows(model, rollouts_dir / model, sequences_dir, tracking)],
                          replay_recipe(replay))
    return agreement_table(rows)


def main(argv=None) -> None:
    ap = agreement_arguments(__doc__.splitlines()[0], "persistbench", TOLERANCE)
    ap.add_argument("--sequences", required=True, type=Path, help="results/persistbench/sequences")
    args = ap.parse_args(argv)
    table = agreement(args.pairs, args.scores, args.rollouts, args.sequences, args.estimates, args.tolerance)
    write_csv(table, args.out)
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
