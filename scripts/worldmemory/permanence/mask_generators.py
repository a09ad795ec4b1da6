"""Every mask kind of the training curricula (*Tracking Is Not Permanence*, Section 3.5, Appendix C).

Each generator returns the hidden token indices of a clip of ``slots`` tubelet slots of
``side`` x ``side`` tokens: time-major (``slot * side * side + row * side + col``, as
:class:`~worldmemory.permanence.masks.TokenGrid`), sorted, unique, never every token.

* tube: spatial blocks hidden in every slot (V-JEPA's multi-block masks, "short" 8 x 15% and
  "long" 2 x 70% of the frame), Section 3.5 (i) and (iv);
* temporally-partial: a spatial block hidden from a random slot to the end of the clip (3.5 (i));
* causal: every token after a random slot (3.5 (i));
* container: the box interior after opening (Appendix C, "Synthetic container curriculum");
* a mixture that draws one generic kind per batch by weight (Appendix C).

The pretraining (train.py) draws its masks with :func:`sample_mask`; moved here from train.py with
the same draws (a 12-step training on tests/config/tiny.yaml with all four kinds gives the same
weights digest before and after).

The container mask, where the paper gives only "box interior after opening": in every slot that
holds a frame at or after the opening frame, the tokens whose patches share a pixel with the
interior footprint (the rectangle the closed box covers, at the box's column) of those frames.
The slots before the opening, and the earlier frames of the opening slot, hide nothing.
"""

from __future__ import annotations

import math

import numpy as np

from worldmemory.permanence.masks import TokenGrid

# kind: (spatial blocks, area of each block, hidden from a random slot on rather than in every slot)
MASKS = {
    "short_tube": (8, 0.15, False),  # V-JEPA short-range multi-block tube
    "long_tube": (2, 0.70, False),  # V-JEPA long-range multi-block tube
    "temporal_block": (2, 0.15, True),  # Section 3.5 (i): a block hidden from a random slot to the end
    "causal": (0, 1.0, True),  # Section 3.5 (i): every token after a random slot
}


def spatial_blocks(rng: np.random.Generator, side: int, n_blocks: int, scale: float, aspect=(0.75, 1.5)) -> np.ndarray:
    """Union of ``n_blocks`` rectangles of ``scale`` of the frame each (V-JEPA multi-block), as a grid."""
    hidden = np.zeros((side, side), bool)
    for _ in range(n_blocks):
        ratio = math.exp(rng.uniform(math.log(aspect[0]), math.log(aspect[1])))
        h = int(np.clip(round(math.sqrt(scale * side * side * ratio)), 1, side))
        w = int(np.clip(round(math.sqrt(scale * side * side / ratio)), 1, side))
        top, left = rng.integers(0, side - h + 1), rng.integers(0, side - w + 1)
        hidden[top : top + h, left : left + w] = True
    return hidden


GENERIC_KINDS = tuple(MASKS)  # short_tube, long_tube, temporal_block, causal
CONTAINER = "container"
# v2's mixture (Appendix C: causal 30%, temporally-partial 50%, tube 20%); the paper does not say
# how the tube share splits between V-JEPA's short and long tubes: half each.
V2_MIXTURE = {"causal": 0.3, "temporal_block": 0.5, "short_tube": 0.1, "long_tube": 0.1}


def _grid(side: int, slots: int) -> TokenGrid:
    """A token lattice of ``side`` x ``side`` tokens and ``slots`` slots (one pixel per token)."""
    if not isinstance(side, int | np.integer) or side < 1:
        raise ValueError(f"side must be a positive integer (crop_size // patch_size), got {side!r}")
    if not isinstance(slots, int | np.integer) or slots < 1:
        raise ValueError(f"slots must be a positive integer (frames // tubelet), got {slots!r}")
    return TokenGrid(crop_size=side, patch_size=1, tubelet_size=1, n_frames=slots, scene_size=side)


def _in_slots(cells: np.ndarray, first: int, side: int, slots: int) -> np.ndarray:
    """Sorted indices of the True cells of a (side, side) grid in slots first .. slots - 1."""
    rows, cols = np.nonzero(cells)
    return _grid(side, slots).tokens(range(first, slots), rows, cols)


def _first_slot(rng: np.random.Generator, slots: int) -> int:
    """The random slot a temporally-partial mask starts at: never 0, so the clip's start stays visible."""
    if slots < 2:
        raise ValueError(f"slots = {slots}: temporally-partial and causal masks need at least 2 slots "
                         "(a visible first slot); use more frames or a smaller tubelet")
    return int(rng.integers(1, slots))


