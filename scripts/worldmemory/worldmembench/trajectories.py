"""Camera trajectories of WorldMemBench (Section 3.3, Figure 3; Appendices C, D).

Every trajectory leaves the conditioning view and comes back to it: an initial observation hold
V, then departures D_k each followed by its revisit R_k, then a final hold H (the "initial hold,
departures, revisits, and final stationary hold" of Appendix D.1).

Conventions
-----------
* Poses are 4x4 camera-to-world matrices in the OpenCV convention (x right, y down, z forward),
  the form HY-WorldPlay, Matrix-Game 3.5, LingBot World and Evoke consume (Appendix C). The world
  frame is the camera frame of frame 0, the conditioning frame, so frame 0 is the identity.
* "Left" yaw turns the view to the camera's left: after a left yaw by a, the forward axis (third
  column of R) is (-sin a, 0, cos a); a 90 degree left turn looks along world -x.
* "Up" pitch tilts the view up: after pitching up by a, forward is (0, -sin a, cos a) (y is down).
* Translation directions are camera-frame: Forward +z, Backward -z, Right +x, Left -x.

Frame budget (the paper gives no phase lengths, only totals of 481-551 frames, Appendix C)
------------------------------------------------------------------------------------------
``n_frames`` (default 493, LingBot World's "493-frame target trajectory" and YUME's LRLR/LRUD
length) is split deterministically: ``hold_frames`` for V (default 64, 4 s at 16 fps, so dynamic
events can visibly start during the initial hold, Section 4.5), then equal-length moves
(``move_frames`` each; by default the frames left after both holds, divided evenly), then H, which
gets ``final_hold_frames`` (default 21, the static return poses Evoke appends to cover the final
return view, Appendix C) plus the division remainder. Departure and revisit of the same k thus
have equal length. ``build`` keeps the speed across cycle counts (``resolve``): LRLRLR's moves are
as long as LRLR's, so it has two moves more frames (as 551 against 493 in Appendix C).

Each move eases with a half cosine, so the camera is at rest at every turn point, square corner
and return: motion reverses or changes direction without a velocity jump.
Each frame's caption is the motion bringing the camera from the previous frame to it (Hold when
static); caption-driven models such as YUME take these instead of poses (Appendix C).
"""

from __future__ import annotations

import functools
import inspect
import json
import typing
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from worldmemory.common.geometry import intrinsics, pose, rot_x, rot_y
from worldmemory.common.limits import fps_problem, frames_problem
from worldmemory.common.params import expected, unknown_key

CAPTIONS = ("Left", "Right", "Up", "Down", "Forward", "Backward", "Hold")
ROTATION_PATTERNS = ("LR", "LRLR", "LRLRLR", "LRUD", "LR-Hold")
TRAJECTORIES = ("translation",) + ROTATION_PATTERNS
_AXES = {"LR": "L", "LRLR": "LL", "LRLRLR": "LLL", "LRUD": "LU", "LR-Hold": "L"}  # one axis per cycle

DEFAULT_N_FRAMES = 493
DEFAULT_HOLD_FRAMES = 64
DEFAULT_FINAL_HOLD_FRAMES = 21
DEFAULT_FPS = 16.0
DEFAULT_WIDTH, DEFAULT_HEIGHT, DEFAULT_FOV_DEG = 832, 480, 60.0
MIN_MOVE_FRAMES = 2  # at least one in-between frame, so a move is motion rather than a cut
CAMERA_KEYS = ("width", "height", "fov_deg")  # builder parameters that follow the case camera (the rollout's)


@dataclass(frozen=True)
class Phase:
    """One camera phase, covering frames [start, end).

    name is 'V' (initial hold), 'D1', 'R1', 'D2', 'R2', ... (departure / revisit k), or 'H'
    (final hold); the notation of Section 3.3.
    """

    name: str
    start: int
    end: int

    def __len__(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, eq=False)  # eq=False: the generated __eq__/__hash__ cannot handle arrays
