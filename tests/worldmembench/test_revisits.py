"""Known answers for the WorldMemBench revisit analyses (revisits.py): Table 8, R_k, Tables 9-10
(d = R_1 - R_2, Delta_axis = d_LRUD - d_LRLR; Section 5.4, Appendix G) and Figure 5."""

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from worldmemory.worldmembench import revisits as rv
from worldmemory.worldmembench.score import COLUMNS, write_scores
from worldmemory.worldmembench.tables import read_scores, table2

REPO = Path(__file__).resolve().parents[2]
NAN = math.nan
INVALID = None  # a revisit without a valid observation


def revisit_rows(model, case, trajectory, metric, per_target, family="object"):
    """Rows of one per-revisit metric: per_target maps target -> [s_1, ..., s_K]."""
    return [{"model": model, "case": case, "family": family, "trajectory": trajectory,
             "metric": metric, "target": target, "revisit": k,
             "value": NAN if s is INVALID else s, "valid": s is not INVALID,
             "reason": "not observed" if s is INVALID else ""}
            for target, scores in per_target.items() for k, s in enumerate(scores, start=1)]


def rollout_rows(model, case, trajectory, values, family="object"):
    """Rollout-level rows (revisit 0): values maps metric -> value."""
    return [{"model": model, "case": case, "family": family, "trajectory": trajectory,
             "metric": metric, "target": "", "revisit": 0, "value": value, "valid": True,
             "reason": ""} for metric, value in values.items()]


def frame(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=COLUMNS)


def cross_axis_scores() -> pd.DataFrame:
    """Two models; object_appearance per rollout R_1/R_2 as in the docstring of the tests."""
    rows = []
    # alpha: LRLR 0.9 / 0.7 (d 0.2), LRUD 0.9 / 0.5 (d 0.4): delta_axis 0.2.
    rows += revisit_rows("alpha", "o1", "LRLR", "object_appearance", {"a": [0.9, 0.7]})
    rows += revisit_rows("alpha", "o1", "LRUD", "object_appearance", {"a": [0.9, 0.5]})
    # beta: LRLR 0.8 / 0.8 (d 0), LRUD 0.6 / 0.2 (d 0.4): delta_axis 0.4.
    rows += revisit_rows("beta", "o1", "LRLR", "object_appearance", {"a": [0.8, 0.8]})
    rows += revisit_rows("beta", "o1", "LRUD", "object_appearance", {"a": [0.6, 0.2]})
    # env_visible only for alpha, so Table 9's mean over models is NaN for it.
    rows += revisit_rows("alpha", "e1", "LRLR", "env_visible", {"e": [1.0, 0.5]}, "environment")
    rows += revisit_rows("alpha", "e1", "LRUD", "env_visible", {"e": [1.0, 0.25]}, "environment")
    return frame(rows)


def rotation_scores() -> pd.DataFrame:
    """Two models over every trajectory, including ones Table 8 leaves out (LR, LR-Hold,
    translation) and an LRLRLR rollout with an invalid revisit."""
    rows = []
    for model, shift in (("alpha", 0.0), ("beta", -0.2)):
        for metric in ("object_appearance", "object_geometry"):
            rows += revisit_rows(model, "o1", "LRLR", metric, {"a": [0.9 + shift, 0.7 + shift]})
            rows += revisit_rows(model, "o2", "LRLR", metric, {"a": [0.5, INVALID]})
            rows += revisit_rows(model, "o1", "LRLRLR", metric,
                                 {"a": [0.9 + shift, 0.8 + shift, INVALID]})
            rows += revisit_rows(model, "o1", "LRUD", metric, {"a": [0.9 + shift, 0.3]})
            rows += revisit_rows(model, "o1", "LR", metric, {"a": [0.1]})
            rows += revisit_rows(model, "o1", "translation", metric, {"a": [0.2]})
        for metric, per_revisit in (("human_appearance", [0.8, 0.6, 0.5]),
                                    ("env_visible", [0.95, 0.85, 0.7])):
            family = "human" if metric.startswith("human") else "environment"
            rows += revisit_rows(model, "c", "LRLRLR", metric,
                                 {"t": [s + shift for s in per_revisit]}, family)
        for case in ("o1", "o2"):
            rows += rollout_rows(model, case, "LRLR", {"rpe_rot": 0.1})
        rows += rollout_rows(model, "o1", "LRLRLR", {"rpe_rot": 0.3})
        rows += revisit_rows(model, "o1", "LRLRLR", "rpe_rot", {"": [0.2, 0.3, 0.4 - shift]})  # per cycle
        rows += rollout_rows(model, "o1", "LRUD", {"rpe_rot": 0.2})
        rows += rollout_rows(model, "d1", "LR-Hold", {"rpe_rot": 0.9, "dyn_overall": 0.5},
                             "dynamic")
        rows += rollout_rows(model, "o1", "translation", {"rpe_trans": 0.4})
    return frame(rows)


