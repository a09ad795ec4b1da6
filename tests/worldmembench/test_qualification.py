"""Known answers for the departure/return controls of Appendix G.1 (qualification.py): Table 11
coverage, Table 12 paired effects (R_1 - R_3 on LRLRLR, Delta_axis) and Table 13 tolerances."""

import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from worldmemory.worldmembench import qualification as q
from worldmemory.worldmembench.score import COLUMNS, write_scores
from worldmemory.worldmembench.tables import read_scores

REPO = Path(__file__).resolve().parents[2]
NAN = math.nan
INVALID = None  # a revisit without a valid observation
SEEN = (1.0, 5)  # (departed, return_frames) of a tracking-supported slot
STAYED = (0.0, 5)  # the target never left view during D_k
POSED = (90.0, 2.0)  # (departure_deg, return_error_deg) of a Q_5 slot
K = {"LRLR": 2, "LRLRLR": 3, "LRUD": 2}


def row(model, case, family, trajectory, metric, target, k, value, valid=True, reason=""):
    return {"model": model, "case": case, "family": family, "trajectory": trajectory,
            "metric": metric, "target": target, "revisit": k, "value": value, "valid": valid,
            "reason": reason}


def revisit_rows(model, case, family, trajectory, metric, per_target):
    """Rows of one Static Memory metric: per_target maps target -> [s_1, ..., s_K]."""
    return [row(model, case, family, trajectory, metric, target, k,
                NAN if s is INVALID else s, s is not INVALID, "" if s is not INVALID else "lost")
            for target, scores in per_target.items() for k, s in enumerate(scores, start=1)]


def tracking_rows(model, case, family, trajectory, per_target):
    """departed / return_frames rows: per_target maps target -> [(departed, frames), ...]."""
    return [row(model, case, family, trajectory, metric, target, k, value)
            for target, slots in per_target.items() for k, pair in enumerate(slots, start=1)
            for metric, value in zip(q.TRACKING_EVIDENCE, pair)]


def pose_rows(model, case, trajectory, slots):
    """departure_deg / return_error_deg rows: slots is [(departure, error), ...] per revisit."""
    return [row(model, case, "environment", trajectory, metric, "", k, value)
            for k, pair in enumerate(slots, start=1)
            for metric, value in zip(q.POSE_EVIDENCE, pair)]


def object_video(model, case, trajectory, scores, evidence=SEEN):
    """One object video, target "a", object_appearance ``scores``; every slot ``evidence``."""
    return (revisit_rows(model, case, "object", trajectory, "object_appearance", {"a": scores})
            + tracking_rows(model, case, "object", trajectory, {"a": [evidence] * len(scores)}))


def env_video(model, case, trajectory, visible, poses=None):
    """One environment video, target "e", env_visible ``visible``; poses default POSED."""
    poses = poses or [POSED] * len(visible)
    return (revisit_rows(model, case, "environment", trajectory, "env_visible", {"e": visible})
            + pose_rows(model, case, trajectory, poses))


def frame(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLUMNS)


def effect(table, part, metric):
    return table.set_index(["part", "metric"]).loc[(part, metric)]


def test_constants():
    assert q.PRESCRIBED == K
    assert q.ENV_METRICS == ("env_visible", "env_depth", "env_recon")
    assert q.TABLE11_COLUMNS == ["model", "human_tracked", "object_tracked", "env_D", "env_R30",
                                 "env_Q30", "N_multi", "N_cross"]
    assert q.TABLE12_COLUMNS == ["part", "metric", "N", "M", "all_cases", "qualified",
                                 "positive", "criterion"]
    assert q.TABLE13_COLUMNS == ["tolerance", "part", "env_visible", "env_depth", "env_recon",
                                 "N", "M"]


