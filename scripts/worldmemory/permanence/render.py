"""Synthetic minimal-pair renderer for the object-permanence belief probe.

Implements the scenes of "Tracking Is Not Permanence" (../shared/seeds/
002_711b6a3281a3fb41.txt), Section 3.1 (minimal pairs), Section 3.3 (three-world
readout, never-rendered control) and Appendix B, paragraph "Renderer". The
paper leaves some details open; this module fixes them as follows.

Geometry and timing
    Frames are SIZE x SIZE (256) RGB uint8 at FPS = 7.5. A full clip has
    CLIP_FRAMES = 64 frames, f = 0..63. The event is at the clip midpoint,
    EVENT_FRAME = 32, and the probe window is the WINDOW_FRAMES = 32 frames
    starting four frames before it, f = 28..59 (WINDOW_START = 28). At 15 and
    30 fps (Appendix I, "Frame rate"; ``timing``) the clip has 128 / 256
    frames, the event is at its midpoint, and the 64-frame window starts
    0.53 s before it; every motion is the same function of time.

Layers, in draw order
    1. Background: TILE = 16 px tiles, each one gray intensity drawn uniformly
       from the integers 70..130 inclusive (R = G = B), static over time.
    2. Guide line: 2 px, intensity 40, across the full width at rows
       BALL_ROW + R + 2 and BALL_ROW + R + 3, just below the ball.
    3. Distractors: K in {0, 2, 4} opaque axis-aligned rectangles, 36-56 px wide
       and 48-72 px tall, each a solid colour with every channel in 30..220 and
       red not dominant (R <= max(G, B)), so that "red pixel" identifies the
       ball. Centre x and y are sinusoids of the full-clip frame index with
       random amplitude, period and phase; the rectangle covers rows 0..130 at
       most (never the ball's row) and is clipped at the left/right border.
       Distractors are the same in every world.
    4. Ball: a disk of radius R in {4, 8, 16, 32} centred at (x(f), BALL_ROW =
       190); pixel (row i, col j) is inside iff (i-190)^2 + (j-x)^2 <= R^2.
       Its checker texture moves with it: colour (220, 40, 40) where
       floor((j-x)/4) + floor((i-190)/4) is even, else (150, 20, 20).

Motions
    'moving':     x(f) = 28 + 3.2 f (reaches 228 at f = 62.5).
    'stationary': x(f) = 28 + 3.2 min(f, EVENT_FRAME - 4), i.e. the ball stops
                  four frames before the event, so keeping it needs no
                  extrapolation.

Worlds
    'present':        the ball follows its motion for the whole clip.
    'absent':         as present for f < EVENT_FRAME, no ball from then on.
    'static':         as present for f < EVENT_FRAME, then the ball stays at
                      x(EVENT_FRAME - 1), where it was last seen.
    'never_rendered': no ball in any frame (geometry-matched bias control,
                      Appendix I).
    'exit':           moving only (Appendix I: "no stationary version exists"):
                      the exit control of Section 3.3, a ball on the same row
                      at the same speed that leaves the frame exactly when the
                      mask starts: x(f) + SIZE + R - x(EVENT_FRAME), so its
                      last pixels are in frame EVENT_FRAME - 1; none after.
    The present, absent and static worlds are pixel-identical before the
    event and differ only inside the ball's trajectory band, rows
    190-R..190+R, after it; never_rendered and exit differ from them only
    on the ball's rows.

Scenes
    A scene is (radius, distractors, seed), id like "r08_k2_s3". All of its
    randomness comes from numpy Generators seeded by SHA-256 of a namespace
    plus the id, so it is identical in every process and shared by both
    motions. 4 radii x 3 distractor levels x 5 seeds = 60 scenes.

Training clips (``render_training_clip``) come from a broader family of the
same kind of scene, for pretraining a small model that never sees the
evaluation scenes; callers seed them under TRAIN_NAMESPACE.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from worldmemory.common.seeds import stable_rng
from worldmemory.common.video import write_video

SIZE = 256
FPS = 7.5
CLIP_FRAMES = 64
EVENT_FRAME = 32
WINDOW_START = 28
WINDOW_FRAMES = 32
BALL_ROW = 190
X_START = 28.0
SPEED = 3.2
TILE = 16
TILE_RANGE = (70, 130)
CHECKER = 4

STOP_FRAME = EVENT_FRAME - 4
FRAME_RATES = (7.5, 15.0, 30.0)  # Appendix I, "Frame rate"
GUIDE_INTENSITY = 40
BALL_COLOURS = ((220, 40, 40), (150, 20, 20))
DISTRACTOR_WIDTH = (36, 56)
DISTRACTOR_HEIGHT = (48, 72)
DISTRACTOR_MAX_ROW = 130
DISTRACTOR_CHANNEL = (30, 220)

MOTIONS = ("moving", "stationary")
WORLDS = ("present", "absent", "static", "never_rendered", "exit")
DEFAULT_WORLDS = {
    "moving": ["present", "absent", "static", "never_rendered", "exit"],
    # The stationary ball's static world equals its present world.
    "stationary": ["present", "absent", "never_rendered"],
}

EVAL_NAMESPACE = "worldmemory.permanence.eval.v1"
TRAIN_NAMESPACE = "worldmemory.permanence.train.v1"


@dataclass(frozen=True)
class Timing:
    """A frame rate's clip (Appendix I, "Frame rate": 15 and 30 fps keep the physical speed,
    the clip's duration, the event at its midpoint and 0.53 s of visible ball before the mask,
    with 64-frame windows). 7.5 fps is the paper's main setting (the module constants).

    Every motion is a function of time, so the scene's content at a given second is the same at
    every frame rate: the ball moves SPEED * FPS = 24 px/s, the stationary ball stops 0.53 s
    before the event, the distractors' sinusoids run on seconds.
    """

    fps: float = FPS
    clip_frames: int = CLIP_FRAMES
    event_frame: int = EVENT_FRAME
    window_start: int = WINDOW_START
    window_frames: int = WINDOW_FRAMES

    @property
    def scale(self) -> float:
        """Frames of this rate per frame at 7.5 fps."""
        return self.fps / FPS

    @property
    def speed(self) -> float:
        """Ball speed in px per frame."""
        return SPEED / self.scale

    @property
    def stop_frame(self) -> int:
        return self.event_frame - round((EVENT_FRAME - STOP_FRAME) * self.scale)

    def frames(self) -> range:
        """The probe window's full-clip frame indices."""
        return range(self.window_start, self.window_start + self.window_frames)