class Trajectory:
    """A prescribed camera path with its phases and per-frame captions.

    poses: (T, 4, 4) OpenCV camera-to-world; intrinsics: (3, 3) pinhole K in pixels.
    """

    name: str
    poses: np.ndarray
    intrinsics: np.ndarray
    phases: list[Phase]
    captions: list[str]
    fps: float = DEFAULT_FPS

    def __post_init__(self):
        n = len(self.poses)
        if self.poses.shape != (n, 4, 4) or self.intrinsics.shape != (3, 3):
            raise ValueError("poses must be (T, 4, 4) and intrinsics (3, 3)")
        if len(self.captions) != n or not set(self.captions) <= set(CAPTIONS):
            raise ValueError(f"need one caption per frame, each one of {CAPTIONS}")
        k = (len(self.phases) - 2) // 2
        expected = ["V"] + [f"{p}{i}" for i in range(1, k + 1) for p in "DR"] + ["H"]
        if [p.name for p in self.phases] != expected:
            raise ValueError(f"phases must be named {expected}")
        bounds = [0] + [p.end for p in self.phases]
        if [p.start for p in self.phases] != bounds[:-1] or bounds[-1] != n:
            raise ValueError("phases must tile [0, n_frames) in order without gaps")
        if any(len(p) < 1 for p in self.phases):
            raise ValueError("phases must be non-empty")

    @property
    def n_frames(self) -> int:
        return len(self.poses)

    def revisits(self) -> list[tuple[Phase, Phase]]:
        """(D_k, R_k) for k = 1..K, the K of Eq. (1) (Section 4.1)."""
        moves = self.phases[1:-1]
        return list(zip(moves[0::2], moves[1::2]))

    def return_windows(self) -> list[Phase]:
        """R_1..R_K: the windows scored against the fixed V reference (Eq. 4, Section 4.4)."""
        return [r for _, r in self.revisits()]

    def phase_of(self, frame: int) -> Phase:
        for phase in self.phases:
            if phase.start <= frame < phase.end:
                return phase
        raise IndexError(f"frame {frame} outside [0, {self.n_frames})")

    def to_json(self) -> dict:
        """Plain, JSON-serialisable dict to store beside a case (values rounded to 1e-9)."""
        return {
            "name": self.name,
            "n_frames": self.n_frames,
            "fps": float(self.fps),
            "intrinsics": _rounded(self.intrinsics),
            "poses": _rounded(self.poses),
            "phases": [{"name": p.name, "start": p.start, "end": p.end} for p in self.phases],
            "captions": list(self.captions),
        }


def save_trajectory(trajectory: Trajectory, rollout_dir) -> Path:
    """Write ``trajectory`` (Trajectory.to_json) as ``rollout_dir``/trajectory.json, the one copy a
    rollout keeps (beside its video); its path."""
    path = Path(rollout_dir) / "trajectory.json"
    path.write_text(json.dumps(trajectory.to_json()) + "\n")
    return path


def load_trajectory(path) -> Trajectory:
    """The inverse of Trajectory.to_json (save_trajectory)."""
    d = json.loads(Path(path).read_text())
    return Trajectory(d["name"], np.asarray(d["poses"], dtype=float),
                      np.asarray(d["intrinsics"], dtype=float),
                      [Phase(p["name"], p["start"], p["end"]) for p in d["phases"]],
                      list(d["captions"]), float(d["fps"]))


def translation(
    n_frames: int = DEFAULT_N_FRAMES,
    side: float = 0.25,
    *,
    hold_frames: int = DEFAULT_HOLD_FRAMES,
    final_hold_frames: int = DEFAULT_FINAL_HOLD_FRAMES,
    move_frames: int | None = None,
    fps: float = DEFAULT_FPS,
    width: int = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
    fov_deg: float = DEFAULT_FOV_DEG,
) -> Trajectory:
    """Forward-Right-Backward-Left square loop with fixed orientation (Section 3.3, Figure 3).

    One revisit: D1 = Forward + Right (out to the far corner), R1 = Backward + Left (back to the
    start, which R1 ends on, "returns to the initial position at R_1"). Each side is one move of
    move_frames. The default side 0.25 makes the loop's path length 1, the normalised target path
    scale of the translation RPE (Section 4.3); rescale for models that need metric units.
    """
    return _assemble("translation", _translation_segments(side), n_frames, hold_frames,
                     final_hold_frames, move_frames, fps, width, height, fov_deg)


