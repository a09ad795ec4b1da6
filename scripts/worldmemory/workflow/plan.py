"""What a run will cost before it starts: ``./run.sh plan``.

    ./run.sh plan [TARGETS] --configfile config/paper.yaml my_model.yaml --gpus 8

Snakemake itself reads the workflow and builds the DAG of TARGETS (default: rule all) in the
working directory (worldmemory.workflow.dag): the config is the one the run reads (the files
deep-merged as Snakemake merges them, validated and checked), and the jobs are the ones
``./run.sh snakemake -n TARGETS`` plans, no more (a finished job is not counted again). Each job
still to run is priced, and the table says where each figure comes from:

* a rollout job (one case's videos, or one PersistBench sequence) by its frames: **recorded** --
  the median minutes per frame of the model's rollouts this working directory has made (each
  rollout's cost.json holds its wall time and frames) times the frames each video will have
  (the frames its rollout builds, trajectories.frame_count: the trajectory's n_frames after the
  model's trajectory_params and the case's own; PersistBench's ``sequences.n_frames``); else
  **config** -- the model's ``rollout_minutes`` per video of its ``rollout_frames`` frames,
  scaled to each video's frames; else **unknown**;
* a perception job by its learned estimators: **preflight** -- the seconds per frame that
  ``./run.sh preflight`` measured for each of them (results/preflight/units.csv) times the frames
  of the job's videos (preflight.timed_estimator: the CPU estimators, ArcFace and a VLM judge
  beside them are not counted);
* a perception job without those figures, and any other job that asks for a GPU (the permanence
  probes and training on ``device: cuda``), at its ``runtime`` resource: **limit**, the job's time
  limit (an estimator's minutes per case, worldmemory.perception.estimators), an upper bound
  rather than a measurement;
* the other CPU jobs (case renders, scores, tables) are counted, not priced.

Device-hours are minutes x the job's GPUs (1 for a CPU job). The wall time is the GPU-hours
shared by N GPUs, but never less than the longest single GPU job (a case's rollouts run one after
another on one GPU). The papers' rollouts dominate (Appendix H: 322 s per 493-frame video on a GPU).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections import defaultdict
from pathlib import Path

import pandas as pd

from worldmemory.workflow.dag import Job, snakemake_dag
from worldmemory.workflow.preflight import UNITS_CSV, perceive_estimators, timed_estimator
from worldmemory.workflow.runs import benchmark_runs, worldmembench_cases
from worldmemory.worldmembench.trajectories import frame_count, merge_params

STUDIES = ("worldmembench", "persistbench")
UNIT = {"worldmembench": "case", "persistbench": "sequence"}
COLUMNS = ["rule", "run", "gpu", "jobs", "videos", "frames", "min_per_job", "source", "device_hours",
           "longest_job_h"]


def recorded_minutes_per_frame(results: Path, study: str, run: str) -> list[float]:
    """Minutes per frame of every rollout of ``run`` recorded under ``results`` (cost.json: wall_s
    and n_frames)."""
    costs = [json.loads(p.read_text()) for p in sorted((results / study / "rollouts" / run).glob("**/cost.json"))]
    return [c["wall_s"] / 60 / c["n_frames"] for c in costs if c.get("n_frames")]


class RolloutPrices:
    """Frames and minutes of each study's rollout jobs, from the config and the recorded costs."""

    def __init__(self, config: dict, results: Path):
        self.config, self.results = config, results
        self.runs = {s: benchmark_runs(s, config[s]) for s in STUDIES if s in config}
        self.cases = worldmembench_cases(config["worldmembench"]) if "worldmembench" in config else {}
        self.per_frame = {}

    def frames(self, study: str, run: str, unit: str) -> list[int]:
        """The frames of each video of ``run``'s rollout job of ``unit``."""
        block = self.config[study]
        if study == "persistbench":
            return [block["sequences"]["n_frames"]]
        params = merge_params(block["trajectory_params"], self.runs[study][run].get("trajectory_params", {}))
        case = self.cases[unit]
        return [frame_count(name, params, case["trajectory_params"]) for name in case["trajectories"]]

    def minutes(self, study: str, run: str, frames: list[int]) -> tuple[float, str]:
        """(minutes of one job making videos of ``frames``, where the figure comes from)."""
        key = (study, run)
        if key not in self.per_frame:
            self.per_frame[key] = recorded_minutes_per_frame(self.results, study, run)
        recorded = self.per_frame[key]
        if recorded:
            return statistics.median(recorded) * sum(frames), f"recorded ({len(recorded)} videos)"
        spec = self.runs[study][run]
        if "rollout_minutes" in spec:
            per_frame = float(spec["rollout_minutes"]) / spec["rollout_frames"]
            return per_frame * sum(frames), f"config (rollout_minutes per {spec['rollout_frames']} frames)"
        return math.nan, "unknown"


