"""Visible-container scenes for the object-permanence belief probe.

Implements the *visible container* variant of "Tracking Is Not Permanence" (../shared/seeds/
002_711b6a3281a3fb41.txt), Section 3.3 ("An opaque box closes over the ball, moves along the
trajectory or stays put, and opens after 0.53-2.93 s; the readout is at the opening slot"), with
its never-shown-box and exit controls, Appendix B "Renderer" ("the visible box is an opaque
80x88 px rectangle"), Table 6 and Appendix I (the four hidden durations 0.53, 1.07, 2.00 and
2.93 s; exit control "a ball on the same row and at the same speed leaves the frame ... when the
box closes"). The paper leaves details open; this module fixes them as follows.

Scene, geometry and timing
    Everything but the box comes from ``render`` (its docstring): the same scene grid, and the
    same Scene id gives the same background tiles, guide line and distractors as the main
    minimal-pair scenes; the same checker ball of radius R on row BALL_ROW = 190; FPS = 7.5, a
    64-frame clip, EVENT_FRAME = 32 and the 32-frame probe window f = 28..59 (MAIN_TIMING). Here
    the event is the frame at which the box closes.

Box
    An opaque BOX_WIDTH x BOX_HEIGHT = 80 x 88 px rectangle (Appendix B) of one fixed colour,
    BOX_COLOUR = (70, 95, 140): not gray (background, guide line) and not red-dominant, so that
    "red pixel" still identifies the ball. Its centre column is always the ball's current x in
    the present world, ``render.ball_x(f, motion, "present")`` (``box_x``), and it spans columns
    c-40 .. c+39 with c = floor(x + 0.5), clipped at the frame border.
      open   (f < EVENT_FRAME, and f >= open_frame): raised, rows bottom-87 .. bottom with
             bottom = BALL_ROW - R - 4, i.e. its bottom edge 4 px above the ball's top row, so
             the ball under it is fully visible.
      closed (EVENT_FRAME <= f < open_frame): centred on the ball's row, rows BALL_ROW-44 ..
             BALL_ROW+43 (146..233), drawn over the ball. For R <= MAX_RADIUS = 38 it covers the
             ball's disk entirely, so no ball pixel is visible while it is closed.
    Box motions carry the ball motions' names (``render.MOTIONS``): 'moving', the box carries on
    along the trajectory at the ball's speed (SPEED = 3.2 px per frame) while closed; 'stationary',
    the ball stops four frames before the event (render's STOP_FRAME = 28), so the box closes over
    a ball at rest and stays put.
    It opens at open_frame = EVENT_FRAME + hidden_frames and stays open, following the ball's
    x, to the clip's end. hidden_frames in HIDDEN_FRAMES = (4, 8, 15, 22): 0.53, 1.07, 2.00 and
    2.93 s at 7.5 fps, Appendix I's four durations; open_frame = 36, 40, 47, 54, all inside the
    probe window. (The window's tubelets start at even frames, so the 15-frame opening, at the
    odd frame 47, falls in the second frame of its tubelet.)

Worlds, per (box motion, hidden_frames); all four draw the identical box in every frame
    'present':     the ball follows its motion for the whole clip; inside the closed box it is
                   hidden, and it is revealed at its trajectory position when the box opens.
    'absent':      as present before the event; the ball is taken away while the box is closed
                   (no frame shows when: from the event on it is drawn nowhere), so the box
                   opens empty. Pixel-identical to present before open_frame.
    'never_shown': the never-shown-box control (Section 3.3): no ball in any frame; the box
                   closes, moves or stays and opens empty exactly as in the main worlds.
    'exit':        the exit control (Section 3.3, Appendix I): a ball on the same row at the
                   moving ball's speed that leaves the frame exactly when the box closes,
                   ``render.ball_x(f, "moving", "exit", R)`` (last pixels in frame EVENT_FRAME - 1,
                   none after); the box does what it does in the main worlds (centred on where
                   the main ball would be) and opens empty. It exists for both box motions (Table
                   6's caption reports stationary-box controls), always with the moving exit ball.
    revealed:      a control world (never_shown, exit) with ``revealed=True`` also shows the
                   present world's ball from open_frame on, as if it had been in the box: the
                   "ball revealed" candidate that the autoregressive readout scores after the
                   control's own prefix (``cosmos_scenes``). Identical to the control before
                   open_frame.
    Draw order per frame: background (with guide line), distractors, ball, box.

Visible continuation
    hidden_frames = 0 (Table 8's "visible continuation", ``cosmos_scenes``): the box never closes
    (open_frame = EVENT_FRAME), it stays raised over the ball, and the absent world's ball vanishes
    in view at the event; the probe's HIDDEN_FRAMES keep 4..22.
    All worlds differ from one another only on the ball's rows, BALL_ROW-R .. BALL_ROW+R.

Output
    ``write_container_scenes`` writes out_dir/{motion}_h{hidden:02d}/{scene}/{world}.mkv
    (lossless, like ``render.write_scenes``) and out_dir/manifest.json with render's top-level
    keys plus "query": "container" and "box": [80, 88]; one entry per (motion, hidden_frames,
    scene). Default grid: radii 16 and 32, 0/2/4 distractors, 10 seeds = 60 scenes per time point.
"""

