"""Reference "world models" with known memory behaviour, for WorldMemBench's embedded default.

The paper scores video world models on what they keep across departures and revisits (Section
3.3): Static Memory compares each revisit with the initial view (Section 4.4), Dynamic Memory asks
whether an event kept evolving while out of view (Section 4.5) and Camera Following compares the
drawn camera motion with the prescribed one (Section 4.3). Each reference model below renders a
procedural case world (world.py) along a trajectory with one known behaviour, so every metric can
be calibrated against an expected answer:

* ``omniscient``: perfect memory and exact camera; frame t renders the world at the target pose.
* ``amnesic``: whatever leaves the view is forgotten and re-sampled when it comes back; a dynamic
  event also restarts from its initial state (no out-of-view evolution).
* ``drifting``: appearance and shape drift with the time an entity spent out of view, towards
  what ``amnesic`` re-samples on the entity's first return; events are not reset, since the
  drift acts on what things look like, not on how far they have evolved.
* ``camera_error``: perfect memory, but the camera turns and steps sideways by the wrong amounts:
  each drawn pose has the target rotation (relative to the start pose) scaled by
  ``rotation_scale``, and the component of its displacement from the start centre along the
  start camera's right axis scaled by ``translation_scale``. The translation loop's square is
  drawn as a rectangle, which no similarity maps onto the square, so RPE_trans (Eq. 2, aligned by
  Sim(3)) reads the error as RPE_rot (Eq. 3) reads the rotation's; the loop still closes, so what
  was seen is seen again.

An entity (person, object, event: one instance id) is out of view at a frame when it covers fewer
than ``min_pixels`` pixels. The room (instance 0) is always partly visible, so for it the
conditioning view counts instead: it is out of view while the camera's rotation from the start
pose exceeds the horizontal field of view.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from worldmemory.common import params as common_params
from worldmemory.common.geometry import pose, rotation_angle
from worldmemory.common.seeds import stable_rng
from worldmemory.worldmembench.trajectories import Trajectory
from worldmemory.worlds.raycaster import World, perturb, render

DEFAULT_PARAMS = {
    "omniscient": {},
    "amnesic": {"min_pixels": 20},
    # rate: perturbation amount per second out of view. At 0.1 the drift reached 0.4-0.6 by the
    # first return, where a texture blended half-way reads as far from the original as a fresh draw
    # (drifting below amnesic at 10 of the main job's 45 revisit slots); at 0.03 at none.
    "drifting": {"min_pixels": 20, "rate": 0.03},
    "camera_error": {"rotation_scale": 0.67, "translation_scale": 0.67},
}
# The smallest value each parameter may take (its type is its default's): an entity covering 0
# pixels would never leave the view, and a negative rate would drift away from the target.
PARAM_MINIMUM = {"min_pixels": 1, "rate": 0}
NAMESPACE = "worldmembench/reference"


def resolve_params(model: str, params: dict) -> dict:
    """The model's parameters: its defaults updated with ``params``; unknown names raise."""
    return common_params.resolve_params(model, params, DEFAULT_PARAMS, PARAM_MINIMUM)


def run_reference(model: str, params: dict, case: dict, trajectory: Trajectory, width: int,
                  height: int) -> tuple[np.ndarray, dict]:
    """Roll out reference ``model`` on a procedural case along ``trajectory``.

    Returns frames uint8 (T, H, W, 3) and the ground truth of what was drawn: 'instance' int16
    (T, H, W), 'depth' float32 z-depth (T, H, W), 'poses' float64 (T, 4, 4) drawn camera-to-world,
    'K' (3, 3) and, for a world with an event, 'event_started' bool (T,) and 'event_progress'
    float32 (T,) of the drawn event (after any reset).
    """
    params = resolve_params(model, params)
    world = case_world(case)
    if len(world.events) > 1:
        raise ValueError(f"case {case['id']}: reference models handle at most one event")
    K = trajectory.intrinsics
    if not np.allclose(K[:2, 2], [width / 2, height / 2]):
        raise ValueError(f"trajectory intrinsics {K.tolist()} were not built for {width}x{height}")
    poses = trajectory.poses
    if model == "camera_error":
        poses = scale_sideways(scale_rotation(poses, params["rotation_scale"]), params["translation_scale"])
    if model in ("amnesic", "drifting"):
        steps = _forgetting(model, params, case["id"], world, trajectory, width, height)
    else:
        steps = ((world, render(world, c2w, K, width, height, t)) for t, c2w in enumerate(poses))

    frames, instance, depth, started, progress = [], [], [], [], []
    for t, (drawn, out) in enumerate(steps):
        frames.append(out["rgb"])
        instance.append(out["instance"].astype(np.int16))
        depth.append(out["depth"])
        if drawn.events:
            state = drawn.events[0].state(t)
            started.append(state["started"])
            progress.append(state["progress"])
    truth = {"instance": np.stack(instance), "depth": np.stack(depth),
             "poses": np.asarray(poses, dtype=np.float64), "K": np.asarray(K, dtype=np.float64)}
    if world.events:
        truth["event_started"] = np.array(started, dtype=bool)
        truth["event_progress"] = np.array(progress, dtype=np.float32)
    return np.stack(frames), truth


