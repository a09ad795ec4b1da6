import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from worldmemory.permanence.readouts import belief_curve, carry_over
from worldmemory.permanence.tables import object_size, our_statistic, paper_side_by_side, table3
from worldmemory.report.tables import write_csv

REPO = Path(__file__).resolve().parents[2]
MODELS = ["vjepa2-vith-fpc64-256", "toy-model"]  # run names are config keys
PAPER_ID = "facebook/vjepa2-vith-fpc64-256"  # the paper file uses Hugging Face ids
CONDITIONS = ["stationary_never_rendered", "moving", "stationary", "moving_never_rendered"]  # not in table order
N_SLOTS, N_SCENES = 14, 60
T = [slot * 2 / 7.5 for slot in range(N_SLOTS)]
LABELS = [f"{t:.2f}" for t in T]


def n_present(model: str, condition: str, slot: int) -> int:
    """A moving curve above 0.5 for two slots, a stationary one decaying from 60, controls low."""
    if condition.endswith("never_rendered"):
        return 5
    if condition == "moving":
        return 50 if slot < 2 else 3
    return max(60 - 4 * slot, 0) if model == MODELS[0] else 10


def scenes(model: str) -> pd.DataFrame:
    rng = np.random.default_rng(len(model))
    rows = [
        {"model": model, "condition": c, "scene_id": s, "radius": 8, "n_distractors": 2, "seed": s,
         "slot": slot, "t_s": T[slot], "d_present": 1.0, "d_absent": 1.0, "e": rng.normal(),
         "alpha": rng.normal(), "present": s < n_present(model, c, slot),
         "nearest_band": ("gone" if s % 3 else "static") if c == "moving" else ""}
        for c in CONDITIONS for slot in range(N_SLOTS) for s in range(N_SCENES)
    ]
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def curve():
    return belief_curve(pd.concat([scenes(m) for m in MODELS], ignore_index=True))


def test_table3_shapes_and_order(curve):
    wide, long = table3(curve)
    assert list(wide.columns) == (
        ["model", "condition", "control", "carry_over_s"]
        + [f"p_{t}" for t in LABELS] + [f"lo_{t}" for t in LABELS] + [f"hi_{t}" for t in LABELS]
    )
    order = ["moving", "moving_never_rendered", "stationary", "stationary_never_rendered"]
    assert list(zip(wide["model"], wide["condition"])) == [(m, c) for m in sorted(MODELS) for c in order]
    assert list(wide["control"]) == ["moving_never_rendered", "", "stationary_never_rendered", ""] * 2
    assert list(long.columns) == list(curve.columns) and len(long) == len(curve) == 2 * 4 * N_SLOTS


def test_table3_values(curve):
    wide, _ = table3(curve)
    row = wide[(wide["model"] == MODELS[0]) & (wide["condition"] == "moving")].iloc[0]
    assert row["carry_over_s"] == pytest.approx(0.266667)
    assert row["carry_over_s"] == round(carry_over(curve, MODELS[0], "moving"), 6)
    assert row["p_0.00"] == pytest.approx(50 / 60, abs=1e-6)
    assert row["p_0.53"] == pytest.approx(3 / 60, abs=1e-6)
    assert row["lo_0.00"] < row["p_0.00"] < row["hi_0.00"]
    assert math.isnan(wide[wide["condition"] == "moving_never_rendered"]["carry_over_s"].iloc[0])


def test_csv_is_byte_stable(curve, tmp_path):
    shuffled = pd.concat([scenes(m) for m in reversed(MODELS)]).sample(frac=1, random_state=0)
    for name, first, second in zip(("wide", "long"), table3(curve), table3(belief_curve(shuffled))):
        write_csv(first, tmp_path / f"{name}1.csv")
        write_csv(second, tmp_path / f"{name}2.csv")
        assert (tmp_path / f"{name}1.csv").read_bytes() == (tmp_path / f"{name}2.csv").read_bytes()


def test_mean_from_a_time_point(curve):
    _, long = table3(curve)
    # ViT-H stationary: k = 60 - 4 * slot, so the mean over slots 2..13 is (52 + 8) / 2 / 60.
    expected = np.mean([(60 - 4 * s) / 60 for s in range(2, N_SLOTS)])
    assert our_statistic(long, MODELS[0], "stationary", "p_present_mean>=0.53") == pytest.approx(expected, abs=1e-6)
    assert our_statistic(long, MODELS[0], "stationary", "p_present_max>=0.53") == pytest.approx(52 / 60, abs=1e-6)
    assert our_statistic(long, MODELS[0], "stationary", "p_present@0.27") == pytest.approx(56 / 60, abs=1e-6)
    with pytest.raises(ValueError):
        our_statistic(long, MODELS[0], "stationary", "p_present@0.3")


