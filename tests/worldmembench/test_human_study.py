"""WorldMemBench's human study (Appendix F): study sets, simulated annotators, Tables 6 and 7, on
constructed data with known answers (the paper's worked example among them)."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from worldmemory.worldmembench.human_study.agreement import (
    instance_scores,
    majority,
    table6,
    table7,
    vs_paper,
    win_rates,
)
from worldmemory.worldmembench.human_study.curve import curve
from worldmemory.worldmembench.human_study.exports import METRICS
from worldmemory.worldmembench.human_study.simulate import simulate
from worldmemory.worldmembench.human_study.study_sets import slot_scores, static_set

ASPECTS8 = ["return_progress"] * 2 + ["persistence_reset"] * 2 + ["final_state"] * 2 + ["causal_physical"] * 2
MODELS = ["alpha", "bravo", "charlie", "delta"]
DIGEST = "0" * 64  # a study set's sha256 (exports.file_digest)
PHASES = [{"name": "V", "start": 0, "end": 8}, {"name": "D1", "start": 8, "end": 12},
          {"name": "R1", "start": 12, "end": 20}, {"name": "D2", "start": 20, "end": 24},
          {"name": "R2", "start": 24, "end": 32}, {"name": "H", "start": 32, "end": 36}]


def _export(study, annotator, answers):
    return {"study": study, "annotator": annotator, "answers": answers}


def _static(votes_per_pair, automatic, metric="human_identity"):
    """Pairs, key and three exports: pair i gets votes_per_pair[i] and the automatic preference."""
    ids = [f"p{i:04d}" for i in range(1, len(votes_per_pair) + 1)]
    pairs = {"study": "static", "pairs": [{"pair": p, "metric": metric} for p in ids]}
    key = {"study": "static", "seed": 0, "study_set": DIGEST, "pairs": [
        {"pair": p, "model_a": "alpha", "model_b": "bravo", "score_a": 0.0, "score_b": 0.0, "automatic": a}
        for p, a in zip(ids, automatic)]}
    exports = [_export("static", f"ann{j}", [{"pair": p, "choice": v[j]} for p, v in zip(ids, votes_per_pair)])
               for j in range(3)]
    return pairs, key, exports


def test_the_papers_worked_example_65_of_76_decisive_pairs():
    """Appendix F: Human Identity, 65 agreements among 76 decisive pairs (85.5%), one majority tie
    and seven three-way splits, of 84 pairs."""
    votes = ([("A", "A", "B")] * 40 + [("B", "B", "B")] * 25 + [("A", "B", "B")] * 11
             + [("tie", "tie", "A")] + [("A", "tie", "B")] * 7)
    automatic = ["A"] * 40 + ["B"] * 25 + ["A"] * 11 + ["A"] + ["B"] * 7
    row = table6(*_static(votes, automatic)).set_index("metric").loc["human_identity"]
    assert (row["pairs"], row["decisive"], row["agree"], row["majority_ties"], row["splits"]) == (84, 76, 65, 1, 7)
    assert round(row["agreement_pct"], 1) == 85.5
    assert table6(*_static(votes, automatic)).set_index("metric").loc["env_depth", "pairs"] == 0


@pytest.mark.parametrize("votes, expected", [
    (("A", "A", "B"), "A"), (("B", "tie", "B"), "B"), (("tie", "tie", "A"), "tie"), (("A", "tie", "B"), "split"),
    (("A", "A", "B", "B"), "split"), (("A",), "A")])
def test_the_majority_is_strict(votes, expected):
    assert majority(votes) == expected


def test_win_rates_count_every_raw_vote_as_1_half_0():
    """alpha (A) vs bravo: votes A, tie, B; automatic A. charlie (A) vs alpha: votes B, B, B; automatic tie."""
    outcomes = pd.DataFrame([
        {"model_a": "alpha", "model_b": "bravo", "automatic": "A", "votes": ["A", "tie", "B"]},
        {"model_a": "charlie", "model_b": "alpha", "automatic": "tie", "votes": ["B", "B", "B"]}])
    rates = win_rates(outcomes).set_index("model")
    assert rates.loc["alpha", "human"] == pytest.approx((1 + 0.5 + 0 + 1 + 1 + 1) / 6)
    assert rates.loc["bravo", "human"] == pytest.approx(0.5) and rates.loc["charlie", "human"] == 0
    assert rates.loc["alpha", "automatic"] == pytest.approx(0.75)
    assert (rates.loc["bravo", "automatic"], rates.loc["charlie", "automatic"]) == (0, 0.5)


def _dynamic(judge_items, human_items, started=None, expected=(1,) * 8):
    """Instances, key and three exports (identical answers) from per-instance item lists; every
    question's expected answer ``expected``."""
    n = len(judge_items)
    started = started or [True] * n
    instances = {"study": "dynamic", "instances": [
        {"instance": f"d{i:03d}", "questions": [{"aspect": a, "text": "?"} for a in ASPECTS8]} for i in range(n)]}
    key = {"study": "dynamic", "seed": 0, "study_set": DIGEST, "instances": [
        {"instance": f"d{i:03d}", "model": "alpha", "expected": list(expected), "judge": {"started": s, "items": items}}
        for i, (items, s) in enumerate(zip(judge_items, started))]}
    exports = [_export("dynamic", f"ann{j}", [{"instance": f"d{i:03d}", "started": any(items), "items": items}
                                               for i, items in enumerate(human_items)]) for j in range(3)]
    return instances, key, exports