def test_drop_of_exactly_0_3_from_r1_to_r3():
    table = q.table12(frame(object_video("m", "o1", "LRLRLR", [0.9, 0.7, 0.6])))
    assert list(table.columns) == q.TABLE12_COLUMNS
    got = effect(table, "multi_revisit", "object_appearance")
    assert got["qualified"] == pytest.approx(0.3) and got["all_cases"] == pytest.approx(0.3)
    assert (got["N"], got["M"], got["positive"], got["criterion"]) == (1, 1, "1/1", "Tracking")
    # the qualified case has no object_geometry rows: NaN, never 0; nothing else qualifies
    assert list(table["metric"]) == ["object_appearance", "object_geometry"]
    assert math.isnan(effect(table, "multi_revisit", "object_geometry")["qualified"])


def test_not_departed_case_excluded_from_qualified_but_in_all_cases():
    rows = object_video("m", "o1", "LRLRLR", [0.9, 0.7, 0.6])  # effect 0.3
    rows += object_video("m", "o2", "LRLRLR", [0.8, 0.8, 0.7])  # effect 0.1
    rows += tracking_rows("m", "o2", "object", "LRLRLR", {"b": [SEEN, STAYED, SEEN]})
    rows += revisit_rows("m", "o2", "object", "LRLRLR", "object_appearance",
                         {"b": [0.8, 0.8, 0.7]})
    got = effect(q.table12(frame(rows)), "multi_revisit", "object_appearance")
    assert got["qualified"] == pytest.approx(0.3)  # o2's target b stayed in view at R_2
    assert got["all_cases"] == pytest.approx(0.2)  # (0.3 + 0.1) / 2
    assert (got["N"], got["M"]) == (1, 1)


def test_invalid_revisit_scores_zero_in_all_cases():
    rows = object_video("m", "o1", "LRLRLR", [0.9, 0.7, 0.6])
    rows += object_video("m", "o2", "LRLRLR", [0.5, 0.4, INVALID], evidence=(1.0, 0))
    got = effect(q.table12(frame(rows)), "multi_revisit", "object_appearance")
    assert got["qualified"] == pytest.approx(0.3)  # o2 has no valid return frame: not tracked
    assert got["all_cases"] == pytest.approx((0.3 + 0.5) / 2)  # o2: 0.5 - 0 (Eq. 1 zero rule)


def test_case_effect_is_mean_over_targets_of_each_revisit():
    rows = revisit_rows("m", "h1", "human", "LRLRLR", "human_appearance",
                        {"a": [1.0, 0.9, 0.8], "b": [0.6, 0.5, INVALID]})
    rows += tracking_rows("m", "h1", "human", "LRLRLR", {"a": [SEEN] * 3, "b": [SEEN] * 3})
    got = effect(q.table12(frame(rows)), "multi_revisit", "human_appearance")
    assert got["qualified"] == pytest.approx((1.0 + 0.6) / 2 - (0.8 + 0.0) / 2)


def test_models_average_equally_regardless_of_case_counts():
    rows = [r for c in ("o1", "o2", "o3")
            for r in object_video("a", c, "LRLRLR", [0.9, 0.85, 0.8])]  # 3 cases of 0.1
    rows += object_video("b", "o1", "LRLRLR", [0.9, 0.6, 0.4])  # 1 case of 0.5
    rows += object_video("c", "o1", "LRLRLR", [0.9, 0.9, 0.9], evidence=STAYED)  # none qualify
    got = effect(q.table12(frame(rows)), "multi_revisit", "object_appearance")
    assert got["qualified"] == pytest.approx(0.3)  # (0.1 + 0.5) / 2, not (3 * 0.1 + 0.5) / 4
    assert got["all_cases"] == pytest.approx(0.3)  # the same M = 2 models: c is left out
    assert (got["N"], got["M"], got["positive"]) == (4, 2, "2/2")


