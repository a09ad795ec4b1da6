"""Known answers for PersistBench's main table, ablation and figure (persistbench/tables.py)."""

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from worldmemory.persistbench import metrics as pm
from worldmemory.persistbench import tables as tb

REPO = Path(__file__).resolve().parents[2]
PAPER = REPO / "resources" / "paper_values" / "persistbench_table1.csv"
PAPER_ABLATION = REPO / "resources" / "paper_values" / "persistbench_ablation.csv"
NAN = math.nan


def per_frame(perm, cont, app=None):
    """A frame_scores-like dict from per-frame lists (cont/app given on every frame, NaN where
    perm is 0 as frame_scores has them)."""
    perm = np.asarray(perm, dtype=float)
    cont = np.where(perm > 0, np.asarray(cont, dtype=float), NAN)
    app = cont if app is None else np.where(perm > 0, np.asarray(app, dtype=float), NAN)
    return {"perm": perm, "cont": cont, "app": app, "ref_valid": np.ones(len(perm), bool),
            "app_computed": np.ones(len(perm), bool)}


def sequence(model, name, kind, visible, frames, category="car"):
    return pm.scores_frame(pm.sequence_rows(frames, visible), model, name, kind, category)


def uniform(model, name, kind, n_inv, kept_inv, value_inv, n_vis=2, value_vis=1.0):
    """A sequence with n_vis visible frames (all kept, value_vis) then n_inv invisible frames of
    which the first kept_inv are kept with Cont = App = value_inv."""
    visible = np.array([True] * n_vis + [False] * n_inv)
    perm = [1] * n_vis + [1] * kept_inv + [0] * (n_inv - kept_inv)
    values = [value_vis] * n_vis + [value_inv] * n_inv
    return sequence(model, name, kind, visible, per_frame(perm, values))


def scores():
    parts = [
        # alpha, static: two sequences of different lengths weigh the same
        uniform("alpha", "s1", "static", n_inv=8, kept_inv=8, value_inv=0.9),
        uniform("alpha", "s2", "static", n_inv=2, kept_inv=1, value_inv=0.5),
        # a static sequence with nothing tracked while invisible: left out of Cont/App (tracked),
        # counted in Perm
        uniform("alpha", "s3", "static", n_inv=4, kept_inv=0, value_inv=0.7),
        uniform("alpha", "d1", "dynamic", n_inv=4, kept_inv=2, value_inv=0.6),
        uniform("beta", "s1", "static", n_inv=4, kept_inv=4, value_inv=0.2),
    ]
    # beta's dynamic sequence has no appearance features: App NaN, never 0
    frames = per_frame([1, 1, 1, 1], [0.8] * 4)
    frames["app"], frames["app_computed"] = np.full(4, NAN), np.zeros(4, bool)
    parts.append(sequence("beta", "d1", "dynamic", np.array([True, True, False, False]), frames))
    return pd.concat(parts, ignore_index=True)


def test_table1_layout_and_sequence_means_in_percent():
    table = tb.table1(scores())
    assert list(table.columns[:3]) == ["model", "static_perm_invisible", "static_perm_visible"]
    assert list(table.columns) == tb.TABLE1_COLUMNS and len(table.columns) == 1 + 12 + 2
    assert list(table["model"]) == ["alpha", "beta"]
    alpha = table.set_index("model").loc["alpha"]
    # Perm: (1 + 0.5 + 0) / 3 sequences; frame-pooled would be 9 / 14
    assert alpha["static_perm_invisible"] == pytest.approx(100 * 1.5 / 3, abs=1e-6)
    # Cont: (0.9 + 0.5) / 2, s3 (nothing tracked) left out; frame-pooled would be 0.8556
    assert alpha["static_cont_invisible"] == pytest.approx(70.0, abs=1e-6)
    assert alpha["static_app_invisible"] == pytest.approx(70.0, abs=1e-6)
    assert alpha["static_perm_visible"] == alpha["static_cont_visible"] == 100.0
    assert alpha["dynamic_perm_invisible"] == 50.0 and alpha["dynamic_cont_invisible"] == pytest.approx(60.0)
    assert (alpha["n_static"], alpha["n_dynamic"]) == (3, 1)
    beta = table.set_index("model").loc["beta"]
    assert beta["dynamic_cont_invisible"] == pytest.approx(80.0)
    assert math.isnan(beta["dynamic_app_invisible"]) and math.isnan(beta["dynamic_app_visible"])
    reasons = tb.table1_reasons(scores())
    assert reasons.to_dict("records") == [
        {"model": "beta", "cell": f"dynamic_app_{s}", "reason": pm.NO_FEATURES} for s in pm.SEGMENTS]


