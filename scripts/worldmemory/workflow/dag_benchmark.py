"""How long Snakemake takes to plan the papers' size, and how many jobs and SLURM submissions it plans.

    python -m worldmemory.workflow.dag_benchmark [--models 9] [--repeats 3] [--small]

Writes config/paper.yaml with ``--models`` external world models added to both benchmark studies
(commands that never run: this is planning only) and every estimator configured (the paper's
learned ones with a stand-in for every file their options name, config_inputs.estimator_files;
external pose and depth commands), into a scratch working directory, and times, ``--repeats``
times each:

* ``plan``: ``snakemake --list-changes params results/table2.csv results/persistbench/table1.csv``,
  which parses the workflow and builds the whole DAG (what a run does before its first job);
* ``dry run``: ``snakemake -n --quiet all`` of the same targets (the DAG, then every job formatted
  as Snakemake prints it), with the number of jobs it plans;
* ``slurm``: the same dry run with profiles/slurm as it is (groups applied; no conda, which is a
  command-line choice), counting the SLURM submissions:
  group jobs, and the jobs of rules neither grouped nor local.

Prints each figure's median, minimum and maximum. Timings depend on the machine (2 cores here).
``--small`` keeps paper.yaml's settings but one case per WorldMemBench family and one sequence per
PersistBench kind: the same rules, estimators and profile in a DAG of a few hundred jobs, which the
test suite plans so that the benchmark keeps running as the config and the workflow change.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from worldmemory.workflow.config_inputs import estimator_files

REPO = Path(__file__).resolve().parents[3]
TARGETS = ["results/table2.csv", "results/persistbench/table1.csv"]
# paper.yaml's commented faces entry (its files, like every estimator file, get a stand-in)
FACES = {"detector": "resources/faces/face_detection_yunet_2023mar.onnx",
         "recognizer": "resources/faces/w600k_r50.onnx"}


def paper_size_config(n_models: int, small: bool = False) -> dict:
    """config/paper.yaml, ``n_models`` external models in each benchmark study, every estimator set;
    ``small``: one case per family and one sequence per kind."""
    config = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())
    wmb, pb = config["worldmembench"], config["persistbench"]
    if small:
        wmb["cases"].update(per_family=1, per_category=0)
        pb["sequences"]["per_kind"] = 1
    for i in range(1, n_models + 1):
        common = {"kind": "external", "gpu": 1, "mem_mb": 64000, "runtime": 120, "rollout_minutes": 5.4}
        wmb["models"][f"model-{i}"] = {**common, "command": f"run-model-{i} --request {{request}}"}
        pb["models"][f"model-{i}"] = {**common, "command": f"run-4d-model-{i} --request {{request}}"}
    external = {"backend": "external-command", "gpu": 1, "mem_mb": 32000, "runtime": 30}
    wmb["perception"].update({
        "faces": {"backend": "arcface", **FACES, "runtime": 20},
        "camera": {**external, "command": "da3-poses --video {video} --intrinsics {intrinsics} --out {out}"},
        "second_camera": {**external, "command": "vipe-poses --video {video} --intrinsics {intrinsics} --out {out}"},
        "depth": {**external, "command": "da3-depth --video {video} --out {out}"},
    })
    return config


def snakemake(workdir: Path, config: Path, *args: str) -> tuple[float, str]:
    """(wall seconds, output) of one Snakemake call on this workflow."""
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--cores", "2", *TARGETS, *args, "--configfile", str(config)]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return took, done.stdout + done.stderr


def job_total(log: str) -> int:
    return int(re.search(r"^total\s+(\d+)$", log, re.M).group(1))


def local_rules() -> set[str]:
    """The rules every `localrules:` directive of rules/*.smk names (they run where Snakemake runs)."""
    text = "".join(path.read_text() for path in sorted((REPO / "rules").glob("*.smk")))
    return {name for block in re.findall(r"localrules:\s*\n((?:[ \t]+\w+,\n?)+)", text)
            for name in re.findall(r"(\w+),", block)}


def submissions(log: str) -> dict[str, int]:
    """SLURM submissions of a dry run with the SLURM profile: its group jobs (by group) and the
    jobs of rules that are neither grouped nor local (by rule)."""
    counts, local = {}, local_rules()
    for group in re.findall(r"Group job (\S+) \(", log):
        counts[f"group {group}"] = counts.get(f"group {group}", 0) + 1
    grouped = re.findall(r"Group job .*?(?=\n\[|\Z)", log, re.S)
    inside = {rule for block in grouped for rule in re.findall(r"^\s+rule (\w+):", block, re.M)}
    for rule in re.findall(r"^rule (\w+):", log, re.M):
        if rule not in inside and rule not in local:
            counts[f"rule {rule}"] = counts.get(f"rule {rule}", 0) + 1
    return counts


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.1f} s (min {min(values):.1f}, max {max(values):.1f})"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=9, help="external models in each study (the paper: nine)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--small", action="store_true", help="one case per family, one sequence per kind")
    args = ap.parse_args(argv)
    settings = paper_size_config(args.models, args.small)
    with tempfile.TemporaryDirectory(prefix="dag_benchmark_") as scratch:
        workdir = Path(scratch)
        for stand_in in estimator_files(settings).values():
            (workdir / stand_in).parent.mkdir(parents=True, exist_ok=True)
            (workdir / stand_in).write_bytes(b"stand-in")
        config = workdir / "paper_size.yaml"
        config.write_text(yaml.safe_dump(settings))
        plan, dry, slurm = [], [], []
        for _ in range(args.repeats):
            plan.append(snakemake(workdir, config, "--list-changes", "params")[0])
            took, log = snakemake(workdir, config, "-n", "--quiet", "all")
            dry.append(took)
            took, slurm_log = snakemake(workdir, config, "--profile", str(REPO / "profiles" / "slurm"),
                                        "--workflow-profile", "none", "-n")
            slurm.append(took)
    jobs = submissions(slurm_log)
    print(f"paper {'settings, one case per family and sequence per kind' if args.small else 'size'}, "
          f"{args.models} external models per study, every estimator configured "
          f"({args.repeats} repeats, {Path('/proc/cpuinfo').read_text().count('processor')} cores):")
    print(f"  plan (parse + DAG):          {spread(plan)}")
    print(f"  dry run (DAG + job listing): {spread(dry)}; {job_total(log)} jobs")
    print(f"  SLURM dry run:               {spread(slurm)}; {sum(jobs.values())} submissions:")
    for name, n in sorted(jobs.items()):
        print(f"    {name}: {n}")


if __name__ == "__main__":
    main()
