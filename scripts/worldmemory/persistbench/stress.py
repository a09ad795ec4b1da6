"""PersistBench's stress table: what the estimators read of each stress model against what they
should read (worldmemory.external.stress makes the models, worldmemory.report.stress checks).

The columns measured per run (a stress model, or a reference row: a reference model's replay):
Table 1's cells (tables.CELLS, percent, the tracked-frame rule).

    python -m worldmemory.persistbench.stress --stress black=stress.black ... \\
        --references omniscient.replay=omniscient.replay --scores DIR --out results/persistbench/stress.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

from worldmemory.persistbench.perception import FAMILY
from worldmemory.persistbench.tables import CELLS, read_scores, table1
from worldmemory.report.stress import check, expectations
from worldmemory.report.tables import write_csv


def stress_table(stress: dict[str, str], references: dict[str, str], scores_dir: Path):
    """The stress table of ``stress`` (stress model -> its run) against ``references``
    (expectation reference, e.g. omniscient.replay -> its run)."""
    measured = {}
    for row, run in [*stress.items(), *references.items()]:
        cells = table1(read_scores([scores_dir / run / f"{FAMILY}.csv"])).iloc[0]
        measured[row] = {c: float(cells[c]) for c in CELLS}
    return check(expectations("persistbench"), measured, {r: r for r in references})


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stress", nargs="+", required=True, metavar="MODEL=RUN", type=lambda v: v.split("=", 1))
    ap.add_argument("--references", nargs="*", default=[], metavar="ROW=RUN", type=lambda v: v.split("=", 1))
    ap.add_argument("--scores", required=True, type=Path)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    table = stress_table(dict(args.stress), dict(args.references), args.scores)
    write_csv(table, args.out)
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
