"""The degraded replays of the agreement tables through the real rules: each reference model
replayed once per recipe (``<model>.replay-<recipe>``), outside the main job."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from worldmemory.common.degrade import RECIPES
from worldmemory.common.video import read_video

REPO = Path(__file__).resolve().parents[2]
TINY_PB = REPO / "tests" / "config" / "tiny_persistbench.yaml"
TINY_WMB = REPO / "tests" / "config" / "tiny_worldmembench.yaml"
DEGRADED = "results/{study}/perception_agreement_degraded.csv"
pytestmark = pytest.mark.workflow


def test_the_degraded_table_plans_one_replay_per_recipe_and_the_main_job_none(tmp_path, snakemake, job_counts):
    dry = snakemake(tmp_path, TINY_WMB, "-n", "-p", DEGRADED.format(study="worldmembench")).stdout
    for recipe in RECIPES:
        assert f"model=omniscient.replay-{recipe}, case=human_000" in dry
        assert f"--degrade {recipe} --request" in dry
    main = snakemake(tmp_path, TINY_WMB, "-n", "results/worldmembench/perception_agreement.csv").stdout
    assert ".replay-" not in main and "model=omniscient.replay," in main
    assert job_counts(main)["worldmembench_rollout"] == 8 * 4  # four models and their clean replays


def test_a_black_replay_is_scored_beside_the_clean_one(tmp_path, snakemake):
    """WorldMemBench's omniscient replayed clean and with every pixel frame 0 never showed black:
    the table carries both, the black video is black exactly there, and the frames at the far
    turn, where nothing of frame 0 is in view, are black whole."""
    from worldmemory.external.replay import conditioning_view

    config = yaml.safe_load(TINY_WMB.read_text())
    block = config["worldmembench"]
    block["cases"]["trajectories"]["human"] = ["LRLR"]
    block["cases"]["per_family"] = {"human": 1, "object": 0, "environment": 0, "dynamic": 0}
    block["models"] = {"omniscient": block["models"]["omniscient"]}
    block["agreement_degradations"] = ["black"]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    snakemake(tmp_path, path, DEGRADED.format(study="worldmembench"))
    table = pd.read_csv(tmp_path / DEGRADED.format(study="worldmembench"))
    assert set(zip(table["model"], table["replay"])) == {("omniscient", "clean"), ("omniscient", "black")}
    rows = table.set_index(["replay", "quantity"])["estimated"]
    assert rows[("clean", "human_appearance")] > 0.9 and np.isfinite(rows[("black", "human_appearance")])
    rollouts = tmp_path / "results" / "worldmembench" / "rollouts"
    source = rollouts / "omniscient" / "human_000" / "LRLR"
    black = read_video(rollouts / "omniscient.replay-black" / "human_000" / "LRLR" / "video.mp4")
    seen = conditioning_view(source, {})
    assert seen[0].all() and (~seen).any() and not seen.reshape(len(seen), -1).any(axis=1).all()
    assert (black[~seen] < 8).all()  # through the MP4: black stays black
    clean = read_video(source / "video.mkv")
    assert np.abs(black[seen].astype(int) - clean[seen]).mean() < 2  # the rest as rendered