def test_a_model_never_tracking_a_segment_has_nan_with_a_reason():
    rows = uniform("gamma", "s1", "static", n_inv=3, kept_inv=0, value_inv=0.5)
    table = tb.table1(rows).set_index("model").loc["gamma"]
    assert table["static_perm_invisible"] == 0.0 and math.isnan(table["static_cont_invisible"])
    assert math.isnan(table["dynamic_perm_invisible"])  # no dynamic sequence
    reasons = tb.table1_reasons(rows).set_index("cell")["reason"]
    assert reasons["static_cont_invisible"].startswith("no sequence with a frame to average")
    assert reasons["dynamic_perm_visible"] == "no sequence of this kind"


def ranked(values_tracked, fractions):
    """One model per entry: 4 invisible frames, a fraction kept at the given Cont/App value."""
    return pd.concat([uniform(f"m{i}", "s1", "static", n_inv=4, kept_inv=int(4 * f), value_inv=v)
                      for i, (v, f) in enumerate(zip(values_tracked, fractions))], ignore_index=True)


def test_ablation_rho_is_one_when_the_rules_agree_and_lower_when_they_do_not():
    same = tb.table_ablation(ranked([0.9, 0.8, 0.7, 0.6], [1.0, 1.0, 0.75, 0.75]))
    assert list(same.columns) == tb.ABLATION_COLUMNS
    group = same[(same["kind"] == "static") & (same["segment"] == "invisible") & (same["metric"] == "cont")]
    assert list(group["model"]) == ["m0", "m1", "m2", "m3"]
    assert group["tracked"].tolist() == pytest.approx([90, 80, 70, 60])
    assert group["all_frames"].tolist() == pytest.approx([90, 80, 52.5, 45])
    assert (group["rho"] == 1.0).all() and (group["n_models"] == 4).all()
    pooled = same[(same["kind"] == "all") & (same["segment"] == "invisible") & (same["metric"] == "app")]
    assert (pooled["rho"] == 1.0).all()

    swapped = tb.table_ablation(ranked([0.9, 0.8, 0.7, 0.6], [0.25, 0.5, 0.75, 1.0]))
    rho = swapped[(swapped["kind"] == "all") & (swapped["segment"] == "invisible")
                  & (swapped["metric"] == "cont")]["rho"].iloc[0]
    # kept frames 1, 2, 3, 4 of 4: all-frame 22.5, 40, 52.5, 60, the tracked order reversed
    assert rho < 1.0 and rho == pytest.approx(-1.0)
    partly = tb.table_ablation(ranked([0.9, 0.8, 0.7, 0.6], [1.0, 1.0, 0.5, 1.0]))
    rho = partly[(partly["kind"] == "static") & (partly["segment"] == "invisible")
                 & (partly["metric"] == "app")]["rho"].iloc[0]
    assert rho == pytest.approx(0.8)  # all-frame 90, 80, 35, 60: one swap, 1 - 6 * 2 / (4 * 15)


def test_ablation_needs_three_models():
    table = tb.table_ablation(ranked([0.9, 0.8], [1.0, 1.0]))
    assert table["rho"].isna().all()
    has = table[table["kind"] != "dynamic"]  # the models have static sequences only
    assert (has["n_models"] == 2).all() and has["reason"].str.contains("rho needs at least 3").all()
    none = table[table["kind"] == "dynamic"]
    assert (none["n_models"] == 0).all() and none["reason"].str.contains("no sequence of this kind").all()
    flat = tb.table_ablation(ranked([0.5, 0.5, 0.5], [1.0, 1.0, 1.0]))
    flat = flat[flat["kind"] != "dynamic"]
    assert flat["rho"].isna().all() and flat["reason"].str.contains("same value").all()


def frames_table():
    parts = []
    for model, drop in (("alpha", True), ("beta", False)):
        for i, kind in enumerate(pm.KINDS * 2):
            visible = np.array([True] * (3 + i) + [False] * 5)
            perm = np.where(visible | (not drop), 1.0, 0.0)
            rows = pm.frame_rows(per_frame(perm, np.ones(len(perm))), visible)
            parts.append(pm.frames_frame(rows, model, f"seq{i}", kind))
    return pd.concat(parts, ignore_index=True)


def test_perm_after_exit_curve_and_figure(tmp_path):
    frames = frames_table()
    curve = tb.perm_after_exit(frames)
    alpha = curve[(curve["model"] == "alpha") & (curve["kind"] == "static")].set_index("frame_from_exit")
    assert alpha.loc[-1, "perm"] == 1.0 and alpha.loc[0, "perm"] == 0.0
    assert alpha.loc[-4, "n_sequences"] == 1 and alpha.loc[0, "n_sequences"] == 2
    png, pdf = tmp_path / "f.png", tmp_path / "f.pdf"
    fig = tb.figure_perm_exit(frames, png, pdf)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and pdf.read_bytes()[:5] == b"%PDF-"
    static, dynamic = fig.axes[:2]
    assert [line.get_label() for line in static.get_lines()] == [
        "alpha", "beta", "target leaves the input view"]
    assert len(dynamic.get_lines()) == 3


