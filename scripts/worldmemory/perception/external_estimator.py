"""Estimators run as external commands: the papers' DA3 and ViPE, which live in their own code.

WorldMemBench reads camera poses from DA3 and ViPE (Section 4.3, Eq. 2) and depth from DA3
(Section 4.4); neither is a transformers class. As for an external world model, a researcher
wraps the estimator's own repository and environment in a command template (the config's
``command``; its placeholders stand for the paths below, each checked to be a safe word,
worldmemory.external.template). Per video the workflow writes, in a fresh temporary directory:

  {video}       the frames, lossless (libx264rgb .mkv; decord, ffmpeg or OpenCV read it);
  {intrinsics}  (camera only) a JSON file {"K": 3 x 3 pinhole intrinsics in pixels of the video,
                "width", "height", "n_frames"};

and the command must write {out}, an .npz holding

  ``poses`` (camera)  (T, 4, 4) camera-to-world, OpenCV axes (x right, y down, z forward), in any
                      gauge and scale: frame 0 is made the identity here, and Eq. 2 aligns the
                      path by Sim(3);
  ``depth`` (depth)   (T, H, W) metric z-depth at the video's size, non-finite where unknown.

A command that fails, runs past ``timeout_minutes`` or writes a malformed file stops the job with
a message quoting its command and the end of its output (worldmemory.external.command).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

from worldmemory.common.video import write_video
from worldmemory.external.command import TimeLimit, run_model
from worldmemory.perception.base import rgb_frames

OUTPUT = "out"
PLACEHOLDERS = {"camera": ("video", "intrinsics", OUTPUT), "depth": ("video", OUTPUT)}
FPS = 16.0  # the frame rate written into the video; estimators of single frames ignore it


class _ExternalCommand:
    capability: str
    name = "external-command"

    def __init__(self, command: str, timeout_minutes: float | None = None):
        from worldmemory.external.template import check_template

        check_template(command, PLACEHOLDERS[self.capability], (OUTPUT,))
        self.command = command
        self.time_limit = TimeLimit(timeout_minutes)  # shared by every video of the job
        self.calls = 0

    def _run(self, frames: np.ndarray, K: np.ndarray | None = None) -> dict[str, np.ndarray]:
        frames = rgb_frames(frames)
        self.calls += 1
        tmp = Path(tempfile.mkdtemp(prefix="worldmemory-estimator-"))  # kept if the command fails: its log
        request = {"video": str(tmp / "frames.mkv"), OUTPUT: str(tmp / "estimate.npz"),
                   "label": f"video {self.calls} of this job"}
        write_video(request["video"], frames, FPS)
        if K is not None:
            request["intrinsics"] = str(tmp / "intrinsics.json")
            Path(request["intrinsics"]).write_text(json.dumps({
                "K": np.asarray(K, float).tolist(), "width": frames.shape[2], "height": frames.shape[1],
                "n_frames": len(frames)}))
        out = run_model(self.command, request, tmp / "command.log", PLACEHOLDERS[self.capability],
                        self.time_limit, output=OUTPUT, who=f"external {self.capability} estimator")
        try:
            with np.load(out, allow_pickle=False) as npz:
                fields = {key: npz[key] for key in npz.files}
        except (OSError, ValueError) as e:
            raise ValueError(f"external {self.capability} estimator `{self.command}`: {out} is not an "
                             f".npz file ({e})") from None
        shutil.rmtree(tmp)
        return fields

    def _field(self, fields: dict, key: str, shape: tuple) -> np.ndarray:
        if key not in fields or fields[key].shape != shape:
            found = {k: v.shape for k, v in fields.items()}
            raise ValueError(f"external {self.capability} estimator `{self.command}` must write {key!r} of "
                             f"shape {shape} into {{{OUTPUT}}}; it wrote {found}")
        return fields[key].astype(np.float64 if key == "poses" else np.float32)


class ExternalCommandCamera(_ExternalCommand):
    """Camera poses from an external command (module docstring): e.g. DA3 or ViPE."""

    capability = "camera"

    def estimate(self, frames: np.ndarray, K: np.ndarray) -> np.ndarray:
        poses = self._field(self._run(frames, K), "poses", (len(frames), 4, 4))
        if not np.isfinite(poses).all() or not np.allclose(poses[:, 3], [0, 0, 0, 1]):
            raise ValueError(f"external camera estimator `{self.command}`: poses must be finite 4 x 4 "
                             "rigid transforms with last row (0, 0, 0, 1)")
        return np.linalg.inv(poses[0]) @ poses


class ExternalCommandDepth(_ExternalCommand):
    """Metric z-depth from an external command (module docstring): e.g. DA3."""

    capability = "depth"
    metric = True

    def estimate(self, frames: np.ndarray) -> np.ndarray:
        return self._field(self._run(frames), "depth", np.asarray(frames).shape[:3])
