"""Where a run of the benchmark studies stands, case by case: ``./run.sh progress``.

    ./run.sh progress [TARGETS] --configfile config/paper.yaml my_model.yaml

prints one line per study, run and stage (rollouts, perception, scores) of the runs the targets
(default: rule all) build: how many of the run's jobs of that stage (one per case or sequence)
are done. Snakemake itself decides both (worldmemory.workflow.dag): the jobs are the DAG's, and a
job is done when Snakemake would not run it again, so a run no target builds has no line, and a
file made under another config (other frames, another command: other params) or by a job still
running (incomplete) is not counted. It reads the files and Snakemake's metadata only, so it
works while Snakemake runs locally or on a cluster, from any shell on a machine that sees the
working directory. Each per-case job prints its own run's line at its end (common.progress).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from worldmemory.common.progress import line
from worldmemory.workflow.dag import Job, snakemake_dag
from worldmemory.workflow.plan import STUDIES

STAGES = {"rollout": "rollouts", "perceive": "perception", "score": "scores"}


def progress_lines(jobs: list[Job]) -> list[str]:
    """A line per study, run and stage with jobs in the DAG: done (not to run) of all."""
    total, done = Counter(), Counter()
    for job in jobs:
        study, _, stage = job.rule.partition("_")
        if study in STUDIES and stage in STAGES:
            key = (STUDIES.index(study), job.wildcards["model"], list(STAGES).index(stage))
            total[key] += 1
            done[key] += not job.needrun
    stages = list(STAGES.values())
    return [line(STUDIES[study], stages[stage], run, done[study, run, stage], n)
            for (study, run, stage), n in sorted(total.items())]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("targets", nargs="*", help="the targets (files or rules) of the run (default: rule all)")
    ap.add_argument("--configfile", "--configfiles", nargs="+", type=Path, default=[],
                    help="the run's config files, merged as Snakemake merges them (default: the embedded "
                         "config/config.yaml)")
    ap.add_argument("--directory", "-d", type=Path, default=Path("."), help="the working directory (default: .)")
    args = ap.parse_args(argv)
    try:
        _, jobs = snakemake_dag(args.configfile, args.targets, args.directory)
    except ValueError as e:
        raise SystemExit(f"[progress] {e}") from None
    print("\n".join(progress_lines(jobs)))


if __name__ == "__main__":
    main()
