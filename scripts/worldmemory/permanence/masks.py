"""Token geometry of the belief probe (Section 3.2 of *Tracking Is Not Permanence*).

Scenes live in 256 px scene coordinates; a model sees them resized to its own ``crop_size`` and
cut into ``patch_size`` patches and ``tubelet_size``-frame tubelets. Tokens are indexed
time-major, ``index = slot * rows * cols + row * cols + col``, as in V-JEPA 2.

Choices written down here (the paper gives the region, not the rasterisation):

* a token belongs to a pixel box when its patch shares at least one pixel with it;
* the *trajectory band* hidden by the probe spans the ball's row +- (R + margin) and its
  horizontal path x in [28 - (R + margin), 228 + (R + margin)], so that the readout box of
  R + margin px around the expected position (Section 3.2) always lies inside the hidden band;
* the expected position of a slot is the mean of the present world's ball x over its frames.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from worldmemory.permanence.render import BALL_ROW, X_START
from worldmemory.permanence.render import SIZE as SCENE_SIZE

X_END = 228.0  # the path's end (Appendix B: "from x = 28 to x = 228")
READOUT_MARGIN = 8


@dataclass(frozen=True)
class TokenGrid:
    """The token lattice of a model over a 32-frame, 256 px window."""

    crop_size: int
    patch_size: int
    tubelet_size: int = 2
    n_frames: int = 32
    scene_size: int = SCENE_SIZE

    def __post_init__(self):
        if self.crop_size % self.patch_size:
            raise ValueError(f"crop_size {self.crop_size} is not a multiple of patch_size {self.patch_size}")
        if self.n_frames % self.tubelet_size:
            raise ValueError(f"n_frames {self.n_frames} is not a multiple of tubelet_size {self.tubelet_size}")

    @property
    def side(self) -> int:
        return self.crop_size // self.patch_size

    @property
    def slots(self) -> int:
        return self.n_frames // self.tubelet_size

    @property
    def n_tokens(self) -> int:
        return self.slots * self.side * self.side

    @property
    def patch_px(self) -> float:
        """Side of one patch in scene pixels."""
        return self.scene_size / self.side

    def index(self, slot, row, col) -> np.ndarray:
        return (np.asarray(slot) * self.side + np.asarray(row)) * self.side + np.asarray(col)

    def cells_in_box(self, x0: float, x1: float, y0: float, y1: float) -> tuple[np.ndarray, np.ndarray]:
        """Rows and columns of the patches sharing a pixel with the box [x0, x1] x [y0, y1]."""
        px = self.patch_px

        def span(lo, hi):
            first = max(int(np.floor(max(np.ceil(lo), 0) / px)), 0)
            last = min(int(np.floor(min(np.floor(hi), self.scene_size - 1) / px)), self.side - 1)
            return np.arange(first, last + 1)

        rows, cols = span(y0, y1), span(x0, x1)
        rr, cc = np.meshgrid(rows, cols, indexing="ij")
        return rr.ravel(), cc.ravel()

    def tokens(self, slots, rows, cols) -> np.ndarray:
        """Sorted indices of the given spatial cells in each of the given slots."""
        slots = np.asarray(list(slots))
        idx = self.index(slots[:, None], np.asarray(rows)[None, :], np.asarray(cols)[None, :])
        return np.sort(idx.ravel())


@dataclass(frozen=True)
class ProbeGeometry:
    """Hidden band, visible context and readout regions for one ball radius."""

    grid: TokenGrid
    radius: int
    event_slot: int = 2
    margin: int = READOUT_MARGIN

    @property
    def reach(self) -> int:
        return self.radius + self.margin

    def band_cells(self) -> tuple[np.ndarray, np.ndarray]:
        r = self.reach
        return self.grid.cells_in_box(X_START - r, X_END + r, BALL_ROW - r, BALL_ROW + r)

    def hidden(self, from_slot: int, until_slot: int | None = None) -> np.ndarray:
        """Band tokens of the slots from ``from_slot`` up to ``until_slot`` (exclusive; default:
        the window's end): the probe's target set."""
        until = self.grid.slots if until_slot is None else until_slot
        return self.grid.tokens(range(from_slot, until), *self.band_cells())

    def block(self, entry_x: float) -> np.ndarray:
        """The tube query's target (Appendix I): the band ahead of the ball, from the left edge of
        its readout box at entry (``entry_x``: its centre then) to the path's end, in every slot."""
        r = self.reach
        cells = self.grid.cells_in_box(entry_x - r, X_END + r, BALL_ROW - r, BALL_ROW + r)
        return self.grid.tokens(range(self.grid.slots), *cells)

    def approach(self, entry_x: float) -> np.ndarray:
        """Band tokens behind the block (the ball's visible approach), in every slot."""
        band = self.grid.tokens(range(self.grid.slots), *self.band_cells())
        return np.setdiff1d(band, self.block(entry_x))

    def visible(self, hidden: np.ndarray) -> np.ndarray:
        return np.setdiff1d(np.arange(self.grid.n_tokens), hidden)

    def readout_slots(self) -> range:
        """Slots read by the probe: the event's tubelet (0 s) to the window's end (3.47 s)."""
        return range(self.event_slot, self.grid.slots)

    def region(self, slot: int, ball_x: float) -> np.ndarray:
        """Tokens of the box of R + margin px around the expected ball position in ``slot``."""
        r = self.reach
        rows, cols = self.grid.cells_in_box(ball_x - r, ball_x + r, BALL_ROW - r, BALL_ROW + r)
        return self.grid.tokens([slot], rows, cols)

    def band(self, slot: int) -> np.ndarray:
        """Band tokens of one slot (the three-world readout reads the whole hidden band)."""
        return self.grid.tokens([slot], *self.band_cells())


def slot_ball_x(window_ball_x, tubelet_size: int = 2) -> np.ndarray:
    """Expected ball x per tubelet slot: mean over the slot's frames of the present world's x."""
    x = np.asarray(window_ball_x, dtype=float)
    return x.reshape(-1, tubelet_size).mean(axis=1)


def seconds_since_visible(slot: int, event_slot: int = 2, tubelet_size: int = 2, fps: float = 7.5) -> float:
    """Start time of a slot's tubelet relative to the event (0, 0.267, ..., 3.47 s)."""
    return (slot - event_slot) * tubelet_size / fps