def _translation_segments(side: float) -> list[tuple[str, list[_Move]]]:
    if side <= 0:
        raise ValueError(f"side must be positive, got {side!r}")
    corners = [(0, 0, side), (side, 0, side), (side, 0, 0), (0, 0, 0)]  # (x, y, z) after each side
    moves = [(caption, np.array([0.0, 0.0, *corner]))
             for caption, corner in zip(("Forward", "Right", "Backward", "Left"), corners)]
    return [("D1", moves[:2]), ("R1", moves[2:])]


def rotation(
    pattern: str = "LR",
    amplitude_deg: float = 90.0,
    n_frames: int = DEFAULT_N_FRAMES,
    *,
    pitch_amplitude_deg: float | None = None,
    hold_frames: int = DEFAULT_HOLD_FRAMES,
    final_hold_frames: int = DEFAULT_FINAL_HOLD_FRAMES,
    move_frames: int | None = None,
    fps: float = DEFAULT_FPS,
    width: int = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
    fov_deg: float = DEFAULT_FOV_DEG,
) -> Trajectory:
    """Fixed-position yaw/pitch away-and-back cycles (Section 3.3).

    Each cycle is one revisit: D_k turns away by the amplitude (Left, or Up for LRUD's second
    cycle), R_k turns back to the start view (Right / Down). LR, LRLR and LRLRLR repeat the yaw
    cycle 1, 2 and 3 times (Section 5.3); LRUD is a yaw cycle then a pitch cycle (Section 5.4).
    LR-Hold, the dynamic-memory trajectory (Appendix D.1; Figure 10 of Appendix H), is one yaw
    cycle at the speed of LRLR (move_frames defaults to LRLR's) followed by a long stationary hold
    at the start view, so the event's state after the return stays on screen to be judged.

    amplitude_deg defaults to 90: at least the horizontal field of view for FoVs up to 90
    degrees, so the conditioning view fully leaves the frame, and well beyond the 30 degree
    departure criterion of Appendix G.1. pitch_amplitude_deg defaults to the same value, so LRLR
    and LRUD differ only in the axis of the second cycle, which is what Delta_axis measures.
    """
    segments = _rotation_segments(pattern, amplitude_deg, pitch_amplitude_deg)
    move_frames = _rotation_move_frames(pattern, n_frames, hold_frames, final_hold_frames, move_frames)
    return _assemble(pattern, segments, n_frames, hold_frames, final_hold_frames, move_frames,
                     fps, width, height, fov_deg)


def _rotation_move_frames(pattern, n_frames, hold_frames, final_hold_frames, move_frames):
    if pattern == "LR-Hold" and move_frames is None:  # LRLR's speed, whatever n_frames holds
        return _even_move_frames(n_frames, hold_frames, final_hold_frames, n_moves=4)
    return move_frames


def _rotation_segments(pattern: str, amplitude_deg: float,
                       pitch_amplitude_deg: float | None) -> list[tuple[str, list[_Move]]]:
    if pattern not in ROTATION_PATTERNS:
        raise ValueError(
            f"unknown rotation pattern {pattern!r}; valid: {', '.join(ROTATION_PATTERNS)}")
    axes = _AXES[pattern]
    pitch_deg = amplitude_deg if pitch_amplitude_deg is None else pitch_amplitude_deg
    if not 0 < amplitude_deg <= 180:
        raise ValueError(f"amplitude_deg must be in (0, 180], got {amplitude_deg!r}")
    if "U" in axes and not 0 < pitch_deg <= 90:
        raise ValueError(f"pitch amplitude must be in (0, 90], got {pitch_deg!r}; beyond 90 the view flips over")
    start = np.zeros(5)
    away = {"L": ("Left", np.array([amplitude_deg, 0, 0, 0, 0.0])),
            "U": ("Up", np.array([0, pitch_deg, 0, 0, 0.0]))}
    back = {"L": ("Right", start), "U": ("Down", start)}
    segments = []
    for k, axis in enumerate(axes, start=1):
        segments += [(f"D{k}", [away[axis]]), (f"R{k}", [back[axis]])]
    return segments