def timing(fps: float) -> Timing:
    """The clip of one of FRAME_RATES: 64 frames at 7.5 fps, 128 at 15, 256 at 30 (64-frame windows)."""
    if fps not in FRAME_RATES:
        raise ValueError(f"frame rate {fps!r} is not one of the paper's {FRAME_RATES}")
    if fps == FPS:
        return Timing()
    scale = fps / FPS
    event = round(EVENT_FRAME * scale)
    return Timing(fps, round(CLIP_FRAMES * scale), event, event - round((EVENT_FRAME - WINDOW_START) * scale), 64)


MAIN_TIMING = Timing()


def scene_id(radius: int, n_distractors: int, seed: int) -> str:
    return f"r{radius:02d}_k{n_distractors}_s{seed}"


@dataclass(frozen=True)
class Scene:
    radius: int
    n_distractors: int
    seed: int

    @property
    def id(self) -> str:
        return scene_id(self.radius, self.n_distractors, self.seed)


def scene_grid(radii, distractors, n_seeds: int) -> list[Scene]:
    """All scenes of the grid, radius-major, then distractors, then seed."""
    return [Scene(r, k, s) for r in radii for k in distractors for s in range(n_seeds)]


def _check(motion: str, world: str) -> None:
    if motion not in MOTIONS:
        raise ValueError(f"unknown motion {motion!r}; expected one of {MOTIONS}")
    if world not in WORLDS:
        raise ValueError(f"unknown world {world!r}; expected one of {WORLDS}")
    if world == "exit" and motion != "moving":
        raise ValueError("the exit world exists for the moving ball only (Appendix I)")


def ball_x(f: int, motion: str, world: str = "present", radius: int | None = None,
           clip: Timing = MAIN_TIMING) -> float | None:
    """Ball centre column at full-clip frame f of ``clip``, or None where no ball is drawn.

    Rounded to 1e-9 so that integral positions are exact and the checker
    texture does not flicker from float error (3.2 is not a binary fraction).
    The exit world needs the ``radius`` (its ball leaves the frame edge first).
    """
    _check(motion, world)
    event, speed = clip.event_frame, clip.speed
    if world == "never_rendered" or (world in ("absent", "exit") and f >= event):
        return None
    if world == "exit":
        if radius is None:
            raise ValueError("ball_x of the exit world needs the ball's radius")
        return round(X_START + speed * f + SIZE + radius - (X_START + speed * event), 9)
    if world == "static" and f >= event:
        f = event - 1
    if motion == "stationary":
        f = min(f, clip.stop_frame)
    return round(X_START + speed * f, 9)


