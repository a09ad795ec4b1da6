"""The tracker in PersistBench's invisible window, on a model that copies its input video.

A "model" that returns the input camera's video as its generation shows the target exactly where
the input camera saw it, so inside the invisible window (Method 1: the frames where the input
camera does not see the target) it shows it nowhere; a dynamic target leaves on its own while
the wall it moved over stays in view, the hard case for a tracker that follows a place. The
configured tracker, started as Method 2 starts it (``perceive.track_sequence``), should report no
mask there: every such frame with a valid mask (>= perception.MIN_PIXELS) is a false positive
(goal: at most 2% of them). The frames that show the target measure that it is still followed
(an empty tracker has no false positives).

    python -m worldmemory.persistbench.input_copy --sequences results/persistbench/sequences \\
        --estimators '{"tracking": {"backend": "optical-flow"}}' --out results/persistbench/tracking_input_copy.csv
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from worldmemory.common.video import read_video
from worldmemory.perception import registry
from worldmemory.persistbench.perceive import track_sequence
from worldmemory.persistbench.perception import MIN_PIXELS
from worldmemory.persistbench.sequences import load_sequences
from worldmemory.report.agreement import absent_masks, mask_ious
from worldmemory.report.tables import write_csv

COLUMNS = ["sequence", "frames_without_target", "masked_without_target", "false_positive_rate",
           "frames_with_target", "iou_median"]


def sequence_row(tracker, seq_dir: Path, seq: dict) -> dict:
    """The counts of one sequence, its input video taken as the generated one."""
    with np.load(seq_dir / "views.npz", allow_pickle=False) as views:
        shown = views["input_instance"] == seq["target_instance"]
        reference_masks = views["reference_instance"] == seq["target_instance"]
    masks = track_sequence(tracker, read_video(seq_dir / "input.mkv"), read_video(seq_dir / "reference.mkv"),
                           reference_masks)
    masked, absent = absent_masks(shown, masks, MIN_PIXELS)
    ious = mask_ious(shown, masks, MIN_PIXELS)
    return {"sequence": seq["id"], "frames_without_target": absent, "masked_without_target": masked,
            "false_positive_rate": masked / absent if absent else np.nan,
            "frames_with_target": len(ious), "iou_median": float(np.median(ious)) if len(ious) else np.nan}


def input_copy_table(sequences_dir, tracker) -> pd.DataFrame:
    """One row per prepared sequence and an ``all`` row (counts summed, IoU median of the medians)."""
    sequences, directory = load_sequences(sequences_dir)
    rows = [sequence_row(tracker, directory / seq["id"], seq) for seq in sequences]
    table = pd.DataFrame(rows, columns=COLUMNS)
    masked, absent = table["masked_without_target"].sum(), table["frames_without_target"].sum()
    total = {"sequence": "all", "frames_without_target": absent, "masked_without_target": masked,
             "false_positive_rate": masked / absent if absent else np.nan,
             "frames_with_target": table["frames_with_target"].sum(), "iou_median": table["iou_median"].median()}
    return pd.concat([table, pd.DataFrame([total])], ignore_index=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sequences", required=True, type=Path, help="the prepared sequences (manifest.json)")
    ap.add_argument("--estimators", required=True, type=json.loads,
                    help='capability -> {"backend", "options"} (JSON, as perceive takes it); its "tracking"')
    ap.add_argument("--out", required=True, type=Path, help="the table (CSV)")
    args = ap.parse_args(argv)
    spec = args.estimators.get("tracking")
    if not spec or spec.get("skip"):
        raise SystemExit("persistbench.perception.tracking is none: no tracker to measure; configure one "
                         "(e.g. optical-flow) or do not ask for this table")
    tracker = registry.create("tracking", spec["backend"], **{"min_pixels": MIN_PIXELS, **spec.get("options", {})})
    table = input_copy_table(args.sequences, tracker)
    write_csv(table, args.out)
    total = table.iloc[-1]
    print(f"[input copy] {total.masked_without_target} of {total.frames_without_target} frames without the "
          f"target have a tracker mask ({total.false_positive_rate:.1%}; goal <= 2%)", flush=True)


if __name__ == "__main__":
    main()