def test_paper_values_match_the_text():
    paper = pd.read_csv(PAPER, keep_default_na=False)
    assert list(paper.columns) == ["model", "kind", "metric", "segment", "value", "source"]
    assert len(paper) == 10 * 2 * 3 * 2 == 120
    assert not paper.duplicated(["model", "kind", "metric", "segment"]).any()
    assert list(dict.fromkeys(paper["model"])) == [
        "CUT3R", "4DGT", "CogNVS", "NeoVerse", "ReCamMaster", "TrajectoryCrafter", "GEN3C",
        "Argus", "CubeComposer", "Omniscient Ref."]
    value = paper.set_index(["model", "kind", "metric", "segment"])["value"]
    assert value[("CUT3R", "dynamic", "perm", "invisible")] == 0.99
    assert value[("CUT3R", "dynamic", "perm", "visible")] == 43.99
    assert value[("4DGT", "dynamic", "perm", "visible")] == 96.21  # "4DGT从96.21%降至3.89%"
    assert value[("4DGT", "dynamic", "perm", "invisible")] == 3.89
    assert value[("GEN3C", "dynamic", "perm", "invisible")] == 87.06
    assert value[("Omniscient Ref.", "static", "cont", "visible")] == 98.88
    assert value[("Argus", "static", "app", "invisible")] == 68.49
    assert paper["value"].between(0, 100).all()

    ablation = pd.read_csv(PAPER_ABLATION)
    assert list(ablation.columns) == ["component", "variant", "metric", "rho_invisible",
                                      "rho_visible", "source"]
    assert len(ablation) == 15
    rule = ablation[ablation["component"] == "aggregation"].set_index("metric")
    assert rule.loc["app", "rho_invisible"] == 0.972 and rule.loc["cont", "rho_invisible"] == 0.685
    assert rule["rho_visible"].isna().all()
    tiny = ablation[ablation["variant"] == "SAM2.1 Tiny"].set_index("metric")
    assert tiny.loc["cont", "rho_invisible"] == 0.972 and tiny.loc["cont", "rho_visible"] == 1.0
    assert ablation["rho_invisible"].between(-1, 1).all()


def test_paper_side_by_side_maps_runs_to_paper_models():
    table = tb.table1(scores())
    paper = pd.read_csv(PAPER, keep_default_na=False)
    side = tb.paper_side_by_side(table, paper, {"Omniscient Ref.": "alpha", "GEN3C": "missing"})
    assert list(side.columns) == tb.SIDE_COLUMNS and len(side) == 24
    row = side[(side["model"] == "Omniscient Ref.") & (side["kind"] == "static")
               & (side["metric"] == "cont") & (side["segment"] == "invisible")].iloc[0]
    assert (row["run"], row["paper"], row["ours"]) == ("alpha", 98.68, 70.0)
    assert side.loc[side["model"] == "GEN3C", "note"].str.startswith("not in our run").all()


def test_cli_is_byte_stable(tmp_path):
    score_csv, frame_csv = tmp_path / "scores.csv", tmp_path / "frames.csv"
    pm.write_scores(pd.concat([scores(), ranked([0.9, 0.8, 0.7], [1, 1, 1])]), score_csv)
    pm.write_frames(frames_table(), frame_csv)
    env = {**os.environ, "PYTHONPATH": str(REPO / "scripts")}
    outputs = {}
    for run in ("a", "b"):
        out = tmp_path / run
        names = ["table1.csv", "ablation.csv", "fig.png", "fig.pdf", "paper.csv",
                 "paper_ablation.csv", "reasons.csv"]
        cmd = [sys.executable, "-m", "worldmemory.persistbench.tables", "--scores", str(score_csv),
               "--frames", str(frame_csv), "--table1", str(out / names[0]),
               "--ablation", str(out / names[1]), "--figure-png", str(out / names[2]),
               "--figure-pdf", str(out / names[3]), "--paper", str(PAPER),
               "--out-paper", str(out / names[4]), "--paper-models", "alpha=Omniscient Ref.",
               "--paper-ablation", str(PAPER_ABLATION), "--out-paper-ablation", str(out / names[5]),
               "--reasons", str(out / names[6])]
        result = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=REPO)
        assert result.returncode == 0, result.stderr
        outputs[run] = {n: (out / n).read_bytes() for n in names}
    assert outputs["a"] == outputs["b"]
    assert "Omniscient Ref." in result.stdout
    side = pd.read_csv(tmp_path / "a" / "paper_ablation.csv")
    assert side[["metric", "segment", "paper"]].values.tolist() == [
        ["app", "invisible", 0.972], ["cont", "invisible", 0.685]]
    assert side["n_models"].tolist() == [4, 5]  # beta has no App (no features)
