"""Join one model's per-case score files into the per-family files the tables read.

    python -m worldmemory.worldmembench.gather --scores results/worldmembench/scores/M --cases c1 c2 ...

Each case's score job (score.py) wrote ``<scores>/cases/<case>/<family>.csv`` and ``info.json``;
this writes ``<scores>/<family>.csv`` (the cases' rows, text for text, in the order given: sorted
case ids, so the rows are sorted by case then trajectory as one job over every case would write
them) and ``<scores>/<family>.json`` (the model's job sidecar: the estimators that family reads,
the features, the device and the packages of the environment the case jobs ran in).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from worldmemory.common.progress import SCORED
from worldmemory.common.provenance import joined_job_info, write_info
from worldmemory.report.tables import concat_csv
from worldmemory.worldmembench.perception import FAMILIES, NEEDS

INFO = SCORED  # a case's score job's sidecar, written last (its progress marker)


def gather(scores_dir, cases: list[str]) -> dict[str, int]:
    """Write the model's per-family files from its cases' (in this order); family -> rows."""
    scores_dir = Path(scores_dir)
    case_dirs = [scores_dir / "cases" / case for case in cases]
    joined = joined_job_info([d / INFO for d in case_dirs])
    counts = {}
    for family in FAMILIES:
        counts[family] = concat_csv([d / f"{family}.csv" for d in case_dirs], scores_dir / f"{family}.csv")
        write_info(scores_dir / f"{family}.json", {
            **joined, "family": family, "features": joined["features"] if family == "static" else None,
            "perception": {c: joined["perception"].get(c, "not scored") for c in NEEDS[family]}})
    return counts


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scores", required=True, type=Path, help="the model's score directory")
    ap.add_argument("--cases", nargs="+", required=True, help="the model's case ids, sorted")
    args = ap.parse_args(argv)
    counts = gather(args.scores, args.cases)
    print(f"[scores] {args.scores.name}: {len(args.cases)} cases, rows "
          + ", ".join(f"{family} {n}" for family, n in counts.items()))


if __name__ == "__main__":
    main()
