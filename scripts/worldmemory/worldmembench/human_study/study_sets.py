"""The study sets of WorldMemBench's human evaluation (Appendix F): what the annotators see and the
hidden key, per study, in the human-study file contract (pages.py reads them).

- static (Figure 8): blinded A/B pairs of two models' rollouts of the same case, trajectory and
  revisit slot, per Static Memory metric (the paper: 84 tasks, 504 pairs, six metrics). A *task*
  is a revisit slot (case, trajectory, revisit k); the pairs of a metric are drawn, without
  replacement and by the seed, from every slot of a case of the metric's family times every
  unordered pair of the study's models whose score of the slot is a number, at most
  ``pairs_per_metric`` of them; which model is A is drawn too. The slot's score of a model is
  Eq. 1's for that revisit: the mean over the case's targets, an invalid revisit scoring 0
  (a valid but uncomputed NaN, Human Identity without a face backend, leaves the slot out).
  The automatic preference is the side with the higher score, a tie when the two are equal
  (to DECIMALS places: the paper is silent). Reference frames are the rollout's initial hold V,
  the revisit frames its R_k (Section 4.1), both [start, end); a pair whose two rollouts were
  drawn along different phases (a run's own trajectory parameters) is left out.
  Environment Reconstruction, which the paper's six-metric study leaves out, has no question.
- dynamic (Figure 9): instances (a model's LR-Hold rollout of a dynamic case), drawn by the seed,
  at most ``instances`` (the paper: 50). Each carries the event (its initial state, action and
  expected next state), the planned camera phases (Appendix D.1) and the case's eight checklist
  questions, as the case words them (the page records Yes = 1, No = 0). The key holds the questions'
  expected answers (the case's reference answers, 1 = Yes), the judge's start decision and its
  gated item scores (score.py's ``dyn_item`` rows: 1 = the expected answer), in the same order.

Each key records the sha256 of its study-set file (``study_set``, exports.file_digest), as the
page and every export do: Tables 6 and 7 refuse exports of another study set.

    python -m worldmemory.worldmembench.human_study.study_sets --scores results/worldmembench/scores \\
        --models omniscient amnesic --cases results/worldmembench/cases/dynamic_000 \\
        --rollouts results/worldmembench/rollouts --seed 0 --pairs-per-metric 84 --instances 50 \\
        --out results/worldmembench/human_study
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from worldmemory.common.seeds import stable_rng
from worldmemory.worldmembench.cases import load_case
from worldmemory.worldmembench.human_study.exports import (
    EVENT_FIELDS,
    METRICS,
    N_ITEMS,
    NAMESPACE,
    STUDY_FILES,
    file_digest,
    preference,
    write_json,
)
from worldmemory.worldmembench.metrics.dynamic_memory import ITEM, phase_ranges
from worldmemory.worldmembench.tables import aggregate_metric, read_scores
from worldmemory.worldmembench.trajectories import load_trajectory


def study_models(models: list[str], chosen: list[str] | None) -> list[str]:
    """The study's models (worldmembench.human_study.models, sorted): all of ``models`` when unset."""
    unknown = sorted(set(chosen or []) - set(models))
    if unknown:
        raise ValueError(f"worldmembench.human_study.models names {', '.join(map(repr, unknown))}, expected models "
                         f"of worldmembench.models ({', '.join(models)}); fix the list or leave it out for all")
    return sorted(chosen or models)