def case_world(case: dict) -> World:
    """The procedural world of a case manifest; reference models cannot run without one."""
    if "world" not in case:
        raise ValueError(f"case {case['id']}: no world description; reference models need a "
                         f"procedural case (cases.write_embedded_cases)")
    return World.from_dict(case["world"])


def scale_rotation(poses, scale: float) -> np.ndarray:
    """Poses whose rotation relative to the first pose is scaled by ``scale`` (same axis, angle
    times scale); centres are unchanged. A camera that under- or over-turns (Section 4.3)."""
    from scipy.spatial.transform import Rotation  # 0.26 s to import: only the camera-error model's jobs pay it

    poses = np.asarray(poses, dtype=float)
    start = poses[0, :3, :3]
    relative = Rotation.from_matrix(start.T @ poses[:, :3, :3]).as_rotvec()
    return pose(start @ Rotation.from_rotvec(scale * relative).as_matrix(), poses[:, :3, 3])


def scale_sideways(poses, scale: float) -> np.ndarray:
    """Poses whose centre's displacement from the first centre has its component along the first
    pose's right axis (camera x) scaled by ``scale``; orientations are unchanged. A camera that
    under- or over-steps sideways (Section 4.3); a pure rotation is left as it is."""
    poses = np.array(poses, dtype=float)
    right = poses[0, :3, 0]
    offsets = poses[:, :3, 3] - poses[0, :3, 3]
    poses[:, :3, 3] += (scale - 1.0) * (offsets @ right)[:, None] * right
    return poses


def horizontal_fov(K, width: int) -> float:
    """Horizontal field of view in radians of pinhole K for an image ``width`` pixels wide."""
    return float(np.arctan(K[0, 2] / K[0, 0]) + np.arctan((width - K[0, 2]) / K[0, 0]))


def _forgetting(model: str, params: dict, case_id: str, world: World, trajectory: Trajectory,
                width: int, height: int):
    """(world drawn, render) per frame for 'amnesic' and 'drifting'.

    Visibility is decided on the frame rendered with the world as it stands; an entity back in
    view after being out of view changes from that frame on, and the frame is rendered again.
    amnesic: the entity is re-sampled (perturb amount 1) from the world as it stands, with the
    rng of its k-th return (k = 0, 1, ...), and an event restarts from its initial state.
    drifting: the world is the original with each returned entity perturbed by
    min(1, rate x seconds out of view so far) towards one fixed target per entity (rng k = 0), so
    the drift grows monotonically with time away and rate 0 leaves the world unchanged.
    The rng does not depend on the model: drifting heads for the very entity amnesic draws on the
    first return (common random numbers), so at a first revisit the two differ only in how far
    they went, and omniscient >= drifting >= amnesic does not hang on two unrelated draws.
    """
    K, poses = trajectory.intrinsics, trajectory.poses
    fov = horizontal_fov(K, width)
    ids = [e.instance for e in world.entities()]
    was_out = dict.fromkeys(ids, False)  # out of view at the previous frame
    frames_out = dict.fromkeys(ids, 0)
    returns = dict.fromkeys(ids, 0)
    drift = {}

    def rng(instance: int, k: int) -> np.random.Generator:
        return stable_rng(f"{case_id}/{trajectory.name}/{instance}/{k}", NAMESPACE)

    original = world
    for t, c2w in enumerate(poses):
        out = render(world, c2w, K, width, height, t)
        pixels = np.bincount(out["instance"].ravel(), minlength=max(ids) + 1)
        visible = {i: pixels[i] >= params["min_pixels"] for i in ids}
        visible[world.room.instance] = rotation_angle(poses[0, :3, :3].T @ c2w[:3, :3]) <= fov
        back = [i for i in ids if visible[i] and was_out[i]]
        for i in ids:
            was_out[i] = not visible[i]
            frames_out[i] += int(not visible[i])
        if back:
            if model == "amnesic":
                for i in back:
                    world = _resample(world, i, t, rng(i, returns[i]))
                    returns[i] += 1
            else:
                for i in back:
                    drift[i] = min(1.0, params["rate"] * frames_out[i] / trajectory.fps)
                world = original
                for i, amount in sorted(drift.items()):
                    world = perturb(world, [i], amount, rng(i, 0))
            out = render(world, c2w, K, width, height, t)
        yield world, out


def _resample(world: World, instance: int, frame: int, rng: np.random.Generator) -> World:
    """Re-sample one entity's appearance and shape; an event restarts at ``frame`` (one that has
    not yet started is already in its initial state and keeps its start)."""
    world = perturb(world, [instance], 1.0, rng)
    events = [replace(e, start=max(e.start, frame)) if e.instance == instance else e
              for e in world.events]
    return replace(world, events=events)
