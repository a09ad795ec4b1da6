"""External world models: a command template, run once per case and trajectory.

The papers' nine models (Appendix C) each have their own code, environment and inputs: camera
poses (HY-WorldPlay, Matrix-Game 3.5, LingBot), keyboard/mouse (Matrix-Game 3) or captions
(YUME). The workflow cannot host them, so a model is a shell command template from the config;
for each rollout the workflow writes a *request* directory and runs the command, which must write
the video. The contract (also in the README):

request/ holds
  * ``conditioning.png``: the case's conditioning frame (frame 0, the V reference);
  * ``prompt.txt``: the content prompt;
  * ``trajectory.json``: the target camera path (trajectories.Trajectory.to_json): per-frame
    camera-to-world poses (OpenCV: x right, y down, z forward; 4x4), intrinsics K (pixels, of the
    case camera's width x height), fps, n_frames and the phases V, D_k, R_k, H with frame ranges;
  * ``captions.txt``: one caption per frame (trajectories.CAPTIONS: Left, Right, Up, Down,
    Forward, Backward, Hold; on the translation loop Left and Right are sideways moves with the
    orientation fixed), for caption-driven models;
  * ``request.json``: all of the above in one object (paths absolute) plus ``caption_segments``
    (runs of equal captions, [{caption, start, end}]) and ``video`` (where to write).
The command's placeholders are the keys of ``placeholders`` (e.g. ``{request}``, ``{video}``,
``{conditioning}``, ``{prompt}``); values are shell-quoted. The command must exit 0 and leave at
``{video}`` a video that decord reads, with exactly n_frames frames (any resolution): a model
whose native length differs takes its own ``trajectory_params`` (n_frames) in the config.
"""

from __future__ import annotations

import itertools
import json
import shlex
import shutil
import string
import subprocess
from pathlib import Path

from worldmemory.common.video import video_shape
from worldmemory.worldmembench.trajectories import Trajectory

PLACEHOLDERS = ("request", "video", "conditioning", "prompt", "prompt_file", "trajectory",
                "captions", "width", "height", "n_frames", "fps", "case", "trajectory_name")
VIDEO_NAME = "video.mp4"
OUTPUT_TAIL = 2000  # characters of the command's output quoted in an error


def check_template(template: str, placeholders: tuple[str, ...] = PLACEHOLDERS) -> None:
    """Raise ValueError if ``template`` uses a placeholder outside PLACEHOLDERS, or tells the
    model neither where to write ({video}) nor where that is written down ({request})."""
    try:
        names = {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}
    except ValueError as e:
        raise ValueError(f"command template {template!r}: {e}") from e
    unknown = sorted(names - set(placeholders))
    if unknown:
        raise ValueError(f"command template uses unknown placeholders {unknown}; valid: "
                         f"{', '.join(placeholders)}")
    if not names & {"video", "request"}:
        raise ValueError("command template must pass {video} (the output path) or {request} "
                         "(request.json, which holds it)")


def write_request(case: dict, trajectory: Trajectory, width: int, height: int,
                  out_dir: Path) -> dict:
    """Write the request files of one rollout under ``out_dir``/request; return request.json
    (plus the key "request", its own path). ``width`` x ``height`` is the frame size the
    trajectory's intrinsics were built for."""
    request_dir = out_dir / "request"
    request_dir.mkdir(parents=True, exist_ok=True)
    conditioning = request_dir / "conditioning.png"
    shutil.copyfile(case["conditioning_frame"], conditioning)
    (request_dir / "prompt.txt").write_text(case["prompt"] + "\n")
    (request_dir / "trajectory.json").write_text(json.dumps(trajectory.to_json()) + "\n")
    (request_dir / "captions.txt").write_text("\n".join(trajectory.captions) + "\n")
    request = {
        "case": case["id"],
        "family": case["family"],
        "trajectory_name": trajectory.name,
        "prompt": case["prompt"],
        "prompt_file": str((request_dir / "prompt.txt").resolve()),
        "conditioning": str(conditioning.resolve()),
        "trajectory": str((request_dir / "trajectory.json").resolve()),
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


def run_model(template: str, request: dict, log_path: Path,
              placeholders: tuple[str, ...] = PLACEHOLDERS) -> Path:
    """Run the command for one request; its output goes to ``log_path``. Returns the video path.

    ``request`` holds a value for every placeholder and "label", the rollout's name in messages.
    Raises RuntimeError naming the rollout and the exit status with the end of the command's
    output when it fails or writes no video.
    """
    check_template(template, placeholders)
    values = {key: shlex.quote(str(request[key])) for key in placeholders}
    command = template.format(**values)
    video = Path(request["video"])
    video.unlink(missing_ok=True)
    with open(log_path, "w") as log:
        log.write(f"$ {command}\n")
        log.flush()
        status = subprocess.run(["bash", "-c", command], stdout=log, stderr=subprocess.STDOUT).returncode
    where = request["label"]
    if status != 0 or not video.is_file():
        tail = log_path.read_text()[-OUTPUT_TAIL:]
        problem = f"exited with status {status}" if status else f"wrote no video at {video}"
        raise RuntimeError(f"external model on {where}: `{command}` {problem}; its output "
                           f"({log_path}) ends with:\n{tail}")
    return video


def check_video(video: Path, n_frames: int, where: str) -> tuple[int, int]:
    """(height, width) of a model's video; ValueError unless it has exactly ``n_frames``."""
    try:
        length, height, width = video_shape(video)
    except RuntimeError as e:
        raise ValueError(f"{where}: {e}") from e
    if length != n_frames:
        raise ValueError(f"{where}: the model wrote {length} frames, the trajectory has "
                         f"{n_frames}; give the model its native length with "
                         f"trajectory_params: {{n_frames: {length}}} in its config entry")
    return height, width
