"""PersistBench main table, aggregation-rule ablation and Perm-after-exit figure from score rows.

Input: the tidy per-sequence rows of ``metrics.sequence_rows`` (metrics.COLUMNS; values are
fractions) and the per-frame rows of ``metrics.frame_rows`` (metrics.FRAME_COLUMNS).
  * Table 1 (the paper's main table, "主实验"): one row per model (order of first appearance),
    columns ``{static,dynamic}_{perm,cont,app}_{invisible,visible}`` (the paper prints the
    invisible value with the visible one in parentheses beside it), IN PERCENT (0-100) like the
    paper, so that the paper's numbers compare directly, then n_static and n_dynamic (sequences of
    the kind). Each value is the mean over the model's sequences of that kind, each sequence
    weighing the same, under the tracked-frame rule. A sequence whose Cont/App is NaN because it
    had no frame to average (metrics.NOTHING_TO_AVERAGE: nothing tracked in the segment; that
    failure is Perm's) is left out of the mean; any other NaN (a metric not computed) makes the
    model's value NaN: NaN is never read as 0. ``table1_reasons`` says why each NaN cell is NaN.
  * Ablation (the paper's "消融实验", aggregation row): per kind (static, dynamic and "all", both
    kinds pooled, which is what the paper's single rho is over), segment and metric (cont, app:
    Perm is the same under both rules by definition), a row per model with its mean under the
    tracked and the all-frame rule (percent; the sequences each used), and the Spearman rank
    correlation rho across models between the two rules (scipy.stats.spearmanr), repeated on the
    rows of the group with n_models; NaN with a reason when fewer than 3 models have both means,
    or when a rule gives every model the same value. The paper: rho = 0.972 (App) and 0.685
    (Cont) on the invisible segment (persistbench_ablation.csv; ``ablation_side_by_side``).
  * Figure: mean per-frame Perm against frames from the exit (the frame the target leaves the
    input view), a line per model, static and dynamic panels.
Floats are rounded to ``DECIMALS`` and CSVs written with ``write_csv`` (byte-stable); the figure
is saved by report.figures.save_figure (no dated metadata).
"""

from __future__ import annotations

import argparse
import math
import warnings

import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from scipy import stats

from worldmemory.persistbench.metrics import (
    COLUMNS,
    FRAME_COLUMNS,
    KINDS,
    METRICS,
    NOTHING_TO_AVERAGE,
    ROW_KEYS,
    SEGMENTS,
)
from worldmemory.report.figures import save_figure
from worldmemory.report.tables import DECIMALS, add_paper_options, paper_runs, write_csv

PERCENT = 100.0
CELLS = [f"{kind}_{metric}_{segment}" for kind in KINDS for metric in METRICS for segment in SEGMENTS]
TABLE1_COLUMNS = ["model", *CELLS, "n_static", "n_dynamic"]
REASON_COLUMNS = ["model", "cell", "reason"]
ABLATION_KINDS = (*KINDS, "all")
ABLATION_METRICS = ("cont", "app")
ABLATION_COLUMNS = ["kind", "segment", "metric", "model", "tracked", "all_frames",
                    "n_sequences_tracked", "n_sequences_all", "rho", "n_models", "reason"]
MIN_MODELS = 3
SIDE_COLUMNS = ["model", "run", "kind", "metric", "segment", "paper", "ours", "note"]
ABLATION_SIDE_COLUMNS = ["component", "variant", "metric", "segment", "paper", "ours", "n_models",
                         "note"]
TEXT = ("model", "sequence", "kind", "category", "segment", "metric", "aggregation", "reason")
LABEL = {"perm": "Perm", "cont": "Cont", "app": "App"}


def read_scores(paths) -> pd.DataFrame:
    """Concatenated per-sequence score CSVs; only an empty value is NaN (a model named 'NA' stays)."""
    frames = [pd.read_csv(p, keep_default_na=False, na_values={"value": [""]},
                          dtype={c: str for c in TEXT}) for p in paths]
    return _checked(pd.concat(frames, ignore_index=True)[COLUMNS])


def read_frames(paths) -> pd.DataFrame:
    """Concatenated per-frame CSVs (frame_from_exit empty where the target never leaves)."""
    text = {c: str for c in ("model", "sequence", "kind")}
    frames = [pd.read_csv(p, keep_default_na=False, dtype=text,
                          na_values={c: [""] for c in ("frame_from_exit", "perm", "cont", "app")})
              for p in paths]
    return pd.concat(frames, ignore_index=True)[FRAME_COLUMNS]


