"""Shared helpers of the workflow tests: run the real Snakemake on this checkout."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run_snakemake(workdir, config, *args, check=True):
    """Run Snakemake on the workflow in ``workdir`` with ``config`` (None: the embedded default);
    ``args`` are targets and flags."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--cores", "2", *args]
    if config is not None:
        cmd += ["--configfile", str(config)]
    result = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if check and result.returncode:
        raise AssertionError(f"snakemake failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
    return result


def count_jobs(log: str) -> dict[str, int]:
    """Snakemake's 'Job stats' table of a run or dry run: rule -> jobs ({} when nothing is to be done)."""
    if "Job stats:" not in log:
        return {}
    table = log[log.rindex("Job stats:"):].split("\n\n")[0]
    counts = {}
    for line in table.splitlines()[3:]:
        match = re.fullmatch(r"(\w+)\s+(\d+)", line.strip())
        if match and match.group(1) != "total":
            counts[match.group(1)] = int(match.group(2))
    return counts


@pytest.fixture(scope="session")
def snakemake():
    return run_snakemake


@pytest.fixture(scope="session")
def job_counts():
    return count_jobs