def test_table7_correlates_majority_checklist_scores_with_the_judges():
    """Overall: human 0, 2/8, 4/8, 8/8 against judge 0, 4/8, 2/8, 8/8: rho 0.8, PLCC by hand."""
    def items(k):
        return [1] * k + [0] * (8 - k)
    human, judge = [items(0), items(2), items(4), items(8)], [items(0), items(4), items(2), items(8)]
    t7 = table7(*_dynamic(judge, human)).set_index("dimension")
    assert t7.loc["overall", "instances"] == 4
    assert t7.loc["overall", "spearman_rho"] == pytest.approx(0.8)
    h, j = np.array([0, 2, 4, 8]) / 8, np.array([0, 4, 2, 8]) / 8
    plcc = ((h - h.mean()) @ (j - j.mean())) / math.sqrt(((h - h.mean()) ** 2).sum() * ((j - j.mean()) ** 2).sum())
    assert t7.loc["overall", "plcc"] == pytest.approx(plcc)
    # return progress (items 1-2): human 0, 1, 1, 1 against judge 0, 1, 1, 1
    assert t7.loc["return_progress", "spearman_rho"] == pytest.approx(1.0)
    # causal physical (items 7-8): only the last instance has them: both sides 0, 0, 0, 1
    assert t7.loc["causal_physical", "plcc"] == pytest.approx(1.0)
    # the majority of three: 1, 1, 0 is 1 and 1, 0, 0 is 0 (human 1, 0 against the judge's 1, 0)
    instances, key, exports = _dynamic([items(8), items(0)], [items(8), items(8)])
    exports[2]["answers"][0]["items"] = items(0)
    for export in exports[1:]:
        export["answers"][1]["items"] = items(0)
    assert table7(instances, key, exports).set_index("dimension").loc["overall", "plcc"] == pytest.approx(1.0)


def test_an_item_is_satisfied_by_the_keys_expected_answer_behind_the_gate():
    """Questions are asked as the case words them; the key's expected answer (here No for the
    even items) decides which answer satisfies an item, and an event not seen to start satisfies
    none: answers Yes/No/Yes/No... to expected Yes/No/... satisfy all eight."""
    instances, key, exports = _dynamic([[1] * 8, [1] * 4 + [0] * 4, [0] * 8], [[0] * 8] * 3, expected=(1, 0) * 4)
    answers = [[1, 0] * 4, [1, 0, 1, 0, 0, 1, 0, 1], [0] * 8]  # all right; the first four right; not started
    for export in exports:
        for answer, items in zip(export["answers"], answers):
            answer.update(items=items, started=any(items))
    scores = instance_scores(instances, key, exports).set_index("instance")
    assert list(scores["human_overall"]) == [1.0, 0.5, 0.0]
    assert list(scores["human_return_progress"]) == [1.0, 1.0, 0.0]
    assert table7(instances, key, exports).set_index("dimension").loc["overall", "plcc"] == pytest.approx(1.0)