def _checked(scores: pd.DataFrame) -> pd.DataFrame:
    duplicated = scores.duplicated(ROW_KEYS)
    if duplicated.any():
        first = scores.loc[duplicated, ROW_KEYS].iloc[0].to_dict()
        raise ValueError(f"score rows repeat, e.g. {first}; was a score file given twice?")
    kinds = scores.groupby(["model", "sequence"])["kind"].nunique()
    if (kinds > 1).any():
        raise ValueError(f"sequence {kinds[kinds > 1].index[0]} has more than one kind")
    return scores


def sequence_mean(rows: pd.DataFrame) -> tuple[float, int, str]:
    """(mean in percent, sequences used, reason if NaN) of one model's rows of one cell.

    ``rows`` hold one value per sequence. Sequences NaN for lack of a frame to average are left
    out; another NaN propagates with its reason.
    """
    if rows.empty:
        return math.nan, 0, "no sequence of this kind"
    missing = rows["value"].isna()
    empty = missing & rows["reason"].isin(NOTHING_TO_AVERAGE)
    uncomputed = missing & ~empty
    if uncomputed.any():
        return math.nan, 0, "; ".join(sorted(set(rows.loc[uncomputed, "reason"]) - {""})) or "NaN value"
    used = rows.loc[~missing, "value"]
    if used.empty:
        reasons = sorted(set(rows["reason"]))
        return math.nan, 0, "no sequence with a frame to average: " + "; ".join(reasons)
    return float(used.mean()) * PERCENT, len(used), ""


def _cells(scores: pd.DataFrame, aggregation: str) -> pd.DataFrame:
    """Rows (model, kind, metric, segment, value, n_sequences, reason), models in first-appearance order."""
    own = scores[scores["aggregation"] == aggregation]
    groups = dict(tuple(own.groupby(["model", "kind", "metric", "segment"], sort=False)))
    out = []
    for model in dict.fromkeys(scores["model"]):
        for kind in ABLATION_KINDS:
            for metric in METRICS:
                for segment in SEGMENTS:
                    if kind == "all":
                        parts = [groups.get((model, k, metric, segment)) for k in KINDS]
                        rows = pd.concat([p for p in parts if p is not None] or [own.iloc[:0]])
                    else:
                        rows = groups.get((model, kind, metric, segment), own.iloc[:0])
                    value, n, reason = sequence_mean(rows)
                    out.append({"model": model, "kind": kind, "metric": metric, "segment": segment,
                                "value": value, "n_sequences": n, "reason": reason})
    return pd.DataFrame(out)


def table1(scores: pd.DataFrame) -> pd.DataFrame:
    """The paper's main table (TABLE1_COLUMNS, percent, tracked-frame rule); see module doc."""
    scores = _checked(scores)
    cells = _cells(scores, "tracked")
    cells = cells[cells["kind"] != "all"]
    wide = cells.assign(cell=cells["kind"] + "_" + cells["metric"] + "_" + cells["segment"])
    table = wide.pivot(index="model", columns="cell", values="value")[CELLS]
    table = table.reindex(list(dict.fromkeys(scores["model"]))).reset_index()
    counts = scores.groupby(["model", "kind"])["sequence"].nunique()
    for kind in KINDS:
        table[f"n_{kind}"] = [int(counts.get((m, kind), 0)) for m in table["model"]]
    return table[TABLE1_COLUMNS].round(DECIMALS)


def table1_reasons(scores: pd.DataFrame) -> pd.DataFrame:
    """Why each NaN cell of Table 1 is NaN: columns model, cell, reason."""
    cells = _cells(_checked(scores), "tracked")
    cells = cells[(cells["kind"] != "all") & cells["value"].isna()]
    return pd.DataFrame({"model": cells["model"].to_numpy(),
                         "cell": (cells["kind"] + "_" + cells["metric"] + "_" + cells["segment"]).to_numpy(),
                         "reason": cells["reason"].to_numpy()}, columns=REASON_COLUMNS)


