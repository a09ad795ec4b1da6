"""What a run of the benchmark studies will cost before it starts: ``./run.sh plan``.

    ./run.sh plan --configfile config/paper.yaml --gpus 8

prints, per study and run (model, or a reference model's replay), the cases and rollouts, the
jobs Snakemake will plan (one rollout, perception and score job per case: worldmemory/workflow/
runs.py, which the rules plan from too), the minutes per rollout and where they come from, the
device-hours of the rollouts, and the wall time of the GPU rollouts on N GPUs. Minutes per
rollout are the median of the rollouts this working directory has recorded (each rollout's
cost.json; a few cases run first give a model's figure), else the model's ``rollout_minutes``
in the config, else unknown. Only the rollouts are priced: they dominate at the papers' size
(Appendix H: 322 s per 493-frame video on a GPU); perception and scoring are counted as jobs.
The wall time is the GPU-hours shared by N GPUs, but never less than the longest single case
job (a case's rollouts run one after another on one GPU).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

import pandas as pd

from worldmemory.workflow.config_files import load_config_file
from worldmemory.workflow.runs import benchmark_runs, persistbench_sequences, worldmembench_cases

REPO = Path(__file__).resolve().parents[3]
STUDIES = ("worldmembench", "persistbench")
COLUMNS = ["study", "run", "kind", "gpu", "cases", "rollouts", "jobs", "min_per_rollout", "source",
           "device_hours", "longest_job_h"]


def load_config(configfiles: list[Path]) -> dict:
    """The config as the workflow reads it: the embedded default, or the given files (which
    replace it), with the schema's defaults filled in."""
    from snakemake.utils import validate

    config = {}
    for path in configfiles or [REPO / "config" / "config.yaml"]:
        config.update(load_config_file(path))
    validate(config, str(REPO / "config" / "schemas" / "config.schema.yaml"), set_default=True)
    return config


def units(study: str, block: dict) -> dict[str, int]:
    """Unit (case or sequence) -> rollouts per run."""
    if study == "worldmembench":
        return {case: len(spec["trajectories"]) for case, spec in worldmembench_cases(block).items()}
    return {sequence: 1 for sequence in persistbench_sequences(block)}


def recorded_minutes(results: Path, study: str, run: str) -> list[float]:
    """Minutes of every rollout of ``run`` recorded under ``results`` (cost.json)."""
    root = results / study / "rollouts" / run
    return [json.loads(p.read_text())["wall_s"] / 60 for p in sorted(root.glob("**/cost.json"))]


def plan(config: dict, results: Path) -> pd.DataFrame:
    """A row per study and run (COLUMNS)."""
    rows = []
    for study in STUDIES:
        if study not in config:
            continue
        block = config[study]
        per_unit = units(study, block)
        for run, spec in sorted(benchmark_runs(study, block).items()):
            recorded = recorded_minutes(results, study, run)
            if recorded:
                minutes, source = statistics.median(recorded), f"recorded ({len(recorded)})"
            elif "rollout_minutes" in spec:
                minutes, source = float(spec["rollout_minutes"]), "config"
            else:
                minutes, source = math.nan, "unknown"
            estimated = spec["kind"] == "external"
            rollouts = sum(per_unit.values())
            rows.append({"study": study, "run": run, "kind": "replay" if "replays" in spec else spec["kind"],
                         "gpu": spec.get("gpu", 0), "cases": len(per_unit), "rollouts": rollouts,
                         # a rollout, a score and (estimated runs) a perception job per case, two lists per run
                         "jobs": len(per_unit) * (3 if estimated else 2) + 2,
                         "min_per_rollout": minutes, "source": source,
                         "device_hours": rollouts * minutes / 60 * max(spec.get("gpu", 0), 1),
                         "longest_job_h": max(per_unit.values()) * minutes / 60})
    return pd.DataFrame(rows, columns=COLUMNS)


def wall_hours(table: pd.DataFrame, gpus: int) -> float:
    """Wall hours of the priced GPU runs' rollouts on ``gpus`` GPUs."""
    on_gpu = table[(table["gpu"] > 0) & table["device_hours"].notna()]
    if on_gpu.empty:
        return 0.0
    return max(on_gpu["device_hours"].sum() / gpus, on_gpu["longest_job_h"].max())


def summary(table: pd.DataFrame, gpus: int) -> str:
    lines = [f"jobs: {int(table['jobs'].sum())} per-case and list jobs (plus each study's cases and tables)"]
    for device, runs in (("GPU", table[table["gpu"] > 0]), ("CPU", table[table["gpu"] == 0])):
        priced = runs[runs["device_hours"].notna()]
        line = (f"{device} rollouts: {int(runs['rollouts'].sum())} videos; {priced['device_hours'].sum():.1f} "
                f"{device}-hours over the {len(priced)} of {len(runs)} runs priced")
        if device == "GPU":
            line += f"; on {gpus} GPU(s) about {wall_hours(table, gpus):.1f} h wall"
        lines.append(line)
    unknown = table[table["source"] == "unknown"]["run"].tolist()
    if unknown:
        lines.append(f"unpriced (no recorded rollout, no rollout_minutes in the config): {', '.join(unknown)}")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configfile", "--configfiles", nargs="+", type=Path, default=[],
                    help="the run's config files (default: the embedded config/config.yaml)")
    ap.add_argument("--gpus", type=int, default=1, help="GPUs the rollouts share (default 1)")
    ap.add_argument("--directory", "-d", type=Path, default=Path("."),
                    help="the working directory whose recorded rollouts price the models (default: .)")
    ap.add_argument("--csv", type=Path, help="also write the table here")
    args = ap.parse_args(argv)
    if args.gpus < 1:
        ap.error("--gpus must be at least 1")
    try:
        table = plan(load_config(args.configfile), args.directory / "results")
    except ValueError as e:
        raise SystemExit(f"[plan] {e}") from None
    if args.csv:
        table.to_csv(args.csv, index=False, lineterminator="\n")
    shown = table.assign(min_per_rollout=table["min_per_rollout"].round(2), device_hours=table["device_hours"].round(2),
                         longest_job_h=table["longest_job_h"].round(2))
    print(shown.to_string(index=False, na_rep="?"))
    print(summary(table, args.gpus))


if __name__ == "__main__":
    main()
