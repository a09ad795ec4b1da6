"""External world models on WorldMemBench: the request files of one case and trajectory.

The papers' nine models (Appendix C) each have their own code, environment and inputs: camera
poses (HY-WorldPlay, Matrix-Game 3.5, LingBot), keyboard/mouse (Matrix-Game 3) or captions
(YUME). The workflow cannot host them, so a model is a shell command template from the config;
for each rollout the workflow writes a *request* directory and runs the command, which must write
the video. The contract (also in docs/external-models.md):

The rollout's directory holds ``trajectory.json``, the target camera path
(trajectories.Trajectory.to_json): per-frame camera-to-world poses (OpenCV: x right, y down, z
forward; 4x4), intrinsics K (pixels, of the case camera's width x height), fps, n_frames and the
phases V, D_k, R_k, H with frame ranges; the one copy, which the command reads (``{trajectory}``)
and the scoring reads beside the video as for a reference model. request/ holds
  * ``conditioning.png``: the case's conditioning frame (frame 0, the V reference);
  * ``prompt.txt``: the content prompt;
  * ``captions.txt``: one caption per frame (trajectories.CAPTIONS: Left, Right, Up, Down,
    Forward, Backward, Hold; on the translation loop Left and Right are sideways moves with the
    orientation fixed), for caption-driven models;
  * ``request.json``: all of the above and ``trajectory`` in one object (paths absolute) plus ``caption_segments``
    (runs of equal captions, [{caption, start, end}]) and ``video`` (where to write).
The command's placeholders are PLACEHOLDERS (e.g. ``{request}``, ``{video}``, ``{conditioning}``,
``{prompt_file}``): paths, numbers and ids the workflow made, each a safe word
(worldmemory.external.template); the prompt, free text, is read from ``{prompt_file}``. The
command must exit 0 and leave at ``{video}`` a video that decord reads, with exactly n_frames
frames (any resolution): a model whose native length differs takes its own ``trajectory_params``
(n_frames) in the config. Running, timing out and logging the command, and checking the template
and the video, are the studies' shared contract (worldmemory.external).
"""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

from worldmemory.external import VIDEO_NAME
from worldmemory.worldmembench.trajectories import Trajectory, save_trajectory

PLACEHOLDERS = ("request", "video", "conditioning", "prompt_file", "trajectory",
                "captions", "width", "height", "n_frames", "fps", "case", "trajectory_name")


def write_request(case: dict, trajectory: Trajectory, width: int, height: int,
                  out_dir: Path) -> dict:
    """Write the request files of one rollout under ``out_dir``/request and its trajectory.json
    in ``out_dir``, beside the video; return request.json (plus the key "request", its own path).
    ``width`` x ``height`` is the frame size the trajectory's intrinsics were built for."""
    request_dir = out_dir / "request"
    request_dir.mkdir(parents=True, exist_ok=True)
    conditioning = request_dir / "conditioning.png"
    shutil.copyfile(case["conditioning_frame"], conditioning)
    (request_dir / "prompt.txt").write_text(case["prompt"] + "\n")
    trajectory_file = save_trajectory(trajectory, out_dir)
    (request_dir / "captions.txt").write_text("\n".join(trajectory.captions) + "\n")
    request = {
        "case": case["id"],
        "family": case["family"],
        "trajectory_name": trajectory.name,
        "prompt": case["prompt"],
        "prompt_file": str((request_dir / "prompt.txt").resolve()),
        "conditioning": str(conditioning.resolve()),
        "trajectory": str(trajectory_file.resolve()),
        "captions": str((request_dir / "captions.txt").resolve()),
        "caption_segments": caption_segments(trajectory.captions),
        "width": int(width),
        "height": int(height),
        "n_frames": trajectory.n_frames,
        "fps": float(trajectory.fps),
        "video": str((out_dir / VIDEO_NAME).resolve()),
        "label": f"{case['id']}/{trajectory.name}",
    }
    (request_dir / "request.json").write_text(json.dumps(request, indent=2) + "\n")
    return {**request, "request": str((request_dir / "request.json").resolve())}


def caption_segments(captions: list[str]) -> list[dict]:
    """Runs of equal per-frame captions as [{caption, start, end}] (end exclusive)."""
    segments, start = [], 0
    for caption, run in itertools.groupby(captions):
        n = len(list(run))
        segments.append({"caption": caption, "start": start, "end": start + n})
        start += n
    return segments
