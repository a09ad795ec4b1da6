"""WorldMemBench Table 2 (main results) and Table 5 (Dynamic Memory decomposition) from scores.

Input: the tidy rows of ``score.py`` for one or more models. Aggregation (Section 4):
  * Static Memory (Human, Object) and Environment metrics: Eq. 1 per rollout (case x trajectory):
    each target's K prescribed revisits are averaged with an invalid revisit scoring 0
    (aggregate.rollout_score), then targets are averaged; the model's value is the mean over its
    rollouts, each rollout weighing the same. A rollout with a valid but uncomputed (NaN) revisit
    is NaN, and so is the model's value: a missing backend is never read as a zero.
  * Dynamic Memory: mean over the model's dynamic rollouts of each gated score (one LR-Hold video
    per case, so the mean over cases; Overall is Table 5's S_gated).
  * Camera Following: mean over the rollouts of the relevant trajectories (translation for
    RPE_trans, rotations for RPE_rot); rollouts whose RPE is NaN are left out.
  * General Video Quality: mean over rollouts (video_quality.benchmark_score); NaN while no
    predictor runs, with the reason in ``table2_reasons``.
Beside Table 2, ``departure_shares`` (results/worldmembench/table2_departure.csv): per model and
Static Memory column, the share of its revisit slots whose target or view departed (Appendix
G.1's evidence: a Human/Object target's ``departed``; an Environment revisit's ``departure_deg`` >=
30 deg), so that a model that never leaves its first view (share 0), whose revisits test no
memory, is told apart from one that remembers. Table 2's own means stay unfiltered, as the
paper's. Our choice where the paper is silent: a flat mean over the slots (target x revisit) of
the column's family on every trajectory that records the evidence; NaN when any slot's evidence
is missing (a model scored without a tracker), never read as departed or not.
Table 2 itself carries a ``validity`` column (``validity_flags``), so that a reader of Table 2 alone
cannot take an untested column for perfect memory: "ok", or which Static Memory columns had fewer
than half (VALID_SHARE) of their revisits depart (a frozen model reads 1.0 on every static column)
or of their targets found (Eq. 1 scores an unfound target 0, but a column that is mostly zeros
measures the tracker's failure or the model's, not which). Our choice: the paper has no such flag.
Floats are rounded to 6 decimals and CSVs written with a fixed line terminator, so they are
byte-stable across runs. This module runs in the light environment (no video or torch stack), so
it does not import score.py.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import pandas as pd

from worldmemory.report.tables import DECIMALS, add_paper_options, paper_runs, write_csv
from worldmemory.worldmembench.metrics.aggregate import rollout_score
from worldmemory.worldmembench.metrics.dynamic_memory import decomposition
from worldmemory.worldmembench.metrics.video_quality import benchmark_score

QUALITY = ("imaging_quality", "aesthetic_quality")
STATIC = ("human_identity", "human_appearance", "object_appearance", "object_geometry",
          "env_visible", "env_depth", "env_recon")
DYNAMIC = ("dyn_return_progress", "dyn_persistence_reset", "dyn_final_state",
           "dyn_causal_physical", "dyn_overall")
CAMERA = ("rpe_trans", "rpe_rot")
TABLE2_COLUMNS = ["model", *QUALITY, *STATIC, *DYNAMIC, *CAMERA]  # the paper's column order
TABLE5_COLUMNS = ["model", "n", "started", "p_start", "S_cond", "S_gated"]
ENTITY_FAMILY = {"human_identity": "human", "human_appearance": "human",
                 "object_appearance": "object", "object_geometry": "object"}
DEPARTURE_DEG = 30  # Appendix G.1: departure >= 30 deg from the initial orientation
DEPARTED = "_departed"  # the suffix of a Static Memory column's departure share
VALID_SHARE = 0.5  # below this share of departed / found revisit slots a Static Memory column is flagged
VALIDITY = "validity"  # Table 2's last column: "ok" or the flags (validity_flags)
ROW_KEYS = ["model", "case", "trajectory", "metric", "target", "revisit"]
SHORT = {  # Table 2's header abbreviations, for printing
    "imaging_quality": "Imaging", "aesthetic_quality": "Aesth.", "human_identity": "H.Id",
    "human_appearance": "H.App", "object_appearance": "O.App", "object_geometry": "O.Geo",
    "env_visible": "Env.Vis", "env_depth": "Env.Dep", "env_recon": "Env.Rec",
    "dyn_return_progress": "Prog.", "dyn_persistence_reset": "Persist.",
    "dyn_final_state": "Final", "dyn_causal_physical": "Phys.", "dyn_overall": "Overall",
    "rpe_trans": "Trans.", "rpe_rot": "Rot.",
}


def read_scores(paths) -> pd.DataFrame:
    """Concatenated score CSVs (score.write_scores: one per model and metric family, given in
    score.FAMILIES order per model) in canonical_order; only an empty value is NaN, so a target or
    model named 'NA' stays a string."""
    text = {c: str for c in ("model", "case", "family", "trajectory", "metric", "target", "reason")}
    frames = [pd.read_csv(p, keep_default_na=False, na_values={"value": [""]}, dtype=text)
              for p in paths]
    rows = pd.concat([f for f in frames if len(f)] or frames[:1], ignore_index=True)
    return canonical_order(rows.astype({"value": float, "revisit": int, "valid": bool}))


def canonical_order(scores: pd.DataFrame) -> pd.DataFrame:
    """Rows by model, case and trajectory, keeping the given order within a rollout (its families
    in score.FAMILIES order), so that every aggregate sums its values in one fixed order whatever
    the files were split into."""
    return scores.sort_values(["model", "case", "trajectory"], kind="stable").reset_index(drop=True)


def _eq1(rows: pd.DataFrame) -> float:
    """S_rollout of Eq. 1 from one rollout's rows of one per-revisit metric.

    K is the number of prescribed revisits, which score.py writes a row for whether or not the
    target was observed; every target must have rows for exactly revisits 1..K.
    """
    if (rows["valid"] & rows["value"].isna()).any():
        return math.nan
    k = int(rows["revisit"].max())
    scores = {}
    for target, group in rows.sort_values("revisit").groupby("target", sort=True):
        if list(group["revisit"]) != list(range(1, k + 1)):
            raise ValueError(f"target {target!r} has revisits {list(group['revisit'])}, "
                             f"expected 1..{k}")
        scores[target] = [v if ok else None for v, ok in zip(group["value"], group["valid"])]
    return rollout_score(scores, k)


def aggregate_metric(metric: str, rows: pd.DataFrame) -> float:
    """One model's Table 2 value of ``metric`` from its rows of that metric (see module doc)."""
    if rows.empty:
        return math.nan
    if metric in STATIC:
        per_rollout = [_eq1(r) for _, r in rows.groupby(["case", "trajectory"], sort=True)]
        return float(np.mean(per_rollout))
    if metric in CAMERA:
        finite = rows["value"].dropna()
        return float(finite.mean()) if len(finite) else math.nan
    if metric in QUALITY:
        return benchmark_score(rows["value"].to_numpy())
    return float(np.mean(rows["value"].to_numpy()))  # dynamic: NaN stays NaN


