"""A hand-made, non-learned patch descriptor: the stand-in where no DINOv2 weights can be loaded.

The embedded default configuration must run without downloads, so it cannot use DINOv2. It uses
:class:`ColourGradientPatches` instead: per patch cell, colour statistics and a gradient-orientation
histogram. It has the :class:`~worldmemory.perception.features.PatchFeatures` contract and the same
cell geometry as DINOv2 (bottom/right padding to whole cells), so masks pool onto it the same way.

It has no semantic invariance: it matches colours and edge directions, so a change of lighting,
viewpoint or pose lowers its similarity even when a model would still recognise the object, and
two different objects of similar colour score high. Scores made with it are a smoke test of the
pipeline, not the benchmark's appearance metrics.
"""

from __future__ import annotations

import numpy as np

from worldmemory.perception.features import PatchGrid

LUMA = np.array([0.299, 0.587, 0.114])  # Rec. 601 weights: gradients of perceived brightness


class ColourGradientPatches:
    """Per cell: RGB mean and std, a coarse RGB histogram and a gradient-orientation histogram.

    Each cell's descriptor depends on its own pixels only (gradients are taken inside the cell), so
    a shift by whole cells shifts the descriptors and a mask's weights mean what they say. Padded
    pixels are excluded from every statistic. The concatenation is L2-normalised per cell, so
    cosine similarity compares the mix of colour and texture, not contrast.
    """

    name = "patch-colour-gradient-descriptor"

    def __init__(self, cell: int = 14, colour_bins: int = 4, orientation_bins: int = 8):
        if cell < 2:
            raise ValueError("a cell needs at least 2 pixels a side to have gradients")
        self.patch_size = cell
        self.colour_bins = colour_bins
        self.orientation_bins = orientation_bins

    @property
    def dim(self) -> int:
        return 6 + self.colour_bins**3 + self.orientation_bins

    def patch_grid(self, images: np.ndarray) -> tuple[np.ndarray, PatchGrid]:
        """uint8 (B, H, W, 3) -> float32 descriptors (B, gh, gw, dim) and their grid."""
        images = np.asarray(images)
        if images.ndim != 4 or images.shape[-1] != 3 or images.dtype != np.uint8:
            raise ValueError(f"expected uint8 images (B, H, W, 3), got {images.dtype} {images.shape}")
        grid = PatchGrid.fit(images.shape[1:3], self.patch_size)
        (h, w), (ph, pw) = grid.input_size, grid.padded_size
        # Edge padding keeps the image's last pixels from seeing a false edge into the padding.
        padded = np.pad(images, ((0, 0), (0, ph - h), (0, pw - w), (0, 0)), mode="edge")
        valid = np.zeros((1, ph, pw), dtype=np.float64)
        valid[:, :h, :w] = 1.0
        pixels = self._cells(padded)  # (B, gh, gw, p, p, 3) uint8
        weight = np.broadcast_to(self._cells(valid[..., None])[..., 0], pixels.shape[:-1])
        count = weight.sum(axis=(3, 4))

        rgb = pixels / 255.0
        mean = (rgb * weight[..., None]).sum(axis=(3, 4)) / count[..., None]
        spread = (rgb - mean[:, :, :, None, None]) ** 2
        std = np.sqrt((spread * weight[..., None]).sum(axis=(3, 4)) / count[..., None])

        n = self.colour_bins
        level = pixels.astype(np.int64) * n // 256
        colour_bin = (level[..., 0] * n + level[..., 1]) * n + level[..., 2]
        colour = self._histogram(colour_bin, weight, n**3) / count[..., None]

        luma = rgb @ LUMA
        gy, gx = np.gradient(luma, axis=3), np.gradient(luma, axis=4)
        angle = np.mod(np.arctan2(gy, gx), np.pi)  # unsigned: an edge's direction, not its polarity
        m = self.orientation_bins
        angle_bin = np.minimum((angle / np.pi * m).astype(np.int64), m - 1)
        gradient = self._histogram(angle_bin, np.hypot(gx, gy) * weight, m) / count[..., None]

        features = np.concatenate([mean, std, colour, gradient], axis=-1)
        # Never a zero norm: the colour histogram of a cell sums to 1.
        features /= np.linalg.norm(features, axis=-1, keepdims=True)
        return features.astype(np.float32), grid

    def _cells(self, a: np.ndarray) -> np.ndarray:
        """(B, gh*p, gw*p, C) -> (B, gh, gw, p, p, C)."""
        b, hp, wp, c = a.shape
        p = self.patch_size
        return a.reshape(b, hp // p, p, wp // p, p, c).transpose(0, 1, 3, 2, 4, 5)

    @staticmethod
    def _histogram(bins: np.ndarray, weights: np.ndarray, n_bins: int) -> np.ndarray:
        """Per-cell weighted histogram: (B, gh, gw, p, p) bin indices -> (B, gh, gw, n_bins)."""
        cells = bins.shape[:3]
        cell_id = np.arange(np.prod(cells)).reshape(*cells, 1, 1)
        flat = (cell_id * n_bins + bins).ravel()
        counts = np.bincount(flat, weights=np.asarray(weights, dtype=np.float64).ravel(),
                             minlength=int(np.prod(cells)) * n_bins)
        return counts.reshape(*cells, n_bins)