from __future__ import annotations

import argparse
import math
from functools import partial
from pathlib import Path

import numpy as np

from worldmemory.permanence.render import (
    BALL_COLOURS,
    BALL_ROW,
    CLIP_FRAMES,
    EVENT_FRAME,
    FPS,
    MAIN_TIMING,
    MOTIONS,
    SIZE,
    Scene,
    _distractors,
    _draw_ball,
    background,
    ball_x,
    scene_entry,
    scene_grid,
    write_manifest,
    write_worlds,
)

BOX_WIDTH = 80
BOX_HEIGHT = 88
BOX_COLOUR = (70, 95, 140)
BOX_LIFT = 4  # px between the open box's bottom edge and the ball's top row
HIDDEN_FRAMES = (4, 8, 15, 22)  # 0.53, 1.07, 2.00, 2.93 s at 7.5 fps (Appendix I)
MAX_RADIUS = 38  # the largest ball the closed box covers entirely
WORLDS = ("present", "absent", "never_shown", "exit")

DEFAULT_RADII = (16, 32)
DEFAULT_DISTRACTORS = (0, 2, 4)
DEFAULT_SEEDS = 10


def _check(motion: str, hidden_frames: int, world: str | None = None, radius: int | None = None) -> None:
    if motion not in MOTIONS:
        raise ValueError(f"unknown box motion {motion!r}; expected one of {MOTIONS}")
    last = MAIN_TIMING.window_start + MAIN_TIMING.window_frames - 1
    if not isinstance(hidden_frames, int) or not 0 <= hidden_frames <= last - EVENT_FRAME:
        raise ValueError(f"hidden_frames must be an integer in 0..{last - EVENT_FRAME} (the box opens inside "
                         f"the probe window; 0: it never closes), got {hidden_frames!r}")
    if world is not None and world not in WORLDS:
        raise ValueError(f"unknown container world {world!r}; expected one of {WORLDS}")
    if radius is not None and not 1 <= radius <= MAX_RADIUS:
        raise ValueError(f"the closed box covers balls of radius 1..{MAX_RADIUS} only, got {radius!r}")


def open_frame(hidden_frames: int) -> int:
    """The frame at which the box opens again: EVENT_FRAME + hidden_frames."""
    return EVENT_FRAME + hidden_frames


def is_closed(f: int, hidden_frames: int) -> bool:
    """Whether the box is closed over the ball's row at full-clip frame f."""
    return EVENT_FRAME <= f < open_frame(hidden_frames)


def box_x(f: int, motion: str) -> float:
    """The box's centre column at frame f: the present world's ball x (the same in every world)."""
    return ball_x(f, motion, "present")


def box_cols(f: int, motion: str) -> tuple[int, int]:
    """Half-open column range [left, right) of the box at frame f, clipped at the frame border."""
    c = math.floor(box_x(f, motion) + 0.5)
    left = c - BOX_WIDTH // 2
    return max(left, 0), min(left + BOX_WIDTH, SIZE)


def box_rows(radius: int, closed: bool) -> tuple[int, int]:
    """Half-open row range [top, bottom) of the box: closed, centred on the ball's row
    (BALL_ROW-44 .. BALL_ROW+43); open, raised with its bottom row at BALL_ROW - radius - 4."""
    if closed:
        top = BALL_ROW - BOX_HEIGHT // 2
    else:
        top = BALL_ROW - radius - BOX_LIFT - BOX_HEIGHT + 1
    return max(top, 0), min(top + BOX_HEIGHT, SIZE)


def box_footprint(f: int, motion: str, radius: int, hidden_frames: int) -> tuple[int, int, int, int]:
    """(top, bottom, left, right), half-open, of the box at full-clip frame f."""
    _check(motion, hidden_frames, radius=radius)
    top, bottom = box_rows(radius, is_closed(f, hidden_frames))
    left, right = box_cols(f, motion)
    return top, bottom, left, right