def build(name: str, case_params: dict | None = None, **params) -> Trajectory:
    """Trajectory by benchmark name: 'translation' or a rotation pattern (TRAJECTORIES), built
    with ``resolve(name, params, case_params)``: shared keyword arguments, the case's and the
    trajectory's own, and the same speed for every rotation cycle count."""
    if name not in TRAJECTORIES:
        raise ValueError(f"unknown trajectory {name!r}; valid: {', '.join(TRAJECTORIES)}")
    kwargs = resolve(name, params, case_params)
    return translation(**kwargs) if name == "translation" else rotation(name, **kwargs)


def frame_count(name: str, params: dict, case_params: dict | None = None) -> int:
    """The frames of ``build(name, case_params, **params)``, known without building it: the
    n_frames ``resolve`` gives, else the builders' default (DEFAULT_N_FRAMES)."""
    return resolve(name, params, case_params).get("n_frames", DEFAULT_N_FRAMES)


def check(name: str, params: dict, case_params: dict | None = None) -> None:
    """Raise ValueError for what ``build(name, case_params, **params)`` refuses (ranges, the
    frame budget, common.limits' bounds on n_frames and fps), without rendering a pose: its cost
    does not grow with n_frames, so the config checks run it for every configured trajectory on
    each start. ``params`` and ``case_params`` must already have the builder's types
    (typed_problems)."""
    if name not in TRAJECTORIES:
        raise ValueError(f"unknown trajectory {name!r}; valid: {', '.join(TRAJECTORIES)}")
    builder = translation if name == "translation" else rotation
    bound = inspect.signature(builder).bind(*([] if builder is translation else [name]),
                                            **resolve(name, params, case_params))
    bound.apply_defaults()
    a = bound.arguments
    if builder is translation:
        segments, move_frames = _translation_segments(a["side"]), a["move_frames"]
    else:
        segments = _rotation_segments(name, a["amplitude_deg"], a["pitch_amplitude_deg"])
        move_frames = _rotation_move_frames(name, a["n_frames"], a["hold_frames"], a["final_hold_frames"],
                                            a["move_frames"])
    _move_frames(name, segments, a["n_frames"], a["hold_frames"], a["final_hold_frames"], move_frames, a["fps"])


@functools.cache  # asked once per config block on every start; callers never modify it
def keywords() -> dict[str, set[str]]:
    """Trajectory name -> the keyword arguments build(name, **params) passes on to its builder,
    read from the builders' signatures: ``translation(...)``, or ``rotation(pattern, ...)`` with
    the name as ``pattern``. CAMERA_KEYS are left out: the rollout sets them from the case camera."""
    def names(builder, given: int) -> set[str]:
        return set(list(inspect.signature(builder).parameters)[given:]) - set(CAMERA_KEYS)

    return {name: names(translation, 0) if name == "translation" else names(rotation, 1) for name in TRAJECTORIES}


@functools.cache
def keyword_types() -> dict[str, dict]:
    """Trajectory name -> {keyword of ``keywords``: its annotation in the builder's signature}."""
    hints = {"translation": typing.get_type_hints(translation), "rotation": typing.get_type_hints(rotation)}
    return {name: {k: hints["translation" if name == "translation" else "rotation"][k] for k in names}
            for name, names in keywords().items()}


