"""Stress models: built-in "world models" that fail in one known way, the estimators' self-check.

Each transforms the stored rollouts of the reference models (or the request's own input) and
delivers the result through the external-model contract, as a replay does
(worldmemory.external.replay): it reaches scoring without truth channels, through the configured
estimators, exactly like an outside model. What the estimators should read of each is written
down beside the study (worldmembench/stress.py, persistbench/stress.py) and checked in
``results/<study>/stress.csv`` (docs/perception.md, "Stress gallery").

WorldMemBench (Section 4.4's revisit protocol):
  * ``frozen``: the omniscient's frame 0 (the conditioning view) for every frame: no camera motion;
  * ``mirrored``: the omniscient rollout mirrored left-right: a consistent world of its own whose
    camera turns the other way;
  * ``spliced``: the omniscient until the end of the first revisit R1, the amnesic after;
  * ``content-out-of-frame``: the omniscient with everything the conditioning view never showed
    blanked by the degrade recipe OUT_OF_FRAME_RECIPE (common.degrade).
PersistBench (its Perm / Cont / App protocol):
  * ``input-copy``: the input camera's video returned as the generation;
  * ``black``: every frame black;
  * ``black-after-exit``: the omniscient's video until the target first leaves the input view,
    black after;
  * ``black-window``: the omniscient's video, black only while the input camera cannot see the target.

    python -m worldmemory.external.stress --study worldmembench --model spliced \\
        --source omniscient=results/worldmembench/rollouts/omniscient/{case} \\
        --source amnesic=results/worldmembench/rollouts/amnesic/{case} --key {trajectory_name} --request {request}

``--source NAME=DIR``: the rollout directory of each reference model the stress model reads
(SOURCES), ``--key`` the rollout under it; PersistBench's ``--sequence DIR`` the prepared sequence
(its ``views.npz`` says when the input camera sees the target).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

STRESS = "stress."  # a stress model's run: stress.<model>
# The degrade recipe that blanks what the conditioning view never showed, content coming back as
# thin slivers first (common.degrade's "sliver": the camera once re-anchored on such strips).
OUT_OF_FRAME_RECIPE = "sliver"
# study -> stress model -> the reference models (their `reference:`) whose rollouts it reads
SOURCES = {
    "worldmembench": {"frozen": ("omniscient",), "mirrored": ("omniscient",),
                      "spliced": ("omniscient", "amnesic"), "content-out-of-frame": ("omniscient",)},
    "persistbench": {"input-copy": (), "black": ("omniscient",), "black-after-exit": ("omniscient",),
                     "black-window": ("omniscient",)},
}


def stress_name(model: str) -> str:
    """The run of stress model ``model``."""
    return STRESS + model


def frozen(frames: np.ndarray) -> np.ndarray:
    """Frame 0 repeated for every frame (any array with time first)."""
    return np.repeat(np.asarray(frames)[:1], len(frames), axis=0)


def mirrored(frames: np.ndarray) -> np.ndarray:
    """Every frame mirrored left-right ((T, H, W) or (T, H, W, C))."""
    return np.ascontiguousarray(np.asarray(frames)[:, :, ::-1])


def spliced(before: np.ndarray, after: np.ndarray, start: int) -> np.ndarray:
    """``before``'s frames up to ``start`` (exclusive), ``after``'s from it."""
    if before.shape != after.shape:
        raise ValueError(f"spliced videos differ in shape: {before.shape} != {after.shape}")
    return np.concatenate([before[:start], after[start:]])


def blacken(frames: np.ndarray, black: np.ndarray) -> np.ndarray:
    """``frames`` with the frames where ``black`` (T,) bool is True all zero."""
    out = np.array(frames, copy=True)
    out[np.asarray(black, bool)] = 0
    return out


def exit_frames(visible: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(after_exit, window), (T,) bool each, of the input camera's target visibility ``visible``:
    every frame from the first one the target is not visible in after being visible, and the
    frames of that first absence (the invisible window) only."""
    visible = np.asarray(visible, bool)
    seen = np.flatnonzero(visible)
    after = np.zeros(len(visible), bool)
    if len(seen):
        gone = np.flatnonzero(~visible[seen[0]:])
        if len(gone):
            after[seen[0] + gone[0]:] = True
    back = np.flatnonzero(after & visible)
    window = after.copy()
    if len(back):
        window[back[0]:] = False
    return after, window


