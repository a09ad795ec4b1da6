"""Where a run of the benchmark studies stands, case by case: ``./run.sh progress``.

    ./run.sh progress --configfile config/paper.yaml

prints one line per study, run and stage (rollouts, perception, scores): how many of the run's
cases are done, read off the files on disk (common.progress: a stage's marker file, which its
job writes last), so it works while Snakemake runs locally or on a cluster, from any shell on a
machine that sees the working directory. Each per-case job prints its own run's line at its end.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from worldmemory.common.progress import PERCEIVED, ROLLED_OUT, SCORED, count_done, line
from worldmemory.workflow.plan import STUDIES, load_config
from worldmemory.workflow.runs import benchmark_runs, persistbench_sequences, worldmembench_cases

# stage -> (directory under results/<study>/ holding <run>/<case>/, the stage's marker)
STAGES = {"rollouts": ("rollouts", ROLLED_OUT), "perception": ("perception", PERCEIVED), "scores": ("scores", SCORED)}
SCORE_UNITS = {"worldmembench": "cases", "persistbench": "sequences"}


def progress_lines(config: dict, results: Path) -> list[str]:
    lines = []
    for study in STUDIES:
        if study not in config:
            continue
        block = config[study]
        cases = list(worldmembench_cases(block)) if study == "worldmembench" else persistbench_sequences(block)
        for run, spec in sorted(benchmark_runs(study, block).items()):
            for stage, (folder, marker) in STAGES.items():
                if stage == "perception" and spec["kind"] != "external":
                    continue  # the oracle reads a reference model's truth channels
                model_dir = results / study / folder / run
                if stage == "scores":
                    model_dir = model_dir / SCORE_UNITS[study]
                lines.append(line(study, stage, run, count_done(model_dir, marker, cases), len(cases)))
    return lines


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configfile", "--configfiles", nargs="+", type=Path, default=[],
                    help="the run's config files (default: the embedded config/config.yaml)")
    ap.add_argument("--directory", "-d", type=Path, default=Path("."), help="the working directory (default: .)")
    args = ap.parse_args(argv)
    try:
        lines = progress_lines(load_config(args.configfile), args.directory / "results")
    except ValueError as e:
        raise SystemExit(f"[progress] {e}") from None
    print("\n".join(lines))


if __name__ == "__main__":
    main()
