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
* ``displaced``: the omniscient view, but the target is drawn misplaced while the input camera
  does not see it: turned about the vertical axis by ``drift_deg_per_frame`` degrees of longitude
  per frame out of view (k x drift at the k-th frame, ``frames_away``), back in place when the
  input camera sees it again. A known motion drift: Cont falls as the drift grows; Perm stays 1
  while the moved target stays in the reference view, and App nearly so (the same pixels, moved).
* ``recoloured``: the omniscient view, but while the input camera does not see the target its
  colours are turned by ``hue_shift_deg`` degrees about the RGB grey axis (``hue_rotation``; 120
  cycles the channels exactly, other angles clip at the colour cube). A known appearance change:
  App falls as the shift grows towards 180, Perm and Cont stay.

Each returns the frames and the ground truth of what it drew: 'instance' (T, h, w) (the target
counts where it is drawn at opacity >= 0.5) and 'same_entity' (T,) bool, the oracle judge's
answer (the drawn target is the reference target).
"""

from __future__ import annotations

import numpy as np

from worldmemory.common import params as common_params
from worldmemory.common.equirect import perspective, project, view_directions

DEFAULT_PARAMS = {"omniscient": {}, "warp_only": {}, "forgetting": {"fade_frames": 8},
                  "displaced": {"drift_deg_per_frame": 1.0}, "recoloured": {"hue_shift_deg": 120.0}}
PARAM_MINIMUM = {"fade_frames": 1}  # the smallest value (its type is its default's): fade() divides by it
NEEDS_BACKGROUND = {"forgetting": "fades the target into", "displaced": "draws the target moved over"}


def resolve_params(model: str, params: dict) -> dict:
    """The model's parameters: its defaults updated with ``params``; unknown names raise."""
    return common_params.resolve_params(model, params, DEFAULT_PARAMS, PARAM_MINIMUM)


def run_reference(model: str, params: dict, panorama, instance, background, cameras: dict,
                  target: int, visible_in_input) -> tuple[np.ndarray, dict]:
    """Roll out reference ``model`` on one sequence.

    panorama (T, H, W, 3) uint8 and instance (T, H, W): the 360-degree video and its instance
    map; background (H, W, 3): the panorama without the target (None if unknown); cameras: sequence.json's
    "cameras" (input/reference yaw and pitch, fov_deg, width, height); target: the target's
    instance id; visible_in_input (T,) bool. Returns frames (T, h, w, 3) uint8 and the truth.
    """
    params = resolve_params(model, params)
    if model in NEEDS_BACKGROUND and background is None:
        raise ValueError(f"{model} {NEEDS_BACKGROUND[model]} the panorama without it "
                         "(background.png), which only the embedded default renders: run it on "
                         "persistbench.sequences.source: embedded")
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
        opacity = fade(visible_in_input, params["fade_frames"])
        for t, (y, q) in enumerate(path):
            behind = perspective(background, y, q, fov, w, h).astype(float)
            a = np.where(drawn[t], opacity[t], 1.0)[..., None]
            frames[t] = np.round(a * frames[t] + (1 - a) * behind).astype(np.uint8)
        drawn &= (opacity >= 0.5)[:, None, None]
        same = opacity >= 0.5
    elif model == "displaced":
        shift = params["drift_deg_per_frame"] * frames_away(visible_in_input)
        for t in np.flatnonzero(shift):
            y, q = path[t]
            turned = y - shift[t]  # the view from yaw - s sees the world turned by +s in longitude
            drawn[t] = perspective(instance[t] == target, turned, q, fov, w, h, nearest=True)
            frames[t] = perspective(background, y, q, fov, w, h)
            frames[t][drawn[t]] = perspective(panorama[t], turned, q, fov, w, h)[drawn[t]]
    elif model == "recoloured":
        turn = hue_rotation(params["hue_shift_deg"])
        for t in np.flatnonzero(frames_away(visible_in_input)):
            frames[t][drawn[t]] = np.clip(np.round(frames[t][drawn[t]] @ turn.T), 0, 255).astype(np.uint8)
    return frames, {"instance": drawn.astype(np.int16) * target, "same_entity": same}


def _seen_by(directions, yaw, pitch, fov, width, height) -> np.ndarray:
    """Which of the world ``directions`` (h, w, 3) the view (yaw, pitch) images."""
    px, in_front = project(directions, yaw, pitch, fov, width, height)
    with np.errstate(invalid="ignore"):
        return (in_front & (px[..., 0] >= 0) & (px[..., 0] < width) & (px[..., 1] >= 0)
                & (px[..., 1] < height))


def frames_away(visible_in_input) -> np.ndarray:
    """Per frame, for how many frames the input camera has not seen the target: 0 while it sees
    it, k at the k-th frame out of view (counted from frame 0 if it starts out of view)."""
    away, count = np.zeros(len(visible_in_input), dtype=int), 0
    for t, seen in enumerate(np.asarray(visible_in_input, dtype=bool)):
        count = 0 if seen else count + 1
        away[t] = count
    return away


def fade(visible_in_input, fade_frames: int) -> np.ndarray:
    """Target opacity per frame: 1 while the input camera sees it, then 1 - k / fade_frames at the
    k-th frame out of view (``frames_away``), down to 0."""
    away = frames_away(visible_in_input)
    if fade_frames <= 0:
        return (away == 0).astype(float)
    return np.maximum(0.0, 1.0 - away / fade_frames)


def hue_rotation(degrees: float) -> np.ndarray:
    """(3, 3) rotation of RGB colours about the grey axis: each colour's hue
    turns by ``degrees`` while its grey part and its distance from grey stay, so the change is
    one known amount for every colour (120 maps red to green, green to blue, blue to red)."""
    from scipy.spatial.transform import Rotation  # 0.26 s to import: only the recoloured model's jobs pay it

    return Rotation.from_rotvec(np.radians(degrees) * np.full(3, 1 / np.sqrt(3))).as_matrix()
