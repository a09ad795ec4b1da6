"""Jobs at the case's grain through the real rules and the user's command (./run.sh snakemake):
tests/config/tiny_worldmembench.yaml's four cases with one external model on two fake GPUs that
runs out of memory on one rollout (flaky_model.py). The failure costs that rollout only: with
--keep-going every other case finishes, the case's other rollout is kept in the store, and the
same command, rerun once the model is fixed, redoes that case alone. GPU jobs run at once, each on
its own device; a change of the workflow's code reruns no rollout, a change of an estimator none,
a change of a metric no estimator; ./run.sh progress and ./run.sh plan read the same jobs."""

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "config" / "tiny_worldmembench.yaml"
FLAKY = f"python {shlex.quote(str(Path(__file__).with_name('flaky_model.py')))} --request {{request}}"
CASES = ("dynamic_000", "environment_000", "human_000", "object_000")
FAIL_ON = "environment_000/LRUD"  # the environment case's second rollout (LRLR is its first)
TARGET = "results/table2.csv"
pytestmark = pytest.mark.workflow


def config_with(tmp_path: Path, **perception) -> Path:
    config = yaml.safe_load(TINY.read_text())
    config["worldmembench"]["agreement"] = False
    config["worldmembench"]["models"] = {"flaky": {"kind": "external", "gpu": 1, "runtime": 10, "command": FLAKY}}
    config["worldmembench"].update(perception)
    path = tmp_path / f"config_{len(list(tmp_path.glob('config_*')))}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def run_sh(*args, env) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "run.sh"), *args], env=env, capture_output=True, text=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The failing run, the dry run after it and the rerun once the model is fixed."""
    root = tmp_path_factory.mktemp("case_jobs")
    work, config = root / "work", config_with(root)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "CUDA_VISIBLE_DEVICES": "0,1", "WORLDMEMORY_GPU_LOCKS": str(root / "locks"),
           "RECORD": str(root / "record.jsonl"), "FAIL_ON": FAIL_ON, "FIXED": str(root / "fixed"), "SLEEP": "1"}
    command = ["snakemake", "--directory", str(work), "--cores", "2", "--resources", "gpu=2", "--keep-going"]
    first = run_sh(*command, TARGET, "--configfile", str(config), env=env)
    after_failure = {p.relative_to(work).as_posix() for p in (work / "results").rglob("*")}
    failed_log = (work / "results" / "logs" / "worldmembench" / "commands" / "flaky" / f"{FAIL_ON}.log").read_text()
    dry = run_sh(*command, "-n", TARGET, "--configfile", str(config), env=env)
    (root / "fixed").touch()
    second = run_sh(*command, TARGET, "--configfile", str(config), env=env)
    records = [json.loads(line) for line in (root / "record.jsonl").read_text().splitlines()]
    return SimpleNamespace(root=root, work=work, config=config, env=env, first=first, after_failure=after_failure,
                           failed_log=failed_log, dry=dry, second=second, records=records)


def test_a_failed_rollout_costs_only_itself(runs):
    assert runs.first.returncode != 0 and "Error in rule worldmembench_rollout" in runs.first.stdout + runs.first.stderr
    done = runs.after_failure
    for case in CASES:
        finished = f"results/worldmembench/rollouts/flaky/{case}/rollouts.json" in done
        scored = f"results/worldmembench/scores/flaky/cases/{case}/info.json" in done
        assert finished == scored == (case != "environment_000"), case  # --keep-going: every other case finished
    assert not [p for p in done if p.startswith("results/worldmembench/rollouts/flaky/environment_000")]
    store = "results/worldmembench/rollout_store/flaky/environment_000"
    assert f"{store}/LRLR/finished.json" in done and f"{store}/LRUD/finished.json" not in done
    assert "CUDA out of memory" in runs.failed_log  # the command's log outlives the failed job's output


def test_the_same_command_redoes_that_case_only(runs, job_counts):
    assert job_counts(runs.dry.stdout) == {"worldmembench_rollout": 1, "worldmembench_perceive": 1,
                                          "worldmembench_score": 1, "worldmembench_scores": 1,
                                          "worldmembench_table2": 1}
    assert "wildcards: model=flaky, case=environment_000" in runs.dry.stdout
    assert runs.second.returncode == 0, runs.second.stderr[-3000:]
    made = [r["rollout"] for r in runs.records]
    assert made.count("environment_000/LRLR") == 1  # linked from the store, not made again
    assert made.count(FAIL_ON) == 2 and sorted(set(made)) == sorted(
        ["dynamic_000/LR-Hold", "environment_000/LRLR", FAIL_ON, "human_000/LRLR", "object_000/LRLR",
         "object_000/translation"])
    assert "[progress] worldmembench rollouts of flaky: 4/4 cases" in runs.second.stdout
    assert (runs.work / TARGET).stat().st_size > 0


