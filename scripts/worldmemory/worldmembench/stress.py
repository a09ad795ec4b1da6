"""WorldMemBench's stress table: what the estimators read of each stress model against what they
should read (worldmemory.external.stress makes the models, worldmemory.report.stress checks).

The columns measured per run (a stress model, or a reference row: a reference model's replay):
Table 2's columns with an oracle (agreement.COLUMNS_COMPARED), each Static Memory column's
departure share (``<column>_departed``, tables.departure_shares), R_k of the Static Memory columns
and RPE_rot on LRLR (``<column>@R<k>``, revisits.revisit_scores: Section 5.3), and
``tracking_iou_median``: the tracker's per-frame IoU with the run's own truth, the omniscient's
masks transformed as its video was (frozen, mirrored; the reference rows: their source's masks
as drawn).

    python -m worldmemory.worldmembench.stress --stress frozen=stress.frozen ... \\
        --references omniscient.replay=omniscient.replay ... --truth omniscient --scores DIR \\
        --rollouts DIR --estimates DIR --out results/worldmembench/stress.csv
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from worldmemory.external.stress import frozen, mirrored
from worldmemory.perception.store import load_model_estimates
from worldmemory.report.agreement import mask_ious
from worldmemory.report.stress import check, expectations
from worldmemory.report.tables import write_csv
from worldmemory.worldmembench.agreement import COLUMNS_COMPARED, FAMILIES_COMPARED
from worldmemory.worldmembench.perception import MIN_PIXELS
from worldmemory.worldmembench.revisits import revisit_scores
from worldmemory.worldmembench.tables import departure_shares, read_scores, table2

REVISIT_TRAJECTORY = "LRLR"  # R_1, R_2 of the cross-axis tables' yaw trajectory (Section 5.4)
# the stress models whose own truth is the omniscient's masks transformed without context
TRUTH = {"frozen": frozen, "mirrored": mirrored}


def readings(scores) -> dict[str, float]:
    """Column -> reading of one run's score rows (module doc), the tracker's IoU aside."""
    row = table2(scores).iloc[0]
    out = {c: float(row[c]) for c in COLUMNS_COMPARED}
    out |= {c: float(v) for c, v in departure_shares(scores).iloc[0].drop("model").items()}
    revisits = revisit_scores(scores, REVISIT_TRAJECTORY)
    out |= {f"{r.metric}@R{r.revisit}": float(r.score) for r in revisits.itertuples()}
    return out


def tracking_iou(estimates_dir: Path, truth_rollouts: Path, transform=None) -> float:
    """Median per-frame IoU of the run's tracked masks with ``truth_rollouts``' target masks,
    transformed by ``transform`` (time-first arrays) when given; NaN without tracked frames."""
    estimates = load_model_estimates(estimates_dir, "tracking")
    if estimates is None:
        return math.nan
    manifest = json.loads((truth_rollouts / "manifest.json").read_text())
    ious = []
    for entry in manifest["rollouts"]:
        key = f"{entry['case']}/{entry['trajectory']}"
        if not any(name.startswith(f"{key}/") for name in estimates.arrays):
            continue
        fields = estimates.of(key)
        with np.load(truth_rollouts / entry["truth"], allow_pickle=False) as truth:
            instance = truth["instance"]
        if transform is not None:
            instance = transform(instance)
        for target, masks in zip(fields["targets"], fields["masks"]):
            ious += list(mask_ious(instance == entry["instances"][str(target)], masks, MIN_PIXELS))
    return float(np.median(ious)) if ious else math.nan


def stress_table(stress: dict[str, str], references: dict[str, str], truth: str, scores_dir: Path,
                 rollouts_dir: Path, estimates_dir: Path):
    """The stress table of ``stress`` (stress model -> its run) against ``references``
    (expectation reference, e.g. omniscient.replay -> its run); ``truth``: the omniscient's run."""
    measured = {}
    for row, run in [*stress.items(), *references.items()]:
        scores = read_scores([scores_dir / run / f"{f}.csv" for f in FAMILIES_COMPARED])
        measured[row] = readings(scores)
        source = rollouts_dir / (run.split(".replay")[0] if row in references else truth)
        if row in references or row in TRUTH:
            measured[row]["tracking_iou_median"] = tracking_iou(estimates_dir / run, source, TRUTH.get(row))
    return check(expectations("worldmembench"), measured, {r: r for r in references})


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stress", nargs="+", required=True, metavar="MODEL=RUN", type=lambda v: v.split("=", 1))
    ap.add_argument("--references", nargs="*", default=[], metavar="ROW=RUN", type=lambda v: v.split("=", 1))
    ap.add_argument("--truth", required=True, help="the omniscient reference model's run")
    for name in ("scores", "rollouts", "estimates"):
        ap.add_argument(f"--{name}", required=True, type=Path)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    table = stress_table(dict(args.stress), dict(args.references), args.truth, args.scores, args.rollouts,
                         args.estimates)
    write_csv(table, args.out)
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