def preflight_seconds_per_frame(results: Path) -> dict[str, float]:
    """'<study>: <capability>/<backend>' -> seconds per frame of each estimator the preflight
    measured (results/preflight/units.csv; empty where there is none)."""
    path = results.parent / UNITS_CSV
    if not path.exists():
        return {}
    units = pd.read_csv(path)
    timed = units[(units["kind"] == "estimator") & units["s_per_frame"].notna()]
    return dict(zip(timed["name"], timed["s_per_frame"]))


def perception_minutes(job: Job, study: str, rollouts: RolloutPrices, per_frame: dict) -> float | None:
    """Minutes of a perception job from the preflight's seconds per frame of its learned
    estimators, over the frames of the run's videos of the unit; None where one is not measured."""
    learned = [f"{study}: {c}/{e['backend']}" for c, e in perceive_estimators(job).items() if timed_estimator(c, e)]
    if not learned or any(name not in per_frame for name in learned):
        return None
    frames = sum(rollouts.frames(study, job.wildcards["model"], job.wildcards[UNIT[study]]))
    return sum(per_frame[name] for name in learned) * frames / 60


def price(job: Job, rollouts: RolloutPrices, per_frame: dict | None = None) -> dict:
    """A job's row: its videos and frames (a rollout job), minutes and where they come from;
    ``per_frame``: the preflight's estimator seconds per frame (preflight_seconds_per_frame)."""
    gpu = int(job.resources.get("gpu", 0))
    study = job.rule.removesuffix("_rollout").removesuffix("_perceive")
    row = {"rule": job.rule, "run": job.wildcards.get("model", ""), "gpu": gpu, "videos": 0, "frames": 0}
    measured = None
    if job.rule.endswith("_perceive") and study in STUDIES and per_frame:
        measured = perception_minutes(job, study, rollouts, per_frame)
    if job.rule.endswith("_rollout") and study in STUDIES:
        frames = rollouts.frames(study, row["run"], job.wildcards[UNIT[study]])
        minutes, source = rollouts.minutes(study, row["run"], frames)
        row.update(videos=len(frames), frames=sum(frames))
    elif measured is not None:
        minutes, source = measured, "preflight (learned estimators' s per frame)"
    elif job.rule.endswith("_perceive") or gpu > 0:
        minutes, source = float(job.resources["runtime"]), "limit (runtime resource)"
    else:
        minutes, source = math.nan, "not priced"
    return {**row, "minutes": minutes, "source": source}


def plan(config: dict, jobs: list[Job], results: Path) -> pd.DataFrame:
    """A row per rule, run, GPUs and price source of the jobs still to run (COLUMNS)."""
    rollouts = RolloutPrices(config, results)
    per_frame = preflight_seconds_per_frame(results)
    groups = defaultdict(list)
    for job in jobs:
        if job.needrun:
            row = price(job, rollouts, per_frame)
            groups[(row["rule"], row["run"], row["gpu"], row["source"])].append(row)
    rows = []
    for (rule, run, gpu, source), members in sorted(groups.items()):
        minutes = [m["minutes"] for m in members]
        rows.append({"rule": rule, "run": run, "gpu": gpu, "jobs": len(members),
                     "videos": sum(m["videos"] for m in members), "frames": sum(m["frames"] for m in members),
                     "min_per_job": statistics.mean(minutes), "source": source,
                     "device_hours": sum(minutes) / 60 * max(gpu, 1), "longest_job_h": max(minutes) / 60})
    return pd.DataFrame(rows, columns=COLUMNS)


