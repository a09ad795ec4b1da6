"""Does the no-reference quality backend rank clean > blurred > blurred and noisy on our videos?

    python -m worldmemory.perception.quality_calibration --backend metric-q --out calibration.csv \\
        --manifests results/worldmembench/rollouts/omniscient/manifest.json ...

A quality column is only worth reading if it orders what a reader would: each reference video is
scored as delivered, blurred (Gaussian, sigma 1.5 px) and blurred plus Gaussian noise (std 8 grey
levels), the degradations of worldmemory.common.degrade's ``blur-noise`` recipe (seeded by the
video's position in the list). Every ``step``-th frame is scored (the first included), to keep the
check cheap; a video's value is its frames' mean raw score normalised by the backend (1 best), as
the table column is. The table has one row per video (clean, blur, blur_noise, ordered: clean >
blur > blur_noise strictly); the command prints how many videos hold the order. Only manifests of
kind ``reference`` are read (a replay's videos are its source's).
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np

from worldmemory.common.degrade import blur_noise
from worldmemory.common.video import read_video
from worldmemory.perception import registry
from worldmemory.perception.base import FrameQuality

STEP = 16  # every 16th frame: 16-22 frames of a WorldMemBench rollout, 3 of a PersistBench sequence
COLUMNS = ("video", "frames", "clean", "blur", "blur_noise", "ordered")


def reference_videos(manifests) -> list[Path]:
    """The videos listed by the rollout manifests of kind ``reference``, in order."""
    videos = []
    for path in map(Path, manifests):
        manifest = json.loads(path.read_text())
        if manifest.get("kind") == "reference":
            videos += [path.parent / rollout["video"] for rollout in manifest["rollouts"]]
    return videos


def degraded(frames: np.ndarray, seed: int) -> dict[str, np.ndarray]:
    """The three versions of ``frames`` the calibration scores."""
    return {"clean": frames, "blur": blur_noise(frames, seed, noise_std=0.0), "blur_noise": blur_noise(frames, seed)}


def calibrate_frames(frames: np.ndarray, backend: FrameQuality, seed: int = 0) -> dict:
    """One row of the table for already sampled frames (N, H, W, 3) uint8."""
    row = {name: backend.normalise(float(np.nanmean(backend.score(version))))
           for name, version in degraded(frames, seed).items()}
    row["ordered"] = bool(row["clean"] > row["blur"] > row["blur_noise"])
    return {"frames": len(frames), **row}


def calibrate(videos, backend: FrameQuality, step: int = STEP) -> list[dict]:
    """The table's rows, one per video of ``videos``."""
    if step < 1:
        raise ValueError("step must be at least 1")
    return [{"video": str(video), **calibrate_frames(read_video(video)[::step], backend, seed)}
            for seed, video in enumerate(videos)]


def write_table(rows: list[dict], path: Path) -> None:
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--manifests", nargs="+", required=True, type=Path, help="rollouts' manifest.json files")
    backends = [name for name in registry.names("imaging_quality") if name != registry.NONE]
    ap.add_argument("--backend", required=True, choices=backends)
    ap.add_argument("--step", type=int, default=STEP, help="score every step-th frame")
    ap.add_argument("--out", required=True, type=Path, help="the table (CSV)")
    args = ap.parse_args(argv)
    rows = calibrate(reference_videos(args.manifests), registry.create("imaging_quality", args.backend), args.step)
    write_table(rows, args.out)
    held = sum(row["ordered"] for row in rows)
    print(f"[quality calibration] {args.backend}: clean > blur > blur + noise on {held} of {len(rows)} "
          f"reference videos -> {args.out}")


if __name__ == "__main__":
    main()