def test_static_metrics_are_table2s():
    assert rv.STATIC_METRICS == ("human_identity", "human_appearance", "object_appearance",
                                 "object_geometry", "env_visible", "env_depth", "env_recon")
    assert rv.ROTATIONS == ("LRLR", "LRLRLR", "LRUD")


def test_revisit_scores_invalid_revisit_scores_zero_then_targets_then_rollouts():
    rows = revisit_rows("m", "a", "LRLR", "object_geometry", {"o1": [0.8, INVALID],
                                                             "o2": [0.6, 0.4]})
    rows += revisit_rows("m", "b", "LRLR", "object_geometry", {"o1": [1.0, 0.2]})
    rows += revisit_rows("m", "c", "LRUD", "object_geometry", {"o1": [0.0, 0.0]})  # not LRLR
    rows += revisit_rows("m", "d", "LRLR", "env_depth", {"e": [0.5, 0.3]}, "environment")
    rows[-1]["value"] = NAN  # valid but uncomputed: NaN, never 0
    table = rv.revisit_scores(frame(rows), "LRLR")
    assert list(table.columns) == ["model", "metric", "revisit", "score"]
    got = {(r.metric, r.revisit): r.score for r in table.itertuples()}
    # R_1: a (0.8 + 0.6) / 2 = 0.7, b 1.0 -> 0.85. R_2: a (0 + 0.4) / 2 = 0.2, b 0.2 -> 0.2
    # (dropping the invalid revisit instead would give 0.3).
    assert got[("object_geometry", 1)] == pytest.approx(0.85, abs=1e-12)
    assert got[("object_geometry", 2)] == pytest.approx(0.2, abs=1e-12)
    assert got[("env_depth", 1)] == 0.5 and math.isnan(got[("env_depth", 2)])
    assert len(got) == 4


def test_table10_d_and_delta_axis_exact():
    table9, table10 = rv.table9_10(cross_axis_scores())
    assert list(table10.columns) == rv.TABLE10_COLUMNS == list(table9.columns)
    assert [tuple(r) for r in table10[["model", "metric"]].to_numpy()] == [
        (m, metric) for m in ("alpha", "beta") for metric in rv.REVISIT_METRICS]
    alpha = table10.set_index(["model", "metric"]).loc[("alpha", "object_appearance")]
    assert alpha.to_dict() == {"R1_LRLR": 0.9, "R2_LRLR": 0.7, "d_LRLR": 0.2, "R1_LRUD": 0.9,
                               "R2_LRUD": 0.5, "d_LRUD": 0.4, "delta_axis": 0.2}
    beta = table10.set_index(["model", "metric"]).loc[("beta", "object_appearance")]
    assert (beta["d_LRLR"], beta["d_LRUD"], beta["delta_axis"]) == (0.0, 0.4, 0.4)
    # a metric without rows is NaN throughout
    assert table10.set_index(["model", "metric"]).loc[("alpha", "human_identity")].isna().all()


def test_table9_is_the_mean_of_table10_over_models():
    table9, table10 = rv.table9_10(cross_axis_scores())
    assert set(table9["model"]) == {"mean"}
    assert list(table9["metric"]) == list(rv.REVISIT_METRICS)
    mean = table9.set_index("metric").loc["object_appearance"]
    assert mean.drop("model").to_dict() == pytest.approx(
        {"R1_LRLR": 0.85, "R2_LRLR": 0.75, "d_LRLR": 0.1, "R1_LRUD": 0.75, "R2_LRUD": 0.35,
         "d_LRUD": 0.4, "delta_axis": 0.3}, abs=1e-9)
    # env_visible has rows for alpha only: beta's NaN keeps the model mean NaN
    assert table9.set_index("metric").loc["env_visible"].drop("model").isna().all()
    expected = table10.groupby("metric", sort=False)[rv.TABLE10_COLUMNS[2:]].mean()
    expected = expected.where(table10.groupby("metric", sort=False)[rv.TABLE10_COLUMNS[2:]]
                              .count() == 2)  # NaN when any model is NaN
    np.testing.assert_allclose(table9.set_index("metric")[rv.TABLE10_COLUMNS[2:]].to_numpy(),
                               expected.loc[list(rv.REVISIT_METRICS)].to_numpy(), atol=1e-6)