def worldmembench_video(model: str, sources: dict[str, np.ndarray], r1_end: int, seen=None, seed=None,
                        fps: float = 8.0) -> np.ndarray:
    """Stress model ``model``'s video from its sources' videos (reference -> (T, H, W, 3)); the
    first revisit ends at frame ``r1_end``; ``seen`` (T, H, W) is the conditioning view."""
    from worldmemory.common.degrade import degrade

    omniscient = sources["omniscient"]
    if model == "frozen":
        return frozen(omniscient)
    if model == "mirrored":
        return mirrored(omniscient)
    if model == "spliced":
        return spliced(omniscient, sources["amnesic"], r1_end)
    if model == "content-out-of-frame":
        return degrade(omniscient, OUT_OF_FRAME_RECIPE, seed, fps, seen)
    raise ValueError(_unknown("worldmembench", model))


def persistbench_video(model: str, omniscient, input_video, visible: np.ndarray) -> np.ndarray:
    """Stress model ``model``'s video from the omniscient's and the input camera's videos and the
    input camera's per-frame target visibility."""
    after, window = exit_frames(visible)
    if model == "input-copy":
        return np.asarray(input_video)
    if model == "black":
        return np.zeros_like(omniscient)
    if model == "black-after-exit":
        return blacken(omniscient, after)
    if model == "black-window":
        return blacken(omniscient, window)
    raise ValueError(_unknown("persistbench", model))


def _unknown(study: str, model: str) -> str:
    return f"unknown {study} stress model {model!r}; valid: {', '.join(SOURCES[study])}"


def _video(rollout: Path) -> np.ndarray:
    from worldmemory.common.video import read_video

    videos = sorted(rollout.glob("video.*"))
    if len(videos) != 1:
        raise FileNotFoundError(f"{rollout}: expected one video.* to read, found {len(videos)}")
    return read_video(videos[0])


def first_revisit_end(trajectory: dict) -> int:
    """The frame after the first revisit R1 of a trajectory's JSON (trajectories.Trajectory)."""
    ends = [p["end"] for p in trajectory["phases"] if p["name"] == "R1"]
    if not ends:
        raise ValueError(f"trajectory {trajectory['name']!r} has no revisit R1 to splice after")
    return ends[0]


def make(study: str, model: str, sources: dict[str, Path], key: str, request_path: Path,
         sequence: Path | None = None) -> Path:
    """Write stress model ``model``'s video where the request asks; its path."""
    from worldmemory.common.seeds import stable_rng
    from worldmemory.common.video import read_video, write_mp4

    request = json.loads(Path(request_path).read_text())
    missing = sorted(set(SOURCES[study][model]) - set(sources))
    if missing:
        raise ValueError(f"stress model {model!r} reads the rollouts of {', '.join(missing)}: pass --source NAME=DIR")
    if study == "worldmembench":
        from worldmemory.external.replay import conditioning_view

        videos = {name: _video(Path(d) / key) for name, d in sources.items()}
        trajectory = json.loads(Path(request["trajectory"]).read_text())
        blanked = model == "content-out-of-frame"
        seen = conditioning_view(Path(sources["omniscient"]) / key, request) if blanked else None
        frames = worldmembench_video(model, videos, first_revisit_end(trajectory), seen,
                                     stable_rng(key, f"stress/{model}"), request["fps"])
    else:
        if sequence is None:
            raise ValueError("a PersistBench stress model needs --sequence (the prepared sequence's directory)")
        with np.load(Path(sequence) / "views.npz", allow_pickle=False) as views:
            visible = views["visible_in_input"]
        input_video = read_video(request["input_video"])
        omniscient = _video(Path(sources["omniscient"]) / key) if "omniscient" in sources else input_video
        frames = persistbench_video(model, omniscient, input_video, visible)
    if len(frames) != request["n_frames"]:
        raise ValueError(f"stress model {model!r} made {len(frames)} frames, "
                         f"the request asks for {request['n_frames']}")
    write_mp4(request["video"], frames, request["fps"])
    print(f"{key}: stress model {model} -> {request['video']}")
    return Path(request["video"])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--study", required=True, choices=sorted(SOURCES))
    parser.add_argument("--model", required=True, help="the stress model (SOURCES)")
    parser.add_argument("--source", action="append", default=[], metavar="NAME=DIR",
                        type=lambda s: tuple(s.split("=", 1)), help="a reference model's rollout directory")
    parser.add_argument("--key", required=True, help="the rollout's directory under each --source")
    parser.add_argument("--request", required=True, type=Path, help="request.json written by the workflow")
    parser.add_argument("--sequence", type=Path, default=None, help="PersistBench: the prepared sequence")
    args = parser.parse_args(argv)
    if args.model not in SOURCES[args.study]:
        parser.error(_unknown(args.study, args.model))
    make(args.study, args.model, {n: Path(d) for n, d in args.source}, args.key, args.request, args.sequence)


if __name__ == "__main__":
    main()
