"""Table 4 of WorldMemBench (Appendix C): each model's video specifications, read from its rollouts.

The paper's Table 4 gives per model the native resolution and FPS of the output videos, the frame
count and duration of each, and the sampling configuration. Here every column comes from what the
rollouts hold (the decoded videos and their trajectory files), so the table describes the runs that
were scored, not what a config intended: resolution (width x height), fps, frames and duration per
trajectory, and the conditioning frame's size (the case camera). Seed, sampling and inference
setting live in each model's own code, not in its rollouts: they are not reported.

Beside it, ``--latency`` writes what each model's rollouts cost, from the cost sidecars its
rollout jobs recorded (common.usage, costs.csv): Appendix H's latency (mean end-to-end seconds
per video; ours also the median, milliseconds per frame and the peak resident and GPU memory).
Timed, so not byte-stable across runs, unlike Table 4.

    python -m worldmemory.worldmembench.specs --cases DIR --rollouts DIR [DIR ...] --out table4.csv \
        --latency latency.csv
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from worldmemory.common.video import video_shape
from worldmemory.report.tables import write_csv
from worldmemory.worldmembench.cases import load_cases
from worldmemory.worldmembench.trajectories import TRAJECTORIES, load_trajectory

COLUMNS = ["model", "kind", "resolution", "fps", "frames", "duration_s", "conditioning"]
LATENCY_COLUMNS = ["model", "rollouts", "mean_s", "median_s", "ms_per_frame", "peak_rss_mb", "peak_gpu_mb"]


def _distinct(values) -> str:
    """The values in first-seen order, joined; one value when the model is consistent."""
    return ", ".join(dict.fromkeys(str(v) for v in values))


def model_specs(rollouts_dir, cases: dict) -> dict:
    """One Table 4 row from a model's rollout directory (manifest.json, videos, trajectories)."""
    root = Path(rollouts_dir)
    manifest = json.loads((root / "manifest.json").read_text())
    sizes, rates, conditioning, per_trajectory = [], [], [], {}
    for entry in manifest["rollouts"]:
        n, height, width = video_shape(root / entry["video"])
        fps = load_trajectory(root / entry["trajectory_file"]).fps
        sizes.append(f"{width}x{height}")
        rates.append(f"{fps:g}")
        camera = cases[entry["case"]]["camera"]
        conditioning.append(f"{camera['width']}x{camera['height']}")
        per_trajectory.setdefault(entry["trajectory"], set()).add((n, n / fps))
    order = [t for t in TRAJECTORIES if t in per_trajectory]
    frames = "; ".join(f"{t} {_distinct(sorted(n for n, _ in per_trajectory[t]))}" for t in order)
    duration = "; ".join(f"{t} {_distinct(sorted(f'{d:.1f}' for _, d in per_trajectory[t]))}" for t in order)
    return {"model": manifest["model"], "kind": manifest["kind"], "resolution": _distinct(sizes),
            "fps": _distinct(rates), "frames": frames, "duration_s": duration,
            "conditioning": _distinct(conditioning)}


def table4(cases_dir, rollouts_dirs) -> pd.DataFrame:
    """Table 4: a row per model directory, in the given order."""
    cases = {case["id"]: case for case in load_cases(cases_dir)}
    return pd.DataFrame([model_specs(d, cases) for d in rollouts_dirs], columns=COLUMNS)


def latency(rollouts_dirs) -> pd.DataFrame:
    """A row per model directory (its costs.csv): rollouts, mean and median wall seconds per
    rollout, median milliseconds per frame, largest peak resident and GPU memory (NaN unread)."""
    rows = []
    for directory in rollouts_dirs:
        costs = pd.read_csv(Path(directory) / "costs.csv")
        manifest = json.loads((Path(directory) / "manifest.json").read_text())
        rows.append({"model": manifest["model"], "rollouts": len(costs), "mean_s": costs["wall_s"].mean(),
                     "median_s": costs["wall_s"].median(),
                     "ms_per_frame": (1000 * costs["wall_s"] / costs["n_frames"]).median(),
                     "peak_rss_mb": costs["peak_rss_mb"].max(), "peak_gpu_mb": costs["peak_gpu_mb"].max()})
    return pd.DataFrame(rows, columns=LATENCY_COLUMNS).round(3)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", required=True, type=Path)
    parser.add_argument("--rollouts", nargs="+", required=True, type=Path, help="one directory per model")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--latency", type=Path, help="also write the models' rollout costs here")
    args = parser.parse_args(argv)
    table = table4(args.cases, args.rollouts)
    write_csv(table, args.out)
    print(table.to_string(index=False))
    if args.latency:
        costs = latency(args.rollouts)
        write_csv(costs, args.latency)
        print(costs.to_string(index=False))


if __name__ == "__main__":
    main()
