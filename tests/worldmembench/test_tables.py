"""Known answers for Table 2 / Table 5 aggregation of WorldMemBench score rows (tables.py)."""

import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from worldmemory.perception.registry import no_oracle
from worldmemory.worldmembench import tables as tb
from worldmemory.worldmembench.score import COLUMNS, write_scores

NO_FACES = no_oracle("faces")

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "resources" / "paper_values" / "worldmembench_table2.csv"
NAN = math.nan
INVALID = None  # a revisit without a valid observation
QUALITY_REASON = "MUSIQ-SPAQ predictor not available: later issue"


def revisit_rows(model, case, family, trajectory, metric, per_target):
    """Rows of one per-revisit metric: per_target maps target -> [s_1, ..., s_K]."""
    return [{"model": model, "case": case, "family": family, "trajectory": trajectory,
             "metric": metric, "target": target, "revisit": k,
             "value": NAN if s is INVALID else s, "valid": s is not INVALID,
             "reason": "target covers < 20 pixels in every frame of R" if s is INVALID else ""}
            for target, scores in per_target.items() for k, s in enumerate(scores, start=1)]


def rollout_rows(model, case, family, trajectory, values, reason=""):
    """Rollout-level rows (revisit 0): values maps metric -> value."""
    return [{"model": model, "case": case, "family": family, "trajectory": trajectory,
             "metric": metric, "target": "", "revisit": 0, "value": value, "valid": True,
             "reason": reason if math.isnan(value) else ""} for metric, value in values.items()]


def dynamic(model, case, started, aspects):
    overall = sum(aspects) / 4 if started else 0.0
    names = ["dyn_return_progress", "dyn_persistence_reset", "dyn_final_state",
             "dyn_causal_physical"]
    values = {n: (a if started else 0.0) for n, a in zip(names, aspects)}
    values |= {"dyn_overall": overall, "dyn_started": float(started), "rpe_rot": 0.5}
    return rollout_rows(model, case, "dynamic", "LR-Hold", values)


def alpha_rows():
    m = "alpha"
    rows = []
    # Eq. 1 order of aggregation: (object_a, LRLR): o1 (1 + 0) / 2 = 0.5, o2 1 -> 0.75;
    # (object_b, LRLRLR): 0.4. Mean over rollouts 0.575 (pooling every revisit gives 0.6,
    # pooling the valid ones 0.7, averaging the three targets 0.633).
    for metric in ("object_appearance", "object_geometry"):
        rows += revisit_rows(m, "object_a", "object", "LRLR", metric,
                             {"o1": [1.0, INVALID], "o2": [1.0, 1.0]})
        rows += revisit_rows(m, "object_b", "object", "LRLRLR", metric, {"o1": [0.4, 0.4, 0.4]})
    rows += rollout_rows(m, "object_a", "object", "LRLR", {"rpe_rot": 0.1})
    rows += rollout_rows(m, "object_b", "object", "LRLRLR", {"rpe_rot": 0.3})
    rows += rollout_rows(m, "object_a", "object", "translation", {"rpe_trans": 0.2})
    rows += rollout_rows(m, "human_a", "human", "translation", {"rpe_trans": NAN}, "zero path")
    identity = revisit_rows(m, "human_a", "human", "LRLR", "human_identity", {"p1": [NAN, NAN]})
    rows += [{**r, "valid": True, "reason": NO_FACES} for r in identity]
    rows += revisit_rows(m, "human_a", "human", "LRLR", "human_appearance", {"p1": [0.9, 0.7]})
    rows += rollout_rows(m, "human_a", "human", "LRLR", {"rpe_rot": 0.2})
    rows += revisit_rows(m, "environment_a", "environment", "LRLR", "env_visible",
                         {"room": [1.0, 0.5]})
    rows += revisit_rows(m, "environment_a", "environment", "LRLR", "env_depth",
                         {"room": [INVALID, 0.6]})
    rows += revisit_rows(m, "environment_a", "environment", "LRLR", "env_recon",
                         {"room": [0.8, 0.8]})
    rows += rollout_rows(m, "environment_a", "environment", "LRLR", {"rpe_rot": 0.4})
    rows += dynamic(m, "dynamic_a", True, [0.5, 1.0, 1.0, 1.0])
    rows += dynamic(m, "dynamic_b", False, [1.0, 1.0, 1.0, 1.0])
    for case, trajectory in sorted({(r["case"], r["trajectory"]) for r in rows}):
        family = case.split("_")[0]
        rows += rollout_rows(m, case, family, trajectory,
                             {"imaging_quality": NAN, "aesthetic_quality": NAN}, QUALITY_REASON)
    return rows


def scores():
    beta = revisit_rows("beta", "object_a", "object", "LRLR", "object_appearance",
                        {"o1": [1.0, 1.0]})
    return pd.DataFrame(alpha_rows() + beta, columns=COLUMNS)


