"""./run.sh forget MODEL (worldmemory.workflow.forget) on a fake results tree: the model's and its
replays' rollouts, store, perception and scores go in both studies, with the study tables built
from them; other models, the cases and the logs stay; an unknown name is refused."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from worldmemory.workflow.forget import main
from worldmemory.workflow.launch import hold_flock

REPO = Path(__file__).resolve().parents[2]
KEPT = ["results/worldmembench/cases/human_000/case.json",
        "results/worldmembench/rollouts/other/human_000/video.mkv",
        "results/worldmembench/rollout_store/other/human_000/LRLR/finished.json",
        "results/worldmembench/scores/other/cases/human_000/info.json",
        "results/worldmembench/figures/human_000.png",  # a directory of the study: rebuilt by its inputs' times
        "results/persistbench/sequences/manifest.json",
        "results/persistbench/rollouts/omniscient.replay/static_000/video.mkv",  # another model's replay
        "results/logs/worldmembench/rollouts/mine/human_000.log",
        "results/config/resolved.json"]
REMOVED = ["results/worldmembench/rollouts/mine/",
           "results/worldmembench/rollout_store/mine/",
           "results/worldmembench/perception/mine/",
           "results/worldmembench/scores/mine/",
           "results/worldmembench/rollouts/mine.replay-blur/",  # its replays copy its videos
           "results/worldmembench/table4.csv",
           "results/worldmembench/table2_departure.csv",
           "results/table2.csv",
           "results/persistbench/rollouts/mine/",
           "results/persistbench/rollout_store/mine/",
           "results/persistbench/table1.csv"]


def tree(root: Path) -> None:
    files = [*KEPT, "results/worldmembench/rollouts/mine/human_000/video.mkv",
             "results/worldmembench/rollouts/mine/manifest.json",
             "results/worldmembench/rollout_store/mine/human_000/LRLR/video.mkv",
             "results/worldmembench/perception/mine/human_000/camera.npz",
             "results/worldmembench/scores/mine/cases/human_000/info.json",
             "results/worldmembench/rollouts/mine.replay-blur/human_000/video.mkv",
             "results/worldmembench/table4.csv", "results/worldmembench/table2_departure.csv",
             "results/table2.csv", "results/persistbench/rollouts/mine/static_000/video.mp4",
             "results/persistbench/rollout_store/mine/static_000/finished.json",
             "results/persistbench/table1.csv"]
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)


def test_forget_removes_the_model_and_what_was_built_from_it_in_both_studies(tmp_path, capsys):
    tree(tmp_path)
    before = sorted(p for p in tmp_path.rglob("*"))
    assert main(["mine", "--dry-run", "--directory", str(tmp_path)]) == 0
    dry = capsys.readouterr().out
    assert sorted(tmp_path.rglob("*")) == before  # a dry run removes nothing
    assert sorted(dry.splitlines()) == sorted(f"would remove {tmp_path / p}{'/' if p.endswith('/') else ''}"
                                              .replace("//", "/") for p in REMOVED)
    assert main(["mine", "--directory", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"removed {tmp_path}/results/worldmembench/rollout_store/mine/" in out.splitlines()
    assert out.count("\nremoved ") + out.startswith("removed ") == len(REMOVED)
    for name in REMOVED:
        assert not (tmp_path / name).exists(), name
    for name in KEPT:
        assert (tmp_path / name).read_text() == name


def test_a_study_without_the_model_keeps_its_tables(tmp_path, capsys):
    tree(tmp_path)
    assert main(["other", "--directory", str(tmp_path)]) == 0
    assert (tmp_path / "results/persistbench/table1.csv").exists()  # other has no PersistBench results
    assert not (tmp_path / "results/worldmembench/table4.csv").exists()
    assert (tmp_path / "results/worldmembench/rollouts/mine").is_dir()


@pytest.mark.parametrize("name", ["min", "omni", "mine.replay-blu"])
def test_an_unknown_name_is_refused_listing_the_models(tmp_path, capsys, name):
    tree(tmp_path)
    before = sorted(p for p in tmp_path.rglob("*"))
    assert main([name, "--directory", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"no results of model {name!r}" in err and "models with results: mine, other. Fix:" in err
    assert sorted(tmp_path.rglob("*")) == before


def test_run_sh_has_the_subcommand(tmp_path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run([str(REPO / "run.sh"), "forget", "mine", "--dry-run", "--directory", str(tmp_path)],
                            capture_output=True, text=True, env=env)
    assert result.returncode == 2 and "forget: no results of model 'mine'" in result.stderr


def test_nothing_is_removed_while_a_run_holds_the_directory(tmp_path, capsys):
    tree(tmp_path)
    fd = hold_flock(tmp_path)  # as ./run.sh snakemake does while Snakemake runs
    try:
        assert main(["mine", "--directory", str(tmp_path)]) == 2
    finally:
        os.close(fd)
    assert "another ./run.sh is running" in capsys.readouterr().err
    assert (tmp_path / "results/worldmembench/rollout_store/mine").is_dir()
