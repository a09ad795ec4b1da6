"""A "world model" that replays another model's video through the external-model contract.

It calibrates perception: a reference model's rollout, replayed as an external model, reaches
scoring without truth channels, as any world model's video does, so its score under the
configured estimators can be compared with the oracle's score of the same pixels (the
studies' perception-agreement tables). It reads request.json and writes the source rollout's
video, frame for frame, as the H.264 MP4 external models deliver (4:4:4, crf 0: only the
YUV rounding is lost).

    python -m worldmemory.external.replay --source results/worldmembench/rollouts/omniscient \\
        --key {case}/{trajectory_name} --request {request}

``--key`` names the source rollout's directory under ``--source``; the command template builds it
from the request's placeholders. ``--degrade RECIPE`` delivers the video degraded as real
generators degrade (common.degrade: blur-noise, h264, resize, black, uniform, sliver), seeded by the key:
the degraded replays ``<model>.replay-<recipe>`` of the agreement tables. The geometric recipes
read the conditioning view from the source rollout's truth (WorldMemBench: depth, poses, K; frame
0 is the conditioning frame) or from the request's cameras.json (PersistBench: every input-camera
frame up to t; the objects the source drew are kept, as the model knows them).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from worldmemory.common.degrade import GEOMETRIC, RECIPES, degrade, seen_by_view
from worldmemory.common.geometry import intrinsics, pose
from worldmemory.common.seeds import stable_rng
from worldmemory.common.video import read_video, write_mp4
from worldmemory.external.replays import CLEAN


def replay(source: Path, key: str, request_path: Path, recipe: str = CLEAN) -> Path:
    """Write the video of rollout ``key`` under ``source`` where the request asks, degraded by
    ``recipe`` (or clean); its path."""
    request = json.loads(Path(request_path).read_text())
    videos = sorted((source / key).glob("video.*"))
    if len(videos) != 1:
        raise FileNotFoundError(f"{source / key}: expected one video.* to replay, found {len(videos)}")
    frames = read_video(videos[0])
    if len(frames) != request["n_frames"]:
        raise ValueError(f"{videos[0]} has {len(frames)} frames, the request asks for {request['n_frames']}: "
                         "replay a rollout of the same trajectory")
    if recipe != CLEAN:
        seen = conditioning_view(source / key, request) if recipe in GEOMETRIC else None
        frames = degrade(frames, recipe, stable_rng(key, f"degrade/{recipe}"), request["fps"], seen)
    write_mp4(request["video"], frames, request["fps"])
    print(f"{key}: replayed {videos[0]} ({recipe}) -> {request['video']}")
    return Path(request["video"])


def conditioning_view(rollout: Path, request: dict) -> np.ndarray:
    """(T, H, W) bool: the pixels a model conditioned on the request could show (common.degrade)."""
    with np.load(rollout / "truth.npz", allow_pickle=False) as truth:
        truth = dict(truth)
    if "cameras" in request:  # PersistBench: a shared centre, the input camera's frames so far
        cams = json.loads(Path(request["cameras"]).read_text())
        K = intrinsics(cams["width"], cams["height"], cams["fov_deg"])
        reference = np.stack([pose(np.asarray(r), np.zeros(3)) for r in cams["reference_rotations"]])
        seen = np.zeros((len(reference), cams["height"], cams["width"]), bool)
        for s, rotation in enumerate(cams["input_rotations"]):
            seen[s:] |= seen_by_view(reference[s:], K, pose(np.asarray(rotation), np.zeros(3)),
                                     cams["width"], cams["height"])
        return seen | (truth["instance"] > 0)
    depth = truth["depth"]
    return seen_by_view(truth["poses"], truth["K"], truth["poses"][0], depth.shape[2], depth.shape[1], depth)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, type=Path, help="the replayed model's rollout directory")
    parser.add_argument("--key", required=True, help="the rollout's directory under --source")
    parser.add_argument("--request", required=True, type=Path, help="request.json written by the workflow")
    parser.add_argument("--degrade", default=CLEAN, choices=[CLEAN, *RECIPES],
                        help="deliver the video degraded by this recipe (worldmemory.common.degrade)")
    args = parser.parse_args(argv)
    replay(args.source, args.key, args.request, args.degrade)


if __name__ == "__main__":
    main()
