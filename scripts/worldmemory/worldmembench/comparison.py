"""WorldMemBench Table 3: a controlled comparison of one model's variants (Section 5.5, Appendix H).

The paper compares three training-free context-access policies of LingBot World v2 (FullKV,
Sliding Windows, FoV) with everything else fixed. A comparison here (``worldmembench.comparisons``)
is any list of models that differ in one setting and a baseline among them; a row per model, in
the comparison's order:
  * the eleven capability metrics (Section 5.5: "eight of the eleven capability metrics"): the
    seven Static Memory columns and the four Dynamic Memory sub-metrics of Table 2, aggregated as
    Table 2 aggregates them (``tables.table2`` over the comparison's scores);
  * ``latency_s``: the mean end-to-end seconds per video (Appendix H: "the mean end-to-end time to
    generate a 493-frame video over this matched set"), from the cost sidecars of the model's
    rollout jobs (``specs.latency``): the wall time of the rollout job per video on the machine
    that ran it, so comparable only between models rolled out on the same kind of machine;
  * ``speedup``: the baseline's mean latency / the model's (Appendix H; the baseline is 1);
  * ``returns_reached`` and ``return_error_deg``: the fraction of Environment returns that reach
    the target viewpoint and their mean rotation error (Appendix H's 57.6% -> 65.3%,
    31.0 deg -> 26.7 deg; ``qualification.return_accuracy``, which says how "reach" is read).
The paper's matched set (660 videos per policy) is ours by construction: every model of a
comparison is rolled out and scored on the same cases. Where the paper's Table 3 cells are not in
its text, resources/paper_values/worldmembench_table3.csv holds the values Section 5.5 and
Appendix H state in prose; the ``--paper-models`` labels (``paper_names`` in the config) say
which of our models stands for which of the paper's rows.

    python -m worldmemory.worldmembench.comparison --comparison NAME --scores CSV ... \
        --rollouts DIR ... --models M ... --baseline M --out table3.csv [--reasons CSV] \
        [--paper CSV --out-paper CSV --paper-models M=POLICY ...]
"""

from __future__ import annotations

import argparse
import math

import pandas as pd

from worldmemory.report.tables import DECIMALS, add_paper_options, paper_runs, write_csv
from worldmemory.worldmembench.qualification import return_accuracy
from worldmemory.worldmembench.specs import latency
from worldmemory.worldmembench.tables import DYNAMIC, SHORT, STATIC, read_scores, table2, table2_reasons

CAPABILITY = (*STATIC, *DYNAMIC[:4])  # the paper's eleven capability metrics (dyn_overall is not one)
RETURNS = ("returns_reached", "return_error_deg")
TABLE3_COLUMNS = ["comparison", "model", *CAPABILITY, "latency_s", "speedup", *RETURNS]


def table3(scores: pd.DataFrame, latency_s: dict[str, float], models: list[str], baseline: str,
           comparison: str = "") -> pd.DataFrame:
    """Table 3: a row per model of ``models`` in that order, columns TABLE3_COLUMNS.

    ``scores``: score rows (tables.read_scores) of at least these models; ``latency_s``: model ->
    mean seconds per video (a model left out is NaN, and so is its speedup). A model without
    score rows is refused rather than shown as a row of NaN.
    """
    if baseline not in models:
        raise ValueError(f"baseline {baseline!r} is not one of the models {models}")
    own = scores[scores["model"].isin(models)]
    missing = [m for m in models if m not in set(own["model"])]
    if missing:
        raise ValueError(f"no score rows for {missing}; give their score files")
    capabilities = table2(own).set_index("model")[list(CAPABILITY)]
    returns = return_accuracy(own).set_index("model")
    rows = []
    for model in models:
        seconds = latency_s.get(model, math.nan)
        rows.append({"comparison": comparison, "model": model, **capabilities.loc[model].to_dict(),
                     "latency_s": seconds, "speedup": latency_s.get(baseline, math.nan) / seconds,
                     **{c: returns.at[model, c] if model in returns.index else math.nan for c in RETURNS}})
    return pd.DataFrame(rows, columns=TABLE3_COLUMNS).round(DECIMALS)


def table3_reasons(scores: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """Why each NaN cell of ``table`` is NaN (columns model, metric, reason): Table 2's reasons
    for the capability columns (tables.table2_reasons), ours for the others."""
    own = scores[scores["model"].isin(table["model"])]
    reasons = table2_reasons(own)
    out = reasons[reasons["metric"].isin(CAPABILITY)].to_dict("records")
    for row in table.itertuples(index=False):
        for column, reason in (("latency_s", "no recorded rollout cost (costs.csv)"),
                               ("speedup", "the model's or the baseline's latency is NaN"),
                               ("returns_reached", "no Environment revisit on a rotation trajectory"),
                               ("return_error_deg", "no Environment return with a pose")):
            if math.isnan(getattr(row, column)):
                out.append({"model": row.model, "metric": column, "reason": reason})
    return pd.DataFrame(out, columns=["model", "metric", "reason"])


def table3_vs_paper(table: pd.DataFrame, paper: pd.DataFrame, runs: dict[str, str]) -> pd.DataFrame:
    """Every value the paper states for its Table 3 (policy, metric), beside ours for the model
    labelled as that policy (``runs``: policy -> our model); ours is NaN where none is."""
    ours = table.set_index("model")
    values = [float(ours.at[runs[r.policy], r.metric]) if r.policy in runs else math.nan
              for r in paper.itertuples()]
    return pd.DataFrame({"policy": paper["policy"].to_numpy(), "model": paper["policy"].map(runs).to_numpy(),
                         "metric": paper["metric"].to_numpy(), "paper": paper["value"].to_numpy(dtype=float),
                         "ours": values, "source": paper["source"].to_numpy()}).round(DECIMALS)


def _printable(table: pd.DataFrame) -> str:
    return table.drop(columns="comparison").rename(columns=SHORT).to_string(index=False, float_format="%.3f")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comparison", default="", help="the comparison's name (its config key)")
    parser.add_argument("--scores", nargs="+", required=True, help="score CSVs of the models (score.py)")
    parser.add_argument("--rollouts", nargs="+", required=True,
                        help="rollout directories of the models (costs.csv, manifest.json)")
    parser.add_argument("--models", nargs="+", required=True, help="the rows, top to bottom")
    parser.add_argument("--baseline", required=True, help="the model of --models the speedups are relative to")
    parser.add_argument("--out", required=True)
    parser.add_argument("--reasons", help="CSV of why each NaN cell is NaN")
    add_paper_options(parser, "resources/paper_values/worldmembench_table3.csv", "drifting=FullKV")
    args = parser.parse_args(argv)
    runs = paper_runs(parser, args)

    scores = read_scores(args.scores)
    seconds = latency(args.rollouts).set_index("model")["mean_s"].to_dict()
    table = table3(scores, seconds, args.models, args.baseline, args.comparison)
    write_csv(table, args.out)
    print(f"Table 3 ({args.comparison or 'comparison'}, baseline {args.baseline})\n{_printable(table)}")
    reasons = table3_reasons(scores, table)
    if args.reasons:
        write_csv(reasons, args.reasons)
    for r in reasons.itertuples():
        print(f"  {r.model} {r.metric}: NaN ({r.reason})")
    if args.paper:
        side = table3_vs_paper(table, pd.read_csv(args.paper), runs)
        write_csv(side, args.out_paper)
        print(f"\nThe paper's Table 3 values (Section 5.5, Appendix H) beside ours\n{side.to_string(index=False)}")


if __name__ == "__main__":
    main()
