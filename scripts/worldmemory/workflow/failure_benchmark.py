"""What one failed rollout costs, run for real: a 40-case WorldMemBench run whose model fails once.

    python -m worldmemory.workflow.failure_benchmark [--per-family 10]

An external model (the still-frame model behind a command that logs each call) fails on one
rollout, the last environment case's LRUD (``environment_009/LRUD`` at the default size), as a
model that runs out of GPU memory would. The benchmark
runs ``./run.sh snakemake --keep-going results/table2.csv`` on 4 x ``--per-family`` embedded
cases at the tiny test size (64 x 48, 161 frames), then the same command after the model is
"fixed", in a scratch directory, and prints: how many of the model's rollouts survived the
failure (in their cases' outputs, and in the rollout store for the failed case), what the rerun
planned (Snakemake's job counts), which rollouts the model was run on again, and both runs' wall
times. Before the case grain, the failure deleted the model's whole rollout directory and the
rerun made every rollout again.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
FAILING_TRAJECTORY = "LRUD"


def fail_on(per_family: int) -> tuple[str, str]:
    """(case, trajectory) of the rollout that fails: the last environment case's LRUD."""
    return f"environment_{per_family - 1:03d}", FAILING_TRAJECTORY


def command(per_family: int) -> str:
    """The flaky model's command template: logs each call, fails on fail_on until $FIXED exists."""
    case, trajectory = fail_on(per_family)
    return ('echo {case}/{trajectory_name} >> "$CALLS"; '
            f'if [ {{case}} = {case} ] && [ {{trajectory_name}} = {trajectory} ] && [ ! -e "$FIXED" ]; '
            'then echo "CUDA out of memory"; exit 1; fi; '
            'python -m worldmemory.worldmembench.still_model --request {request}')


def config(per_family: int) -> dict:
    tiny = yaml.safe_load((REPO / "tests" / "config" / "tiny_worldmembench.yaml").read_text())
    block = tiny["worldmembench"]
    block["cases"]["per_family"] = per_family
    block["agreement"] = False
    block["models"] = {"flaky": {"kind": "external", "runtime": 60, "command": command(per_family)}}
    return tiny


def run(workdir: Path, configfile: Path, env: dict, *extra: str) -> tuple[float, subprocess.CompletedProcess]:
    cmd = [str(REPO / "run.sh"), "snakemake", "--directory", str(workdir), "--cores", "2", "--keep-going", *extra,
           "results/table2.csv", "--configfile", str(configfile)]
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    return time.perf_counter() - start, done


def job_counts(log: str) -> dict[str, int]:
    table = log[log.rindex("Job stats:"):].split("\n\n")[0] if "Job stats:" in log else ""
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M) if m.group(1) != "total"}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-family", type=int, default=10, help="cases per family (4 families; 1 or more)")
    args = ap.parse_args(argv)
    if args.per_family < 1:
        ap.error(f"--per-family {args.per_family}: expected 1 or more cases per family")
    failing = fail_on(args.per_family)
    with tempfile.TemporaryDirectory(prefix="failure_benchmark_") as scratch:
        root = Path(scratch)
        work, configfile, calls = root / "work", root / "config.yaml", root / "calls.txt"
        configfile.write_text(yaml.safe_dump(config(args.per_family)))
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               "CALLS": str(calls), "FIXED": str(root / "fixed")}
        first_s, first = run(work, configfile, env)
        rollouts = work / "results" / "worldmembench" / "rollouts" / "flaky"
        kept = sum(len(json.loads(p.read_text())["rollouts"]) for p in rollouts.glob("*/rollouts.json"))
        stored = len(list((work / "results" / "worldmembench" / "rollout_store" / "flaky" / failing[0])
                          .glob("*/finished.json")))
        made_first = calls.read_text().split()
        _, dry = run(work, configfile, env, "-n")
        (root / "fixed").touch()
        second_s, second = run(work, configfile, env)
        made_again = calls.read_text().split()[len(made_first):]
    total = len(set(made_first) | set(made_again))
    print(f"{4 * args.per_family} cases, {total} rollouts of one external model; "
          f"it fails on {'/'.join(failing)} (exit status of the first run: {first.returncode})")
    print(f"  after the failure: {kept} rollouts in their cases' outputs, {stored} more of the failed case "
          f"in the rollout store: {kept + stored} of {total} survive")
    print(f"  the rerun planned: {json.dumps(job_counts(dry.stdout), sort_keys=True)}")
    print(f"  the model was run again on: {', '.join(sorted(set(made_again)))}")
    print(f"  wall time: first run {first_s:.0f} s, rerun {second_s:.0f} s (exit status {second.returncode})")


if __name__ == "__main__":
    main()