def test_cross_axis_sign_more_drop_on_lrud_is_positive():
    m = object_video("m", "o1", "LRLR", [0.9, 0.8])  # d_LRLR 0.1
    m += object_video("m", "o1", "LRUD", [0.9, 0.5])  # d_LRUD 0.4
    m += object_video("m", "o2", "LRLR", [0.9, 0.1])  # no LRUD video: not a unit
    got = effect(q.table12(frame(m)), "cross_axis", "object_appearance")
    assert got["qualified"] == pytest.approx(0.3) and got["positive"] == "1/1"
    n = object_video("n", "o1", "LRLR", [0.9, 0.5])  # the other way round: -0.3
    n += object_video("n", "o1", "LRUD", [0.9, 0.8])
    got = effect(q.table12(frame(m + n)), "cross_axis", "object_appearance")
    assert got["qualified"] == pytest.approx(0.0)  # (0.3 - 0.3) / 2
    assert (got["N"], got["M"], got["positive"]) == (2, 2, "1/2")


def test_cross_axis_needs_both_returns_of_both_videos():
    rows = object_video("m", "o1", "LRLR", [0.9, 0.8])
    rows += object_video("m", "o1", "LRUD", [0.9, 0.5])
    rows += object_video("m", "o2", "LRLR", [0.9, 0.8])
    rows += revisit_rows("m", "o2", "object", "LRUD", "object_appearance", {"a": [0.9, 0.1]})
    rows += tracking_rows("m", "o2", "object", "LRUD", {"a": [SEEN, (1.0, 0)]})
    got = effect(q.table12(frame(rows)), "cross_axis", "object_appearance")
    assert (got["N"], got["qualified"]) == (1, pytest.approx(0.3))
    assert got["all_cases"] == pytest.approx((0.3 + 0.7) / 2)


def test_uncomputed_nan_stays_nan():
    rows = revisit_rows("m", "h1", "human", "LRLRLR", "human_identity", {"a": [NAN, NAN, NAN]})
    rows += revisit_rows("m", "h1", "human", "LRLRLR", "human_appearance", {"a": [0.9, 0.7, 0.6]})
    rows += tracking_rows("m", "h1", "human", "LRLRLR", {"a": [SEEN] * 3})
    table = q.table12(frame(rows))
    identity = effect(table, "multi_revisit", "human_identity")
    assert math.isnan(identity["qualified"]) and math.isnan(identity["all_cases"])
    assert math.isnan(identity["positive"]) and identity["N"] == 1
    assert effect(table, "multi_revisit", "human_appearance")["positive"] == "1/1"


def test_unknown_tracking_evidence_gives_nan_coverage_and_no_qualified_case():
    rows = object_video("m", "o1", "LRLRLR", [0.9, 0.7, 0.6], evidence=(NAN, NAN))
    rows += object_video("n", "o1", "LRLRLR", [0.9, 0.7, 0.6])
    table11 = q.table11(frame(rows)).set_index("model")
    assert math.isnan(table11.at["m", "object_tracked"])
    assert table11.at["n", "object_tracked"] == 100
    got = effect(q.table12(frame(rows)), "multi_revisit", "object_appearance")
    assert (got["N"], got["M"]) == (1, 1)  # only n


def test_table11_entity_coverage_two_video_case():
    rows = tracking_rows("m", "o1", "object", "LRLR", {"a": [SEEN, SEEN]})
    rows += tracking_rows("m", "o1", "object", "LRUD", {"a": [SEEN, STAYED]})
    rows += tracking_rows("m", "o1", "object", "LR", {"a": [STAYED]})  # not a formal rotation
    table = q.table11(frame(rows))
    assert list(table.columns) == q.TABLE11_COLUMNS
    got = table.iloc[0]
    assert got["object_tracked"] == pytest.approx(75.0)  # 3 of 4 slots, (100 + 50) / 2
    assert math.isnan(got["human_tracked"]) and math.isnan(got["env_Q30"])
    assert (got["N_multi"], got["N_cross"]) == (0, 0)


def test_table11_entity_order_revisits_then_targets_then_videos():
    rows = tracking_rows("m", "o1", "object", "LRLR", {"a": [SEEN, SEEN]})  # video 1.0
    rows += tracking_rows("m", "o2", "object", "LRLR", {"a": [SEEN, STAYED],
                                                       "b": [STAYED, STAYED]})  # video 0.25
    got = q.table11(frame(rows)).iloc[0]
    assert got["object_tracked"] == pytest.approx(62.5)  # not the flat 3 / 6 = 50


