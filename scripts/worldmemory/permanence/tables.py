"""Table 3 of *Tracking Is Not Permanence* (Appendix A) and its comparison with the paper.

Belief that a hidden object is still there, P(present), by seconds since it was last visible,
with the carry-over of Section 3.2 and Clopper-Pearson intervals. Floats are rounded to 6
decimals so that the CSVs are byte-stable across runs.
"""

from __future__ import annotations

import argparse
import math
import re

import pandas as pd

from worldmemory.permanence.readouts import CONTROL_OF, belief_curve, carry_over
from worldmemory.report.tables import DECIMALS, add_paper_options, paper_runs, write_csv

WIDE_BLOCKS = (("p", "p_present"), ("lo", "ci_lo"), ("hi", "ci_hi"))
# Paper statistics: "<quantity>@<t>" (value at one time point) or "<quantity>_<agg>>=<t>"
# (mean, min or max over the time points from t on); t is written with two decimals.
STATISTIC = re.compile(r"^(?P<quantity>p_present|e|alpha)"
                       r"(?:@(?P<at>\d+\.\d\d)|_(?P<agg>mean|min|max)>=(?P<start>\d+\.\d\d))$")
CURVE_COLUMN = {"p_present": "p_present", "e": "e_mean", "alpha": "alpha_mean"}


def _t_label(t: float) -> str:
    return f"{t:.2f}"


def table3(curve: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(wide, long) from a belief_curve output; rows keep the curve's (sorted) order.

    wide: model, condition, control, carry_over_s, p_<t>..., lo_<t>..., hi_<t>... with t in
    ascending order; long: the curve itself.
    """
    keys = ["model", "condition"]
    wide = curve[keys].drop_duplicates().reset_index(drop=True)
    wide["control"] = wide["condition"].map(CONTROL_OF).fillna("")
    wide["carry_over_s"] = [carry_over(curve, m, c) for m, c in zip(wide["model"], wide["condition"])]

    labels = [_t_label(t) for t in sorted(curve["t_s"].unique())]
    by_time = curve.assign(t=curve["t_s"].map(_t_label))
    blocks = []
    for prefix, column in WIDE_BLOCKS:
        block = by_time.pivot(index=keys, columns="t", values=column)[labels]
        block.columns = [f"{prefix}_{t}" for t in labels]
        blocks.append(block)
    wide = wide.join(pd.concat(blocks, axis=1), on=keys)
    return wide.round(DECIMALS), curve.round(DECIMALS)


OBJECT_SIZE_FROM_S = 0.53  # Appendix I "Object size": the readouts from 0.53 s on


def object_size(scenes: pd.DataFrame, from_s: float = OBJECT_SIZE_FROM_S) -> pd.DataFrame:
    """Appendix I "Object size": P(present) per model, condition and ball radius over every
    scene and time point from ``from_s`` on (the paper: "from 0.53 s on, the released ViT-H reads
    a moving ball as present in 3, 3, 1 and 2% of scenes for radii of 4, 8, 16 and 32 px").

    p_present pools the decisions of all (scene, slot) readouts of the cell; n_scenes and
    n_readouts say how many. Sorted by model, condition, radius.
    """
    late = scenes[scenes["t_s"].round(2) >= round(from_s, 2)]
    table = (late.assign(present=late["present"].astype(bool))
             .groupby(["model", "condition", "radius"])
             .agg(n_scenes=("scene_id", "nunique"), n_readouts=("present", "size"), p_present=("present", "mean"))
             .reset_index())
    return table.round(DECIMALS)


def our_statistic(long: pd.DataFrame, model: str, condition: str, statistic: str) -> float:
    """Our value of one paper statistic (see STATISTIC) for run ``model``; NaN where it lacks the rows."""
    match = STATISTIC.match(statistic)
    if match is None:
        raise ValueError(f"unknown statistic {statistic!r}")
    rows = long[(long["model"] == model) & (long["condition"] == condition)]
    values = rows[CURVE_COLUMN[match["quantity"]]]
    if match["at"]:
        values = values[rows["t_s"].map(_t_label) == match["at"]]
        return float(values.iloc[0]) if len(values) else math.nan
    values = values[rows["t_s"].round(2) >= float(match["start"])]
    return float(values.agg(match["agg"])) if len(values) else math.nan


def paper_side_by_side(ours_long: pd.DataFrame, paper: pd.DataFrame, runs: dict[str, str],
                       statistic=None) -> pd.DataFrame:
    """Each number the paper states for a checkpoint we ran, next to ours; note carries the source.

    ``runs`` maps a paper checkpoint (Hugging Face id, as in the paper file) to the name of our run
    of it (a config key), so renaming a run never silently empties the comparison. ``statistic``
    reads one of ours, ``(ours_long, run, condition, statistic) -> float`` (default: our_statistic,
    the probe's; cosmos_tables passes Table 8's).
    """
    statistic = statistic or our_statistic
    paper = paper[paper["model"].isin(runs)]
    ours = [statistic(ours_long, runs[r.model], r.condition, r.statistic) for r in paper.itertuples()]
    notes = [src if not math.isnan(v) else f"not in our run; {src}" for v, src in zip(ours, paper["source"])]
    table = pd.DataFrame({
        "model": paper["model"].to_numpy(),
        "run": paper["model"].map(runs).to_numpy(),
        "condition": paper["condition"].to_numpy(),
        "statistic": paper["statistic"].to_numpy(),
        "paper": paper["value"].to_numpy(dtype=float),
        "ours": ours,
        "note": notes,
    })
    return table.round(DECIMALS)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probe", nargs="+", required=True, help="per-scene probe CSVs, one per model")
    parser.add_argument("--out-wide", required=True)
    parser.add_argument("--out-long", required=True)
    parser.add_argument("--out-size", help="the object-size breakdown of Appendix I (CSV)")
    add_paper_options(parser, "resources/paper_values/permanence_table3.csv",
                      "vith=facebook/vjepa2-vith-fpc64-256")
    args = parser.parse_args(argv)
    runs = paper_runs(parser, args)

    scenes = pd.concat([pd.read_csv(path) for path in args.probe], ignore_index=True)
    wide, long = table3(belief_curve(scenes))
    write_csv(wide, args.out_wide)
    write_csv(long, args.out_long)
    if args.out_size:
        write_csv(object_size(scenes), args.out_size)
    p_columns = ["model", "condition", "carry_over_s"] + [c for c in wide.columns if c.startswith("p_")]
    print(wide[p_columns].to_string(index=False, float_format="%.2f"))

    if args.paper:
        paper = pd.read_csv(args.paper)
        side = paper_side_by_side(long, paper, runs)
        write_csv(side, args.out_paper)
        print()
        print(side.to_string(index=False))


if __name__ == "__main__":
    main()
