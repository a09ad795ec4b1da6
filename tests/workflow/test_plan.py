"""./run.sh plan and ./run.sh progress ask Snakemake for the config and the jobs
(worldmemory.workflow.dag): the config merged as Snakemake merges several --configfile's, the job
count equal to `snakemake -n`'s, rollouts priced per frame, progress limited to the DAG's runs."""

import json
import math
from pathlib import Path

import pytest
import yaml
from worldmemory.workflow.dag import Job, snakemake_dag
from worldmemory.workflow.plan import RolloutPrices, plan
from worldmemory.workflow.progress import progress_lines
from worldmemory.worldmembench import trajectories as tj
from worldmemory.worldmembench.cases import write_embedded_case

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "config"
PAPER = REPO / "config" / "paper.yaml"
# config/paper.yaml's learned estimators read these files (stand-ins: planning only)
STAND_INS = ("resources/laion/sa_0_4_vit_l_14_linear.pth", "resources/musiq/musiq_spaq_ckpt-358bb6af.pth")
USER_MODEL = {"worldmembench": {"models": {"my-gpu-model": {
    "kind": "external", "command": "run-my-model --request {request}", "gpu": 1, "rollout_minutes": 5.37}}}}
pytestmark = pytest.mark.workflow


def user_model(tmp_path: Path) -> Path:
    path = tmp_path / "my_gpu_model.yaml"
    path.write_text(yaml.safe_dump(USER_MODEL))
    return path


def test_a_users_model_file_merges_into_paper_yaml_as_snakemake_merges_it(tmp_path):
    config, _ = snakemake_dag([PAPER, user_model(tmp_path)], ["results/permanence/table3.csv"], tmp_path / "work")
    block = config["worldmembench"]
    assert set(block["models"]) == {"amnesic", "camera-error", "drifting", "omniscient", "my-gpu-model"}
    assert block["trajectory_params"]["n_frames"] == 493  # paper.yaml's, kept under the user's block
    assert block["cases"]["per_family"] == yaml.safe_load(PAPER.read_text())["worldmembench"]["cases"]["per_family"]
    assert block["models"]["my-gpu-model"]["mem_mb"] == 4000  # the schema's default, filled in
    assert "permanence" in config and "persistbench" in config


def snakemake_n_total(snakemake, job_counts, workdir, configs) -> int:
    args = ["-n", "--quiet", "all", *(["--configfile", *map(str, configs)] if configs else [])]
    return sum(job_counts(snakemake(workdir, None, *args).stdout).values())


@pytest.mark.parametrize("configs", [None, ["tiny.yaml"], ["tiny_worldmembench.yaml"], ["tiny_persistbench.yaml"]])
def test_the_plan_counts_the_jobs_snakemake_plans(configs, tmp_path, snakemake, job_counts):
    files = [TINY / c for c in configs] if configs else []
    _, jobs = snakemake_dag(files, [], tmp_path / "plan")
    expected = snakemake_n_total(snakemake, job_counts, tmp_path / "dry", files)
    assert sum(j.needrun for j in jobs) == expected > 0


def test_the_plan_of_paper_yaml_and_a_model_counts_what_snakemake_plans(tmp_path, snakemake, job_counts):
    """The papers' size (about 8,400 jobs; some 20 s each way on 2 cores)."""
    for work in ("plan", "dry"):
        for stand_in in STAND_INS:
            (tmp_path / work / stand_in).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / work / stand_in).write_bytes(b"stand-in")
    files = [PAPER, user_model(tmp_path)]
    config, jobs = snakemake_dag(files, [], tmp_path / "plan")
    assert sum(j.needrun for j in jobs) == snakemake_n_total(snakemake, job_counts, tmp_path / "dry", files)
    table = plan(config, jobs, tmp_path / "plan" / "results")
    mine = table[(table["rule"] == "worldmembench_rollout") & (table["run"] == "my-gpu-model")].iloc[0]
    # 260 cases; 860 videos at 5.37 minutes per 493 frames (Appendix H), LRLRLR's longer videos more
    assert (mine["jobs"], mine["videos"], mine["source"]) == (260, 860, "config (rollout_minutes per 493 frames)")
    assert mine["frames"] > 860 * 493
    assert mine["device_hours"] == pytest.approx(mine["frames"] * 5.37 / 493 / 60)


def cost(directory: Path, wall_s: float, n_frames: int) -> None:
    directory.mkdir(parents=True)
    (directory / "cost.json").write_text(json.dumps({"wall_s": wall_s, "n_frames": n_frames}))


