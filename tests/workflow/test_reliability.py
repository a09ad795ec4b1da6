"""Reliability of reruns: a run killed mid-way resumes with the same command and ends byte-identical
to an uninterrupted run (WorldMemBench's two-run determinism test: every table and figure);
changing one model's settings reruns only that model's jobs and the tables that depend on them (the
permanence counterpart is in test_workflow.py)."""

import base64
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "config" / "tiny_worldmembench.yaml"
TARGETS = ["results/table2.csv", "results/worldmembench/table12.csv", "results/worldmembench/figure5.png"]
# every table and figure of the targets: the two runs are WorldMemBench's determinism test too
TABLES = ["results/table2.csv", "results/worldmembench/table5.csv",
          "results/worldmembench/table2_nan_reasons.csv", "results/worldmembench/table10.csv",
          "results/worldmembench/table11.csv", "results/worldmembench/table12.csv",
          "results/worldmembench/table13.csv", "results/worldmembench/figure5.png"]
pytestmark = pytest.mark.workflow


def run_sh(workdir: Path, *args) -> list[str]:
    """The user's command: ./run.sh snakemake on ``workdir`` with the tiny config."""
    return [str(REPO / "run.sh"), "snakemake", "--directory", str(workdir), "--cores", "2",
            *args, *TARGETS, "--configfile", str(TINY)]


def finished_rollouts(workdir: Path) -> set[str]:
    """Models whose rollout job Snakemake recorded as finished: it has metadata for the output
    and no incomplete marker (both keyed by the base64 of the output path)."""
    state = workdir / ".snakemake"
    done = set()
    for model in ("omniscient", "amnesic", "drifting", "camera-error"):
        key = base64.urlsafe_b64encode(f"results/worldmembench/rollouts/{model}".encode()).decode()
        if (state / "metadata" / key).exists() and not (state / "incomplete" / key).exists():
            done.add(model)
    return done


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    """An uninterrupted run of the user's command."""
    workdir = tmp_path_factory.mktemp("whole")
    subprocess.run(run_sh(workdir), check=True, capture_output=True)
    return workdir


def test_a_killed_run_resumes_and_ends_byte_identical(tmp_path, whole, job_counts):
    killed = tmp_path / "killed"

    first = subprocess.Popen(run_sh(killed), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while not finished_rollouts(killed):  # Snakemake has recorded one rollout job as done
        assert first.poll() is None and time.monotonic() < deadline, "the run ended too early"
        time.sleep(0.05)
    os.killpg(first.pid, signal.SIGKILL)  # Snakemake and every job it started
    first.wait()
    assert list((killed / ".snakemake" / "locks").iterdir()), "the kill left the lock behind"
    assert not (killed / "results" / "table2.csv").exists()
    done = finished_rollouts(killed)

    second = subprocess.run(run_sh(killed), capture_output=True, text=True)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "resuming" in second.stderr
    assert job_counts(second.stderr)["worldmembench_rollout"] == 4 - len(done)
    for table in TABLES:
        assert (killed / table).read_bytes() == (whole / table).read_bytes(), table


def test_changing_one_model_reruns_only_its_jobs_and_the_tables(tmp_path, whole, snakemake, job_counts):
    assert "Nothing to be done" in subprocess.run(run_sh(whole, "-n"), capture_output=True,
                                                  text=True).stdout
    config = yaml.safe_load(TINY.read_text())
    config["worldmembench"]["models"]["drifting"]["params"]["rate"] = 0.2
    changed = tmp_path / "changed.yaml"
    changed.write_text(yaml.safe_dump(config))
    dry = snakemake(whole, changed, "-n", *TARGETS)
    assert job_counts(dry.stdout) == {"worldmembench_rollout": 1, "worldmembench_score": 4,
                                      "worldmembench_table2": 1, "worldmembench_revisits": 1,
                                      "worldmembench_qualification": 1}
    assert "wildcards: model=drifting" in dry.stdout
    assert "wildcards: model=amnesic" not in dry.stdout