def test_table2_known_values_and_column_order():
    table = tb.table2(scores())
    assert list(table.columns) == [
        "model", "imaging_quality", "aesthetic_quality", "human_identity", "human_appearance",
        "object_appearance", "object_geometry", "env_visible", "env_depth", "env_recon",
        "dyn_return_progress", "dyn_persistence_reset", "dyn_final_state", "dyn_causal_physical",
        "dyn_overall", "rpe_trans", "rpe_rot"]
    assert list(table["model"]) == ["alpha", "beta"]
    alpha = table.set_index("model").loc["alpha"]
    expected = {
        "object_appearance": 0.575, "object_geometry": 0.575, "human_appearance": 0.8,
        "env_visible": 0.75, "env_depth": 0.3, "env_recon": 0.8,
        "dyn_return_progress": 0.25, "dyn_persistence_reset": 0.5, "dyn_final_state": 0.5,
        "dyn_causal_physical": 0.5, "dyn_overall": 0.4375,
        "rpe_trans": 0.2,  # the NaN rollout is left out
        "rpe_rot": round((0.1 + 0.3 + 0.2 + 0.4 + 0.5 + 0.5) / 6, 6),
    }
    for metric, value in expected.items():
        assert alpha[metric] == pytest.approx(value, abs=1e-12), metric
    for metric in ("human_identity", "imaging_quality", "aesthetic_quality"):
        assert math.isnan(alpha[metric])
    beta = table.set_index("model").loc["beta"]
    assert beta["object_appearance"] == 1.0 and beta.drop("object_appearance").isna().all()


def test_reasons_name_every_nan_cell():
    reasons = tb.table2_reasons(scores()).set_index(["model", "metric"])["reason"]
    assert reasons[("alpha", "human_identity")] == NO_FACES
    assert reasons[("alpha", "imaging_quality")] == QUALITY_REASON
    assert set(reasons.loc["alpha"].index) == {"human_identity", "imaging_quality",
                                               "aesthetic_quality"}
    assert len(reasons.loc["beta"]) == 15
    assert reasons[("beta", "dyn_overall")] == "no rollout of this model scores it"


def test_invalid_rows_need_every_prescribed_revisit_and_rows_must_not_repeat():
    rows = scores()
    gap = rows.drop(rows.index[(rows["model"] == "beta") & (rows["revisit"] == 1)])
    with pytest.raises(ValueError, match="expected 1..2"):
        tb.table2(gap)
    with pytest.raises(ValueError, match="given twice"):
        tb.table2(pd.concat([rows, rows.iloc[:1]]))


def test_table5_decomposition():
    table = tb.table5(scores())
    assert list(table.columns) == ["model", "n", "started", "p_start", "S_cond", "S_gated"]
    assert table.to_dict("records") == [
        {"model": "alpha", "n": 2, "started": 1, "p_start": 0.5, "S_cond": 0.875,
         "S_gated": 0.4375}]


def test_table5_of_a_model_no_judge_answered_is_nan():
    unjudged = [{**r, "model": "external", "value": NAN, "reason": "no VLM event judge"}
                for r in dynamic("external", "dynamic_a", True, [1.0] * 4)]
    table = tb.table5(pd.DataFrame(unjudged, columns=COLUMNS)).set_index("model")
    assert table.loc["external", "n"] == 1
    assert table.loc["external", ["started", "p_start", "S_cond", "S_gated"]].isna().all()


def test_cli_writes_byte_stable_tables_and_the_paper_comparison(tmp_path):
    rows = scores()
    write_scores(rows[rows["model"] == "alpha"], tmp_path / "alpha.csv")
    write_scores(rows[rows["model"] == "beta"], tmp_path / "beta.csv")
    pd.testing.assert_frame_equal(tb.read_scores([tmp_path / "alpha.csv", tmp_path / "beta.csv"]),
                                  tb.canonical_order(rows), check_dtype=False)
    outputs = []
    for run in ("a", "b"):
        out = tmp_path / run
        subprocess.run(
            [sys.executable, "-m", "worldmemory.worldmembench.tables",
             "--scores", str(tmp_path / "alpha.csv"), str(tmp_path / "beta.csv"),
             "--table2", str(out / "table2.csv"), "--table5", str(out / "t5" / "table5.csv"),
             "--reasons", str(out / "reasons.csv"), "--paper", str(PAPER),
             "--out-paper", str(out / "paper.csv"), "--paper-models", "alpha=HY-WorldPlay"],
            check=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO / "scripts")})
        outputs.append([(out / name).read_bytes() for name in
                        ("table2.csv", "t5/table5.csv", "reasons.csv", "paper.csv")])
    assert outputs[0] == outputs[1]
    assert all(b"\r" not in data for data in outputs[0])
    assert pd.read_csv(tmp_path / "a" / "table2.csv")["env_depth"].tolist()[0] == 0.3
    side = pd.read_csv(tmp_path / "a" / "paper.csv").set_index("metric")
    assert set(side["model"]) == {"HY-WorldPlay"} and set(side["run"]) == {"alpha"}
    assert side.loc["dyn_overall", "paper"] == 0.294 and side.loc["dyn_overall", "ours"] == 0.4375
    assert side.loc["S_cond", "ours"] == 0.875 and side.loc["started", "ours"] == 1