def wall_hours(rows: pd.DataFrame, gpus: int) -> float:
    """Wall hours of the priced GPU jobs ``rows`` on ``gpus`` GPUs."""
    on_gpu = rows[(rows["gpu"] > 0) & rows["device_hours"].notna()]
    if on_gpu.empty:
        return 0.0
    return max(on_gpu["device_hours"].sum() / gpus, on_gpu["longest_job_h"].max())


def summary(table: pd.DataFrame, gpus: int, total_jobs: int) -> str:
    """The totals: jobs, then per device the rollouts' expected hours (recorded or config) and the
    other priced jobs' hours at their time limits, kept apart (an upper bound is no estimate)."""
    to_run = int(table["jobs"].sum())
    lines = [f"jobs: {to_run} to run (what `snakemake -n` plans for these targets), {total_jobs - to_run} "
             "already done"]
    limits = table["source"].str.startswith("limit")
    for device, on in (("GPU", table["gpu"] > 0), ("CPU", table["gpu"] == 0)):
        rollouts = table[on & table["rule"].str.endswith("_rollout")]
        priced = rollouts[rollouts["device_hours"].notna()]
        by_source = ", ".join(f"{h:.1f} {source.split(' ')[0]}" for source, h in
                              priced.groupby("source")["device_hours"].sum().sort_index().items())
        line = (f"{device} rollouts: {int(rollouts['videos'].sum())} videos in {int(rollouts['jobs'].sum())} jobs; "
                f"{priced['device_hours'].sum():.1f} {device}-hours over the {int(priced['jobs'].sum())} jobs priced "
                f"({by_source or 'none'})")
        if device == "GPU":
            line += f"; on {gpus} GPU(s) about {wall_hours(rollouts, gpus):.1f} h wall"
        lines.append(line)
        measured = table[on & table["source"].str.startswith("preflight")]
        if not measured.empty:
            lines.append(f"{device} perception jobs priced by the preflight: {int(measured['jobs'].sum())} jobs; "
                         f"{measured['device_hours'].sum():.1f} {device}-hours")
        bounded = table[on & limits]
        if not bounded.empty:
            line = (f"{device} perception and other jobs: {int(bounded['jobs'].sum())} jobs; at most "
                    f"{bounded['device_hours'].sum():.1f} {device}-hours at their runtime limits")
            if device == "GPU":
                line += f"; on {gpus} GPU(s) at most {wall_hours(bounded, gpus):.1f} h wall"
            lines.append(line)
    lines.append("sources: recorded = measured here (cost.json minutes per frame x planned frames); "
                 "config = rollout_minutes per rollout_frames x planned frames, assumed; preflight = ./run.sh "
                 "preflight's estimator seconds per frame x frames; limit = the job's runtime resource, an upper bound")
    unknown = sorted(set(table[table["source"] == "unknown"]["run"]))
    if unknown:
        lines.append(f"unpriced rollouts (no recorded rollout, no rollout_minutes in the config): {', '.join(unknown)}")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("targets", nargs="*", help="the targets (files or rules) to plan (default: rule all)")
    ap.add_argument("--configfile", "--configfiles", nargs="+", type=Path, default=[],
                    help="the run's config files, merged as Snakemake merges them (default: the embedded "
                         "config/config.yaml)")
    ap.add_argument("--gpus", type=int, default=1, help="GPUs the GPU jobs share (default 1)")
    ap.add_argument("--directory", "-d", type=Path, default=Path("."),
                    help="the working directory: what is done there is not planned again, and its recorded "
                         "rollouts price the models (default: .)")
    ap.add_argument("--csv", type=Path, help="also write the table here")
    args = ap.parse_args(argv)
    if args.gpus < 1:
        ap.error("--gpus must be at least 1")
    try:
        config, jobs = snakemake_dag(args.configfile, args.targets, args.directory)
        table = plan(config, jobs, args.directory.absolute() / "results")
    except ValueError as e:
        raise SystemExit(f"[plan] {e}") from None
    if args.csv:
        table.to_csv(args.csv, index=False, lineterminator="\n")
    shown = table[table["source"] != "not priced"].round({"min_per_job": 2, "device_hours": 2, "longest_job_h": 2})
    print(shown.to_string(index=False, na_rep="?"))
    print(summary(table, args.gpus, len(jobs)))


if __name__ == "__main__":
    main()