def test_recorded_minutes_are_scaled_by_frames_to_the_planned_length(tmp_path):
    """A 161-frame test rollout of 0.6 minutes prices a 493-frame one at 0.6 x 493 / 161; without a
    record, rollout_minutes prices each video at its length (rollout_frames, default 493) scaled to
    the planned frames, so a video twice as long costs twice as much; a run with neither is unknown."""
    config, _ = snakemake_dag([TINY / "tiny_worldmembench.yaml"], [], tmp_path)
    block = config["worldmembench"]
    block["models"]["amnesic"]["rollout_minutes"] = 2.0
    block["models"]["drifting"].update(rollout_minutes=3.0, rollout_frames=241)
    results = tmp_path / "results"
    cost(results / "worldmembench" / "rollouts" / "omniscient" / "human_000" / "LRLR", 36, 161)
    prices = RolloutPrices(config, results)
    assert prices.minutes("worldmembench", "omniscient", [493, 493]) == (
        pytest.approx(0.6 / 161 * 986), "recorded (1 videos)")
    assert prices.minutes("worldmembench", "amnesic", [493, 493]) == (4.0, "config (rollout_minutes per 493 frames)")
    assert prices.minutes("worldmembench", "amnesic", [986])[0] == 4.0  # one video of twice the length
    assert prices.minutes("worldmembench", "drifting", [482, 241]) == (
        pytest.approx(9.0), "config (rollout_minutes per 241 frames)")
    minutes, source = prices.minutes("worldmembench", "camera-error", [493])
    assert math.isnan(minutes) and source == "unknown"
    # the planned frames follow the study's trajectory_params (tests/config: 161 frames), LRLRLR longer
    assert prices.frames("worldmembench", "omniscient", "human_000") == [161]


def test_a_user_cases_own_n_frames_are_the_frames_its_rollouts_build(tmp_path):
    """A user case whose case.json sets its LRLR to 241 frames (the study's: 161) is planned at
    241 frames, as its rollout builds it (trajectories.build with the case's trajectory_params)."""
    config, _ = snakemake_dag([TINY / "tiny_worldmembench.yaml"], [], tmp_path)
    cases = tmp_path / "cases"
    write_embedded_case(cases / "human_000", "human_000", "human", None, 64, 48, ["LRLR", "LRUD"])
    manifest = json.loads((cases / "human_000" / "case.json").read_text())
    manifest["trajectory_params"] = {"LRLR": {"n_frames": 241}}
    (cases / "human_000" / "case.json").write_text(json.dumps(manifest))
    config["worldmembench"]["cases"]["source"] = str(cases)
    frames = RolloutPrices(config, tmp_path / "results").frames("worldmembench", "omniscient", "human_000")
    study = config["worldmembench"]["trajectory_params"]
    assert frames == [tj.build(name, manifest["trajectory_params"], **study).n_frames for name in ("LRLR", "LRUD")]
    assert frames == [241, 161]


def test_perception_jobs_are_priced_at_their_runtime_and_done_jobs_not_at_all(tmp_path):
    config, _ = snakemake_dag([TINY / "tiny_worldmembench.yaml"], [], tmp_path)
    jobs = [Job("worldmembench_perceive", {"model": "amnesic.replay", "case": "human_000"},
                {"gpu": 1, "runtime": 45}, True),
            Job("worldmembench_perceive", {"model": "amnesic.replay", "case": "object_000"},
                {"gpu": 1, "runtime": 45}, False)]
    table = plan(config, jobs, tmp_path / "results")
    assert table[["jobs", "source", "device_hours"]].values.tolist() == [[1, "limit (runtime resource)", 0.75]]


def test_progress_shows_the_dags_runs_and_counts_what_snakemake_would_not_rerun():
    jobs = [Job("worldmembench_rollout", {"model": "amnesic", "case": c}, {}, needrun)
            for c, needrun in (("a", False), ("b", True), ("c", True))]
    jobs += [Job("worldmembench_score", {"model": "amnesic", "case": "a"}, {}, True),
             Job("persistbench_rollout", {"model": "omniscient", "sequence": "s"}, {}, False),
             Job("worldmembench_case", {"case": "a"}, {}, False)]
    assert progress_lines(jobs) == [
        "[progress] worldmembench rollouts of amnesic: 1/3 cases",
        "[progress] worldmembench scores of amnesic: 0/1 cases",
        "[progress] persistbench rollouts of omniscient: 1/1 cases",
    ]