def container_ball_x(f: int, motion: str, hidden_frames: int, world: str, radius: int,
                     revealed: bool = False) -> float | None:
    """Ball centre column of ``world`` at full-clip frame f, or None where no ball is drawn;
    ``revealed``: a control world that shows the present ball from the opening on."""
    _check(motion, hidden_frames, world, radius)
    if revealed and world in ("present", "absent"):
        raise ValueError(f"revealed applies to the controls {WORLDS[2:]}, not to {world!r}")
    if world == "present" or (revealed and f >= open_frame(hidden_frames)):
        return ball_x(f, motion, "present")
    if world == "absent":
        return ball_x(f, motion, "absent")  # gone from the event on: the box opens empty
    if world == "exit":
        return ball_x(f, "moving", "exit", radius)  # its last pixels are in frame EVENT_FRAME - 1
    return None  # never_shown


def render_container_world(scene: Scene, motion: str, hidden_frames: int, world: str, frames=None,
                           revealed: bool = False) -> np.ndarray:
    """Render full-clip frame indices ``frames`` (default: the probe window, f = 28..59) of one
    container world as [T,256,256,3] uint8: background, distractors, ball, box (``revealed``:
    container_ball_x)."""
    _check(motion, hidden_frames, world, scene.radius)
    frames = list(MAIN_TIMING.frames() if frames is None else frames)
    if any(not 0 <= f < CLIP_FRAMES for f in frames):
        raise ValueError(f"frames must lie in 0..{CLIP_FRAMES - 1}")
    out = np.repeat(background(scene)[None], len(frames), axis=0)
    rects = _distractors(scene)
    for img, f in zip(out, frames):
        for rect in rects:
            rect.draw(img, f)
        x = container_ball_x(f, motion, hidden_frames, world, scene.radius, revealed)
        if x is not None:
            _draw_ball(img, x, BALL_ROW, scene.radius, BALL_COLOURS)
        top, bottom, left, right = box_footprint(f, motion, scene.radius, hidden_frames)
        img[top:bottom, left:right] = BOX_COLOUR
    return out


def write_container_scenes(out_dir, radii=DEFAULT_RADII, distractors=DEFAULT_DISTRACTORS, n_seeds: int = DEFAULT_SEEDS,
                           hidden_frames=HIDDEN_FRAMES) -> dict:
    """Write every container world's window as out_dir/{motion}_h{hidden:02d}/{scene}/{world}.mkv
    plus manifest.json. Returns the manifest. Output is deterministic (sorted keys, no timestamps)."""
    out_dir = Path(out_dir)
    hidden_frames = [int(h) for h in hidden_frames]
    scenes = scene_grid(radii, distractors, n_seeds)
    for motion in MOTIONS:  # refuse a bad grid before writing anything
        for hidden in hidden_frames:
            for scene in scenes:
                _check(motion, hidden, radius=scene.radius)
    entries = []
    for motion in MOTIONS:
        for hidden in hidden_frames:
            group = f"{motion}_h{hidden:02d}"
            for scene in scenes:
                render = partial(render_container_world, scene, motion, hidden)
                paths = write_worlds(out_dir, group, scene, WORLDS, render, FPS)
                box = [box_x(f, motion) for f in MAIN_TIMING.frames()]
                entries.append(scene_entry(scene, motion, paths, MAIN_TIMING, hidden_frames=hidden,
                                           open_frame=open_frame(hidden), box_x=box))
            print(f"[containers] {group}: {len(scenes)} scenes x {len(WORLDS)} worlds = "
                  f"{len(scenes) * len(WORLDS)} videos -> {out_dir / group}")  # fmt: skip
    return write_manifest(out_dir, MAIN_TIMING, entries, approach_frames=None, query="container",
                          box=[BOX_WIDTH, BOX_HEIGHT])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--radii", type=int, nargs="+", default=list(DEFAULT_RADII))
    parser.add_argument("--distractors", type=int, nargs="+", default=list(DEFAULT_DISTRACTORS))
    parser.add_argument("--seeds", type=int, default=DEFAULT_SEEDS, help="seeds per (radius, distractors) cell")
    parser.add_argument("--hidden-frames", type=int, nargs="+", default=list(HIDDEN_FRAMES),
                        help="frames the box stays closed (4 8 15 22: 0.53, 1.07, 2.00, 2.93 s at 7.5 fps)")
    args = parser.parse_args(argv)
    write_container_scenes(args.out, args.radii, args.distractors, args.seeds, args.hidden_frames)


if __name__ == "__main__":
    main()
