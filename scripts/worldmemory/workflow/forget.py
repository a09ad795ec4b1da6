"""``./run.sh forget MODEL``: remove a benchmark model's results, so the next run makes them again.

The rollout store (common.rollout_store) keeps a model's videos apart from Snakemake's outputs,
so deleting its rollouts alone brings the same videos back. This removes, in both benchmark
studies (WorldMemBench, PersistBench), everything of the model and everything built from it:

* ``results/<study>/{rollouts,rollout_store,perception,scores}/<model>/``: its videos and their
  per-model manifest and costs, the stored rollouts, its estimates and its scores; the same of
  its replays (``<model>.replay``, ``<model>.replay-<recipe>``: worldmemory.external.replays),
  which copy its videos;
* the study's tables built from every model's scores, so that they are built again: the files
  directly under ``results/<study>/`` (tables, their JSON, figures) and, for WorldMemBench,
  ``results/table2.csv``.

The cases and sequences, other models' results and the logs stay. A name with no results in
either study is refused, listing the models that have some. ``--dry-run`` prints what would go.
While a ``./run.sh`` runs in the directory (its flock: worldmemory.workflow.launch) nothing is
removed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from worldmemory.external.replays import REPLAY
from worldmemory.workflow.launch import LaunchError, hold_flock

STUDIES = ("worldmembench", "persistbench")
MODEL_TREES = ("rollouts", "rollout_store", "perception", "scores")  # each holds one directory per run
OWN_TABLES = {"worldmembench": ["table2.csv"], "persistbench": []}  # under results/, beside the studies'


def runs_with_results(results: Path) -> set[str]:
    """The run names with a directory in some study's MODEL_TREES."""
    return {run.name for study in STUDIES for tree in MODEL_TREES
            if (results / study / tree).is_dir() for run in (results / study / tree).iterdir() if run.is_dir()}


def is_run_of(run: str, model: str) -> bool:
    """Whether ``run`` is ``model`` or one of its replays."""
    return run == model or run.startswith(model + REPLAY)


def forget_paths(results: Path, model: str) -> list[Path]:
    """What forgetting ``model`` removes under ``results`` (see the module docstring), existing
    paths only, in a fixed order; ValueError when the model has no results."""
    runs = runs_with_results(results)
    if not any(is_run_of(run, model) for run in runs):
        models = sorted(run for run in runs if REPLAY not in run)
        raise ValueError(f"no results of model {model!r} under {results}/{{{','.join(STUDIES)}}}/"
                         f"{{{','.join(MODEL_TREES)}}}/; models with results: {', '.join(models) or 'none'}. "
                         f"Fix: name one of those (nothing was removed)")
    paths = []
    for study in STUDIES:
        own = [results / study / tree / run for tree in MODEL_TREES for run in sorted(runs)
               if is_run_of(run, model) and (results / study / tree / run).is_dir()]
        if not own:
            continue
        tables = sorted(p for p in (results / study).iterdir() if p.is_file())
        paths += own + tables + [results / name for name in OWN_TABLES[study] if (results / name).is_file()]
    return paths


def remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="./run.sh forget", description=__doc__.splitlines()[0])
    parser.add_argument("model", help="the model's name, as in worldmembench.models / persistbench.models")
    parser.add_argument("--dry-run", action="store_true", help="print what would be removed, remove nothing")
    parser.add_argument("--directory", type=Path, default=Path("."),
                        help="the working directory whose results/ to clean (default: this one)")
    args = parser.parse_args(argv)
    try:
        paths = forget_paths(args.directory / "results", args.model)
        lock = None if args.dry_run else hold_flock(args.directory)
    except (ValueError, LaunchError) as e:
        print(f"forget: {e}", file=sys.stderr)
        return 2
    for path in paths:
        shown = f"{path}/" if path.is_dir() else str(path)
        if lock is not None:
            remove(path)
        print(f"{'would remove' if args.dry_run else 'removed'} {shown}")
    if lock is not None:
        print(f"forget: {args.model} removed ({len(paths)} paths); the next run makes its rollouts, perception, "
              "scores and the tables again")
    return 0


if __name__ == "__main__":
    sys.exit(main())
