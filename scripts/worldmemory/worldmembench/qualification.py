"""WorldMemBench departure/return controls: Tables 11-13 of Appendix G.1 from score rows.

Input: the tidy rows of ``score.py`` (``tables.read_scores``). Besides the Static Memory rows,
this module reads score.py's evidence of the executed trajectory on the three formal rotation
trajectories (``revisits.ROTATIONS``):
  * Human/Object videos, per target and prescribed revisit k: ``departed`` (1.0 when the target
    left view in some frame of D_k, else 0.0) and ``return_frames`` (frames of R_k with a valid
    observation). The slot is tracking-supported by ``static_memory.tracking_qualified``.
  * Environment videos, per revisit k (target ""): ``departure_deg`` (largest SO(3) angle from the
    initial orientation over D_k) and ``return_error_deg`` (smallest over R_k). The slot is Q_tol
    by ``static_memory.pose_qualified`` (departure >= 30 deg, return error <= tol).

Appendix G.1, Tables 11-13, and the choices the paper leaves open:
  * Table 11 (coverage): entity columns are Eq. 1's order applied to the 0/1 slot indicator:
    mean over a target's prescribed revisits, then over the video's targets, then over the
    model's videos (each video weighs the same, as in Table 2). Environment columns are flat
    means over slots (the caption's "490 slots per model": 70 cases x 7 returns).
  * A case qualifies for a comparison when every compared slot of every needed video qualifies:
    all three returns of LRLRLR (multi-revisit, R_1 - R_3), both returns of both LRLR and LRUD
    (cross-axis, Delta_axis = (R_1 - R_2)_LRUD - (R_1 - R_2)_LRLR). Entity metrics use their
    family's tracking evidence ("Tracking": Human metrics on human cases, Object metrics on object
    cases); Environment metrics the poses ("Pose 30°"), so the three share one case set.
  * A case's effect comes from its R_k: Eq. 1 with K = 1 on the rows of revisit k
    (``tables.aggregate_metric``, as ``revisits.revisit_scores``): the mean over targets, an
    invalid revisit scoring 0 and a valid uncomputed one making it NaN. Effects are averaged over
    a model's qualifying cases, then equally over the M models with >= 1 qualifying case; "All
    cases" averages the same M models over every case that has the needed videos.
  * Missing evidence is never a pass: a pose phase without a pose (NaN angle) fails the filter,
    as in ``pose_qualified``. NaN tracking evidence (a model without a tracker) makes the slot
    UNKNOWN: the model's coverage is NaN, and its cases with an unknown slot never qualify.
  * NaN propagates: an uncomputed effect makes the model mean and the mean over models NaN, and
    Positive ("k/M") is NaN when any model's qualified effect is. Rows with M = 0 are left out.
CSVs are rounded to ``DECIMALS`` and written by ``write_csv`` (byte-stable).
"""

from __future__ import annotations

import argparse
import math
from collections import Counter

import numpy as np
import pandas as pd

from worldmemory.report.tables import DECIMALS, add_paper_options, paper_runs, write_csv
from worldmemory.worldmembench.metrics.static_memory import pose_qualified, tracking_qualified
from worldmemory.worldmembench.revisits import ROTATIONS
from worldmemory.worldmembench.tables import DEPARTURE_DEG, ENTITY_FAMILY, STATIC, aggregate_metric, read_scores
from worldmemory.worldmembench.trajectories import build

TOLERANCES = (30, 15, 5)  # return tolerances of Table 13 (30 is the main criterion)
PRESCRIBED = {t: len(build(t).revisits()) for t in ROTATIONS}  # K: LRLR 2, LRLRLR 3, LRUD 2
# Each part's effect is sum over its trajectories of sign * (R_1 - R_K).
PARTS = {"multi_revisit": {"LRLRLR": 1}, "cross_axis": {"LRUD": 1, "LRLR": -1}}
ENV_METRICS = tuple(m for m in STATIC if m not in ENTITY_FAMILY)
TRACKING_EVIDENCE = ("departed", "return_frames")
POSE_EVIDENCE = ("departure_deg", "return_error_deg")
TABLE11_COLUMNS = ["model", "human_tracked", "object_tracked", "env_D", "env_R30", "env_Q30",
                   "N_multi", "N_cross"]