def test_paper_side_by_side(curve):
    _, long = table3(curve)
    paper = pd.DataFrame({
        "model": [PAPER_ID, PAPER_ID, "facebook/vjepa2-vitl-fpc64-256"],
        "condition": ["stationary", "moving", "moving"],
        "statistic": ["p_present_mean>=0.53", "p_present@0.00", "p_present@0.00"],
        "value": [0.41, 0.92, 0.58],
        "source": ["Section 4.1", "Section 4.1", "Section 4.1"],
    })
    paper.loc[len(paper)] = [PAPER_ID, "moving_copy_last_view", "alpha@0.53", 0.87, "Appendix I"]
    side = paper_side_by_side(long, paper, {PAPER_ID: MODELS[0]})
    assert list(side.columns) == ["model", "run", "condition", "statistic", "paper", "ours", "note"]
    assert side["paper"].tolist() == [0.41, 0.92, 0.87]  # the checkpoint we did not run is left out
    assert side["run"].tolist() == [MODELS[0]] * 3
    assert side["ours"].iloc[0] == pytest.approx(np.mean([(60 - 4 * s) / 60 for s in range(2, N_SLOTS)]), abs=1e-6)
    assert side["ours"].iloc[1] == pytest.approx(50 / 60, abs=1e-6)
    assert math.isnan(side["ours"].iloc[2]) and side["note"].iloc[2].startswith("not in our run")


def test_paper_values_file_parses():
    paper = pd.read_csv(REPO / "resources/paper_values/permanence_table3.csv")
    assert list(paper.columns) == ["model", "condition", "statistic", "value", "source"]
    assert not paper.duplicated(["model", "condition", "statistic"]).any()
    assert paper["source"].notna().all()
    empty = pd.DataFrame(columns=["model", "condition", "t_s", "p_present", "e_mean", "alpha_mean"])
    side = paper_side_by_side(empty, paper, {m: m for m in paper["model"].unique()})
    assert len(side) == len(paper)  # every statistic is one our_statistic understands


def test_object_size_pools_the_readouts_from_053_s_per_radius():
    """Appendix I: P(present) per radius over every scene and slot from 0.53 s on (slots 2-13)."""
    df = scenes(MODELS[0])
    df.loc[df["scene_id"] % 2 == 1, "radius"] = 32  # odd scenes have the big ball
    df.loc[(df["radius"] == 32) & (df["slot"] == 1), "present"] = True  # 0.27 s: before the window
    table = object_size(df).set_index(["condition", "radius"])
    late = [slot for slot in range(N_SLOTS) if T[slot] >= 0.53 - 1e-9]
    assert late[0] == 2
    for (condition, radius), row in table.iterrows():
        scene_ids = [s for s in range(N_SCENES) if (s % 2 == 1) == (radius == 32)]
        expected = np.mean([s < n_present(MODELS[0], condition, slot) for slot in late for s in scene_ids])
        assert row["p_present"] == pytest.approx(expected, abs=1e-6), (condition, radius)
        assert row["n_scenes"] == 30 and row["n_readouts"] == 30 * len(late)
    assert set(table.index.get_level_values("radius")) == {8, 32}


def test_cli(tmp_path):
    probes = []
    for i, model in enumerate(MODELS):
        probes.append(tmp_path / f"probe{i}.csv")
        scenes(model).to_csv(probes[-1], index=False)
    paper = tmp_path / "paper.csv"
    pd.DataFrame({
        "model": [PAPER_ID, MODELS[1]], "condition": ["moving", "moving"], "statistic": ["p_present@0.00"] * 2,
        "value": [0.92, 0.5], "source": ["Section 4.1", "x"],
    }).to_csv(paper, index=False)
    out = tmp_path / "results"
    result = subprocess.run(
        [sys.executable, "-m", "worldmemory.permanence.tables", "--probe", *map(str, probes),
         "--out-wide", str(out / "table3.csv"), "--out-long", str(out / "table3_long.csv"),
         "--out-size", str(out / "object_size.csv"),
         "--paper", str(paper), "--out-paper", str(out / "vs_paper.csv"), "--paper-models", f"{MODELS[0]}={PAPER_ID}"],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO / "scripts")}, capture_output=True, text=True, check=True,
    )
    wide = pd.read_csv(out / "table3.csv")
    long = pd.read_csv(out / "table3_long.csv")
    side = pd.read_csv(out / "vs_paper.csv")
    assert len(wide) == 8 and len(long) == 8 * N_SLOTS
    assert len(pd.read_csv(out / "object_size.csv")) == 8  # one radius in the synthetic scenes
    assert side["model"].tolist() == [PAPER_ID]  # only the paper's checkpoints are compared
    assert side["ours"].iloc[0] == pytest.approx(50 / 60, abs=1e-6)
    assert "p_0.00" in result.stdout and "p_present@0.00" in result.stdout
    # nearest_band read back from CSV: empty cells mean "not computed"
    assert long.loc[long["condition"] == "moving", "frac_gone"].iloc[0] == pytest.approx(40 / 60, abs=1e-6)
    assert long.loc[long["condition"] == "stationary", "frac_gone"].isna().all()