def tube_mask(rng: np.random.Generator, side: int, slots: int, n_blocks: int = MASKS["short_tube"][0],
              scale: float = MASKS["short_tube"][1]) -> np.ndarray:
    """Spatial blocks hidden in every slot (V-JEPA multi-block tube); redrawn while they cover the frame."""
    _grid(side, slots)
    cells = spatial_blocks(rng, side, n_blocks, scale)
    while cells.all():
        cells = spatial_blocks(rng, side, n_blocks, scale)
    return _in_slots(cells, 0, side, slots)


def temporal_block_mask(rng: np.random.Generator, side: int, slots: int, n_blocks: int = MASKS["temporal_block"][0],
                        scale: float = MASKS["temporal_block"][1]) -> np.ndarray:
    """Spatial blocks hidden from a random slot (>= 1) to the end of the clip (Section 3.5 (i))."""
    _grid(side, slots)
    cells = spatial_blocks(rng, side, n_blocks, scale)
    return _in_slots(cells, _first_slot(rng, slots), side, slots)


def causal_mask(rng: np.random.Generator, side: int, slots: int) -> np.ndarray:
    """Every token from a random slot (>= 1) on (Section 3.5 (i): "every token after a random frame")."""
    _grid(side, slots)
    return _in_slots(np.ones((side, side), bool), _first_slot(rng, slots), side, slots)


def sample_mask(rng: np.random.Generator, kind: str, side: int, slots: int) -> np.ndarray:
    """One mask of a :data:`MASKS` kind (the pretraining's and the curricula's generic masks)."""
    if kind not in MASKS:
        raise ValueError(f"unknown mask kind {kind!r}; expected one of {GENERIC_KINDS} (the container mask needs "
                         "a box footprint: call container_mask)")
    n_blocks, scale, partial = MASKS[kind]
    if not partial:
        return tube_mask(rng, side, slots, n_blocks, scale)
    if n_blocks:
        return temporal_block_mask(rng, side, slots, n_blocks, scale)
    return causal_mask(rng, side, slots)


def container_mask(interior, open_frame: int, side: int, patch_size: int, tubelet: int) -> np.ndarray:
    """The box interior after opening (Appendix C): tokens sharing a pixel with the interior footprint
    of any frame ``f >= open_frame``, in that frame's slot.

    ``interior``: (T, 4) half-open pixel rectangles (top, bottom, left, right) per frame of a clip of
    ``side * patch_size`` px; an empty rectangle (bottom <= top or right <= left) hides nothing.
    """
    interior = np.asarray(interior)
    if interior.ndim != 2 or interior.shape[1] != 4:
        raise ValueError(f"interior has shape {interior.shape}; expected (frames, 4) rectangles "
                         "(top, bottom, left, right) in pixels, one per frame")
    n_frames = len(interior)
    if not isinstance(tubelet, int | np.integer) or tubelet < 1 or n_frames % tubelet:
        raise ValueError(f"tubelet = {tubelet!r} must be a positive divisor of the clip's {n_frames} frames")
    if not 0 <= open_frame < n_frames:
        raise ValueError(f"open_frame = {open_frame} must lie in 0..{n_frames - 1} (a frame of the clip)")
    size = side * patch_size
    grid = TokenGrid(crop_size=size, patch_size=patch_size, tubelet_size=tubelet, n_frames=n_frames, scene_size=size)
    parts = [grid.tokens([f // tubelet], *grid.cells_in_box(left, right - 1, top, bottom - 1))
             for f, (top, bottom, left, right) in enumerate(interior)
             if f >= open_frame and bottom > top and right > left]
    hidden = np.unique(np.concatenate(parts)) if parts else np.zeros(0, np.int64)
    if len(hidden) == grid.n_tokens:
        raise ValueError(f"the container mask hides all {grid.n_tokens} tokens (opening at frame {open_frame}); "
                         "open the box after the first slot or shrink its footprint")
    return hidden


def weighted_key(rng: np.random.Generator, weights: dict, allowed, name: str) -> str:
    """One key of ``weights`` drawn with probability proportional to its weight."""
    keys = list(weights)
    unknown = [k for k in keys if k not in allowed]
    if unknown or not keys:
        raise ValueError(f"{name} has keys {keys}; expected a non-empty subset of {tuple(allowed)}")
    p = np.asarray([weights[k] for k in keys], float)
    if (p < 0).any() or not p.sum() > 0 or not np.isfinite(p).all():
        raise ValueError(f"{name} weights {dict(weights)} must be finite, non-negative and not all zero")
    return keys[int(rng.choice(len(keys), p=p / p.sum()))]


def mixture_mask(rng: np.random.Generator, weights: dict, side: int, slots: int) -> tuple[str, np.ndarray]:
    """A generic kind drawn by ``weights`` (e.g. :data:`V2_MIXTURE`) and one mask of it: (kind, hidden)."""
    kind = weighted_key(rng, weights, GENERIC_KINDS, "mixture")
    return kind, sample_mask(rng, kind, side, slots)