def _checked(scores: pd.DataFrame) -> pd.DataFrame:
    duplicated = scores.duplicated(ROW_KEYS)
    if duplicated.any():
        first = scores.loc[duplicated, ROW_KEYS].iloc[0].to_dict()
        raise ValueError(f"score rows repeat, e.g. {first}; was a score file given twice?")
    return scores


def table2(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per model (in order of first appearance), columns TABLE2_COLUMNS."""
    scores = _checked(scores)
    scores = scores[~scores["metric"].isin(CAMERA) | (scores["revisit"] == 0)]  # per-cycle RPE: Table 8-10
    rows = []
    for model, own in scores.groupby("model", sort=False):
        by_metric = dict(tuple(own.groupby("metric")))
        rows.append({"model": model, **{m: aggregate_metric(m, by_metric.get(m, own.iloc[:0]))
                                        for m in TABLE2_COLUMNS[1:]}})
    return pd.DataFrame(rows, columns=TABLE2_COLUMNS).round(DECIMALS)


def departure_shares(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per model (as ``table2``): for each Static Memory column ``<column>_departed``,
    the share of its revisit slots that departed (module doc)."""
    rows = []
    for model, own in _checked(scores).groupby("model", sort=False):
        row = {"model": model}
        for metric in STATIC:
            family = ENTITY_FAMILY.get(metric, "environment")
            evidence = "departed" if family != "environment" else "departure_deg"
            values = own.loc[(own["family"] == family) & (own["metric"] == evidence), "value"].to_numpy(float)
            if evidence == "departure_deg":
                values = np.where(np.isnan(values), np.nan, values >= DEPARTURE_DEG)
            missing = not len(values) or np.isnan(values).any()
            row[metric + DEPARTED] = math.nan if missing else float(values.mean())
        rows.append(row)
    return pd.DataFrame(rows, columns=["model", *(m + DEPARTED for m in STATIC)]).round(DECIMALS)


def found_shares(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per model (as ``table2``): for each Human / Object column, the share of its revisit
    slots (target x revisit) with a valid observation (the target found in V and R_k); NaN for a
    column without slots and for the Environment columns (a view, not a target to find)."""
    rows = []
    for model, own in _checked(scores).groupby("model", sort=False):
        row = {"model": model}
        for metric in STATIC:
            slots = own.loc[(own["metric"] == metric) & (own["revisit"] >= 1), "valid"]
            row[metric] = float(slots.mean()) if metric in ENTITY_FAMILY and len(slots) else math.nan
        rows.append(row)
    return pd.DataFrame(rows, columns=["model", *STATIC]).round(DECIMALS)


def validity_flags(table: pd.DataFrame, departure: pd.DataFrame, found: pd.DataFrame) -> pd.Series:
    """Table 2's ``validity`` per model (``table``'s row order): "ok", or the Static Memory columns
    with a value whose revisits mostly never departed or whose targets were mostly not found
    (under VALID_SHARE of the slots; module doc)."""
    departure, found = departure.set_index("model"), found.set_index("model")
    flags = []
    for row in table.itertuples(index=False):
        valued = [m for m in STATIC if not math.isnan(getattr(row, m))]
        parts = []
        departed = departure.loc[row.model, [m + DEPARTED for m in valued]]
        for label, shares in (("revisits mostly never departed", departed),
                              ("targets mostly not found", found.loc[row.model, valued])):
            low = [f"{SHORT[m]} {share:.0%}" for m, share in zip(valued, shares) if share < VALID_SHARE]
            if low:
                parts.append(f"{label}: {', '.join(low)}")
        flags.append("; ".join(parts) or "ok")
    return pd.Series(flags, index=table.index, name=VALIDITY)


def table2_reasons(scores: pd.DataFrame) -> pd.DataFrame:
    """Why each NaN cell of Table 2 is NaN: columns model, metric, reason.

    The reason is that of the model's rows of the metric with a NaN value (distinct reasons
    joined by '; '), or that the model has no rows of it (no case or trajectory that scores it).
    """
    table = table2(scores)
    out = []
    for row in table.itertuples(index=False):
        for metric in TABLE2_COLUMNS[1:]:
            if not math.isnan(getattr(row, metric)):
                continue
            own = scores[(scores["model"] == row.model) & (scores["metric"] == metric)]
            reasons = sorted(set(own.loc[own["value"].isna(), "reason"]) - {""})
            reason = "; ".join(reasons) if len(own) else "no rollout of this model scores it"
            out.append({"model": row.model, "metric": metric, "reason": reason})
    return pd.DataFrame(out, columns=["model", "metric", "reason"])


def table5(scores: pd.DataFrame) -> pd.DataFrame:
    """Appendix D.2 decomposition (n, started, p_start, S_cond, S_gated) per model with dynamic
    rollouts, via dynamic_memory.decomposition over its videos; NaN for a model whose videos no
    judge answered (an external model before the VLM judge lands)."""
    scores = _checked(scores)
    scores = scores[~scores["metric"].isin(CAMERA) | (scores["revisit"] == 0)]  # per-cycle RPE: Table 8-10
    rows = []
    for model, own in scores.groupby("model", sort=False):
        dynamic = own[own["metric"].isin(["dyn_started", "dyn_overall"])]
        if dynamic.empty:
            continue
        wide = dynamic.pivot(index=["case", "trajectory"], columns="metric", values="value")
        if wide.isna().any(axis=None):  # no judge ran: nothing to decompose
            rows.append({"model": model, "n": len(wide)})
            continue
        videos = [{"started": bool(s), "overall": o}
                  for s, o in zip(wide["dyn_started"], wide["dyn_overall"])]
        rows.append({"model": model, **decomposition(videos)})
    return pd.DataFrame(rows, columns=TABLE5_COLUMNS).round(DECIMALS)


def paper_side_by_side(table2_: pd.DataFrame, table5_: pd.DataFrame, paper: pd.DataFrame,
                       runs: dict[str, str]) -> pd.DataFrame:
    """Each number the paper states for a model we ran, next to ours; note carries the source.

    paper has columns model, metric, value, source, where metric is a column of Table 2 or 5;
    ``runs`` maps a paper model name to the name of our run of it.
    """
    ours_by_run = table2_.set_index("model").join(table5_.set_index("model"), how="outer")
    paper = paper[paper["model"].isin(runs)]
    ours = [float(ours_by_run.at[runs[r.model], r.metric])
            if runs[r.model] in ours_by_run.index else math.nan for r in paper.itertuples()]
    ran = paper["model"].map(runs).isin(ours_by_run.index)
    notes = [src if not math.isnan(v) else
             f"ours NaN: no backend yet (table2_nan_reasons.csv); {src}" if r else
             f"not in our run; {src}" for v, r, src in zip(ours, ran, paper["source"])]
    table = pd.DataFrame({
        "model": paper["model"].to_numpy(),
        "run": paper["model"].map(runs).to_numpy(),
        "metric": paper["metric"].to_numpy(),
        "paper": paper["value"].to_numpy(dtype=float),
        "ours": ours,
        "note": notes,
    })
    return table.round(DECIMALS)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scores", nargs="+", required=True, help="score CSVs (score.py)")
    parser.add_argument("--table2", required=True)
    parser.add_argument("--table5", required=True)
    parser.add_argument("--reasons", help="CSV of why each NaN cell of Table 2 is NaN")
    parser.add_argument("--departure", help="CSV of the departed share of each Static Memory column")
    add_paper_options(parser, "resources/paper_values/worldmembench_table2.csv", "lingbot=LingBot-World")
    args = parser.parse_args(argv)
    runs = paper_runs(parser, args)

    scores = read_scores(args.scores)
    main_table, decomposed = table2(scores), table5(scores)
    departure = departure_shares(scores)
    validity = validity_flags(main_table, departure, found_shares(scores))
    write_csv(main_table.assign(**{VALIDITY: validity}), args.table2)
    write_csv(decomposed, args.table5)
    print(main_table.rename(columns=SHORT).to_string(index=False, float_format="%.3f"))
    for model, flag in zip(main_table["model"], validity):
        if flag != "ok":
            print(f"  {model}: flagged in Table 2's validity column: {flag}")
    reasons = table2_reasons(scores)
    if args.reasons:
        write_csv(reasons, args.reasons)
    for r in reasons.itertuples():
        print(f"  {r.model} {r.metric}: NaN ({r.reason})")
    if args.departure:
        write_csv(departure, args.departure)
    print("\nShare of each Static Memory column's revisits that departed (1 = every revisit tests memory):")
    print(departure.rename(columns=lambda c: SHORT.get(c.removesuffix(DEPARTED), c)).to_string(
        index=False, float_format="%.2f"))
    if not decomposed.empty:
        print()
        print(decomposed.to_string(index=False, float_format="%.3f"))

    if args.paper:
        side = paper_side_by_side(main_table, decomposed, pd.read_csv(args.paper), runs)
        write_csv(side, args.out_paper)
        print()
        print(side.to_string(index=False))


if __name__ == "__main__":
    main()
