"""``./run.sh preflight`` on the tiny configs: the weights a run reads, one unit of each GPU job kind
timed in its own process (probe clips, learned estimators, an external model's first rollout job),
and the planner pricing from what it measured."""

import os
import stat
from pathlib import Path

import pandas as pd
import pytest
import yaml
from worldmemory.models.released import random_stand_in
from worldmemory.perception import throughput
from worldmemory.workflow import plan, preflight
from worldmemory.workflow.dag import Job

REPO = Path(__file__).resolve().parents[2]
CONFIGS = [REPO / "tests" / "config" / "tiny.yaml", REPO / "tests" / "config" / "tiny_worldmembench.yaml"]
STILL = {"kind": "external", "runtime": 5,
         "command": "python -m worldmemory.worldmembench.still_model --request {request}"}
CLIP = "resources/models/perception/openai__clip-vit-large-patch14@main"
pytestmark = pytest.mark.workflow


def user_config(tmp_path, model: dict, perception: dict | None = None) -> Path:
    path = tmp_path / "mine.yaml"
    block = {"models": {"mine": model}, **({"perception": perception} if perception else {})}
    path.write_text(yaml.safe_dump({"worldmembench": block}))
    return path


def test_preflight_times_one_unit_of_each_kind_and_feeds_the_planner(tmp_path, capsys):
    """The tiny permanence and WorldMemBench configs with an external model, a learned depth
    estimator whose weights are a local directory and an aesthetic one whose weights are still to
    be fetched: the weights are reported as present, to fetch and to train; each probe model, each
    learned estimator and the external model's first case run once (random weights of the same
    architecture where the weights are not here); the rollout is the run's own job, and the plan
    then prices the model from it (recorded) and the perception jobs from the estimators (preflight)."""
    depth = tmp_path / "depth-weights"
    throughput.depth(throughput.TINY, depth, "cpu")
    (tmp_path / "head.pth").write_bytes(b"stand-in")
    mine = user_config(tmp_path, STILL, {
        "depth": {"backend": "depth-anything", "model": str(depth)},
        "aesthetic_quality": {"backend": "laion-aesthetic", "model": "openai/clip-vit-large-patch14",
                              "head": str(tmp_path / "head.pth")}})
    run = tmp_path / "run"
    preflight.main(["all", "results/permanence/table8.csv", "--configfile", *map(str, CONFIGS), str(mine),
                    "-d", str(run), "--sizes", "tiny"])
    out = capsys.readouterr().out
    weights = {line.split()[0]: line for line in out.splitlines()}
    assert "to fetch (rule prefetch_perception" in weights[CLIP]
    assert "present" in weights[str(depth)]
    assert "to train (rule permanence_train" in weights["results/models/tiny-test-scratch"]

    units = pd.read_csv(run / preflight.UNITS_CSV).set_index("name")
    assert set(units["kind"]) == {"probe", "cosmos", "estimator", "rollout"} and units["note"].isna().all()
    for model in ("tiny-test-random", "tiny-test-scratch"):  # the second is not trained yet: its architecture
        assert units.loc[model, ["weights", "per", "input"]].tolist() == ["random", "4 clips", "32x64x64"]
    assert units.loc["cosmos-tiny-test", ["kind", "weights", "input"]].tolist() == ["cosmos", "random", "33x256x256"]
    assert units.loc["worldmembench: depth/depth-anything", "weights"] == "real"
    assert units.loc["worldmembench: aesthetic_quality/laion-aesthetic", "weights"] == "random"
    assert (units.loc["worldmembench: depth/depth-anything", "input"] == "16x48x64")
    rollout = units.loc["worldmembench: mine"]
    videos = sorted((run / "results/worldmembench/rollouts/mine").glob("*/*/cost.json"))
    assert len(videos) == 1 and rollout["input"].startswith("1 videos, ")
    frames = int(rollout["input"].split(", ")[1].split()[0])
    assert rollout["s_per_frame"] == pytest.approx(rollout["wall_s"] / frames)
    assert (units[["wall_s", "s_per_frame", "peak_rss_mb"]] > 0).all().all()

    config, jobs = preflight.snakemake_dag([*CONFIGS, mine], ["all"], run)
    table = plan.plan(config, jobs, run / "results")
    sources = table.groupby(["rule", "run"])["source"].first()
    assert sources["worldmembench_rollout", "mine"] == "recorded (1 videos)"
    priced = table[table["source"].str.startswith("preflight")]
    assert set(priced["rule"]) == {"worldmembench_perceive"} and (priced["device_hours"] > 0).all()