def test_table8_is_table2_restricted_to_each_rotation_trajectory():
    scores = rotation_scores()
    table = rv.table8(scores)
    assert list(table.columns) == rv.TABLE8_COLUMNS
    assert [tuple(r) for r in table[["trajectory", "model"]].to_numpy()] == [
        (t, m) for t in ("LRLR", "LRLRLR", "LRUD") for m in ("alpha", "beta")]
    for trajectory in rv.ROTATIONS:
        expected = table2(scores[scores["trajectory"] == trajectory])
        got = table[table["trajectory"] == trajectory].reset_index(drop=True)
        pd.testing.assert_frame_equal(got.drop(columns="trajectory"),
                                      expected[got.columns.drop("trajectory")])
    by = table.set_index(["model", "trajectory"])
    # LRLR, alpha: o1 (0.9 + 0.7) / 2 = 0.8, o2 (0.5 + 0) / 2 = 0.25 -> 0.525
    assert by.loc[("alpha", "LRLR"), "object_geometry"] == 0.525
    assert by.loc[("alpha", "LRLRLR"), "object_appearance"] == pytest.approx(1.7 / 3, abs=1e-6)
    # RPE_rot of the trajectory only (LR-Hold's 0.9 is left out)
    assert by["rpe_rot"].tolist() == [0.1, 0.1, 0.3, 0.3, 0.2, 0.2]
    assert by.loc[("beta", "LRUD"), "env_visible"] != by.loc[("beta", "LRUD"), "env_visible"]


def test_figure5_panels_lines_and_bytes(tmp_path):
    scores = rotation_scores()
    fig = rv.figure5(scores, tmp_path / "a.png", tmp_path / "a.pdf")
    rv.figure5(scores, tmp_path / "b.png", tmp_path / "b.pdf")
    assert (tmp_path / "a.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (tmp_path / "a.pdf").read_bytes()[:5] == b"%PDF-"
    assert (tmp_path / "a.png").read_bytes() == (tmp_path / "b.png").read_bytes()
    assert (tmp_path / "a.pdf").read_bytes() == (tmp_path / "b.pdf").read_bytes()
    assert len(fig.axes) == 8 and rv.FIGURE5_METRICS == (*rv.STATIC_METRICS, "rpe_rot")  # the paper's eight
    panels = dict(zip(rv.FIGURE5_METRICS, fig.axes))
    for metric, ax in panels.items():
        empty = metric in ("human_identity", "env_depth", "env_recon")  # no LRLRLR rows of these
        assert [line.get_label() for line in ax.get_lines()] == ([] if empty else ["alpha", "beta"]), metric
        assert [t.get_text() for t in ax.texts] == (["no values"] if empty else []), metric
    # RPE_rot per cycle; the per-rollout row (revisit 0) is Table 2's and no point here
    np.testing.assert_allclose(panels["rpe_rot"].get_lines()[1].get_ydata(), [0.2, 0.3, 0.6])
    alpha = panels["env_visible"].get_lines()[0]
    assert list(alpha.get_xdata()) == [1, 2, 3]
    np.testing.assert_allclose(alpha.get_ydata(), [0.95, 0.85, 0.7])
    # the invalid third revisit scores 0
    beta = panels["object_appearance"].get_lines()[1]
    np.testing.assert_allclose(beta.get_ydata(), [0.7, 0.6, 0.0])


def test_cli_writes_byte_stable_outputs(tmp_path):
    gamma = cross_axis_scores().query("model == 'alpha'").assign(model="gamma")
    scores = pd.concat([rotation_scores(), gamma], ignore_index=True)
    write_scores(scores[scores["model"] != "gamma"], tmp_path / "ab.csv")
    write_scores(scores[scores["model"] == "gamma"], tmp_path / "gamma.csv")
    names = ("table8.csv", "table9.csv", "t10/table10.csv", "fig/f5.png", "fig/f5.pdf")
    outputs = []
    for run in ("a", "b"):
        out = tmp_path / run
        done = subprocess.run(
            [sys.executable, "-m", "worldmemory.worldmembench.revisits",
             "--scores", str(tmp_path / "ab.csv"), str(tmp_path / "gamma.csv"),
             *[arg for option, name in zip(("--table8", "--table9", "--table10", "--figure5-png",
                                            "--figure5-pdf"), names)
               for arg in (option, str(out / name))]],
            check=True, cwd=REPO, capture_output=True, text=True,
            env={**os.environ, "PYTHONPATH": str(REPO / "scripts")})
        outputs.append([(out / name).read_bytes() for name in names])
    assert outputs[0] == outputs[1]
    assert all(b"\r" not in data for data in outputs[0][:3])
    assert "Table 9" in done.stdout and "O.App" in done.stdout
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "a" / "table8.csv"),
                                  rv.table8(read_scores([tmp_path / "ab.csv",
                                                         tmp_path / "gamma.csv"])),
                                  check_dtype=False)
    table10 = pd.read_csv(tmp_path / "a" / "t10" / "table10.csv").set_index(["model", "metric"])
    assert table10.loc[("gamma", "object_appearance"), "delta_axis"] == 0.2
    assert set(table10.index.get_level_values("model")) == {"alpha", "beta", "gamma"}