def block_problems(key: str, params: dict) -> list[str]:
    """The problems of each trajectory's own block in config-style ``params`` (the mapping at
    ``key``; ``{LRLRLR: {n_frames: 551}}``, resolve): a mapping, of its builder's parameters
    only, none of CAMERA_KEYS. Each names the key, the value, what was expected and the fix.
    The shared keys are left to the caller (which of them are valid depends on the trajectories
    it builds)."""
    found, names = [], keywords()
    for name in sorted(set(params) & set(names)):
        own = params[name]
        if not isinstance(own, dict):
            found.append(f"{key}.{name} = {own!r}: expected a mapping of {name}'s own trajectory parameters "
                         f"(e.g. {{n_frames: 551}}). Fix: write it as {name}: {{param: value}}")
            continue
        for param in sorted(set(own) - names[name]):
            if param in CAMERA_KEYS:
                found.append(camera_key_problem(f"{key}.{name}.{param}", own[param]))
            else:
                found.append(unknown_key(f"{key}.{name}", own, param, names[name],
                                         f"the parameters of the {name} trajectory"))
    return found


def camera_key_problem(path: str, value) -> str:
    """The problem of a CAMERA_KEYS parameter at ``path`` in a config block: the rollout sets it."""
    return (f"{path} = {value!r}: set from the case camera, not here. Fix: remove it (the frame size is "
            "worldmembench.cases.width / height)")


def typed_problems(key: str, params: dict, names) -> list[str]:
    """The values of config-style ``params`` (the mapping at ``key``) that are not of their
    builder's annotated type (common.params.expected): a shared key against the builders of the
    trajectories ``names``, a key of a trajectory's own block against that trajectory's. Unknown
    keys are left out (block_problems)."""
    types = keyword_types()
    shared = {k: t for name in names for k, t in types[name].items()}
    entries = []
    for k, v in params.items():
        if k not in types:
            entries.append((f"{key}.{k}", v, shared.get(k)))
        elif isinstance(v, dict):  # a trajectory's own block
            entries += [(f"{key}.{k}.{p}", value, types[k].get(p)) for p, value in v.items()]
    return [f"{path} = {value!r}: expected {want}. Fix: write it as a bare value, unquoted (e.g. n_frames: 241)"
            for path, value, annotation in entries
            if annotation is not None and (want := expected(value, annotation))]


def merge_params(base: dict, override: dict) -> dict:
    """Config-style trajectory parameters ``override`` (a model's) over ``base`` (the study's): a
    trajectory's own block merges key by key, so the study's block applies to the model wherever
    the model's own block does not set the key."""
    merged = {**base, **override}
    for name in set(base) & set(override) & set(TRAJECTORIES):
        merged[name] = {**base[name], **override[name]}
    return merged


def resolve(name: str, params: dict, case_params: dict | None = None) -> dict:
    """The builder keyword arguments of trajectory ``name`` from config-style ``params``.

    ``params`` holds keyword arguments for every trajectory and, under a trajectory's name, that
    trajectory's own (``{n_frames: 493, LRLRLR: {n_frames: 551}}``: YUME's lengths, Appendix C).
    ``case_params`` is a case's own ``trajectory_params`` (case.json; e.g. the translation side
    sized from its scene): it overrides the shared keys, the config's block of the trajectory
    overrides it.

    Same speed, more frames (Appendix C: repeated cycles add frames): ``n_frames`` is the length
    of the two-cycle trajectories (LRLR, LRUD, translation). A rotation with another number of
    cycles (LR, LRLRLR) moves at LRLR's speed, its moves as long as LRLR's, so LRLRLR is two moves
    longer; LR-Hold keeps ``n_frames`` with LRLR's moves and a longer final hold. Its own
    ``n_frames`` or ``move_frames`` in a block turns this off (then the moves share what the holds
    leave of its n_frames, as for LRLR).
    """
    shared = {k: v for k, v in params.items() if k not in TRAJECTORIES}
    own = {**(case_params or {}).get(name, {}), **params.get(name, {})}
    kwargs = {**shared, **own}
    if name in ROTATION_PATTERNS and name not in ("LRLR", "LRUD") and "move_frames" not in kwargs \
            and "n_frames" not in own:
        n = kwargs.get("n_frames", DEFAULT_N_FRAMES)
        hold = kwargs.get("hold_frames", DEFAULT_HOLD_FRAMES)
        final = kwargs.get("final_hold_frames", DEFAULT_FINAL_HOLD_FRAMES)
        move = _even_move_frames(n, hold, final, n_moves=4)
        kwargs["move_frames"] = move
        if name != "LR-Hold":
            kwargs["n_frames"] = n + (2 * len(_AXES[name]) - 4) * move
    return kwargs


