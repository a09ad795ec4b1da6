"""On-the-fly clips and batches of the synthetic container curriculum and its domain-matched controls.

*Tracking Is Not Permanence*, Section 3.5 (ii)-(iii), Appendix C ("Synthetic container
curriculum": "scenes rendered on the fly: random box colour and size, random background tile,
K distractors; 70% of batches use the container mask (box interior after opening), 30% the generic
mixture; scenarios enter, miss, exit and none") and Appendix I ("Nothing moves", "Nothing
persists"). Nothing is pooled: every batch is rendered from the Generator it is given.

A clip's geometry (:class:`Layout`) is drawn in pixels of the clip itself, ``size`` px square (the
model's crop: a 32-frame clip rendered at 128 px takes 13 ms on one core, against 87 ms at the
probe's 256 px plus ``train.area_downsample``); lengths are the probe's (Appendix B) times
``size / 256``, except the ball's 4 px checker cells. With the motion to the right
(half of the layouts are mirrored left-right afterwards):

* a red checker ball (the probe's ``BALL_COLOURS``) of radius R in {4, 8, 16, 32} moves along row
  ``row`` at ``speed`` in 1.6-4.8 px/frame, above the probe's guide line;
* an opaque box of random colour (never red-dominant, so a red pixel is the ball) and random size
  (2R + 8..56 px per side) waits raised, its bottom edge ``containers.BOX_LIFT`` px above the ball's
  top row, at column ``close_x``; at ``close_frame`` (2 .. T/2) it drops to centre on the row and
  covers a disk of radius R completely; at ``open_frame`` (close + 2 .. T - 2) it rises again. A
  'stationary' box stays at ``close_x``; a 'moving' one travels on at ``speed`` from closing on;
* K in {0, 2, 4} distractor rectangles (``render._random_rect``) in the rows above the ball's;
* gray tiles of 8, 16 or 32 px with intensities in the probe's 70..130.

Scenarios (the ball's path; the box does the same in all four):

* enter: the ball reaches ``close_x`` at the closing frame and the box closes over it; it moves on
  inside a moving box or stops in a stationary one, and is revealed when the box opens;
* miss: the ball has passed the box when it closes (at the closing frame its left edge is
  ``BOX_LIFT`` px right of the box) and moves on, visible in every frame;
* exit: the ball leaves the frame exactly when the box closes (render's exit control); the box
  closes and opens empty;
* none: no ball.

Variants (Appendix I): 'moving' is the curriculum; 'nothing_moves' freezes ball, box and
distractors at their first-frame positions (every frame equals the first); 'nothing_persists'
redraws each object that frame holds at an independent uniform position in every frame, over the
persistent background. The paper trains both controls without container masks, so a batch of
'nothing_persists' clips (whose box has no shared interior) refuses a container fraction above 0.

Choices where the paper is silent: scenario weights are equal; one layout is shared by the clips
of a container-mask batch (scenario and appearance differ per clip), because one set of hidden
tokens serves the whole batch (``predict_hidden``); generic-mixture batches draw a layout per clip.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from worldmemory.permanence.containers import BOX_LIFT
from worldmemory.permanence.mask_generators import CONTAINER, V2_MIXTURE, container_mask, mixture_mask, weighted_key
from worldmemory.permanence.render import (
    BALL_COLOURS,
    DISTRACTOR_CHANNEL,
    DISTRACTOR_HEIGHT,
    DISTRACTOR_MAX_ROW,
    DISTRACTOR_WIDTH,
    GUIDE_INTENSITY,
    MOTIONS,
    SIZE,
    TILE_RANGE,
    _draw_ball,
    _random_rect,
)

SCENARIOS = ("enter", "miss", "exit", "none")
VARIANTS = ("moving", "nothing_moves", "nothing_persists")
SCENARIO_WEIGHTS = {scenario: 0.25 for scenario in SCENARIOS}
CONTAINER_FRACTION = 0.7  # Appendix C: "70% of batches use the container mask"
RADII = (4, 8, 16, 32)  # Appendix B's radii, at 256 px
DISTRACTOR_COUNTS = (0, 2, 4)  # Appendix B's K
TILES = (8, 16, 32)
SPEEDS = (1.6, 4.8)  # px per frame at 256 px: the probe's 3.2 +- 50%
BOX_MARGIN = (8, 56)  # box side minus the ball's diameter, at 256 px
MIN_MARGIN = 4  # the closed box covers the disk once its sides exceed 2R + 3 px
MIN_FRAMES, MIN_SIZE = 8, 64
MAX_TRIES = 1000


@dataclass(frozen=True)
class Layout:
    """The geometry and timing of one container scene, in pixels of a ``size`` px clip (unmirrored:
    the ball moves right; ``mirrored`` flips the rendered clip left-right)."""

    size: int
    n_frames: int
    radius: int
    box_width: int
    box_height: int
    row: int
    lift: int
    speed: float
    close_frame: int
    open_frame: int
    box_motion: str
    close_x: float
    mirrored: bool

    def closed(self, f: int) -> bool:
        return self.close_frame <= f < self.open_frame

    def box_x(self, f: int) -> float:
        """The box's centre column: at ``close_x`` until it closes, then moving on or staying put."""
        travelled = self.speed * max(f - self.close_frame, 0) if self.box_motion == "moving" else 0.0
        return self.close_x + travelled

    def interior(self, f: int) -> tuple[int, int, int, int]:
        """(top, bottom, left, right), half-open, of the closed box at frame f's box column: where the
        contents are, and what the container mask hides after opening."""
        return self._rect(self.row - self.box_height // 2, f)

    def box(self, f: int) -> tuple[int, int, int, int]:
        """The drawn box at frame f: the interior while closed, else raised above the ball's row."""
        if self.closed(f):
            return self.interior(f)
        return self._rect(self.row - self.radius - self.lift - self.box_height + 1, f)

    def _rect(self, top: int, f: int) -> tuple[int, int, int, int]:
        left = math.floor(self.box_x(f) + 0.5) - self.box_width // 2
        rect = np.clip([top, top + self.box_height, left, left + self.box_width], 0, self.size)
        return tuple(int(v) for v in rect)

    def ball_x(self, f: int, scenario: str) -> float:
        """The ball's centre column at frame f in ``scenario``; NaN where no ball is drawn."""
        since_close = f - self.close_frame
        if scenario == "enter":
            return self.close_x + self.speed * (since_close if self.box_motion == "moving" else min(since_close, 0))
        if scenario == "miss":
            return self.close_x + self.box_width / 2 + self.lift + self.radius + self.speed * since_close
        if scenario == "exit" and since_close < 0:
            return self.size + self.radius + self.speed * since_close
        return math.nan


@dataclass(frozen=True)
class ContainerClip:
    """A rendered clip and what the container mask and the tests need of it (output coordinates,
    mirrored if the layout is): per-frame box and interior rectangles (T, 4) as (top, bottom, left,
    right) half-open, the ball's centre (T,) (NaN where none is drawn) and the box's timing."""

    frames: np.ndarray
    box: np.ndarray
    interior: np.ndarray
    ball_x: np.ndarray
    ball_y: np.ndarray
    radius: int
    close_frame: int
    open_frame: int
    scenario: str
    variant: str
    box_motion: str


def _check_clip(n_frames: int, size: int) -> None:
    if not isinstance(n_frames, int) or n_frames < MIN_FRAMES:
        raise ValueError(f"n_frames must be an integer >= {MIN_FRAMES} (room to close and open the box), "
                         f"got {n_frames!r}")
    if not isinstance(size, int) or size < MIN_SIZE:
        raise ValueError(f"size must be an integer >= {MIN_SIZE} px (the model's crop_size), got {size!r}")


def _px(length: float, k: float) -> int:
    """A length of the 256 px scene in pixels of the clip, at least 1."""
    return max(1, round(length * k))


def sample_layout(rng: np.random.Generator, n_frames: int = 32, size: int = 128) -> Layout:
    """A layout in which every scenario fits: the box in the frame before it moves, the entering ball
    whole at the start, the missing ball whole throughout, the exit ball's centre in the first frame;
    infeasible draws are redrawn (so large balls close later and move faster on average)."""
    _check_clip(n_frames, size)
    k = size / SIZE
    for _ in range(MAX_TRIES):
        radius = _px(rng.choice(RADII), k)
        margins = rng.integers(BOX_MARGIN[0], BOX_MARGIN[1] + 1, size=2)
        width, height = (2 * radius + max(MIN_MARGIN, _px(m, k)) for m in margins)
        row = int(rng.integers(_px(DISTRACTOR_MAX_ROW, k) + 1 + radius, size - (height - height // 2)))
        speed = float(rng.uniform(*SPEEDS)) * k
        close = int(rng.integers(max(2, n_frames // 8), n_frames // 2 + 1))
        opening = int(rng.integers(close + 2, n_frames - 1))
        lift = _px(BOX_LIFT, k)
        lo = max(width / 2 + 1, radius + speed * close)
        hi = size - 1 - 2 * radius - lift - width / 2 - speed * (n_frames - 1 - close)
        if lo <= hi and speed * close >= radius + 1:  # the exit ball's centre is in the first frame
            return Layout(size, n_frames, radius, width, height, row, lift, speed, close, opening,
                          str(rng.choice(MOTIONS)), float(rng.uniform(lo, hi)), bool(rng.random() < 0.5))
    raise RuntimeError(f"no feasible container layout in {MAX_TRIES} draws for {n_frames} frames at {size} px")


def _colour(rng: np.random.Generator) -> tuple[int, int, int]:
    """A solid colour whose red never dominates (the probe's distractor rule), so red marks the ball."""
    lo, hi = DISTRACTOR_CHANNEL
    g, b = (int(v) for v in rng.integers(lo, hi + 1, size=2))
    return int(rng.integers(lo, max(g, b) + 1)), g, b


def _background(rng: np.random.Generator, layout: Layout) -> np.ndarray:
    """Gray tiles of a random size (8, 16 or 32 px at 256) and the guide line below the ball's row."""
    tile = _px(rng.choice(TILES), layout.size / SIZE)
    n = -(-layout.size // tile)
    tiles = rng.integers(TILE_RANGE[0], TILE_RANGE[1] + 1, size=(n, n), dtype=np.uint8)
    gray = np.repeat(np.repeat(tiles, tile, axis=0), tile, axis=1)[: layout.size, : layout.size]
    line = layout.row + layout.radius + 2
    gray[line : line + _px(2, layout.size / SIZE)] = GUIDE_INTENSITY
    return np.repeat(gray[..., None], 3, axis=2)


def _distractors(rng: np.random.Generator, layout: Layout, n_distractors: int) -> list:
    k = layout.size / SIZE
    widths = tuple(_px(w, k) for w in DISTRACTOR_WIDTH)
    heights = tuple(_px(h, k) for h in DISTRACTOR_HEIGHT)
    return [_random_rect(rng, layout.size, _px(DISTRACTOR_MAX_ROW, k), widths, heights, _colour(rng))
            for _ in range(n_distractors)]


def _moving_state(layout: Layout, scenario: str, rects: list) -> dict:
    """Per-frame objects of the curriculum: box, interior, ball centre and the distractors' (rect, time)."""
    frames = range(layout.n_frames)
    return {
        "box": np.array([layout.box(f) for f in frames]),
        "interior": np.array([layout.interior(f) for f in frames]),
        "ball_x": np.array([layout.ball_x(f, scenario) for f in frames]),
        "ball_y": np.full(layout.n_frames, float(layout.row)),
        "rects": [[(rect, f) for rect in rects] for f in frames],
    }


def _frozen(state: dict) -> dict:
    """Appendix I, "Nothing moves": every object where it is in the first frame."""
    return {key: value[:1] * len(value) if key == "rects" else np.repeat(value[:1], len(value), axis=0)
            for key, value in state.items()}


def _shuffled(rng: np.random.Generator, state: dict, layout: Layout) -> dict:
    """Appendix I, "Nothing persists": the objects of each frame at independent uniform positions."""
    n, size, r = layout.n_frames, layout.size, layout.radius
    has_ball = np.isfinite(state["ball_x"])
    top = rng.integers(0, size - layout.box_height + 1, size=n)
    left = rng.integers(0, size - layout.box_width + 1, size=n)
    box = np.stack([top, top + layout.box_height, left, left + layout.box_width], axis=1)
    rects = [[(_placed(rng, rect, size), 0) for rect, _ in frame] for frame in state["rects"]]
    return {
        "box": box,
        "interior": box.copy(),
        "ball_x": np.where(has_ball, rng.uniform(r, size - 1 - r, size=n), np.nan),
        "ball_y": np.where(has_ball, rng.uniform(r, size - 1 - r, size=n), np.nan),
        "rects": rects,
    }


def _placed(rng: np.random.Generator, rect, size: int):
    """The distractor at rest at a uniform position with its centre in the frame."""
    return dataclasses.replace(rect, x_mid=float(rng.uniform(0, size)), x_amp=0.0,
                               y_mid=float(rng.uniform(0, size)), y_amp=0.0)


def _draw(background: np.ndarray, state: dict, radius: int, colour) -> np.ndarray:
    """Frames in the probe's draw order: background, distractors, ball, box."""
    out = np.repeat(background[None], len(state["box"]), axis=0)
    for f, img in enumerate(out):
        for rect, t in state["rects"][f]:
            rect.draw(img, t)
        if np.isfinite(state["ball_x"][f]):
            _draw_ball(img, state["ball_x"][f], state["ball_y"][f], radius, BALL_COLOURS)
        top, bottom, left, right = state["box"][f]
        img[top:bottom, left:right] = colour
    return out


def _mirror(state: dict, frames: np.ndarray, size: int) -> tuple[dict, np.ndarray]:
    """The clip flipped left-right: columns c -> size - 1 - c, rectangles [l, r) -> [size - r, size - l)."""
    state = dict(state)
    for key in ("box", "interior"):
        rect = state[key].copy()
        rect[:, 2], rect[:, 3] = size - state[key][:, 3], size - state[key][:, 2]
        state[key] = rect
    state["ball_x"] = size - 1 - state["ball_x"]
    return state, np.ascontiguousarray(frames[:, :, ::-1])


def render_container_clip(rng: np.random.Generator, layout: Layout, scenario: str, variant: str = "moving",
                          n_distractors: int | None = None) -> ContainerClip:
    """One clip of ``layout``: random box colour, background tiles and distractors (K drawn from
    {0, 2, 4} unless given), the ball's path of ``scenario``, in the given variant."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; expected one of {SCENARIOS}")
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; expected one of {VARIANTS}")
    k = int(rng.choice(DISTRACTOR_COUNTS)) if n_distractors is None else n_distractors
    if not isinstance(k, int) or k < 0:
        raise ValueError(f"n_distractors must be a non-negative integer or None (random K), got {n_distractors!r}")
    colour, background = _colour(rng), _background(rng, layout)
    state = _moving_state(layout, scenario, _distractors(rng, layout, k))
    if variant == "nothing_moves":
        state = _frozen(state)
    elif variant == "nothing_persists":
        state = _shuffled(rng, state, layout)
    frames = _draw(background, state, layout.radius, colour)
    if layout.mirrored:
        state, frames = _mirror(state, frames, layout.size)
    return ContainerClip(frames, state["box"], state["interior"], state["ball_x"], state["ball_y"], layout.radius,
                         layout.close_frame, layout.open_frame, scenario, variant, layout.box_motion)


def sample_container_clip(rng: np.random.Generator, n_frames: int = 32, size: int = 128, scenario: str | None = None,
                          variant: str = "moving", scenario_weights: dict = SCENARIO_WEIGHTS) -> ContainerClip:
    """A clip of a fresh layout; the scenario drawn by ``scenario_weights`` unless given."""
    layout = sample_layout(rng, n_frames, size)
    scenario = weighted_key(rng, scenario_weights, SCENARIOS, "scenario_weights") if scenario is None else scenario
    return render_container_clip(rng, layout, scenario, variant)


def sample_curriculum_batch(rng: np.random.Generator, batch_size: int, n_frames: int, crop_size: int,
                            patch_size: int, tubelet: int, container_fraction: float = CONTAINER_FRACTION,
                            mixture: dict = V2_MIXTURE, variant: str = "moving",
                            scenario_weights: dict = SCENARIO_WEIGHTS,
                            generic=None) -> tuple[np.ndarray, np.ndarray, str]:
    """A training batch (Appendix C): uint8 clips (B, T, crop, crop, 3) rendered at the model's size,
    the hidden token indices shared by the batch, and the mask kind. With probability
    ``container_fraction`` the clips share one layout and hide its box interior after opening
    ('container'); otherwise each clip has its own layout and the mask is one kind of ``mixture``.
    Fractions 0 and 1 are the ablations' curricula. ``generic(rng, batch_size)``, when given, draws
    the clips of the mixture batches instead of the renderer (the user's video: clip_directory)."""
    if not 0 <= container_fraction <= 1:
        raise ValueError(f"container_fraction must lie in [0, 1] (Appendix C: 0.7; 0 and 1 for the ablations), "
                         f"got {container_fraction!r}")
    if variant == "nothing_persists" and container_fraction > 0:
        raise ValueError("container_fraction must be 0 for variant 'nothing_persists': its box is redrawn anywhere "
                         "in every clip, so a batch has no shared interior (Appendix I trains it without container "
                         "masks)")
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if crop_size % patch_size or n_frames % tubelet:
        raise ValueError(f"crop_size {crop_size} must be a multiple of patch_size {patch_size} and n_frames "
                         f"{n_frames} of tubelet {tubelet}")
    if rng.random() < container_fraction:
        layout = sample_layout(rng, n_frames, crop_size)
        clips = [render_container_clip(rng, layout, weighted_key(rng, scenario_weights, SCENARIOS, "scenario_weights"),
                                       variant) for _ in range(batch_size)]
        hidden = container_mask(clips[0].interior, layout.open_frame, crop_size // patch_size, patch_size, tubelet)
        return np.stack([c.frames for c in clips]), hidden, CONTAINER
    if generic is not None:
        clips = generic(rng, batch_size)
    else:
        clips = np.stack([sample_container_clip(rng, n_frames, crop_size, variant=variant,
                                                scenario_weights=scenario_weights).frames for _ in range(batch_size)])
    kind, hidden = mixture_mask(rng, mixture, crop_size // patch_size, n_frames // tubelet)
    return clips, hidden, kind
