"""Table 8 of *Tracking Is Not Permanence* (the autoregressive readout) and its comparison with the paper.

From the per-scene evidence of ``cosmos_readout`` (Section 4.5, Appendix F): per condition and
control, memory = evidence(main) - evidence(control) per scene, its mean over the scenes, a 95%
interval from resampling the scenes (percentile bootstrap, RESAMPLES draws seeded by the model,
condition and control), and the fraction of scenes with positive memory (Figure 5b). Beside them
the mean evidence of the main pair and of the control, the prefix swap (the change in each mean
evidence when both sequences take the with-ball clip's prefix; Appendix F: 0.05-0.16 nats for
the main conditions, at most 0.47 for the controls), and how many scenes' prefix tokens differed
between the two clips of the pair (Appendix F: in 1 of 30).

The paper's numbers (resources/paper_values/permanence_table8.csv, statistic names in
``our_statistic``) print beside ours for runs of nvidia/Cosmos-Predict1-4B only; the file is
written, empty of rows, for any other run, as the other tables' side-by-side files are.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from worldmemory.common.seeds import stable_rng
from worldmemory.permanence import tables
from worldmemory.report.tables import DECIMALS, add_paper_options, paper_runs, write_csv

CONTROLS = ("exit", "never_shown")
RESAMPLES = 10000
LEVEL = 0.95
BOOTSTRAP_NAMESPACE = "worldmemory.permanence.cosmos.bootstrap.v1"
COLUMNS = ["model", "condition", "motion", "hidden_s", "control", "scenes", "memory", "ci_lo", "ci_hi",
           "positive_fraction", "evidence_main", "evidence_control", "swap_change_main", "swap_change_control",
           "prefix_differs_main", "prefix_differs_control"]


def scene_bootstrap(values: np.ndarray, key: str, resamples: int = RESAMPLES, level: float = LEVEL) -> tuple:
    """Percentile interval of the mean of per-scene ``values``, scenes resampled with replacement;
    draws from stable_rng(key), so the same key gives the same interval in every process."""
    rng = stable_rng(key, BOOTSTRAP_NAMESPACE)
    means = values[rng.integers(0, len(values), size=(resamples, len(values)))].mean(axis=1)
    low, high = np.percentile(means, [50 * (1 - level), 50 * (1 + level)])
    return float(low), float(high)


def table8(evidence: pd.DataFrame, resamples: int = RESAMPLES) -> pd.DataFrame:
    """One row per (model, condition, control) in the evidence's order; see the module docstring."""
    rows = []
    for (model, condition), group in evidence.groupby(["model", "condition"], sort=False):
        by_pair = {pair: g.set_index("scene") for pair, g in group.groupby("pair")}
        main = by_pair["main"]
        for control in CONTROLS:
            other = by_pair[control]
            if set(other.index) != set(main.index):
                raise ValueError(f"{model} {condition}: the {control} control covers other scenes than the main pair; "
                                 "rescore them together")
            other = other.reindex(main.index)
            memory = (main["evidence"] - other["evidence"]).to_numpy(dtype=float)
            low, high = scene_bootstrap(memory, f"{model}/{condition}/{control}", resamples)
            rows.append({
                "model": model, "condition": condition, "motion": main["motion"].iloc[0],
                "hidden_s": main["hidden_s"].iloc[0], "control": control, "scenes": len(memory),
                "memory": memory.mean(), "ci_lo": low, "ci_hi": high, "positive_fraction": (memory > 0).mean(),
                "evidence_main": main["evidence"].mean(), "evidence_control": other["evidence"].mean(),
                "swap_change_main": (main["evidence_swapped"] - main["evidence"]).mean(),
                "swap_change_control": (other["evidence_swapped"] - other["evidence"]).mean(),
                "prefix_differs_main": int((main["prefix_tokens_differing"] > 0).sum()),
                "prefix_differs_control": int((other["prefix_tokens_differing"] > 0).sum()),
            })  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS).round(DECIMALS)


def our_statistic(table: pd.DataFrame, model: str, condition: str, statistic: str) -> float:
    """Our value of a paper statistic of run ``model``, NaN where the table lacks the rows.

    ``statistic``: ``<column>@<control>`` (memory, ci_lo, ci_hi, positive_fraction of that control's
    row) at ``condition``, a name or several joined by '+' (their mean, equal scene counts: the pooled
    mean); or ``max_abs_swap_change_main`` / ``max_abs_swap_change_control`` over every condition
    with a box (``condition`` 'box': Appendix F's prefix swap).
    """
    rows = table[table["model"] == model]
    if statistic.startswith("max_abs_swap_change_"):
        box = rows[rows["hidden_s"].notna()]
        values = box.drop_duplicates("condition" if statistic.endswith("main") else ["condition", "control"])
        column = statistic.removeprefix("max_abs_")
        return float(values[column].abs().max()) if len(values) else float("nan")
    column, _, control = statistic.partition("@")
    picked = rows[rows["condition"].isin(condition.split("+")) & (rows["control"] == control)]
    if len(picked) != len(condition.split("+")):
        return float("nan")
    return float(picked[column].mean())


def paper_side_by_side(table: pd.DataFrame, paper: pd.DataFrame, runs: dict[str, str]) -> pd.DataFrame:
    """Each number the paper states for a model we ran, next to ours (permanence.tables')."""
    return tables.paper_side_by_side(table, paper, runs, statistic=our_statistic)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--evidence", nargs="+", required=True, help="per-scene evidence CSVs (cosmos_readout --out)")
    ap.add_argument("--out", required=True, help="results/permanence/table8.csv")
    ap.add_argument("--resamples", type=int, default=RESAMPLES)
    add_paper_options(ap, "resources/paper_values/permanence_table8.csv", "cosmos=nvidia/Cosmos-Predict1-4B")
    args = ap.parse_args(argv)
    runs = paper_runs(ap, args)
    table = table8(pd.concat([pd.read_csv(p) for p in args.evidence], ignore_index=True), args.resamples)
    write_csv(table, args.out)
    print(table[COLUMNS[:10]].to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    if args.paper:
        side = paper_side_by_side(table, pd.read_csv(args.paper), runs)
        write_csv(side, args.out_paper)
        print(side.to_string(index=False))


if __name__ == "__main__":
    main()