def test_the_event_gate_zeroes_a_simulated_answer_that_sees_no_start():
    key = {"study": "dynamic", "seed": 0, "study_set": DIGEST, "instances": [
        {"instance": f"d{i:03d}", "model": "alpha", "expected": [1] * 8,
         "judge": {"started": i % 2 == 0, "items": [i % 2 == 0] * 8}} for i in range(40)]}
    exact = simulate("dynamic", key, "sim1", 0.0, 0)
    assert [a["started"] for a in exact["answers"]] == [i % 2 == 0 for i in range(40)]
    assert all(a["items"] == [int(a["started"])] * 8 for a in exact["answers"])
    noisy = simulate("dynamic", key, "sim1", 0.6, 0)["answers"]
    assert any(a["started"] != (i % 2 == 0) for i, a in enumerate(noisy))
    assert all(not any(a["items"]) for a in noisy if not a["started"])


def _scores_and_rollouts(tmp_path, n_cases=6):
    """Static rows of four models over n_cases cases (one metric each family), and their phases."""
    rows = []
    quality = {"alpha": 0.9, "bravo": 0.7, "charlie": 0.5, "delta": 0.2}
    rng = np.random.default_rng(1)
    for c in range(n_cases):
        case = f"human_{c:03d}"
        for model in MODELS:
            trajectory = tmp_path / model / case / "LRLR"
            trajectory.mkdir(parents=True)
            (trajectory / "trajectory.json").write_text(json.dumps({"phases": PHASES}))
            for metric in ("human_identity", "human_appearance"):
                for k in (1, 2):
                    rows.append({"model": model, "case": case, "trajectory": "LRLR", "metric": metric,
                                 "target": "person_0", "revisit": k, "valid": True,
                                 "value": quality[model] + 0.2 * rng.standard_normal()})
    return pd.DataFrame(rows), tmp_path


def test_a_slot_scores_its_targets_mean_with_an_invalid_revisit_as_0():
    """A pair compares two revisit slots by Eq. 1 with K = 1 (as R_k): the mean over the case's
    targets, an unobserved (invalid) target scoring 0; a valid NaN leaves the slot NaN."""
    row = {"model": "alpha", "case": "human_000", "trajectory": "LRLR", "metric": "human_appearance"}
    scores = pd.DataFrame([{**row, "target": "person_0", "revisit": 1, "valid": True, "value": 0.8},
                           {**row, "target": "person_1", "revisit": 1, "valid": False, "value": np.nan},
                           {**row, "target": "person_0", "revisit": 2, "valid": True, "value": np.nan},
                           {**row, "target": "person_1", "revisit": 2, "valid": True, "value": 0.6}])
    slots = slot_scores(scores).set_index("revisit")["value"]
    assert slots[1] == pytest.approx(0.4) and math.isnan(slots[2])


def test_the_static_set_is_blinded_and_its_ab_order_drawn_by_the_seed(tmp_path):
    scores, rollouts = _scores_and_rollouts(tmp_path)
    pairs, key = static_set(scores, rollouts, MODELS, 20, seed=0)
    assert len(pairs["pairs"]) == 40 and {p["metric"] for p in pairs["pairs"]} == {"human_identity", "human_appearance"}
    text = json.dumps(pairs).lower()
    assert not any(model in text for model in MODELS)
    first = pairs["pairs"][0]
    assert first["reference_frames"] == [0, 8] and first["revisit_frames"] == ([12, 20], [24, 32])[first["revisit"] - 1]
    row = key["pairs"][0]
    assert row["automatic"] == ("A" if row["score_a"] > row["score_b"] else "B")
    # which model is A is drawn: both orders occur, and another seed draws other sides
    assert {r["model_a"] < r["model_b"] for r in key["pairs"]} == {True, False}
    other = static_set(scores, rollouts, MODELS, 20, seed=1)[1]
    sides = {s: [(r["model_a"], r["model_b"]) for r in k["pairs"]] for s, k in ((0, key), (1, other))}
    assert sides[0] != sides[1]
    assert static_set(scores, rollouts, MODELS, 20, seed=0)[1] == key  # the same seed, the same set
    # Human Identity without a face backend (valid NaN) has no pair
    blind = scores.assign(value=np.where(scores["metric"] == "human_identity", np.nan, scores["value"]))
    assert {p["metric"] for p in static_set(blind, rollouts, MODELS, 20, seed=0)[0]["pairs"]} == {"human_appearance"}


