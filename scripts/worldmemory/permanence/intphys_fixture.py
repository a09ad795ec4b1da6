"""An IntPhys-format object-permanence fixture, rendered with the belief probe's own renderer.

The evaluator of permanence.intphys reads the IntPhys-2019 dev-set layout (Section 3.5 of *Tracking
Is Not Permanence*); this module writes scenes in that layout so the evaluator runs end to end
without the dev set. The design is IntPhys's object-permanence block (O1): per scene, four videos of
the same background (render.background), moving distractors (render's) and ball (render's checker
disk, radius RADIUS on render.BALL_ROW) crossing behind one opaque occluder at constant speed:

* possible: ``present`` (the ball is there before and after the occluder) and ``absent`` (no ball
  at any time);
* impossible: ``vanish`` (present before, gone after) and ``appear`` (absent before, there after).

The impossible change happens at SWITCH_FRAME, while the ball is wholly behind the occluder
(frames 13-17), so each impossible video is pixel-identical to the possible one with the same start
up to the ball's emergence (frame 18) and differs from it after.

Layout: out/O1/<scene 01..>/<video 1..4>/scene/scene_001.png ... and status.json, whose
header.is_possible is the evaluator's label; its ``fixture`` entry (world, ball before and after)
is this module's. Frames are rendered at render.SIZE px and box-filtered to ``size``; N_FRAMES
frames at 7.5 fps, the protocol's rate, recorded as ``fixture.fps`` (the evaluator's source rate when
none is given, intphys.recorded_fps), so the evaluator reads every frame. Which
video number holds which world is drawn per scene (the evaluator must read status.json). Every draw
is seeded by the scene's id (common.seeds.stable_rng), so the fixture is the same in every process.
The scene ids are render's (r16_k2_s<i>): their backgrounds and distractors are those of the probe
scenes of the same id, which this fixture never meets.

Its known-answer predictor, which predicts the physically consistent continuation of each video, is
permanence.intphys_oracle (apart, so that rendering the fixture does not import torch).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from PIL import Image

from worldmemory.common.seeds import stable_rng
from worldmemory.permanence import render

N_FRAMES = 32
SIZE = 128  # default output side (px)
BLOCK = "O1"  # IntPhys's object-permanence block
RADIUS = 16  # scene px
N_DISTRACTORS = 2  # they move, so no two windows of a video are alike (ConsistentWorldOracle)
X_START = 8.0  # ball centre at frame 0, scene px
SPEED = 8.0  # scene px per frame (60 px/s at 7.5 fps)
OCCLUDER_COLS = (96, 161)  # columns 96-160: the disk (R = 16, edges included) is wholly behind them for x in
# [112, 144], frames 13-17
OCCLUDER_ROWS = (render.BALL_ROW - RADIUS - 8, render.BALL_ROW + RADIUS + 8)  # the ball and its guide line
SWITCH_FRAME = 15  # where an impossible ball vanishes or appears, out of sight
WORLDS = {"present": (True, True), "absent": (False, False), "vanish": (True, False), "appear": (False, True)}
NAMESPACE = "worldmemory.permanence.intphys_fixture.v1"


def ball_x(frame: int) -> float:
    """The ball's centre column (scene px) at ``frame``: constant speed across the occluder."""
    return X_START + SPEED * frame


def fixture_scene(index: int) -> render.Scene:
    return render.Scene(RADIUS, N_DISTRACTORS, index)


def occluder_colour(scene: render.Scene) -> tuple[int, int, int]:
    """The scene's opaque occluder colour, red never dominant (the ball is the only red thing)."""
    g, b = (int(v) for v in stable_rng(scene.id, NAMESPACE + "/occluder").integers(30, 221, size=2))
    return min(g, b), g, b


def render_video(scene: render.Scene, world: str) -> np.ndarray:
    """uint8 (N_FRAMES, render.SIZE, render.SIZE, 3) of one world: background, distractors, ball, occluder."""
    before, after = WORLDS[world]
    out = np.repeat(render.background(scene)[None], N_FRAMES, axis=0)
    rects = render._distractors(scene)
    colour = occluder_colour(scene)
    for f, img in enumerate(out):
        for rect in rects:
            rect.draw(img, f)
        if before if f < SWITCH_FRAME else after:
            render._draw_ball(img, ball_x(f), render.BALL_ROW, scene.radius, render.BALL_COLOURS)
        img[slice(*OCCLUDER_ROWS), slice(*OCCLUDER_COLS)] = colour
    return out


def video_worlds(scene: render.Scene) -> list[str]:
    """The worlds of videos 1..4, in an order drawn per scene."""
    return list(stable_rng(scene.id, NAMESPACE + "/order").permutation(list(WORLDS)))


def write_video(video_dir: Path, frames: np.ndarray, world: str, scene: render.Scene, size: int) -> None:
    """scene/scene_001.png ... (box-filtered to ``size``) and status.json of one video."""
    (video_dir / "scene").mkdir(parents=True, exist_ok=True)
    for f, frame in enumerate(frames, start=1):
        image = Image.fromarray(frame)
        if size != frame.shape[0]:
            image = image.resize((size, size), Image.Resampling.BOX)
        image.save(video_dir / "scene" / f"scene_{f:03d}.png")
    before, after = WORLDS[world]
    status = {"header": {"is_possible": before == after},
              "fixture": {"world": world, "ball_before": before, "ball_after": after, "scene_id": scene.id,
                          "fps": render.FPS}}
    (video_dir / "status.json").write_text(json.dumps(status, indent=1, sort_keys=True) + "\n")


def write_fixture(out, n_scenes: int, size: int = SIZE) -> list[Path]:
    """Write ``n_scenes`` scenes as out/O1/<scene>/<video>/; returns the scene directories."""
    scene_dirs = []
    for i in range(n_scenes):
        scene = fixture_scene(i)
        scene_dir = Path(out) / BLOCK / f"{i + 1:02d}"
        for number, world in enumerate(video_worlds(scene), start=1):
            write_video(scene_dir / str(number), render_video(scene, world), world, scene, size)
        scene_dirs.append(scene_dir)
    print(f"[intphys_fixture] {n_scenes} scenes x {len(WORLDS)} videos -> {Path(out) / BLOCK}")
    return scene_dirs


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path, help="dataset root to write (O1/ inside)")
    ap.add_argument("--scenes", required=True, type=int, help="number of scenes (4 videos each)")
    ap.add_argument("--size", type=int, default=SIZE, help="frame side in px")
    args = ap.parse_args(argv)
    write_fixture(args.out, args.scenes, args.size)


if __name__ == "__main__":
    main()
