"""A real Snakemake run of WorldMemBench on tests/config/tiny_worldmembench.yaml: the reference
models calibrate every metric (omniscient >= drifting >= amnesic; the camera-error model is the
one the rotation RPE flags)."""

from pathlib import Path

import pandas as pd
import pytest
import yaml

TINY = Path(__file__).resolve().parents[1] / "config" / "tiny_worldmembench.yaml"
MEMORY = ["human_appearance", "object_appearance", "object_geometry", "env_visible", "env_depth",
          "env_recon", "dyn_overall"]
pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def runs(tmp_path_factory, snakemake):
    dirs = [tmp_path_factory.mktemp(f"wmb{i}") for i in range(2)]
    for d in dirs:
        snakemake(d, TINY, "results/table2.csv", "results/worldmembench/figure5.png")
    return dirs


@pytest.fixture(scope="module")
def table2(runs):
    return pd.read_csv(runs[0] / "results" / "table2.csv").set_index("model")


def test_table2_has_the_papers_columns_and_every_model(table2):
    assert list(table2.columns) == [
        "imaging_quality", "aesthetic_quality", "human_identity", *MEMORY[:6],
        "dyn_return_progress", "dyn_persistence_reset", "dyn_final_state", "dyn_causal_physical",
        "dyn_overall", "rpe_trans", "rpe_rot"]
    assert set(table2.index) == {"omniscient", "amnesic", "drifting", "camera-error"}


def test_reference_models_order_as_designed(table2):
    for metric in MEMORY:
        assert table2.loc["omniscient", metric] >= table2.loc["drifting", metric] >= table2.loc["amnesic", metric], metric
    assert table2.loc["omniscient", "env_visible"] > table2.loc["drifting", "env_visible"] > table2.loc["amnesic", "env_visible"]
    assert table2.loc["omniscient", "object_appearance"] > table2.loc["amnesic", "object_appearance"]
    assert table2.loc["omniscient", "dyn_overall"] == 1.0 > table2.loc["amnesic", "dyn_overall"]


def test_the_camera_error_model_is_the_one_rpe_flags(table2):
    assert table2["rpe_rot"].idxmax() == "camera-error"
    assert table2.loc["camera-error", "rpe_rot"] == pytest.approx(0.33, abs=0.01)
    assert (table2.drop(index="camera-error")["rpe_rot"] == 0).all()


def test_unavailable_metrics_are_nan_not_made_up(table2):
    assert table2[["imaging_quality", "aesthetic_quality", "human_identity"]].isna().all().all()


def test_revisit_tables_separate_memory_from_drift(runs):
    """Table 10: the omniscient model scores the same at both LRLR revisits; a drifting model
    remembers less at the second (d = R1 - R2 > 0)."""
    t10 = pd.read_csv(runs[0] / "results" / "worldmembench" / "table10.csv").set_index(["model", "metric"])
    assert t10.loc[("omniscient", "human_appearance"), "d_LRLR"] == pytest.approx(0.0, abs=1e-9)
    assert t10.loc[("drifting", "human_appearance"), "d_LRLR"] > 0
    t9 = pd.read_csv(runs[0] / "results" / "worldmembench" / "table9.csv")
    assert set(t9["model"]) == {"mean"}
    t8 = pd.read_csv(runs[0] / "results" / "worldmembench" / "table8.csv")
    assert set(t8["trajectory"]) == {"LRLR", "LRUD"}
    assert (runs[0] / "results" / "worldmembench" / "figure5.png").read_bytes()[:4] == b"\x89PNG"


def test_two_runs_give_byte_identical_tables(runs):
    for name in ["table2.csv", "worldmembench/table5.csv", "worldmembench/table10.csv", "worldmembench/figure5.png"]:
        a, b = (d / "results" / name for d in runs)
        assert a.read_bytes() == b.read_bytes(), name


def test_drift_rate_orders_the_scores(tmp_path, snakemake):
    """Drifting is monotone in its rate: a faster drift remembers less."""
    config = yaml.safe_load(TINY.read_text())
    config["worldmembench"]["models"] = {
        f"drift-{r}": {"kind": "reference", "reference": "drifting", "params": {"rate": r}} for r in (0.02, 0.3)}
    path = tmp_path / "drift.yaml"
    path.write_text(yaml.safe_dump(config))
    snakemake(tmp_path, path, "results/table2.csv")
    t = pd.read_csv(tmp_path / "results" / "table2.csv").set_index("model")
    for metric in ["human_appearance", "object_appearance", "env_visible"]:
        assert t.loc["drift-0.02", metric] > t.loc["drift-0.3", metric], metric
