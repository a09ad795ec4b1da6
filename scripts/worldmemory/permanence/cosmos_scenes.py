"""The visible-container scenes at the geometry of Cosmos-Predict1's tokenizer (Table 8, Figure 5b).

"Tracking Is Not Permanence" (../shared/seeds/002_711b6a3281a3fb41.txt), Section 3.4
("Autoregressive"), Section 4.5 and Appendix F: "Clips are 33 frames, the training extent of the
model, tokenised by the released DV8x16x16 encoder into five latent chunks of 16x16 tokens. The
reveal is aligned to a chunk boundary"; the ball was hidden in a visible box for 1.07 or 2.13 s
before the scored chunk; the visible continuation: "the ball stays in view and the chunk after
the event is scored" (Table 8's caption). Everything drawn comes from ``containers`` (and through
it ``render``): the same scenes, box, ball, controls and 7.5 fps; this module only places a
33-frame clip in the container clip and names the pairs the readout compares.

Clip and chunks
    CLIP_FRAMES = 33 frames of 256x256 at 7.5 fps (4.4 s). The tokenizer is causal in time:
    chunk 0 is frame 0, chunk k (1..4) frames 8k-7..8k (``chunk_frames``). The box opens at
    REVEAL_FRAME = 25, the first frame of REVEAL_CHUNK = 4, the chunk scored. It closed
    hidden_frames earlier, at clip frame 25 - hidden: 17 (hidden 8 frames, 1.07 s) or 9 (16
    frames, 2.13 s), each the first frame of a chunk too. In the container clip of
    ``containers`` the box closes at EVENT_FRAME = 32, so the 33 clip frames are its full-clip
    frames offset .. offset + 32 with offset = 32 - (25 - hidden) (``clip_frames``).
    hidden_frames = 0 is the visible continuation: the box never closes (it stays raised over
    the ball), and the absent world's ball vanishes in view at frame 25, so chunk 4, the chunk
    after the event, is again the first that differs.

Conditions (CONDITIONS)
    Box motions 'stationary' and 'moving' (``containers``) x hidden 8 and 16 frames, plus the
    visible continuation of either motion: six conditions, each named like 'moving_h08' or
    'stationary_visible'.

Pairs (PAIRS): each is (with ball, without ball), the two candidates of the scored chunk
    'main':        present vs absent (the ball in the box / taken away while it was closed).
    'never_shown': the never-shown-box control: a box that never held a ball opens empty, or on
                   the present world's ball (``containers`` revealed=True).
    'exit':        the exit control: a ball left the frame when the box closed; the box opens
                   empty, or on the present world's ball.
    The two clips of a pair are pixel-identical before REVEAL_FRAME (tested), so their prefix
    tokens agree wherever the tokenizer is deterministic and causal.

Box region (``box_region``)
    The tokens of the scored chunk whose 16x16 px cell meets the closed box's footprint (rows
    BALL_ROW-44 .. BALL_ROW+43, the box's columns) in any frame of the chunk: where the ball is
    revealed. Outside it the pair's pixels agree in every frame.

Scene grid
    "Each row of Table 8 pools three radii, two distractor levels and five seeds" (Appendix F)
    without naming them. We take radii 8, 16 and 32 px (the 4 px ball is a quarter of a 16 px
    token, the grid's least resolvable, and Appendix B's other three radii) and 0 and 4
    distractors (the grid's two extremes): DEFAULT_RADII, DEFAULT_DISTRACTORS, 5 seeds = 30 scenes,
    the same Scene ids (and so backgrounds and distractors) as the other probes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from worldmemory.models.cosmos_tokenizer import SPATIAL, TEMPORAL
from worldmemory.permanence import containers
from worldmemory.permanence.render import EVENT_FRAME, FPS, SIZE, Scene

CLIP_FRAMES = 33
CHUNKS = 1 + (CLIP_FRAMES - 1) // TEMPORAL  # 5
GRID = SIZE // SPATIAL  # 16 tokens per side
REVEAL_CHUNK = 4
REVEAL_FRAME = 1 + (REVEAL_CHUNK - 1) * TEMPORAL  # 25
HIDDEN_FRAMES = (8, 16)  # 1.07 and 2.13 s at 7.5 fps (Section 3.4, Table 8)
VISIBLE = 0  # hidden_frames of the visible continuation
MOTIONS = ("stationary", "moving")
PAIRS = ("main", "never_shown", "exit")

DEFAULT_RADII = (8, 16, 32)
DEFAULT_DISTRACTORS = (0, 4)
DEFAULT_SEEDS = 5


@dataclass(frozen=True)
class Condition:
    """One row of Table 8: a box motion and how long the ball was hidden (0: visible continuation)."""

    motion: str
    hidden_frames: int

    @property
    def name(self) -> str:
        suffix = "visible" if self.hidden_frames == VISIBLE else f"h{self.hidden_frames:02d}"
        return f"{self.motion}_{suffix}"

    @property
    def hidden_s(self) -> float | None:
        """Seconds hidden before the scored chunk; None for the visible continuation."""
        return None if self.hidden_frames == VISIBLE else round(self.hidden_frames / FPS, 2)


CONDITIONS = tuple(Condition(m, h) for m in MOTIONS for h in (*HIDDEN_FRAMES, VISIBLE))


def condition_named(name: str) -> Condition:
    for condition in CONDITIONS:
        if condition.name == name:
            return condition
    raise ValueError(f"unknown condition {name!r}; expected one of {[c.name for c in CONDITIONS]}")


def chunk_frames(k: int) -> range:
    """Clip frames of latent chunk k: chunk 0 is frame 0, chunk k >= 1 frames 8k-7 .. 8k."""
    if not 0 <= k < CHUNKS:
        raise ValueError(f"chunk must be in 0..{CHUNKS - 1}, got {k}")
    return range(0, 1) if k == 0 else range(TEMPORAL * k - TEMPORAL + 1, TEMPORAL * k + 1)


def clip_frames(hidden_frames: int) -> range:
    """The container clip's frames shown as clip frames 0..32: the box closes at clip frame
    25 - hidden (full-clip EVENT_FRAME) and opens at 25 (full-clip EVENT_FRAME + hidden)."""
    if hidden_frames not in (*HIDDEN_FRAMES, VISIBLE):
        raise ValueError(f"hidden_frames must be one of {(*HIDDEN_FRAMES, VISIBLE)}, got {hidden_frames!r}")
    offset = EVENT_FRAME - (REVEAL_FRAME - hidden_frames)
    return range(offset, offset + CLIP_FRAMES)


def render_pair(scene: Scene, condition: Condition, pair: str) -> tuple[np.ndarray, np.ndarray]:
    """The pair's two clips, (with ball, without ball), each [33,256,256,3] uint8."""
    frames = clip_frames(condition.hidden_frames)
    render = lambda world, revealed=False: containers.render_container_world(  # noqa: E731
        scene, condition.motion, condition.hidden_frames, world, frames, revealed)
    if pair == "main":
        return render("present"), render("absent")
    if pair in ("never_shown", "exit"):
        return render(pair, revealed=True), render(pair)
    raise ValueError(f"unknown pair {pair!r}; expected one of {PAIRS}")


def box_region(condition: Condition, radius: int, chunk: int = REVEAL_CHUNK) -> np.ndarray:
    """[16,16] bool: the tokens of ``chunk`` whose cell meets the closed box's footprint in any of
    its frames (rows of the closed box, columns where the box is in that frame)."""
    frames = clip_frames(condition.hidden_frames)
    top, bottom = containers.box_rows(radius, closed=True)
    region = np.zeros((GRID, GRID), bool)
    for i in chunk_frames(chunk):
        left, right = containers.box_cols(frames[i], condition.motion)
        region[top // SPATIAL : (bottom - 1) // SPATIAL + 1, left // SPATIAL : (right - 1) // SPATIAL + 1] = True
    return region