def test_gpu_jobs_run_at_once_each_on_its_own_device(runs):
    """--resources gpu=2 with two (fake) devices: the rollouts that overlapped in time were given
    different devices, and some did overlap."""
    assert {r["device"] for r in runs.records} <= {"0", "1"}
    overlapping = [(a, b) for i, a in enumerate(runs.records) for b in runs.records[i + 1:]
                   if a["start"] < b["end"] and b["start"] < a["end"]]
    assert overlapping and all(a["device"] != b["device"] for a, b in overlapping)


def test_progress_and_the_plan_read_the_same_jobs(runs, tmp_path, job_counts):
    progress = run_sh("progress", TARGET, "--configfile", str(runs.config), "-d", str(runs.work), env=runs.env).stdout
    for stage in ("rollouts", "perception", "scores"):
        assert f"[progress] worldmembench {stage} of flaky: 4/4 cases" in progress
    plan = run_sh("plan", TARGET, "--configfile", str(runs.config), "-d", str(runs.work), "--gpus", "2", env=runs.env)
    assert "jobs: 0 to run" in plan.stdout  # the run is done: nothing is planned again
    # from nothing, the jobs the plan counts are the jobs Snakemake plans
    fresh = run_sh("snakemake", "--directory", str(tmp_path / "fresh"), "-n", TARGET, "--configfile",
                   str(runs.config), env=runs.env).stdout
    planned = run_sh("plan", TARGET, "--configfile", str(runs.config), "-d", str(tmp_path / "fresh_plan"),
                     env=runs.env).stdout
    assert f"jobs: {sum(job_counts(fresh).values())} to run" in planned


def copy_of_the_workflow(tmp_path: Path, rollout_rule_edit: tuple[str, str]) -> Path:
    """This checkout's workflow with the rollout rule's shell command edited (the package linked)."""
    copy = tmp_path / "workflow"
    copy.mkdir()
    for name in ("rules", "config", "envs", "report", "resources", "profiles"):
        shutil.copytree(REPO / name, copy / name)
    shutil.copy(REPO / "Snakefile", copy / "Snakefile")
    (copy / "scripts").symlink_to(REPO / "scripts")
    rules = copy / "rules" / "worldmembench.smk"
    old, new = rollout_rule_edit
    assert rules.read_text().count(old) == 1
    rules.write_text(rules.read_text().replace(old, new))
    return copy


def dry_run(runs, job_counts, config: Path, *args, snakefile: Path = REPO / "Snakefile") -> dict[str, int]:
    done = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(snakefile), "--directory", str(runs.work),
                           "--cores", "2", "-n", TARGET, *args, "--configfile", str(config)],
                          env=runs.env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    return job_counts(done.stdout)


def test_a_change_of_the_workflows_code_regenerates_no_rollout(runs, tmp_path, job_counts):
    """The rollout rule's shell command edited (as an update of the workflow would): with the
    profile's rerun triggers nothing reruns; Snakemake's defaults, which include the rule's code,
    would have planned every rollout again."""
    assert runs.second.returncode == 0
    edit = ("--log-dir {params.log_dir:q} --out", "--log-dir {params.log_dir:q}  --out")
    edited = copy_of_the_workflow(tmp_path, edit)
    # (Table 2 reads the copy's own file of the paper's values: another input path, so it is redone)
    assert dry_run(runs, job_counts, runs.config, snakefile=edited / "Snakefile") == {"worldmembench_table2": 1}
    defaults = dry_run(runs, job_counts, runs.config, "--rerun-triggers", "mtime", "params", "input", "code",
                       "software-env", snakefile=edited / "Snakefile")
    assert defaults["worldmembench_rollout"] == 4


def test_an_estimator_reruns_no_rollout_and_a_metric_no_estimator(runs, tmp_path, job_counts):
    assert runs.second.returncode == 0
    tracker = config_with(tmp_path, perception={"tracking": {"backend": "optical-flow", "flow_preset": "fast"}})
    # the tracker reads the human and object cases: their perception and scores again, nothing else
    assert dry_run(runs, job_counts, tracker) == {"worldmembench_perceive": 2, "worldmembench_score": 2,
                                      "worldmembench_scores": 1, "worldmembench_table2": 1}
    dinov2 = tmp_path / "dinov2"
    dinov2.mkdir()
    (dinov2 / "config.json").write_text("{}")
    features = config_with(tmp_path, features="dinov2")
    config = yaml.safe_load(features.read_text())
    features.write_text(yaml.safe_dump({**config, "dinov2": str(dinov2)}))
    assert dry_run(runs, job_counts, features) == {"worldmembench_score": 4, "worldmembench_scores": 1,
                                       "worldmembench_table2": 1}