def expected_ball_x(motion: str, frame: int, clip: Timing = MAIN_TIMING) -> float:
    """The present world's centre column: where the readout region follows the ball."""
    return ball_x(frame, motion, "present", clip=clip)


@dataclass(frozen=True)
class _Rect:
    """Opaque rectangle whose centre moves on independent x and y sinusoids."""

    width: int
    height: int
    colour: tuple[int, int, int]
    x_mid: float
    x_amp: float
    x_period: float
    x_phase: float
    y_mid: float
    y_amp: float
    y_period: float
    y_phase: float

    def draw(self, img: np.ndarray, f: float) -> None:
        cx = self.x_mid + self.x_amp * math.sin(2 * math.pi * f / self.x_period + self.x_phase)
        cy = self.y_mid + self.y_amp * math.sin(2 * math.pi * f / self.y_period + self.y_phase)
        top, left = round(cy - self.height / 2), round(cx - self.width / 2)
        img[max(top, 0) : top + self.height, max(left, 0) : left + self.width] = self.colour


def _random_rect(rng, size, max_row, widths, heights, colour) -> _Rect:
    """A rectangle whose rows stay within 0..max_row and whose centre stays in the frame."""
    width = int(rng.integers(widths[0], widths[1] + 1))
    height = int(rng.integers(heights[0], heights[1] + 1))
    x_amp = rng.uniform(0.06, 0.25) * size
    x_mid = rng.uniform(x_amp, size - x_amp)
    # Top row = cy - height/2 must lie in [0, max_row + 1 - height]; rounding
    # a value inside integer bounds keeps it inside.
    lo, hi = height / 2, max_row + 1 - height / 2
    y_amp = rng.uniform(0, (hi - lo) / 2)
    y_mid = rng.uniform(lo + y_amp, hi - y_amp)
    periods = rng.uniform(48, 128, size=2)
    phases = rng.uniform(0, 2 * np.pi, size=2)
    return _Rect(
        width, height, colour,
        x_mid, x_amp, float(periods[0]), float(phases[0]),
        y_mid, y_amp, float(periods[1]), float(phases[1]),
    )  # fmt: skip


def _draw_ball(img: np.ndarray, cx: float, cy: float, radius: int, colours) -> None:
    """Checker-textured disk, computed on its bounding box only and clipped at the border."""
    height, width = img.shape[:2]
    r0, r1 = max(math.floor(cy - radius), 0), min(math.ceil(cy + radius) + 1, height)
    c0, c1 = max(math.floor(cx - radius), 0), min(math.ceil(cx + radius) + 1, width)
    if r0 >= r1 or c0 >= c1:
        return
    di = np.arange(r0, r1)[:, None] - cy
    dj = np.arange(c0, c1)[None, :] - cx
    inside = di**2 + dj**2 <= radius**2
    even = (np.floor(dj / CHECKER) + np.floor(di / CHECKER)) % 2 == 0
    patch = img[r0:r1, c0:c1]
    patch[inside & even] = colours[0]
    patch[inside & ~even] = colours[1]


def background(scene: Scene) -> np.ndarray:
    """Static layer [SIZE,SIZE,3]: gray tiles plus the guide line below the ball."""
    rng = stable_rng(scene.id, EVAL_NAMESPACE + "/background")
    n = SIZE // TILE
    tiles = rng.integers(TILE_RANGE[0], TILE_RANGE[1] + 1, size=(n, n), dtype=np.uint8)
    gray = np.repeat(np.repeat(tiles, TILE, axis=0), TILE, axis=1)
    row = BALL_ROW + scene.radius + 2
    gray[row : row + 2] = GUIDE_INTENSITY
    return np.repeat(gray[..., None], 3, axis=2)


def _distractors(scene: Scene) -> list[_Rect]:
    rng = stable_rng(scene.id, EVAL_NAMESPACE + "/distractors")
    lo, hi = DISTRACTOR_CHANNEL
    rects = []
    for _ in range(scene.n_distractors):
        g, b = (int(v) for v in rng.integers(lo, hi + 1, size=2))
        r = int(rng.integers(lo, max(g, b) + 1))  # red never dominant
        rects.append(
            _random_rect(rng, SIZE, DISTRACTOR_MAX_ROW, DISTRACTOR_WIDTH, DISTRACTOR_HEIGHT, (r, g, b))
        )
    return rects