def spearman(a, b) -> tuple[float, int, str]:
    """(rho, models used, reason if NaN) of the rank correlation of two per-model vectors."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = np.isfinite(a) & np.isfinite(b)
    n = int(keep.sum())
    if n < MIN_MODELS:
        return math.nan, n, f"{n} model(s) with both means; rho needs at least {MIN_MODELS}"
    if np.ptp(a[keep]) == 0 or np.ptp(b[keep]) == 0:
        return math.nan, n, "a rule gives every model the same value: ranks undefined"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rho = stats.spearmanr(a[keep], b[keep]).statistic
    return float(rho), n, ""


def table_ablation(scores: pd.DataFrame) -> pd.DataFrame:
    """The aggregation-rule ablation (ABLATION_COLUMNS, means in percent); see module doc."""
    scores = _checked(scores)
    tracked, all_frames = _cells(scores, "tracked"), _cells(scores, "all_frames")
    keys = ["kind", "segment", "metric", "model"]
    both = tracked.merge(all_frames, on=keys, suffixes=("_tracked", "_all"))
    out = []
    for kind in ABLATION_KINDS:
        for segment in SEGMENTS:
            for metric in ABLATION_METRICS:
                group = both[(both["kind"] == kind) & (both["segment"] == segment)
                             & (both["metric"] == metric)]
                rho, n_models, rho_reason = spearman(group["value_tracked"], group["value_all"])
                for r in group.itertuples(index=False):
                    reasons = [f"tracked: {r.reason_tracked}" if r.reason_tracked else "",
                               f"all_frames: {r.reason_all}" if r.reason_all else "",
                               f"rho: {rho_reason}" if rho_reason else ""]
                    out.append({"kind": kind, "segment": segment, "metric": metric,
                                "model": r.model, "tracked": r.value_tracked,
                                "all_frames": r.value_all,
                                "n_sequences_tracked": r.n_sequences_tracked,
                                "n_sequences_all": r.n_sequences_all,
                                "rho": rho, "n_models": n_models,
                                "reason": "; ".join(x for x in reasons if x)})
    return pd.DataFrame(out, columns=ABLATION_COLUMNS).round(DECIMALS)


def paper_side_by_side(table: pd.DataFrame, paper: pd.DataFrame, runs: dict[str, str]) -> pd.DataFrame:
    """Each main-table number of the paper (percent) for a model we ran, next to ours.

    paper: persistbench_table1.csv (model, kind, metric, segment, value, source); ``runs`` maps a
    paper model to our run of it. The paper's "Omniscient Ref." row is the reference video scored
    against itself, which our omniscient reference model reproduces: map it with
    ``--paper-models omniscient="Omniscient Ref."``.
    """
    ours_by_run = table.set_index("model")
    paper = paper[paper["model"].isin(runs)]
    ours, notes = [], []
    for r in paper.itertuples(index=False):
        run, cell = runs[r.model], f"{r.kind}_{r.metric}_{r.segment}"
        value = float(ours_by_run.at[run, cell]) if run in ours_by_run.index else math.nan
        ours.append(value)
        notes.append(r.source if not math.isnan(value) else
                     f"ours NaN (table1 reasons); {r.source}" if run in ours_by_run.index else
                     f"not in our run; {r.source}")
    return pd.DataFrame({
        "model": paper["model"].to_numpy(), "run": paper["model"].map(runs).to_numpy(),
        "kind": paper["kind"].to_numpy(), "metric": paper["metric"].to_numpy(),
        "segment": paper["segment"].to_numpy(), "paper": paper["value"].to_numpy(dtype=float),
        "ours": ours, "note": notes}, columns=SIDE_COLUMNS).round(DECIMALS)


def ablation_side_by_side(ablation: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """The paper's aggregation-rule rho (persistbench_ablation.csv) next to ours over both kinds
    ("all"); ours is across our models, the paper's across its twelve. Other ablation rows need
    backends we do not run (tracker, judge, feature swaps) and are not listed."""
    rows = []
    for r in paper[paper["component"] == "aggregation"].itertuples(index=False):
        for segment in SEGMENTS:
            value = getattr(r, f"rho_{segment}")
            if pd.isna(value):
                continue
            ours = ablation[(ablation["kind"] == "all") & (ablation["segment"] == segment)
                            & (ablation["metric"] == r.metric)]
            rho = float(ours["rho"].iloc[0]) if len(ours) else math.nan
            n = int(ours["n_models"].iloc[0]) if len(ours) else 0
            rows.append({"component": r.component, "variant": r.variant, "metric": r.metric,
                         "segment": segment, "paper": float(value), "ours": rho, "n_models": n,
                         "note": r.source if not math.isnan(rho) else f"ours NaN; {r.source}"})
    return pd.DataFrame(rows, columns=ABLATION_SIDE_COLUMNS).round(DECIMALS)


def perm_after_exit(frames: pd.DataFrame) -> pd.DataFrame:
    """Mean Perm per (kind, model, frame_from_exit) over the sequences that have that frame with a
    Perm (a frame whose reference view lacks the target has none)."""
    known = frames.dropna(subset=["frame_from_exit"])
    curve = known.groupby(["kind", "model", "frame_from_exit"], sort=False)["perm"].agg(["mean", "count"])
    return curve.reset_index().rename(columns={"mean": "perm", "count": "n_sequences"})


def figure_perm_exit(frames: pd.DataFrame, out_png, out_pdf) -> Figure:
    """Mean per-frame Perm against frames from the exit, a line per model, static | dynamic.

    Colours from seaborn's colorblind palette, models in order of first appearance; frame 0 (the
    target leaves the input view) is marked. Writes PNG and PDF via report.figures.save_figure.
    """
    curve = perm_after_exit(frames)
    models = list(dict.fromkeys(frames["model"]))
    colours = dict(zip(models, sns.color_palette("colorblind", len(models))))
    fig = Figure(figsize=(10, 3.8), layout="constrained")
    axes = fig.subplots(1, len(KINDS), sharey=True)
    for ax, kind in zip(axes, KINDS):
        for model in models:
            rows = curve[(curve["kind"] == kind) & (curve["model"] == model)].sort_values("frame_from_exit")
            if not rows.empty:
                ax.plot(rows["frame_from_exit"], rows["perm"], color=colours[model], label=model)
        ax.axvline(0, color="grey", linestyle=":", label="target leaves the input view")
        ax.set(title=f"{kind.capitalize()} targets", xlabel="frames from the exit",
               ylim=(-0.02, 1.02))
        ax.legend(fontsize="x-small", loc="lower left")
    axes[0].set_ylabel("Perm (mean over sequences)")
    fig.suptitle("Object permanence after the target leaves the input view (PersistBench)")
    save_figure(fig, out_png, out_pdf)
    return fig


def _print_table1(table: pd.DataFrame) -> None:
    """The paper's layout: invisible (visible) per kind and metric, percent."""
    lines = []
    for row in table.itertuples(index=False):
        cells = {"model": row.model}
        for kind in KINDS:
            for metric in METRICS:
                inv, vis = (getattr(row, f"{kind}_{metric}_{s}") for s in SEGMENTS)
                cells[f"{kind[0].upper()}.{LABEL[metric]}"] = f"{inv:.2f} ({vis:.2f})"
        lines.append(cells)
    print(pd.DataFrame(lines).to_string(index=False))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scores", nargs="+", required=True, help="per-sequence score CSVs")
    parser.add_argument("--frames", nargs="+", required=True, help="per-frame CSVs")
    for option in ("--table1", "--ablation", "--figure-png", "--figure-pdf"):
        parser.add_argument(option, required=True)
    parser.add_argument("--reasons", help="CSV of why each NaN cell of Table 1 is NaN")
    add_paper_options(parser, "resources/paper_values/persistbench_table1.csv",
                      'omniscient="Omniscient Ref." (the paper\'s reference row)')
    parser.add_argument("--paper-ablation", help="resources/paper_values/persistbench_ablation.csv")
    parser.add_argument("--out-paper-ablation", help="side-by-side CSV; needs --paper-ablation")
    args = parser.parse_args(argv)
    runs = paper_runs(parser, args)
    if bool(args.paper_ablation) != bool(args.out_paper_ablation):
        parser.error("--paper-ablation and --out-paper-ablation go together")

    scores = read_scores(args.scores)
    main_table, ablation = table1(scores), table_ablation(scores)
    write_csv(main_table, args.table1)
    write_csv(ablation, args.ablation)
    figure_perm_exit(read_frames(args.frames), args.figure_png, args.figure_pdf)
    print("PersistBench main table (percent; invisible (visible), tracked frames)")
    _print_table1(main_table)
    reasons = table1_reasons(scores)
    if args.reasons:
        write_csv(reasons, args.reasons)
    for r in reasons.itertuples():
        print(f"  {r.model} {r.cell}: NaN ({r.reason})")
    rho = ablation.drop_duplicates(["kind", "segment", "metric"])
    print("\nAggregation rule: Spearman rho across models, all-frame vs tracked")
    print(rho[["kind", "segment", "metric", "rho", "n_models"]].to_string(index=False, float_format="%.3f"))

    if args.paper:
        side = paper_side_by_side(main_table, pd.read_csv(args.paper, keep_default_na=False,
                                                          na_values={"value": [""]}), runs)
        write_csv(side, args.out_paper)
        print()
        print(side.to_string(index=False))
    if args.paper_ablation:
        side = ablation_side_by_side(ablation, pd.read_csv(args.paper_ablation))
        write_csv(side, args.out_paper_ablation)
        print()
        print(side.to_string(index=False))


if __name__ == "__main__":
    main()