TABLE12_COLUMNS = ["part", "metric", "N", "M", "all_cases", "qualified", "positive", "criterion"]
TABLE13_COLUMNS = ["tolerance", "part", *ENV_METRICS, "N", "M"]


def _evidence(scores: pd.DataFrame, metrics: tuple[str, str], keys: list[str]) -> pd.DataFrame:
    """The evidence rows on ROTATIONS, one row per slot (keys) and a column per metric; a slot
    missing one of the two is NaN there. A repeated slot is an error (pivot)."""
    rows = scores[scores["metric"].isin(metrics) & scores["trajectory"].isin(ROTATIONS)]
    wide = rows.pivot(index=keys, columns="metric", values="value")
    return wide.reindex(columns=list(metrics)).reset_index()


def _tracking_slots(scores: pd.DataFrame) -> pd.DataFrame:
    """Human/Object slots (model, case, family, trajectory, target, revisit) with ``qualified``
    1.0 / 0.0 by tracking_qualified, NaN when the evidence is NaN (unknown)."""
    keys = ["model", "case", "family", "trajectory", "target", "revisit"]
    slots = _evidence(scores, TRACKING_EVIDENCE, keys)
    slots["qualified"] = [
        math.nan if math.isnan(d) or math.isnan(n)
        else float(tracking_qualified([d == 0.0], n))  # not departed: visible throughout D_k
        for d, n in zip(slots["departed"], slots["return_frames"])]
    return slots