def test_table11_environment_flat_over_slots_and_retained_units():
    rows = pose_rows("m", "e1", "LRLRLR", [(40, 10), (20, 10), (40, 50)])  # D R Q: 2/3 2/3 1/3
    rows += pose_rows("m", "e1", "LRLR", [(40, 10), (40, 10)])  # both Q
    rows += pose_rows("m", "e1", "LRUD", [(40, 10), (NAN, 10)])  # no pose: not D, not Q
    rows += pose_rows("m", "e2", "LRLRLR", [(40, 10)] * 3)
    rows += pose_rows("m", "e2", "LRLR", [(40, 10)] * 2)
    rows += pose_rows("m", "e2", "LRUD", [(40, 30)] * 2)  # 30 deg is within the tolerance
    got = q.table11(frame(rows)).iloc[0]
    assert got["env_D"] == pytest.approx(100 * 12 / 14)
    assert got["env_R30"] == pytest.approx(100 * 13 / 14)
    assert got["env_Q30"] == pytest.approx(100 * 11 / 14)
    assert (got["N_multi"], got["N_cross"]) == (1, 1)  # e2 for both; e1 for neither


def test_table13_return_error_of_10_deg_qualifies_at_30_and_15_not_5():
    rows = env_video("m", "e1", "LRLRLR", [0.9, 0.7, 0.6], [(90, 10)] * 3)
    rows += env_video("m", "e2", "LRLRLR", [0.9, 0.8, 0.8])  # return error 2: qualifies at 5
    rows += env_video("n", "e1", "LRLRLR", [0.9, 0.4, 0.4], [(90, 10)] * 3)
    table = q.table13(frame(rows))
    assert list(table.columns) == q.TABLE13_COLUMNS
    got = table.set_index(["tolerance", "part"])
    # m: (0.3 + 0.1) / 2 over its two cases, n: 0.5; then equally over the two models
    assert got.loc[(30, "multi_revisit"), "env_visible"] == pytest.approx(0.35)
    assert tuple(got.loc[(15, "multi_revisit"), ["N", "M"]]) == (3, 2)
    assert got.loc[(5, "multi_revisit"), "env_visible"] == pytest.approx(0.1)
    assert tuple(got.loc[(5, "multi_revisit"), ["N", "M"]]) == (1, 1)
    assert math.isnan(got.loc[(30, "multi_revisit"), "env_depth"])  # no depth rows: NaN, not 0
    assert list(table["tolerance"]) == [30, 15, 5]  # no cross-axis units anywhere
    criterion = effect(q.table12(frame(rows)), "multi_revisit", "env_visible")["criterion"]
    assert criterion == "Pose 30°"


def test_table11_counts_match_table12_environment_units():
    rows = env_video("m", "e1", "LRLR", [0.9, 0.8]) + env_video("m", "e1", "LRUD", [0.9, 0.5])
    rows += env_video("m", "e2", "LRLR", [0.9, 0.8], [POSED, (10, 2)])
    rows += env_video("m", "e2", "LRUD", [0.9, 0.5])
    table11 = q.table11(frame(rows))
    got = effect(q.table12(frame(rows)), "cross_axis", "env_visible")
    assert table11.iloc[0]["N_cross"] == got["N"] == 1
    assert got["qualified"] == pytest.approx(0.3)


def test_empty_scores_keep_headers():
    empty = frame([])
    assert list(q.table11(empty).columns) == q.TABLE11_COLUMNS and q.table11(empty).empty
    assert list(q.table12(empty).columns) == q.TABLE12_COLUMNS and q.table12(empty).empty
    assert list(q.table13(empty).columns) == q.TABLE13_COLUMNS and q.table13(empty).empty


