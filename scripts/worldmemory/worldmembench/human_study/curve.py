"""How Tables 6 and 7 fall as the simulated annotators' noise rises (Appendix F's agreement, checked
end to end): at each noise level, simulate.py's annotators answer the study sets and the tables are
computed from their answers. One row per level and table row: Table 6's pairwise agreement and
Spearman rho per metric, plus ``all`` (agreement over every metric's decisive pairs), Table 7's
Spearman rho and PLCC per sub-dimension and Overall. Noise 0 gives 100% agreement and rho = 1
wherever the scores differ (simulate.py).

    python -m worldmemory.worldmembench.human_study.curve --study-dir results/worldmembench/human_study \\
        --noise 0 0.05 0.1 0.2 0.4 0.8 --annotators 3 --seed 0 \\
        --out results/worldmembench/human_study/simulated_curve.csv
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from worldmemory.report.tables import DECIMALS, write_csv
from worldmemory.worldmembench.human_study.agreement import read_study, table6, table7
from worldmemory.worldmembench.human_study.simulate import check_noise, simulated_exports

COLUMNS = ["noise", "table", "row", "decisive", "agreement_pct", "spearman_rho", "plcc"]


def curve(study: dict, levels: list[float], annotators: int, seed: int) -> pd.DataFrame:
    """Rows of COLUMNS per noise level; ``study`` maps the study files' names to their contents."""
    rows = []
    for noise in levels:
        t6 = table6(study["static/pairs.json"], study["static/key.json"],
                    simulated_exports("static", study["static/key.json"], annotators, noise, seed))
        t7 = table7(study["dynamic/instances.json"], study["dynamic/key.json"],
                    simulated_exports("dynamic", study["dynamic/key.json"], annotators, noise, seed))
        decisive = t6["decisive"].sum()
        pooled = 100 * t6["agree"].sum() / decisive if decisive else float("nan")
        rows += [{"noise": noise, "table": "table6", "row": r.metric, "decisive": r.decisive,
                  "agreement_pct": r.agreement_pct, "spearman_rho": r.spearman_rho} for r in t6.itertuples()]
        rows.append({"noise": noise, "table": "table6", "row": "all", "decisive": decisive, "agreement_pct": pooled})
        rows += [{"noise": noise, "table": "table7", "row": r.dimension, "spearman_rho": r.spearman_rho,
                  "plcc": r.plcc} for r in t7.itertuples()]
    return pd.DataFrame(rows, columns=COLUMNS).round(DECIMALS)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study-dir", required=True, type=Path, help="results/worldmembench/human_study")
    ap.add_argument("--noise", nargs="+", type=float, required=True, help="the noise levels (score units)")
    ap.add_argument("--annotators", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    levels = [check_noise(n, "--noise (worldmembench.human_study.noise_curve)") for n in args.noise]
    study = read_study(args.study_dir)
    table = curve(study, levels, args.annotators, args.seed)
    write_csv(table, args.out)
    print(table.to_string(index=False))


if __name__ == "__main__":
    main()
