"""Reference "4D models" with known memory, for PersistBench's embedded default.

A 4D model renders the reference camera's view from the input video (PersistBench, Method 1).
Each reference model below does it with one known behaviour, from the sequence's 360-degree
video, so that Perm / Cont / App are calibrated against expected answers:

* ``omniscient``: the ground-truth panorama cropped along the reference path (the paper's
  "Omniscient Ref." row): Perm, Cont and App are 1.
* ``warp_only``: reprojects the input camera's current frame into the reference view (a pure
  rotation about the 360 camera's centre is an exact homography) and has nothing (black) where
  the input camera sees nothing: the target is kept only while the input camera sees it, so Perm
  is about 0 on the invisible segment.
* ``forgetting``: the omniscient view, but the target fades into the background once it has left
  the input view: its opacity falls linearly to 0 over ``fade_frames`` frames after the exit and
  comes back when the input camera sees it again.

Each returns the frames and the ground truth of what it drew: 'instance' (T, h, w) (the target
counts where it is drawn at opacity >= 0.5) and 'same_entity' (T,) bool, the oracle judge's
answer (the drawn target is the reference target).
"""

from __future__ import annotations

import numpy as np

from worldmemory.common import params as common_params
from worldmemory.persistbench.equirect import perspective, project, view_directions

DEFAULT_PARAMS = {"omniscient": {}, "warp_only": {}, "forgetting": {"fade_frames": 8}}


def resolve_params(model: str, params: dict) -> dict:
    """The model's parameters: its defaults updated with ``params``; unknown names raise."""
    return common_params.resolve_params(model, params, DEFAULT_PARAMS)


def run_reference(model: str, params: dict, panorama, instance, background, cameras: dict,
                  target: int, visible_in_input) -> tuple[np.ndarray, dict]:
    """Roll out reference ``model`` on one sequence.

    panorama (T, H, W, 3) uint8 and instance (T, H, W): the 360-degree video and its instance
    map; background (H, W, 3): the panorama without the target (None if unknown); cameras: sequence.json's
    "cameras" (input/reference yaw and pitch, fov_deg, width, height); target: the target's
    instance id; visible_in_input (T,) bool. Returns frames (T, h, w, 3) uint8 and the truth.
    """
    params = resolve_params(model, params)
    fov, w, h = cameras["fov_deg"], cameras["width"], cameras["height"]
    path = list(zip(cameras["reference_yaw"], cameras["reference_pitch"]))
    frames = np.stack([perspective(p, y, q, fov, w, h) for p, (y, q) in zip(panorama, path)])
    drawn = np.stack([perspective(i, y, q, fov, w, h, nearest=True) == target
                      for i, (y, q) in zip(instance, path)])
    n = len(frames)
    same = np.ones(n, dtype=bool)
    if model == "warp_only":
        for t, ((y, q), yi, qi) in enumerate(zip(path, cameras["input_yaw"],
                                                 cameras["input_pitch"])):
            seen = _seen_by(view_directions(y, q, fov, w, h), yi, qi, fov, w, h)
            frames[t][~seen] = 0
            drawn[t] &= seen
    elif model == "forgetting":
        if background is None:
            raise ValueError("forgetting fades the target into the panorama without it "
                             "(background.png), which only the embedded default renders")
        opacity = fade(visible_in_input, params["fade_frames"])
        for t, (y, q) in enumerate(path):
            behind = perspective(background, y, q, fov, w, h).astype(float)
            a = np.where(drawn[t], opacity[t], 1.0)[..., None]
            frames[t] = np.round(a * frames[t] + (1 - a) * behind).astype(np.uint8)
        drawn &= (opacity >= 0.5)[:, None, None]
        same = opacity >= 0.5
    return frames, {"instance": drawn.astype(np.int16) * target, "same_entity": same}


def _seen_by(directions, yaw, pitch, fov, width, height) -> np.ndarray:
    """Which of the world ``directions`` (h, w, 3) the view (yaw, pitch) images."""
    px, in_front = project(directions, yaw, pitch, fov, width, height)
    with np.errstate(invalid="ignore"):
        return (in_front & (px[..., 0] >= 0) & (px[..., 0] < width) & (px[..., 1] >= 0)
                & (px[..., 1] < height))


def fade(visible_in_input, fade_frames: int) -> np.ndarray:
    """Target opacity per frame: 1 while the input camera sees it (and before it is first seen
    leaving), then 1 - k / fade_frames at the k-th frame out of view, down to 0."""
    visible = np.asarray(visible_in_input, dtype=bool)
    opacity, away = np.ones(len(visible)), 0
    for t, seen in enumerate(visible):
        away = 0 if seen else away + 1
        opacity[t] = max(0.0, 1.0 - away / fade_frames) if fade_frames > 0 else float(seen)
    return opacity
