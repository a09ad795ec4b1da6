"""Tables 6 and 7 of WorldMemBench (Appendix F): how the automatic metrics agree with the human
study's annotators, from the study sets, their hidden keys and the annotators' exports (real ones
from the annotation pages, or simulate.py's).

Table 6 (Static Memory), one row per metric:
  * pairwise agreement: the automatic preference against the decisive human majority of a pair.
    The majority is the answer with strictly more votes than each other; a Tie majority
    (``majority_ties``) and a pair without one (``splits``: with three annotators the three-way
    A/Tie/B split) are left out of the denominator and counted apart (Appendix F's example:
    Human Identity, 65 of 76 decisive pairs, 85.5%, one tie and seven splits). A decisive majority
    against an automatic Tie counts as a disagreement (the paper is silent).
  * Spearman rho between the models' human win rates, over all raw votes (Win/Tie/Loss =
    1/0.5/0), and their automatic win rates over the same pairs (the automatic preference scored
    the same way). NaN with fewer than two models or where either side is constant.
Table 7 (Dynamic Memory), one row per sub-dimension and Overall: Spearman rho and PLCC (Pearson)
over the instances between the human score and the judge's. An annotator satisfies an item when
the event started (the gate) and the answer is the key's expected one; the human reference label
of an item is the majority of the annotators' (more than half satisfy it; with an even number of
annotators a tie reads 0, our choice); a score is the fraction of satisfied items (the
sub-dimension's two, or all eight for Overall). Instances nobody answered are left out.

The exports are read by exports.read_exports against the study set (its digest, its ids, one
export per annotator), and the key must record the same study set's digest: another draw of the
study is refused, never scored.

    python -m worldmemory.worldmembench.human_study.agreement --study-dir results/worldmembench/human_study \\
        --static-exports DIR --dynamic-exports DIR --exports-note "..." \\
        --table6 results/worldmembench/table6.csv --table7 results/worldmembench/table7.csv \\
        --paper6 resources/paper_values/worldmembench_table6.csv --out-paper6 ..._vs_paper.csv ...
"""

from __future__ import annotations

import argparse
import json
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from worldmemory.report.tables import DECIMALS, write_csv
from worldmemory.worldmembench.human_study.exports import METRICS, SET_FILES, STUDY_FILES, file_digest, read_exports
from worldmemory.worldmembench.metrics.dynamic_memory import ASPECTS

WIN = {"A": 1.0, "tie": 0.5, "B": 0.0}  # side A's Win/Tie/Loss
DIMENSIONS = (*ASPECTS, "overall")
RANGE = "range"  # a paper row giving the span of a statistic over the metrics or sub-dimensions


def majority(votes) -> str:
    """'A', 'B' or 'tie' when it has strictly more votes than each other answer, else 'split'."""
    (top, n), *rest = Counter(votes).most_common() or [("split", 0)]
    return "split" if rest and rest[0][1] == n else top


def correlation(kind: str, x, y) -> float:
    """Spearman rho or Pearson r (PLCC) of x and y; NaN with fewer than two points or a constant side."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float((stats.spearmanr if kind == "spearman" else stats.pearsonr)(x, y)[0])


def _votes(exports: list[dict], unit: str, field: str) -> dict[str, list]:
    votes: dict[str, list] = {}
    for export in exports:
        for answer in export["answers"]:
            votes.setdefault(answer[unit], []).append(answer[field] if field else answer)
    return votes


def pair_outcomes(key: dict, exports: list[dict]) -> pd.DataFrame:
    """One row per answered pair: its models, the automatic preference, the raw votes, the majority."""
    votes = _votes(exports, "pair", "choice")
    rows = [{**row, "votes": votes[row["pair"]], "majority": majority(votes[row["pair"]])}
            for row in key["pairs"] if row["pair"] in votes]
    return pd.DataFrame(rows, columns=[*key["pairs"][0], "votes", "majority"] if key["pairs"] else
                        ["pair", "model_a", "model_b", "automatic", "votes", "majority"])


def win_rates(outcomes: pd.DataFrame) -> pd.DataFrame:
    """Per model (sorted): its human win rate over every raw vote of its pairs and its automatic
    win rate over the same pairs (Win/Tie/Loss = 1/0.5/0)."""
    human, automatic = {}, {}
    for row in outcomes.itertuples(index=False):
        for model, sign in ((row.model_a, 1), (row.model_b, -1)):
            human.setdefault(model, []).extend(_side(WIN[v], sign) for v in row.votes)
            automatic.setdefault(model, []).append(_side(WIN[row.automatic], sign))
    models = sorted(human)
    return pd.DataFrame({"model": models, "human": [np.mean(human[m]) for m in models],
                         "automatic": [np.mean(automatic[m]) for m in models]})


def _side(a_score: float, sign: int) -> float:
    return a_score if sign > 0 else 1.0 - a_score


def table6(pairs: dict, key: dict, exports: list[dict]) -> pd.DataFrame:
    """Table 6, one row per metric of METRICS (see the module doc)."""
    metric_of = {p["pair"]: p["metric"] for p in pairs["pairs"]}
    outcomes = pair_outcomes(key, exports)
    outcomes["metric"] = [metric_of[p] for p in outcomes["pair"]]
    rows = []
    for metric in METRICS:
        own = outcomes[outcomes["metric"] == metric]
        decisive = own[own["majority"].isin(["A", "B"])]
        agree = int((decisive["majority"] == decisive["automatic"]).sum())
        rates = win_rates(own)
        rows.append({"metric": metric, "pairs": len(own), "decisive": len(decisive), "agree": agree,
                     "agreement_pct": 100 * agree / len(decisive) if len(decisive) else float("nan"),
                     "majority_ties": int((own["majority"] == "tie").sum()),
                     "splits": int((own["majority"] == "split").sum()), "models": len(rates),
                     "spearman_rho": correlation("spearman", rates["human"], rates["automatic"])})
    return pd.DataFrame(rows)


def instance_scores(instances: dict, key: dict, exports: list[dict]) -> pd.DataFrame:
    """Per answered instance, each dimension's human (majority-vote) and judge score; an item's
    sub-dimension is its question's aspect in instances.json."""
    answers = _votes(exports, "instance", None)
    aspects = {i["instance"]: np.array([q["aspect"] for q in i["questions"]]) for i in instances["instances"]}
    rows = []
    for row in key["instances"]:
        if row["instance"] not in answers:
            continue
        satisfied = np.array([a["started"] * (np.array(a["items"]) == row["expected"])
                              for a in answers[row["instance"]]])
        human = (satisfied.sum(axis=0) > len(satisfied) / 2).astype(float)
        judge = np.array(row["judge"]["items"], float)
        own = aspects[row["instance"]]
        rows.append({"instance": row["instance"], **_dimensions("human", human, own),
                     **_dimensions("judge", judge, own)})
    return pd.DataFrame(rows)


