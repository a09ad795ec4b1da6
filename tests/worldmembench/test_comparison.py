"""Table 3 (Section 5.5, Appendix H) from hand-made score rows: known answers."""

import math

import pandas as pd
import pytest
from worldmemory.worldmembench import comparison as c
from worldmemory.worldmembench.score import COLUMNS


def env_video(model, trajectory, visible, errors):
    """One environment video of case e1: env_visible per revisit and each return's error (departed 90 deg)."""
    rows = []
    for k, (v, error) in enumerate(zip(visible, errors), start=1):
        rows.append({"metric": "env_visible", "value": v, "reason": ""})
        rows += [{"metric": "departure_deg", "value": 90.0}, {"metric": "return_error_deg", "value": error}]
        for r in rows[-3:]:
            r.update(model=model, case="e1", family="environment", trajectory=trajectory, target="", revisit=k,
                     valid=True, reason="")
    return rows


def scores():
    """slow remembers best (visible 0.9), base 0.6, fast 0.3; base's returns 10, 40, 20, 50 deg."""
    rows = []
    for model, v, errors in (("slow", 0.9, [0, 0, 0, 0]), ("base", 0.6, [10, 40, 20, 50]),
                             ("fast", 0.3, [60, 60, 60, math.nan])):
        rows += env_video(model, "LRLR", [v, v], errors[:2]) + env_video(model, "LRUD", [v, v], errors[2:])
    return pd.DataFrame(rows, columns=COLUMNS)


def test_table3_rows_speedup_and_returns():
    table = c.table3(scores(), {"slow": 30.0, "base": 60.0, "fast": 20.0}, ["slow", "base", "fast"], "base",
                     "drift").set_index("model")
    assert list(table.index) == ["slow", "base", "fast"]  # the comparison's order, not the scores'
    assert ["comparison", "model", *table.columns[1:]] == c.TABLE3_COLUMNS
    assert len(c.CAPABILITY) == 11 and "dyn_overall" not in c.CAPABILITY  # the paper's eleven
    assert (table["comparison"] == "drift").all()
    assert list(table["env_visible"]) == pytest.approx([0.9, 0.6, 0.3])
    assert list(table["speedup"]) == pytest.approx([2.0, 1.0, 3.0])  # baseline latency / the model's
    assert list(table["returns_reached"]) == pytest.approx([1.0, 0.5, 0.0])  # <= 30 deg; NaN not reached
    assert list(table["return_error_deg"]) == pytest.approx([0.0, 30.0, 60.0])
    assert table[["human_identity", "dyn_final_state"]].isna().all().all()  # no such rows: NaN


def test_missing_latency_is_nan_with_its_reason():
    frame = scores()
    table = c.table3(frame, {"slow": 30.0}, ["slow", "base"], "slow")
    assert math.isnan(table.loc[1, "latency_s"]) and math.isnan(table.loc[1, "speedup"])
    reasons = c.table3_reasons(frame, table)
    assert ("base", "latency_s") in set(zip(reasons["model"], reasons["metric"]))
    assert "human_identity" in set(reasons["metric"]) and "env_visible" not in set(reasons["metric"])


def test_refuses_a_baseline_outside_the_models_and_a_model_without_scores():
    with pytest.raises(ValueError, match="baseline 'other'"):
        c.table3(scores(), {}, ["slow", "base"], "other")
    with pytest.raises(ValueError, match=r"no score rows for \['gone'\]"):
        c.table3(scores(), {}, ["slow", "gone"], "slow")


def test_the_papers_values_print_beside_the_model_labelled_with_its_policy():
    table = c.table3(scores(), {"slow": 30.0, "base": 60.0}, ["slow", "base"], "base")
    paper = pd.DataFrame({"policy": ["FullKV", "FoV"], "metric": ["returns_reached", "speedup"],
                          "value": [0.576, 1.23], "source": ["Appendix H", "Section 5.5"]})
    side = c.table3_vs_paper(table, paper, {"FullKV": "base"})
    assert list(side["ours"][:1]) == [0.5] and math.isnan(side["ours"][1])
    assert list(side["paper"]) == [0.576, 1.23]


def test_the_papers_table3_file_holds_the_values_the_text_states():
    from pathlib import Path

    paper = pd.read_csv(Path(__file__).resolve().parents[2] / "resources/paper_values/worldmembench_table3.csv")
    values = paper.set_index(["policy", "metric"])["value"]
    assert values[("FullKV", "latency_s")] == 322.2 and values[("FoV", "speedup")] == 1.23
    assert (values[("FullKV", "returns_reached")], values[("FoV", "returns_reached")]) == (0.576, 0.653)
    assert (values[("FullKV", "return_error_deg")], values[("FoV", "return_error_deg")]) == (31.0, 26.7)
    assert set(paper["metric"]) <= {*c.TABLE3_COLUMNS, "latency_s"} and paper["source"].str.len().min() > 0
