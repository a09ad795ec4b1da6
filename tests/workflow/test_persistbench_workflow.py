"""A real Snakemake run of PersistBench on tests/config/tiny_persistbench.yaml: the reference models
calibrate Perm / Cont / App (the omniscient reference scores 100 everywhere, the warp-only model
loses the target once the input camera does), twice with byte-identical outputs."""

from pathlib import Path

import pandas as pd
import pytest

TINY = Path(__file__).resolve().parents[1] / "config" / "tiny_persistbench.yaml"
OUTPUTS = ["table1.csv", "table_ablation.csv", "table1_nan_reasons.csv", "figure_perm_exit.png"]
AGREEMENT = "results/persistbench/perception_agreement.csv"
pytestmark = pytest.mark.workflow


@pytest.fixture(scope="module")
def runs(tmp_path_factory, snakemake):
    dirs = [tmp_path_factory.mktemp(f"pb{i}") for i in range(2)]
    for i, d in enumerate(dirs):  # the first run also replays every model through the estimators
        snakemake(d, TINY, "results/persistbench/table1.csv", *([AGREEMENT] if i == 0 else []))
    return dirs


def test_table1_has_the_papers_layout_and_known_answers(runs):
    table = pd.read_csv(runs[0] / "results" / "persistbench" / "table1.csv").set_index("model")
    cells = [f"{kind}_{metric}_{segment}" for kind in ("static", "dynamic")
             for metric in ("perm", "cont", "app") for segment in ("invisible", "visible")]
    assert list(table.columns) == cells + ["n_static", "n_dynamic"]
    assert (table.loc["omniscient", cells] == 100).all()
    assert table.loc["warp-only", "static_perm_invisible"] == 0
    assert table.loc["warp-only", "dynamic_perm_invisible"] == 0
    assert table.loc["warp-only", "dynamic_perm_visible"] == 100
    assert 0 < table.loc["forgetting", "dynamic_perm_invisible"] < 100
    reasons = pd.read_csv(runs[0] / "results" / "persistbench" / "table1_nan_reasons.csv")
    assert set(reasons["model"]) == {"warp-only"}  # Cont/App over no tracked frame: NaN, said why


def test_outputs_are_byte_identical_across_runs_with_provenance(runs):
    for name in OUTPUTS:
        a, b = (d / "results" / "persistbench" / name for d in runs)
        assert a.read_bytes() == b.read_bytes(), name
    assert (runs[0] / "results" / "persistbench" / "table1.json").stat().st_size > 0


def test_replayed_reference_videos_are_scored_by_the_weight_free_judge(runs):
    """Replayed through the estimators (the optical-flow tracker and the structure-match judge),
    every Perm cell is a number; the omniscient's static target reads as the oracle's (100) and
    the warp-only model's lost target as its 0. The dynamic sphere of this 48 px config is a few
    pixels wide, too small for the judge (docs/perception.md "Perception agreement")."""
    table = pd.read_csv(runs[0] / AGREEMENT)
    assert set(table["model"]) == {"omniscient", "warp-only", "forgetting"} and set(table["replay"]) == {"clean"}
    cells = table[~table["quantity"].str.startswith("tracking_")].set_index(["model", "quantity"])
    assert len(cells) == 3 * 12
    assert cells.loc[cells.index.get_level_values("quantity").str.contains("_perm_"), "estimated"].notna().all()
    static = cells.loc["omniscient"].filter(like="static_", axis=0)
    assert (static["difference"].abs() <= 5).all(), static
    assert cells.loc[("warp-only", "static_perm_invisible"), "estimated"] == 0
    iou = table[table["quantity"] == "tracking_iou_median"].set_index("model")["estimated"]
    assert iou.between(0, 1).all() and iou["omniscient"] >= 0.5, iou
    # the false-positive rate where the model did not draw the target (its 2% goal is tested at
    # the embedded default's size, tests/persistbench/test_invisible_window.py)
    absent = table[table["quantity"] == "tracking_absent_masks"].set_index("model")
    assert (absent["oracle"] == 0).all() and absent["estimated"].isna()["omniscient"], absent  # it draws it always
    assert absent.drop("omniscient")["estimated"].between(0, 1).all(), absent
    assert absent.loc["warp-only", "note"].endswith("of 24 frames without the target"), absent