# A move eases the camera state from where the previous move left it to `target` and captions
# its frames with `caption`. State = (yaw left deg, pitch up deg, x, y, z).
_Move = tuple[str, np.ndarray]


def _even_move_frames(n_frames: int, hold_frames: int, final_hold_frames: int, n_moves: int) -> int:
    return (n_frames - hold_frames - final_hold_frames) // n_moves


def _move_frames(name, segments, n_frames, hold_frames, final_hold_frames, move_frames, fps) -> int:
    """The frames of each move; refuses a layout that does not fit n_frames, or n_frames and
    fps beyond common.limits."""
    if hold_frames < 1 or final_hold_frames < 1:
        raise ValueError("hold_frames and final_hold_frames must be >= 1 (V holds frame 0)")
    if problem := fps_problem(fps):
        raise ValueError(f"fps = {fps!r}: expected {problem}")
    if problem := frames_problem(n_frames):
        raise ValueError(f"n_frames = {n_frames!r} for {name}: expected {problem}")
    n_moves = sum(len(moves) for _, moves in segments)
    if move_frames is None:
        move_frames = _even_move_frames(n_frames, hold_frames, final_hold_frames, n_moves)
    used = hold_frames + n_moves * move_frames + final_hold_frames
    if move_frames < MIN_MOVE_FRAMES or used > n_frames:
        raise ValueError(
            f"n_frames={n_frames} too small for {name}: needs {hold_frames} (V) + {n_moves} "
            f"moves x >= {MIN_MOVE_FRAMES} + {final_hold_frames} (H) frames; "
            f"got {move_frames} per move")
    return move_frames


def _assemble(name, segments: list[tuple[str, list[_Move]]], n_frames, hold_frames,
              final_hold_frames, move_frames, fps, width, height, fov_deg) -> Trajectory:
    """Lay out V, the segments' moves and H over n_frames and render poses and captions."""
    move_frames = _move_frames(name, segments, n_frames, hold_frames, final_hold_frames, move_frames, fps)
    states = [np.zeros((hold_frames, 5))]
    captions = ["Hold"] * hold_frames
    phases = [Phase("V", 0, hold_frames)]
    current = np.zeros(5)
    ease = (1 - np.cos(np.pi * np.arange(1, move_frames + 1) / move_frames)) / 2  # ends at 1
    for phase_name, moves in segments:
        start = len(captions)
        for caption, target in moves:
            states.append(current + (target - current) * ease[:, None])
            captions += [caption] * move_frames
            current = target
        phases.append(Phase(phase_name, start, len(captions)))
    final = n_frames - len(captions)
    states.append(np.repeat(current[None], final, axis=0))
    captions += ["Hold"] * final
    phases.append(Phase("H", n_frames - final, n_frames))

    poses = np.stack([_pose(*s) for s in np.concatenate(states)])
    return Trajectory(name, poses, intrinsics(width, height, fov_deg), phases, captions, float(fps))


def _pose(yaw_left_deg, pitch_up_deg, x, y, z) -> np.ndarray:
    """Camera-to-world: yaw about the world vertical, then pitch about the camera's x axis."""
    # A positive angle about y turns the view right; about x (y down) it tilts the view up.
    rotation = rot_y(np.radians(-yaw_left_deg)) @ rot_x(np.radians(pitch_up_deg))
    return pose(rotation, (x, y, z))


def _rounded(a: np.ndarray) -> list:
    return (np.round(np.asarray(a, dtype=float), 9) + 0.0).tolist()  # + 0.0 turns -0.0 into 0.0