def test_the_simulated_curve_is_exact_at_noise_0_and_falls_as_noise_rises(tmp_path):
    scores, rollouts = _scores_and_rollouts(tmp_path, n_cases=12)
    pairs, key = static_set(scores, rollouts, MODELS, 84, seed=0)
    key["study_set"] = DIGEST
    rng = np.random.default_rng(2)
    judge = [list(rng.integers(0, 2, 8)) for _ in range(30)]
    # half the questions expect No: the simulated annotators answer them No where the judge holds them
    instances, dynamic_key, _ = _dynamic([[int(x) for x in j] for j in judge], judge, expected=(1, 0) * 4)
    dynamic_key["study_set"] = DIGEST
    study = {"static/pairs.json": pairs, "static/key.json": key, "dynamic/instances.json": instances,
             "dynamic/key.json": dynamic_key}
    table = curve(study, [0.0, 0.1, 0.3, 0.8], annotators=3, seed=0)
    exact = table[table["noise"] == 0]
    six = exact[(exact["table"] == "table6") & (exact["decisive"] > 0)]
    assert set(six["row"]) == {"human_identity", "human_appearance", "all"}
    assert (six["agreement_pct"] == 100).all() and (six["spearman_rho"].dropna() == 1).all()
    assert (exact.loc[exact["table"] == "table7", ["spearman_rho", "plcc"]] == 1).all().all()
    pooled = table[table["row"] == "all"].set_index("noise")["agreement_pct"]
    overall = table[(table["table"] == "table7") & (table["row"] == "overall")].set_index("noise")["spearman_rho"]
    assert pooled.is_monotonic_decreasing and pooled[0.8] < 90
    assert overall.is_monotonic_decreasing and overall[0.8] < 0.9


def test_vs_paper_prints_the_papers_values_beside_ours():
    ours = pd.DataFrame([{"metric": "human_identity", "agreement_pct": 80.0, "spearman_rho": 0.5}])
    paper = pd.DataFrame([{"metric": "human_identity", "statistic": "agreement_pct", "value": 85.5, "source": "F"},
                          {"metric": "env_depth", "statistic": "spearman_rho", "value": 0.301, "source": "5.2"}])
    side = vs_paper(ours, paper, "metric")
    assert side.to_dict("records")[0] == {"metric": "human_identity", "statistic": "agreement_pct", "paper": 85.5,
                                          "ours": 80.0, "source": "F"}
    assert math.isnan(side["ours"].iloc[1])


def test_vs_paper_reads_the_papers_ranges_against_our_extremes_without_overall():
    """Appendix F gives ranges over the sub-dimensions (rho 0.401-0.684): ours are the extremes of
    our sub-dimension rows, Overall left out."""
    ours = pd.DataFrame({"dimension": ["return_progress", "final_state", "overall"], "spearman_rho": [0.2, 0.7, 0.9]})
    paper = pd.DataFrame([{"dimension": "range", "statistic": f"spearman_rho_{end}", "value": value, "source": "F"}
                          for end, value in (("min", 0.401), ("max", 0.684))])
    side = vs_paper(ours, paper, "dimension").set_index("statistic")
    assert side.loc["spearman_rho_min", "ours"] == 0.2 and side.loc["spearman_rho_max", "ours"] == 0.7


def test_the_metrics_are_the_pages_six():
    assert METRICS == ("human_identity", "human_appearance", "object_appearance", "object_geometry",
                       "env_visible", "env_depth")


def test_a_key_of_another_study_set_is_refused_naming_both_digests(tmp_path):
    """Tables 6 and 7 read a study set with its own draw's key: a key recording another study
    set's digest (another seed's) stops them, naming both."""
    from worldmemory.worldmembench.human_study.agreement import read_study
    from worldmemory.worldmembench.human_study.exports import file_digest

    pairs, key, _ = _static([("A", "A", "A")], ["A"])
    instances, dynamic_key, _ = _dynamic([[1] * 8], [[1] * 8])
    for study, shown_set, hidden, name in (("static", pairs, key, "pairs"), ("dynamic", instances, dynamic_key,
                                                                             "instances")):
        (tmp_path / study).mkdir()
        (tmp_path / study / f"{name}.json").write_text(json.dumps(shown_set))
        hidden["study_set"] = file_digest(tmp_path / study / f"{name}.json")
        (tmp_path / study / "key.json").write_text(json.dumps(hidden))
    assert read_study(tmp_path)["static/key.json"] == key
    (tmp_path / "static/key.json").write_text(json.dumps(key | {"study_set": DIGEST}))
    with pytest.raises(ValueError, match=rf"static/key.json: the key of the study set {DIGEST}, but "
                                         rf".*static/pairs.json is {key['study_set']}; rebuild the study sets"):
        read_study(tmp_path)