def _dimensions(who: str, items: np.ndarray, aspects: np.ndarray) -> dict:
    """The checklist's scores: the mean of each aspect's items and Overall, all eight."""
    return {**{f"{who}_{a}": float(items[aspects == a].mean()) for a in ASPECTS},
            f"{who}_overall": float(items.mean())}


def table7(instances: dict, key: dict, exports: list[dict]) -> pd.DataFrame:
    """Table 7, one row per sub-dimension and Overall (see the module doc)."""
    scores = instance_scores(instances, key, exports)
    rows = []
    for dimension in DIMENSIONS:
        human, judge = (scores.get(f"{w}_{dimension}", pd.Series(dtype=float)) for w in ("human", "judge"))
        rows.append({"dimension": dimension, "instances": len(scores),
                     "spearman_rho": correlation("spearman", human, judge),
                     "plcc": correlation("pearson", human, judge)})
    return pd.DataFrame(rows)


def vs_paper(ours: pd.DataFrame, paper: pd.DataFrame, row: str) -> pd.DataFrame:
    """The paper's values (long: ``row``, statistic, value, source) beside ours. The text also gives
    ranges ("agreement ranges from 78.5% to 92.5% across the six metrics"; "across the four
    sub-dimensions, rho spans 0.401-0.684"): a paper row named RANGE with statistic
    ``<statistic>_min`` / ``_max`` is read against the extremes of our rows (Overall left out)."""
    long = ours.melt(id_vars=[row], var_name="statistic", value_name="ours")
    parts = ours[ours[row] != "overall"].select_dtypes("number")
    spans = [{row: RANGE, "statistic": f"{column}_{end}", "ours": getattr(parts[column], end)()}
             for column in parts for end in ("min", "max")]
    long = pd.concat([long, pd.DataFrame(spans, columns=long.columns)], ignore_index=True)
    merged = paper.rename(columns={"value": "paper"}).merge(long, on=[row, "statistic"], how="left")
    return merged[[row, "statistic", "paper", "ours", "source"]]


def read_study(directory) -> dict:
    """The study sets and keys under ``directory`` (study_sets.py), by their names there; each key
    must record its study set's digest."""
    directory = Path(directory)
    study = {name: json.loads((directory / name).read_text()) for name in STUDY_FILES}
    for name, set_file in SET_FILES.items():
        key_file = directory / name / "key.json"
        digest, recorded = file_digest(directory / set_file), study[f"{name}/key.json"].get("study_set")
        if recorded != digest:
            raise ValueError(f"{key_file}: the key of the study set {recorded}, but {directory / set_file} is "
                             f"{digest}; rebuild the study sets (rule worldmembench_human_study_sets) so that "
                             f"both come from one draw")
    return study


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study-dir", required=True, type=Path, help="results/worldmembench/human_study")
    ap.add_argument("--static-exports", required=True, type=Path)
    ap.add_argument("--dynamic-exports", required=True, type=Path)
    ap.add_argument("--exports-note", required=True, help="where the exports come from (a column of both tables)")
    for name in ("table6", "table7"):
        ap.add_argument(f"--{name}", required=True, type=Path)
        ap.add_argument(f"--paper{name[-1]}", required=True, type=Path, help=f"the paper's {name} values")
        ap.add_argument(f"--out-paper{name[-1]}", required=True, type=Path)
    args = ap.parse_args(argv)
    study = read_study(args.study_dir)
    static, dynamic = (read_exports(directory, name, args.study_dir / SET_FILES[name])
                       for directory, name in ((args.static_exports, "static"), (args.dynamic_exports, "dynamic")))
    t6 = table6(study["static/pairs.json"], study["static/key.json"], static)
    t7 = table7(study["dynamic/instances.json"], study["dynamic/key.json"], dynamic)
    for table, n, path, paper, out, row in ((t6, len(static), args.table6, args.paper6, args.out_paper6, "metric"),
                                             (t7, len(dynamic), args.table7, args.paper7, args.out_paper7,
                                              "dimension")):
        table = table.round(DECIMALS)
        write_csv(table.assign(annotators=n, exports=args.exports_note), path)
        side = vs_paper(table, pd.read_csv(paper), row)
        write_csv(side, out)
        print(f"{path}\n{table.to_string(index=False)}\n\n{out}\n{side.to_string(index=False)}\n")
    print(f"exports: {args.exports_note}")


if __name__ == "__main__":
    main()