def _pose_slots(scores: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    """Environment slots (model, case, trajectory, revisit) with D (departure >= 30 deg),
    R (return error <= tolerance) and ``qualified`` (pose_qualified: both), as 1.0 / 0.0; a NaN
    angle fails."""
    slots = _evidence(scores, POSE_EVIDENCE, ["model", "case", "trajectory", "revisit"])
    departure, error = slots["departure_deg"], slots["return_error_deg"]
    slots["D"] = (departure >= DEPARTURE_DEG).astype(float)
    slots["R"] = (error <= tolerance).astype(float)
    slots["qualified"] = [float(pose_qualified([d], [r], DEPARTURE_DEG, tolerance))
                          for d, r in zip(departure, error)]
    return slots


def return_accuracy(scores: pd.DataFrame) -> pd.DataFrame:
    """Appendix H's return accuracy, a row per model with Environment slots: over its Environment
    revisit slots on ROTATIONS ("490 Environment revisit slots" at the paper's size),
    ``returns_reached`` is the fraction of returns that reach the target viewpoint (57.6% FullKV,
    65.3% FoV) and ``return_error_deg`` the mean return rotation error (31.0 and 26.7 deg).

    The paper does not define "reach" in Appendix H; we read it as Table 11's R_30 (return error
    <= 30 deg, its main criterion), so the fraction is env_R30 / 100, with a slot without a pose
    (NaN error) not reached, as there. The mean error is over the slots with a pose (NaN when
    none has one): an unposed return has no error to average.
    """
    slots = _pose_slots(scores, DEPARTURE_DEG)
    rows = [{"model": model, "returns_reached": own["R"].mean(), "return_error_deg": own["return_error_deg"].mean()}
            for model, own in slots.groupby("model", sort=False)]
    return pd.DataFrame(rows, columns=["model", "returns_reached", "return_error_deg"]).round(DECIMALS)


def _qualified_cases(slots: pd.DataFrame, part: str) -> dict[tuple[str, str], None]:
    """(model, case) pairs, in order of appearance, whose videos of the part's trajectories all
    have slots for revisits 1..K and whose every such slot qualifies (an ordered set)."""
    trajectories = PARTS[part]
    own = slots[slots["trajectory"].isin(trajectories)]
    kept = {}
    for key, rows in own.groupby(["model", "case"], sort=False):
        complete = all(set(rows.loc[rows["trajectory"] == t, "revisit"])
                       == set(range(1, PRESCRIBED[t] + 1)) for t in trajectories)
        if complete and (rows["qualified"] == 1.0).all():
            kept[key] = None
    return kept


def _case_effects(scores: pd.DataFrame, metric: str, part: str) -> dict[tuple[str, str], float]:
    """Each (model, case) with rows of ``metric`` on all the part's trajectories: its effect,
    sum over trajectories of sign * (R_1 - R_K), R_k per ``aggregate_metric`` (Eq. 1, K = 1)."""
    signs = PARTS[part]
    own = scores[(scores["metric"] == metric) & scores["trajectory"].isin(signs)]
    effects = {}
    for key, rows in own.groupby(["model", "case"], sort=False):
        videos = dict(tuple(rows.groupby("trajectory")))
        if set(videos) != set(signs):
            continue
        effects[key] = sum(sign * (_revisit(videos[t], metric, 1)
                                   - _revisit(videos[t], metric, PRESCRIBED[t]))
                           for t, sign in signs.items())
    return effects


def _revisit(rows: pd.DataFrame, metric: str, k: int) -> float:
    return aggregate_metric(metric, rows[rows["revisit"] == k].assign(revisit=1))


def _mean(values) -> float:
    """Mean with NaN kept; NaN (not a warning) for no values."""
    values = list(values)
    return float(np.mean(values)) if values else math.nan


def table11(scores: pd.DataFrame) -> pd.DataFrame:
    """Table 11: coverage per model (order of first appearance), columns TABLE11_COLUMNS.

    human_tracked / object_tracked: % of tracking-supported (target, revisit) slots on ROTATIONS,
    averaged over revisits, targets, then videos; NaN when the model has no such slots or one is
    unknown. env_D / env_R30 / env_Q30: % of environment slots (flat). N_multi / N_cross: the
    model's environment cases retained (Q_30) for the multi-revisit and cross-axis comparisons.
    """
    tracking, pose = _tracking_slots(scores), _pose_slots(scores, DEPARTURE_DEG)
    retained = {part: Counter(model for model, _ in _qualified_cases(pose, part))
                for part in PARTS}
    rows = []
    for model in dict.fromkeys(scores["model"]):
        row = {"model": model}
        for family in ("human", "object"):
            own = tracking[(tracking["model"] == model) & (tracking["family"] == family)]
            per_target = own.groupby(["case", "trajectory", "target"])["qualified"]
            per_video = per_target.mean(skipna=False).groupby(level=["case", "trajectory"])
            row[f"{family}_tracked"] = 100 * _mean(per_video.mean(skipna=False))
        env = pose[pose["model"] == model]
        row |= {column: 100 * _mean(env[flag])
                for column, flag in (("env_D", "D"), ("env_R30", "R"), ("env_Q30", "qualified"))}
        row |= {"N_multi": retained["multi_revisit"][model],
                "N_cross": retained["cross_axis"][model]}
        rows.append(row)
    return pd.DataFrame(rows, columns=TABLE11_COLUMNS).round(DECIMALS)


def paired_effects(scores: pd.DataFrame, tolerance: float = DEPARTURE_DEG,
                   metrics: tuple[str, ...] = STATIC) -> pd.DataFrame:
    """Table 12 (tolerance 30, all seven metrics): columns TABLE12_COLUMNS, a row per part
    (multi_revisit, cross_axis) and metric with M >= 1.

    N: qualifying model-case units, M: models with >= 1; qualified / all_cases: mean over the
    M models of each model's mean case effect over its qualifying / all cases; positive: "k/M"
    models with a positive qualified effect. ``tolerance`` is the Environment return tolerance
    (Table 13); the departure stays >= 30 deg and the entity criterion does not depend on it.
    """
    tracking, pose = _tracking_slots(scores), _pose_slots(scores, tolerance)
    models = list(dict.fromkeys(scores["model"]))
    rows = []
    for part in PARTS:
        for metric in metrics:
            family = ENTITY_FAMILY.get(metric)
            slots = pose if family is None else tracking[tracking["family"] == family]
            qualified = _qualified_cases(slots, part)
            effects = _case_effects(scores, metric, part)
            per_model = [(_mean(effects.get(key, math.nan) for key in qualified if key[0] == m),
                          _mean(v for key, v in effects.items() if key[0] == m),
                          sum(key[0] == m for key in qualified))
                         for m in models if any(key[0] == m for key in qualified)]
            if not per_model:
                continue
            kept, everything, counts = zip(*per_model)
            positive = (f"{sum(e > 0 for e in kept)}/{len(kept)}"
                        if all(math.isfinite(e) for e in kept) else math.nan)
            rows.append({"part": part, "metric": metric, "N": sum(counts), "M": len(kept),
                         "all_cases": _mean(everything), "qualified": _mean(kept),
                         "positive": positive,
                         "criterion": "Tracking" if family else f"Pose {tolerance:g}°"})
    return pd.DataFrame(rows, columns=TABLE12_COLUMNS).round(DECIMALS)


def table12(scores: pd.DataFrame) -> pd.DataFrame:
    """Table 12: paired revisit diagnostics under the 30 deg / tracking criteria."""
    return paired_effects(scores)


def table13(scores: pd.DataFrame) -> pd.DataFrame:
    """Table 13: the Environment qualified effects of ``paired_effects`` per return tolerance
    (TOLERANCES) and part, wide (TABLE13_COLUMNS); N and M are shared by the three metrics since
    a case qualifies on its poses. (tolerance, part) without qualifying cases has no row."""
    rows = []
    for tolerance in TOLERANCES:
        long = paired_effects(scores, tolerance, ENV_METRICS)
        for part, block in long.groupby("part", sort=False):
            rows.append({"tolerance": tolerance, "part": part,
                         **dict(zip(block["metric"], block["qualified"])),
                         "N": block["N"].iloc[0], "M": block["M"].iloc[0]})
    return pd.DataFrame(rows, columns=TABLE13_COLUMNS)


def table12_vs_paper(scores: pd.DataFrame, paper: pd.DataFrame,
                     runs: dict[str, str]) -> pd.DataFrame:
    """The paper's Table 12 (over its nine models) beside ours over our runs of the paper's models
    (``runs``: paper model -> our run); a row of the paper we cannot compute is NaN on our side."""
    ours = table12(scores[scores["model"].isin(runs.values())])
    merged = paper.merge(ours.drop(columns="criterion"), on=["part", "metric"], how="left",
                         suffixes=("_paper", "_ours"))
    columns = ["part", "metric", "criterion"]
    for name in ("N", "M", "all_cases", "qualified", "positive"):
        columns += [f"{name}_paper", f"{name}_ours"]
    return merged[columns + ["source"]]


def _notes(scores: pd.DataFrame, table12_: pd.DataFrame, table13_: pd.DataFrame) -> list[str]:
    """Lines for unknown tracking evidence and comparisons without qualifying cases."""
    lines = []
    unknown = scores[scores["metric"].isin(TRACKING_EVIDENCE) & scores["value"].isna()]
    for (model, family), rows in unknown.groupby(["model", "family"], sort=False):
        reasons = "; ".join(sorted(set(rows["reason"]) - {""})) or "no reason given"
        lines.append(f"{model}: {len(rows)} {family} tracking-evidence rows are NaN ({reasons}): "
                     f"{family} coverage is NaN and those cases never qualify")
    for title, table, wanted in (
            ("Table 12", table12_, [(p, m) for p in PARTS for m in STATIC]),
            ("Table 13", table13_, [(t, p) for t in TOLERANCES for p in PARTS])):
        have = set(zip(table.iloc[:, 0], table.iloc[:, 1]))
        missing = [f"{a} {b}" for a, b in wanted if (a, b) not in have]
        if missing:
            lines.append(f"{title}: no qualifying cases for {', '.join(missing)}")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scores", nargs="+", required=True, help="score CSVs (score.py)")
    for option in ("--table11", "--table12", "--table13"):
        parser.add_argument(option, required=True)
    add_paper_options(parser, "resources/paper_values/worldmembench_table12.csv",
                      "lingbot=LingBot-World")
    args = parser.parse_args(argv)
    runs = paper_runs(parser, args)

    scores = read_scores(args.scores)
    tables = {"Table 11": table11(scores), "Table 12": table12(scores),
              "Table 13": table13(scores)}
    for table, path in zip(tables.values(), (args.table11, args.table12, args.table13)):
        write_csv(table, path)
    for title, table in tables.items():
        print(f"{title}\n{table.to_string(index=False, float_format='%.3f')}\n")
    for line in _notes(scores, tables["Table 12"], tables["Table 13"]):
        print(line)
    if args.paper:
        side = table12_vs_paper(scores, pd.read_csv(args.paper), runs)
        write_csv(side, args.out_paper)
        print(f"\nTable 12, the paper's nine models beside our runs of them\n{side.to_string(index=False)}")


if __name__ == "__main__":
    main()