def render_world(scene: Scene, motion: str, world: str, frames=None, clip: Timing = MAIN_TIMING) -> np.ndarray:
    """Render full-clip frame indices ``frames`` of ``clip`` (default: its probe window) as [T,256,256,3] uint8."""
    _check(motion, world)
    frames = list(clip.frames() if frames is None else frames)
    out = np.repeat(background(scene)[None], len(frames), axis=0)
    rects = _distractors(scene)
    for img, f in zip(out, frames):
        for rect in rects:
            rect.draw(img, f / clip.scale)  # their sinusoids run on 7.5-fps frames, i.e. on seconds
        x = ball_x(f, motion, world, scene.radius, clip)
        if x is not None:
            _draw_ball(img, x, BALL_ROW, scene.radius, BALL_COLOURS)
    return out


def approach_timing(approach_frames: int) -> Timing:
    """The pretraining-consistent query's clip (Appendix I): the moving ball is visible for
    ``approach_frames`` of the window (8 or 16: 1.1 or 2.1 s) before it enters the block, where the
    absent world loses it; the entry is this clip's event."""
    if approach_frames <= 0 or approach_frames >= WINDOW_FRAMES or approach_frames % 2:
        raise ValueError(f"approach_frames must be an even number of frames in 2..{WINDOW_FRAMES - 2}, "
                         f"got {approach_frames}")
    return Timing(event_frame=WINDOW_START + approach_frames)


APPROACH_WORLDS = {"moving": ["present", "absent", "never_rendered"]}


def write_scenes(out_dir, radii, distractors, n_seeds: int, worlds_by_motion=None, fps: float = FPS,
                 approach_frames: int | None = None) -> dict:
    """Write every world's window as out_dir/{motion}/{scene}/{world}.mkv plus manifest.json.

    With ``approach_frames`` the scenes are the tube query's (approach_timing; moving ball only).
    Returns the manifest. Output is deterministic (sorted keys, no timestamps).
    """
    clip = timing(fps) if approach_frames is None else approach_timing(approach_frames)
    if approach_frames is not None and fps != FPS:
        raise ValueError("the tube query's scenes exist at 7.5 fps only")
    out_dir = Path(out_dir)
    if worlds_by_motion is None:
        worlds_by_motion = DEFAULT_WORLDS if approach_frames is None else APPROACH_WORLDS
    scenes = scene_grid(radii, distractors, n_seeds)
    entries = []
    for motion, worlds in worlds_by_motion.items():
        for scene in scenes:
            paths = write_worlds(out_dir, motion, scene, worlds, partial(render_world, scene, motion, clip=clip),
                                 clip.fps)
            entries.append(scene_entry(scene, motion, paths, clip))
        print(f"[render] {motion}: {len(scenes)} scenes x {len(worlds)} worlds = "
              f"{len(scenes) * len(worlds)} videos -> {out_dir / motion}")  # fmt: skip
    return write_manifest(out_dir, clip, entries, approach_frames=approach_frames)


def write_worlds(out_dir: Path, group: str, scene: Scene, worlds, render, fps: float) -> dict:
    """Write ``render(world)`` of each world as out_dir/group/{scene}/{world}.mkv (lossless);
    returns world -> path relative to out_dir."""
    paths = {}
    for world in worlds:
        rel = Path(group, scene.id, f"{world}.mkv")
        write_video(out_dir / rel, render(world), fps)
        paths[world] = rel.as_posix()
    return paths


def scene_entry(scene: Scene, motion: str, paths: dict, clip: Timing, **extra) -> dict:
    """One scene's manifest entry: its grid cell, its worlds' paths and the present ball's x per
    window frame (where the probe's readout region follows it), plus ``extra`` keys."""
    return {
        "id": scene.id,
        "radius": scene.radius,
        "n_distractors": scene.n_distractors,
        "seed": scene.seed,
        "motion": motion,
        "worlds": paths,
        "ball_x": [expected_ball_x(motion, f, clip) for f in clip.frames()],
        **extra,
    }


