"""A model's rollouts, written one case at a time and listed once for the whole model.

A rollout job covers one case (WorldMemBench) or one sequence (PersistBench) and writes the unit's
own manifest, ``<model dir>/<unit>/rollouts.json``:

    {"model", "kind", "ground_truth", "params", "rollouts": [entry, ...]}

whose entries name their files relative to the model directory and their cost sidecar
(``cost``: wall time, peak memory, frames; common.usage). ``collect`` joins the units' manifests,
in the order given, into the model's ``manifest.json`` (the same form; no timings in it, so equal
rollouts give equal bytes) and their costs into ``costs.csv`` (one row per rollout), which
Table 4's latency file and ``./run.sh plan`` read.

    python -m worldmemory.common.rollout_index --model-dir results/worldmembench/rollouts/M --units c1 c2 ...
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

from worldmemory.common.progress import ROLLED_OUT

UNIT_MANIFEST = ROLLED_OUT  # a unit's manifest, written last: its progress marker
COST = "cost.json"
COST_COLUMNS = ["unit", "rollout", "n_frames", "wall_s", "peak_rss_mb", "peak_gpu_mb"]
SHARED = ("model", "kind", "ground_truth", "params")  # the same in every unit of one model
RESERVED = ("manifest.json", "costs.csv")  # the model's own files beside its units' directories


def write_unit_manifest(unit_dir: Path, manifest: dict) -> None:
    """Write a unit's manifest, last of the unit's files (it marks the unit done)."""
    Path(unit_dir).mkdir(parents=True, exist_ok=True)
    (Path(unit_dir) / UNIT_MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


def write_cost(rollout_dir: Path, usage: dict, n_frames: int) -> None:
    """A rollout's cost sidecar: common.usage's figures and its frame count."""
    (Path(rollout_dir) / COST).write_text(json.dumps({**usage, "n_frames": n_frames}, sort_keys=True) + "\n")


def read_unit_manifest(unit_dir: Path) -> dict:
    path = Path(unit_dir) / UNIT_MANIFEST
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: cannot read the unit's rollout manifest ({e}); rerun its rollout job") from e


def collect(model_dir, units: list[str]) -> dict:
    """The model's manifest from its ``units`` (in this order); writes manifest.json and costs.csv."""
    model_dir = Path(model_dir)
    manifest, rows = None, []
    for unit in units:
        part = read_unit_manifest(model_dir / unit)
        if manifest is None:
            manifest = {**{k: part[k] for k in SHARED}, "rollouts": []}
        elif any(part[k] != manifest[k] for k in SHARED):
            raise ValueError(f"{model_dir / unit / UNIT_MANIFEST}: made with other model settings than "
                             f"{model_dir / units[0] / UNIT_MANIFEST}; rerun the model's rollouts")
        for entry in part["rollouts"]:
            cost = json.loads((model_dir / entry["cost"]).read_text())
            rows.append({"unit": unit, "rollout": str(Path(entry["video"]).parent), **cost})
        manifest["rollouts"] += part["rollouts"]
    if manifest is None:
        raise ValueError(f"{model_dir}: no units to collect")
    (model_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    with open(model_dir / "costs.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, COST_COLUMNS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return manifest


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-dir", required=True, type=Path)
    ap.add_argument("--units", nargs="+", required=True, help="the model's cases or sequences, in order")
    args = ap.parse_args(argv)
    manifest = collect(args.model_dir, args.units)
    print(f"[rollouts] {manifest['model']}: {len(manifest['rollouts'])} rollouts of {len(args.units)} units "
          f"-> {args.model_dir / 'manifest.json'}, costs.csv")


if __name__ == "__main__":
    main()