def slot_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per (metric, case, trajectory, revisit, model) of the six metrics: the revisit's
    score as revisits.revisit_scores reads R_k, Eq. 1 with K = 1 on the revisit's rows
    (tables.aggregate_metric: the mean over the case's targets, an invalid revisit scoring 0; NaN
    where a valid revisit's value is NaN)."""
    rows = scores[scores["metric"].isin(METRICS) & (scores["revisit"] >= 1)]
    keys = ["metric", "case", "trajectory", "revisit", "model"]
    slots = [{**dict(zip(keys, slot)), "value": aggregate_metric(slot[0], own.assign(revisit=1))}
             for slot, own in rows.groupby(keys, sort=True)]
    return pd.DataFrame(slots, columns=[*keys, "value"])


def _phases(rollouts: Path, model: str, case: str, trajectory: str) -> list[dict]:
    path = rollouts / model / case / trajectory / "trajectory.json"
    if not path.is_file():
        raise ValueError(f"{path}: no trajectory for {model}'s rollout of {case}/{trajectory}; "
                         f"build the model's rollouts first")
    return json.loads(path.read_text())["phases"]


def static_set(scores: pd.DataFrame, rollouts, models: list[str], pairs_per_metric: int,
               seed: int) -> tuple[dict, dict]:
    """(pairs.json, key.json) of the static study."""
    rollouts = Path(rollouts)
    slots = slot_scores(scores[scores["model"].isin(models)])
    phases, tasks, pairs, key = {}, {}, [], []
    for metric in METRICS:
        candidates = []
        for (case, trajectory, k), own in slots[slots["metric"] == metric].groupby(
                ["case", "trajectory", "revisit"], sort=True):
            value = dict(zip(own["model"], own["value"]))
            for a, b in itertools.combinations(sorted(m for m in value if math.isfinite(value[m])), 2):
                for m in (a, b):
                    phases.setdefault((m, case, trajectory), _phases(rollouts, m, case, trajectory))
                if phases[(a, case, trajectory)] == phases[(b, case, trajectory)]:
                    candidates.append((case, trajectory, int(k), a, b, value[a], value[b]))
        rng = stable_rng(metric, f"{NAMESPACE}/{seed}")
        chosen = rng.permutation(len(candidates))[:pairs_per_metric]
        for i in chosen:
            case, trajectory, k, a, b, score_a, score_b = candidates[i]
            if rng.random() < 0.5:
                a, b, score_a, score_b = b, a, score_b, score_a
            task = tasks.setdefault((case, trajectory, k), f"t{len(tasks) + 1:03d}")
            own = {p["name"]: [p["start"], p["end"]] for p in phases[(a, case, trajectory)]}
            pair = f"p{len(pairs) + 1:04d}"
            pairs.append({"pair": pair, "task": task, "metric": metric, "case": case, "trajectory": trajectory,
                          "revisit": k, "reference_frames": own["V"], "revisit_frames": own[f"R{k}"]})
            key.append({"pair": pair, "model_a": a, "model_b": b, "score_a": score_a, "score_b": score_b,
                        "automatic": preference(score_a, score_b)})
    return {"study": "static", "pairs": pairs}, {"study": "static", "seed": seed, "pairs": key}


def dynamic_set(scores: pd.DataFrame, case_dirs, rollouts, models: list[str], instances: int,
                seed: int) -> tuple[dict, dict]:
    """(instances.json, key.json) of the dynamic study; ``case_dirs``: the dynamic cases' directories."""
    case_dirs, rollouts = {Path(d).name: Path(d) for d in case_dirs}, Path(rollouts)
    rows = scores[scores["model"].isin(models) & scores["metric"].isin(["dyn_started", ITEM])]
    candidates = []
    for (model, case, trajectory), own in rows.groupby(["model", "case", "trajectory"], sort=True):
        items = own[own["metric"] == ITEM]
        started = own.loc[own["metric"] == "dyn_started", "value"]
        if len(items) != N_ITEMS or len(started) != 1 or not np.isfinite(own["value"]).all():
            continue  # no judge answered this rollout (its reason is in the scores)
        candidates.append((model, case, trajectory, bool(started.iloc[0]), [int(v) for v in items["value"]]))
    rng = stable_rng("dynamic", f"{NAMESPACE}/{seed}")
    chosen = sorted(rng.permutation(len(candidates))[:instances])
    shown, key = [], []
    for n, i in enumerate(rng.permutation(chosen), 1):  # the instances' order is drawn too
        model, case_id, trajectory, started, items = candidates[i]
        if case_id not in case_dirs:
            raise ValueError(f"no directory of case {case_id!r} among --cases; pass every dynamic case's")
        case = load_case(case_dirs[case_id])
        traj = load_trajectory(rollouts / model / case_id / trajectory / "trajectory.json")
        instance = f"d{n:03d}"
        shown.append({"instance": instance, "case": case_id, "trajectory": trajectory,
                      "event": {f: case[f] for f in EVENT_FIELDS},
                      "phases": [{"phase": p["label"], "start": p["start"], "end": p["end"]}
                                 for p in phase_ranges(traj)],
                      "questions": [{"aspect": q["aspect"], "text": q["question"]} for q in case["questions"]]})
        key.append({"instance": instance, "model": model,
                    "expected": [int(q["reference_answer"]) for q in case["questions"]],
                    "judge": {"started": started, "items": items}})
    return {"study": "dynamic", "instances": shown}, {"study": "dynamic", "seed": seed, "instances": key}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scores", required=True, type=Path, help="results/worldmembench/scores (<model>/<family>.csv)")
    ap.add_argument("--models", nargs="+", required=True, help="the study's models")
    ap.add_argument("--cases", nargs="*", default=[], type=Path, help="the dynamic cases' directories")
    ap.add_argument("--rollouts", required=True, type=Path, help="results/worldmembench/rollouts")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pairs-per-metric", type=int, required=True)
    ap.add_argument("--instances", type=int, required=True)
    ap.add_argument("--out", required=True, type=Path, help="results/worldmembench/human_study")
    args = ap.parse_args(argv)
    scores = read_scores([args.scores / m / f"{f}.csv" for m in sorted(args.models) for f in ("static", "dynamic")])
    pairs, static_key = static_set(scores, args.rollouts, args.models, args.pairs_per_metric, args.seed)
    instances, dynamic_key = dynamic_set(scores, args.cases, args.rollouts, args.models, args.instances, args.seed)
    for shown_set, key, (set_path, key_path) in ((pairs, static_key, STUDY_FILES[:2]),
                                                  (instances, dynamic_key, STUDY_FILES[2:])):
        write_json(shown_set, args.out / set_path)
        write_json(key | {"study_set": file_digest(args.out / set_path)}, args.out / key_path)
    counts = pd.Series([p["metric"] for p in pairs["pairs"]]).value_counts().reindex(METRICS, fill_value=0)
    print(f"static: {len(pairs['pairs'])} pairs ({', '.join(f'{m} {n}' for m, n in counts.items())}); "
          f"dynamic: {len(instances['instances'])} instances")


if __name__ == "__main__":
    main()