def test_cli_writes_tables_and_says_when_nothing_qualifies(tmp_path):
    rows = object_video("m", "o1", "LRLRLR", [0.9, 0.7, 0.6])
    rows += [r | {"reason": "no tracker" if r["metric"] in q.TRACKING_EVIDENCE else ""}
             for r in object_video("x", "o1", "LRLRLR", [0.9, 0.7, 0.6], evidence=(NAN, NAN))]
    write_scores(frame(rows), tmp_path / "scores.csv")
    paths = [tmp_path / "out" / f"table{n}.csv" for n in (11, 12, 13)]
    outputs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-m", "worldmemory.worldmembench.qualification",
             "--scores", str(tmp_path / "scores.csv"),
             *[arg for n, p in zip((11, 12, 13), paths) for arg in (f"--table{n}", str(p))]],
            check=True, cwd=REPO, capture_output=True, text=True,
            env={**os.environ, "PYTHONPATH": str(REPO / "scripts")})
        outputs.append([p.read_bytes() for p in paths])
    assert outputs[0] == outputs[1]
    assert "Table 13: no qualifying cases for 30 multi_revisit" in done.stdout
    assert "x: 6 object tracking-evidence rows are NaN (no tracker)" in done.stdout
    assert paths[2].read_text() == "tolerance,part,env_visible,env_depth,env_recon,N,M\n"
    table12 = pd.read_csv(paths[1])
    assert list(table12["metric"]) == ["object_appearance", "object_geometry"]
    assert table12["qualified"][0] == 0.3 and table12["positive"][0] == "1/1"


def test_read_scores_round_trip(tmp_path):
    rows = env_video("m", "e1", "LRLRLR", [0.9, 0.7, 0.6])
    write_scores(frame(rows), tmp_path / "s.csv")
    assert q.table12(read_scores([tmp_path / "s.csv"])).equals(q.table12(frame(rows)))


def test_paper_table12_sits_beside_ours_over_our_runs_of_the_papers_models():
    """Only runs labelled with a paper model enter our side; a reference model does not."""
    rows = (object_video("lingbot", "o1", "LRLRLR", [0.9, 0.8, 0.6])
            + object_video("omniscient", "o1", "LRLRLR", [1.0, 1.0, 1.0]))
    paper = pd.read_csv(REPO / "resources" / "paper_values" / "worldmembench_table12.csv")
    side = q.table12_vs_paper(frame(rows), paper, {"LingBot-World": "lingbot"})
    assert len(side) == len(paper) == 14
    obj = side.set_index(["part", "metric"]).loc[("multi_revisit", "object_appearance")]
    assert (obj["qualified_paper"], obj["N_paper"], obj["positive_paper"]) == (0.158, 155, "9/9")
    assert obj["qualified_ours"] == pytest.approx(0.3) and obj["M_ours"] == 1
    assert obj["positive_ours"] == "1/1"
    assert math.isnan(side.set_index(["part", "metric"]).loc[("cross_axis", "env_visible"), "qualified_ours"])


def test_return_accuracy_is_appendix_h_reach_fraction_and_mean_error():
    """Appendix H: reached = return error <= 30 deg (Table 11's R_30; an unposed return is not
    reached), the mean error over the posed returns: errors 10, 30, 50 and one NaN -> 2/4, 30."""
    rows = (env_video("m", "e1", "LRLR", [0.5, 0.5], [(90.0, 10.0), (90.0, 30.0)])
            + env_video("m", "e1", "LRUD", [0.5, 0.5], [(90.0, 50.0), (90.0, NAN)])
            + env_video("n", "e1", "LRLR", [0.5, 0.5]))
    got = q.return_accuracy(frame(rows)).set_index("model")
    assert got.loc["m", "returns_reached"] == pytest.approx(0.5)
    assert got.loc["m", "return_error_deg"] == pytest.approx(30.0)
    assert (got.loc["n", "returns_reached"], got.loc["n", "return_error_deg"]) == (1.0, POSED[1])
