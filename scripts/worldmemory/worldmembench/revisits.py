"""WorldMemBench revisit analyses: Table 8, Tables 9-10 and Figure 5 from score rows.

Input: the tidy rows of ``score.py`` (read with ``tables.read_scores``). Every value here is an
aggregate of ``tables.py``, applied to a subset of the rows, so Eq. 1 lives in one place:
  * Table 8 (Appendix G, "Per-model results on the three formal Rotation trajectories"): Table 2
    (``tables.table2``) of each model's rows of one of LRLR, LRLRLR and LRUD, one row per
    (model, trajectory). Its columns are those of Table 2 that these trajectories score: General
    Video Quality (Appendix G reads Imaging off Table 8), the seven Static Memory metrics and
    RPE_rot. Dynamic Memory (LR-Hold only) and RPE_trans (translation only) have no rows there.
  * R_k, the score at revisit k alone (Section 5.3, Appendix G): Eq. 1 with K = 1 on the rows of
    revisit k, i.e. per rollout the mean over targets of s_{u,k} (an invalid revisit scores 0),
    then the mean over the model's rollouts of the trajectory (``tables.aggregate_metric``).
  * RPE_rot at revisit k: Eq. 3 over cycle k's increments (score.py's per-cycle rows), the mean
    over the model's rollouts of the trajectory; lower is better, so its d > 0 is an improvement.
  * Tables 9 and 10 (Section 5.4, Appendix G): for LRLR and LRUD, R_1, R_2 and d = R_1 - R_2 per
    model and Static Memory metric and RPE_rot, and Delta_axis = d_LRUD - d_LRLR; Table 9 is the
    mean of Table 10 over models.
  * Figure 5 (Section 5.3): R_1, R_2, R_3 of LRLRLR per model, eight panels (the seven Static
    Memory metrics and RPE_rot, four per row).
NaN is never read as 0: a metric without rows, or a revisit with a valid but uncomputed value,
gives NaN, and a model mean over a NaN (Table 9) is NaN. CSVs are rounded to ``DECIMALS`` and
written by ``write_csv`` (byte-stable), the figure without dated metadata (as report/figures.py).
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from worldmemory.report.figures import save_figure
from worldmemory.report.tables import DECIMALS, write_csv
from worldmemory.worldmembench.tables import SHORT, STATIC, aggregate_metric, read_scores, table2

STATIC_METRICS = STATIC  # the seven Static Memory metrics of Table 2, as score.py names them
REVISIT_METRICS = (*STATIC, "rpe_rot")  # what Tables 9-10 and Figure 5 read per revisit (Section 5.3)
ROTATIONS = ("LRLR", "LRLRLR", "LRUD")  # Appendix G: "the three formal Rotation trajectories"
TABLE8_COLUMNS = ["model", "trajectory", "imaging_quality", "aesthetic_quality", *STATIC_METRICS,
                  "rpe_rot"]
CROSS_AXIS = ("LRLR", "LRUD")  # Section 5.4: same first yaw revisit, second by yaw vs pitch
TABLE10_COLUMNS = ["model", "metric", "R1_LRLR", "R2_LRLR", "d_LRLR", "R1_LRUD", "R2_LRUD",
                   "d_LRUD", "delta_axis"]
REVISIT_COLUMNS = ["model", "metric", "revisit", "score"]
FIGURE5_TRAJECTORY = "LRLRLR"
FIGURE5_METRICS = REVISIT_METRICS  # the paper's eight panels, four per row


def table8(scores: pd.DataFrame) -> pd.DataFrame:
    """Table 8: Table 2 restricted to each rotation trajectory of ROTATIONS that has rows.

    Rows are grouped by trajectory (in ROTATIONS order), models in order of first appearance
    within the trajectory's rows; columns TABLE8_COLUMNS.
    """
    parts = [table2(scores[scores["trajectory"] == t]).assign(trajectory=t)
             for t in ROTATIONS if (scores["trajectory"] == t).any()]
    if not parts:
        return pd.DataFrame(columns=TABLE8_COLUMNS)
    return pd.concat(parts, ignore_index=True)[TABLE8_COLUMNS]


def revisit_scores(scores: pd.DataFrame, trajectory: str) -> pd.DataFrame:
    """R_k per (model, metric, k) for the Static Memory metrics and RPE_rot on ``trajectory``.

    R_k is Eq. 1 with K = 1 on the rows of revisit k: per rollout the mean over targets of
    s_{u,k} (invalid -> 0), then the mean over rollouts (``tables.aggregate_metric``, the same
    aggregation as Table 2; for RPE_rot the mean of cycle k's values). Only (model, metric, k)
    with rows appear; columns REVISIT_COLUMNS, unrounded (Tables 9-10 round after differencing).
    """
    own = scores[(scores["trajectory"] == trajectory) & scores["metric"].isin(REVISIT_METRICS)
                 & (scores["revisit"] > 0)]
    out = []
    for model, rows in own.groupby("model", sort=False):
        for metric in REVISIT_METRICS:
            of_metric = rows[rows["metric"] == metric]
            for k in sorted(of_metric["revisit"].unique()):
                at_k = of_metric[of_metric["revisit"] == k].assign(revisit=1)
                out.append({"model": model, "metric": metric, "revisit": int(k),
                            "score": aggregate_metric(metric, at_k)})
    return pd.DataFrame(out, columns=REVISIT_COLUMNS)


def _score(table: pd.DataFrame, model: str, metric: str, k: int) -> float:
    hit = table[(table["model"] == model) & (table["metric"] == metric) & (table["revisit"] == k)]
    return float(hit["score"].iloc[0]) if len(hit) else math.nan


def table9_10(scores: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(Table 9, Table 10): LRLR vs LRUD revisit scores and their cross-axis difference.

    Table 10 has a row per model (first appearance in ``scores``) and Static Memory metric with
    R_1, R_2 and d = R_1 - R_2 for LRLR and LRUD, and delta_axis = d_LRUD - d_LRLR (Section 5.4;
    positive: more degradation after switching from yaw to pitch). Table 9 is its mean over
    models (model "mean"); a model's NaN makes that mean NaN. Both have columns TABLE10_COLUMNS.
    """
    by_trajectory = {t: revisit_scores(scores, t) for t in CROSS_AXIS}
    rows = []
    for model in dict.fromkeys(scores["model"]):
        for metric in REVISIT_METRICS:
            row = {"model": model, "metric": metric}
            for t, table in by_trajectory.items():
                r1, r2 = _score(table, model, metric, 1), _score(table, model, metric, 2)
                row |= {f"R1_{t}": r1, f"R2_{t}": r2, f"d_{t}": r1 - r2}
            row["delta_axis"] = row["d_LRUD"] - row["d_LRLR"]
            rows.append(row)
    table10 = pd.DataFrame(rows, columns=TABLE10_COLUMNS)
    return _model_mean(table10).round(DECIMALS), table10.round(DECIMALS)


def _model_mean(table10: pd.DataFrame) -> pd.DataFrame:
    """Table 9: per metric (in REVISIT_METRICS order) the mean of Table 10 over models."""
    by_metric = table10.groupby("metric", sort=False)[TABLE10_COLUMNS[2:]]
    means = by_metric.agg(lambda column: column.mean(skipna=False))  # NaN is never skipped
    return means.reset_index().assign(model="mean")[TABLE10_COLUMNS]


def figure5(scores: pd.DataFrame, out_png, out_pdf,
            metrics: tuple[str, ...] = FIGURE5_METRICS) -> Figure:
    """Figure 5: R_1..R_3 of LRLRLR per model, one panel per metric, a line per model.

    Colours from seaborn's colorblind palette, models in order of first appearance; a model
    without rows of a metric has no line in that panel. Writes PNG and PDF with the date and
    version metadata dropped (report.figures.save_figure), so reruns give the same bytes; returns the
    Figure. Missing output folders are created.
    """
    table = revisit_scores(scores, FIGURE5_TRAJECTORY)
    models = list(dict.fromkeys(scores["model"]))
    colours = dict(zip(models, sns.color_palette("colorblind", len(models))))
    columns = min(4, len(metrics))
    n_rows = -(-len(metrics) // columns)
    fig = Figure(figsize=(3.2 * columns, 3.2 * n_rows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(n_rows, columns, sharex=True)).ravel()
    for ax, metric in zip(axes, metrics):
        for model in models:
            rows = table[(table["model"] == model) & (table["metric"] == metric)].dropna(subset=["score"])
            if not rows.empty:
                ax.plot(rows["revisit"], rows["score"], marker="o", color=colours[model],
                        label=model)
        if not ax.get_lines():
            ax.text(0.5, 0.5, "no values", ha="center", va="center", transform=ax.transAxes, color="grey")
        arrow = "\u2193" if metric == "rpe_rot" else "\u2191"
        ax.set(title=f"{SHORT[metric]} {arrow}", xlabel="revisit", xticks=[1, 2, 3],
               xticklabels=["R$_1$", "R$_2$", "R$_3$"], xlim=(0.8, 3.2))
    for ax in axes[len(metrics):]:
        ax.set_visible(False)
    for ax in axes[::columns]:
        ax.set_ylabel("score")
    lines = {line.get_label(): line for ax in axes for line in ax.get_lines()}
    if lines:
        fig.legend(list(lines.values()), list(lines), loc="outside right center", fontsize="small")
    fig.suptitle(f"Per-model change across the three revisits of {FIGURE5_TRAJECTORY} "
                 "(cf. WorldMemBench Figure 5)")
    save_figure(fig, out_png, out_pdf)
    return fig


def _short(table: pd.DataFrame) -> str:
    return table.rename(columns=SHORT).to_string(index=False, float_format="%.3f")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scores", nargs="+", required=True, help="score CSVs (score.py)")
    for option in ("--table8", "--table9", "--table10", "--figure5-png", "--figure5-pdf"):
        parser.add_argument(option, required=True)
    args = parser.parse_args(argv)

    scores = read_scores(args.scores)
    per_trajectory = table8(scores)
    mean, per_model = table9_10(scores)
    write_csv(per_trajectory, args.table8)
    write_csv(mean, args.table9)
    write_csv(per_model, args.table10)
    figure5(scores, args.figure5_png, args.figure5_pdf)
    for title, table in (("Table 8", per_trajectory), ("Table 9", mean), ("Table 10", per_model)):
        print(f"{title}\n{_short(table)}\n")


if __name__ == "__main__":
    main()