def test_paper_values_are_consistent_with_the_decomposition():
    """S_gated = p_start * S_cond (Appendix D.2) holds for the numbers the paper states."""
    paper = pd.read_csv(PAPER).pivot(index="model", columns="metric", values="value")
    for model, row in paper.iterrows():
        if not math.isnan(row.get("S_gated", NAN)):
            assert row["S_gated"] == pytest.approx(row["started"] / row["n"] * row["S_cond"],
                                                   abs=5e-4), model
            assert row["dyn_overall"] == row["S_gated"]
    assert set(paper.columns) <= set(tb.TABLE2_COLUMNS) | set(tb.TABLE5_COLUMNS)


def departure_rows(model, departed, env_departure_deg):
    """Evidence rows: a human and an object target's ``departed`` per revisit, an environment
    rollout's ``departure_deg`` per revisit."""
    rows = []
    for family, target in (("human", "p1"), ("object", "o1")):
        rows += revisit_rows(model, f"{family}_a", family, "LRLR", "departed", {target: departed})
    rows += revisit_rows(model, "environment_a", "environment", "LRLR", "departure_deg", {"": env_departure_deg})
    return rows


def test_departure_shares_tell_a_model_that_never_leaves_from_one_that_does():
    rows = (departure_rows("leaves", [1.0, 1.0], [90.0, 35.0]) + departure_rows("stays", [0.0, 0.0], [0.0, 2.0])
            + departure_rows("half", [1.0, 0.0], [29.9, 30.0]) + departure_rows("untracked", [NAN, 1.0], [NAN, 90.0]))
    shares = tb.departure_shares(pd.DataFrame(rows, columns=COLUMNS)).set_index("model")
    assert list(shares.columns) == [m + "_departed" for m in tb.STATIC]
    assert (shares.loc["leaves"] == 1.0).all() and (shares.loc["stays"] == 0.0).all()
    assert (shares.loc["half"] == 0.5).all()  # 30 degrees departs, 29.9 does not (Appendix G.1: >= 30)
    assert shares.loc["untracked"].isna().all()  # missing evidence is unknown, never departed or not


def validity_rows(model, departed, appearance):
    """An object target's ``departed`` and ``object_appearance`` per revisit (None: not found),
    an environment rollout never departing, and its Visible Memory."""
    return (revisit_rows(model, "object_a", "object", "LRLR", "departed", {"o1": departed})
            + revisit_rows(model, "object_a", "object", "LRLR", "object_appearance", {"o1": appearance})
            + revisit_rows(model, "environment_a", "environment", "LRLR", "departure_deg", {"": [90.0, 90.0]})
            + revisit_rows(model, "environment_a", "environment", "LRLR", "env_visible", {"e": [0.9, 0.9]}))


def test_validity_flags_a_column_that_never_departed_or_whose_targets_were_not_found():
    rows = pd.DataFrame(validity_rows("remembers", [1.0, 1.0], [0.9, INVALID])
                        + validity_rows("frozen", [0.0, 0.0], [1.0, 1.0])
                        + validity_rows("lost", [1.0, 1.0], [INVALID, INVALID])
                        + validity_rows("staysonce", [1.0, 0.0], [1.0, 1.0]), columns=COLUMNS)
    table = tb.table2(rows)
    found = tb.found_shares(rows).set_index("model")
    assert found.loc["remembers", "object_appearance"] == 0.5 and found.loc["lost", "object_appearance"] == 0.0
    assert math.isnan(found.loc["remembers", "env_visible"])  # a view, not a target to find
    flags = dict(zip(table["model"], tb.validity_flags(table, tb.departure_shares(rows), tb.found_shares(rows))))
    assert flags["remembers"] == "ok" and flags["staysonce"] == "ok"  # half is not "mostly"
    assert flags["frozen"] == "revisits mostly never departed: O.App 0%"  # 1.0 that tests no memory
    assert flags["lost"] == "targets mostly not found: O.App 0%"
    # the Table 2 value itself is unchanged: the flag sits beside it
    assert table.set_index("model").loc["frozen", "object_appearance"] == 1.0


def test_cli_writes_the_validity_column_last(tmp_path):
    write_scores(pd.DataFrame(validity_rows("frozen", [0.0, 0.0], [1.0, 1.0]), columns=COLUMNS),
                 tmp_path / "frozen.csv")
    subprocess.run([sys.executable, "-m", "worldmemory.worldmembench.tables", "--scores", str(tmp_path / "frozen.csv"),
                    "--table2", str(tmp_path / "table2.csv"), "--table5", str(tmp_path / "table5.csv")],
                   check=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO / "scripts")})
    table = pd.read_csv(tmp_path / "table2.csv")
    assert list(table.columns) == [*tb.TABLE2_COLUMNS, tb.VALIDITY]
    assert table["validity"].tolist() == ["revisits mostly never departed: O.App 0%"]