def test_a_failing_unit_fails_the_preflight(tmp_path, capsys):
    """An external model whose command fails: its row says so and the exit status is 1."""
    mine = user_config(tmp_path, {"kind": "external", "runtime": 5, "command": "false {request}"})
    with pytest.raises(SystemExit) as stopped:
        preflight.main(["--configfile", str(CONFIGS[1]), str(mine), "-d", str(tmp_path / "run"),
                        "--only", "rollout"])
    assert stopped.value.code == 1
    units = pd.read_csv(tmp_path / "run" / preflight.UNITS_CSV)
    assert units["note"].tolist() == ["failed: the Snakemake run exited 1; see its log above"]


def test_weights_are_present_to_fetch_to_train_or_missing(tmp_path):
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "config.json").write_text("{}")
    (tmp_path / "resources" / "models" / "fetched").mkdir(parents=True)
    jobs = [Job("prefetch_model", {}, {}, True, outputs=("resources/models/vit",)),
            Job("prefetch_model", {}, {}, False, outputs=("resources/models/fetched",)),
            Job("permanence_train", {}, {}, True, outputs=("results/models/mine",)),
            Job("permanence_probe", {}, {}, True, inputs=("resources/models/vit", "resources/models/fetched",
                                                          "results/models/mine", "local", "results/scenes")),
            Job("worldmembench_perceive", {}, {}, True, inputs=("resources/gone.onnx", "results/x/case")),
            Job("permanence_table3", {}, {}, True, inputs=("resources/paper_values/permanence_table3.csv",)),
            Job("worldmembench_score", {}, {}, False, inputs=("resources/unread.pth",))]
    report = preflight.weights_report(jobs, tmp_path).set_index("weights")
    assert report["status"].to_dict() == {
        "local": "present", "resources/gone.onnx": "missing", "resources/models/fetched": "present",
        "resources/models/vit": "to fetch (rule prefetch_model; needs network, runs where Snakemake runs)",
        "results/models/mine": "to train (rule permanence_train, a job of this run)"}
    assert report.loc["local", "read_by"] == "permanence_probe"


def test_gpu_memory_is_sampled_from_nvidia_smi(tmp_path, monkeypatch):
    """The device boundary: a stand-in nvidia-smi reports 1000 MiB in use before, then 1000 + 3000
    and 1000 + 2500 over two GPUs: the peak is the largest total less the total before."""
    calls = tmp_path / "calls"
    calls.write_text("")
    smi = tmp_path / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\nn=$(wc -c < {calls}); printf x >> {calls}\n"
                   'case $n in 0) printf "600\\n400\\n";; 1) printf "3000\\n1000\\n";;'
                   ' *) printf "2500\\n1000\\n";; esac\n')
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with preflight.gpu_memory_sampler(every_s=0.05) as sampled:
        while len(calls.read_text()) < 4:
            pass
    assert sampled["peak_mb"] == 3000


def test_a_released_id_gets_a_random_stand_in_of_its_architecture():
    vitg = random_stand_in({"source": "hf", "id": "facebook/vjepa2-vitg-fpc64-256"})
    assert vitg["source"] == "random" and vitg["config"]["hidden_size"] == 1408
    assert random_stand_in({"source": "hf", "id": "someone/else"}) is None
    assert random_stand_in({"source": "hf", "id": "MCG-NJU/videomae-base", "family": "videomae"})["config"] == {}


def test_only_estimators_whose_call_the_preflight_knows_are_timed():
    """Learned estimators of the capabilities preflight_units calls are timed (weights in their
    options, or a random stand-in); CPU backends, ArcFace's ONNX files and a VLM judge are not."""
    timed = {(c, b): preflight.timed_estimator(c, {"backend": b, "options": o}) for c, b, o in [
        ("depth", "depth-anything", {"model": "d"}), ("tracking", "sam2", {}),
        ("imaging_quality", "musiq-spaq", {"weights": "w.pth"}), ("imaging_quality", "brisque", {}),
        ("tracking", "optical-flow", {}), ("faces", "arcface", {"detector": "a.onnx", "recognizer": "b.onnx"}),
        ("judge", "transformers-vlm", {"model": "qwen"})]}
    assert [k for k, v in timed.items() if v] == [("depth", "depth-anything"), ("tracking", "sam2"),
                                                  ("imaging_quality", "musiq-spaq")]
    assert not preflight.timed_estimator("depth", {"backend": "depth-anything", "skip": True})