def write_manifest(out_dir: Path, clip: Timing, entries: list[dict], **extra) -> dict:
    """out_dir/manifest.json: the clip's timing, the ball's row, ``extra`` keys and the scenes'
    entries (sorted keys, no timestamps); returns it."""
    manifest = {
        "size": SIZE,
        "fps": clip.fps,
        "clip_frames": clip.clip_frames,
        "event_frame": clip.event_frame,
        "window_start": clip.window_start,
        "window_frames": clip.window_frames,
        "ball_row": BALL_ROW,
        **extra,
        "scenes": entries,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def _random_ball_colours(rng) -> tuple:
    """The evaluation reds a quarter of the time, otherwise a random light/dark pair."""
    if rng.random() < 0.25:
        return BALL_COLOURS
    light = rng.integers(60, 256, size=3)
    dark = (light * rng.uniform(0.3, 0.7)).astype(int)
    return tuple(int(v) for v in light), tuple(int(v) for v in dark)


def render_training_clip(rng: np.random.Generator, n_frames: int = 32, size: int = 256) -> np.ndarray:
    """A random clip [n_frames,size,size,3] uint8 from the training family of the evaluation scenes.

    Same ingredients as the probe scenes but with every parameter randomised:
    tile size in {8,16,32} and a random intensity range; 1-2 checker balls
    (radius 4..32, random row, start and speed 0..6 px/frame either way),
    each of which with some probability stops, vanishes, or passes behind an
    opaque box at a random frame; optional guide lines; 0-4 distractors on
    sinusoidal paths anywhere in the frame. Seed ``rng`` with
    ``stable_rng(key, TRAIN_NAMESPACE)`` so training never reuses evaluation
    randomness. Draw order: background, guide lines, distractors, balls, boxes.
    """
    tile = int(rng.choice([8, 16, 32]))
    lo = int(rng.integers(20, 160))
    hi = min(lo + int(rng.integers(10, 90)), 255)
    n_tiles = -(-size // tile)
    tiles = rng.integers(lo, hi + 1, size=(n_tiles, n_tiles), dtype=np.uint8)
    gray = np.repeat(np.repeat(tiles, tile, axis=0), tile, axis=1)[:size, :size]

    t = np.arange(n_frames)
    balls, boxes = [], []
    for _ in range(int(rng.integers(1, 3))):
        radius = int(rng.integers(4, 33))
        row = float(rng.uniform(radius, size - 1 - radius))
        x0 = float(rng.uniform(0, size))
        speed = float(rng.uniform(0, 6) * rng.choice([-1, 1]))
        colours = _random_ball_colours(rng)
        event = rng.choice(["none", "stop", "vanish", "occluder"], p=[0.4, 0.2, 0.2, 0.2])
        event_frame = int(rng.integers(1, n_frames))
        xs = x0 + speed * (np.minimum(t, event_frame) if event == "stop" else t)
        visible = t < event_frame if event == "vanish" else np.ones(n_frames, bool)
        balls.append((xs, row, radius, colours, visible))
        if event == "occluder":
            half_w = radius + int(rng.integers(4, 33))
            half_h = radius + int(rng.integers(4, 17))
            cx, cy = round(xs[event_frame]), round(row)
            colour = tuple(int(v) for v in rng.integers(0, 256, size=3))
            rows = slice(max(cy - half_h, 0), cy + half_h + 1)
            cols = slice(min(max(cx - half_w, 0), size), max(cx + half_w + 1, 0))
            boxes.append((rows, cols, colour))
        if rng.random() < 0.5:
            line = round(row) + radius + 2
            gray[line : line + 2] = GUIDE_INTENSITY
    rects = []
    for _ in range(int(rng.integers(0, 5))):
        colour = tuple(int(v) for v in rng.integers(30, 221, size=3))
        rects.append(_random_rect(rng, size, size - 1, (12, size // 4), (12, size // 4), colour))

    out = np.repeat(np.repeat(gray[None, ..., None], n_frames, axis=0), 3, axis=3)
    for i, img in enumerate(out):
        for rect in rects:
            rect.draw(img, i)
        for xs, row, radius, colours, visible in balls:
            if visible[i]:
                _draw_ball(img, xs[i], row, radius, colours)
        for rows, cols, colour in boxes:
            img[rows, cols] = colour
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--radii", type=int, nargs="+", default=[4, 8, 16, 32])
    parser.add_argument("--distractors", type=int, nargs="+", default=[0, 2, 4])
    parser.add_argument("--seeds", type=int, default=5, help="seeds per (radius, distractors) cell")
    parser.add_argument("--fps", type=float, default=FPS, choices=FRAME_RATES,
                        help="frame rate (Appendix I): 7.5 (main), 15 or 30 (same physical speed, 64-frame windows)")
    parser.add_argument("--approach-frames", type=int, default=None,
                        help="the tube query's scenes (Appendix I): the ball visible this many window frames "
                             "(8: 1.1 s, 16: 2.1 s) before it enters the block")
    args = parser.parse_args(argv)
    write_scenes(args.out, args.radii, args.distractors, args.seeds, fps=args.fps,
                 approach_frames=args.approach_frames)


if __name__ == "__main__":
    main()
