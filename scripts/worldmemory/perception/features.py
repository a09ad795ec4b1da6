"""Patch features of images and the pooling every backend shares.

WorldMemBench (Section 4.4) compares DINOv2 features "extracted within person/object masks"
(Eq. 4) and "global DINOv2 features" (Visible Memory); PersistBench average-pools full-frame
DINOv2 features under the (downsampled) target mask. Both need the same two steps: a backend maps
an image onto a grid of square patch cells and gives one feature per cell
(:class:`PatchFeatures`), then a mask is pooled onto that grid (:func:`pool_under_mask`).

The cell geometry is the same for every backend and lives in :class:`PatchGrid`: the image is
optionally resized (aspect ratio kept), then padded at the bottom and right to whole cells, and
cell (i, j) covers input pixels [i*p, (i+1)*p) x [j*p, (j+1)*p). A mask pixel belongs to the cells
its image pixel lands in; the padding has no mask.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np


@dataclass(frozen=True)
class PatchGrid:
    """Where the pixels of an image of ``image_size`` (H, W) fall on a backend's patch cells."""

    image_size: tuple[int, int]  # (H, W) of the images given to the backend
    input_size: tuple[int, int]  # (h, w) after the optional resize, before padding
    patch_size: int  # side of one cell in input pixels

    @classmethod
    def fit(cls, image_size: tuple[int, int], patch_size: int, max_side: int | None = None) -> PatchGrid:
        """The grid for an image: no resize unless its longer side exceeds ``max_side``.

        A resize scales the longer side to ``max_side`` and the other by the same factor (rounded),
        so the aspect ratio is kept to within a pixel; images are never enlarged.
        """
        h, w = (int(s) for s in image_size)
        if max_side is not None and max(h, w) > max_side:
            scale = max_side / max(h, w)
            return cls((h, w), (max(1, round(h * scale)), max(1, round(w * scale))), patch_size)
        return cls((h, w), (h, w), patch_size)

    @property
    def shape(self) -> tuple[int, int]:
        """(gh, gw): cells per column and per row; the last ones may be partly padding."""
        return tuple(math.ceil(s / self.patch_size) for s in self.input_size)

    @property
    def padded_size(self) -> tuple[int, int]:
        """(gh * p, gw * p): the input size after padding."""
        return tuple(n * self.patch_size for n in self.shape)

    def cell_coverage(self, mask: np.ndarray) -> np.ndarray:
        """(gh, gw) fraction of each cell's p x p area that the mask covers, exactly.

        Image pixel (y, x) covers an axis-aligned rectangle of the resized input; its overlap with
        each cell is separable, so the covered area is ``Ry @ mask @ Rx.T``. Without a resize this
        is the block sum of the mask. Padding is never covered, so a full mask gives each border
        cell the fraction of it that is image.
        """
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != self.image_size:
            raise ValueError(f"mask of shape {mask.shape} for images of size {self.image_size}")
        rows = _overlap(self.image_size[0], self.input_size[0], self.shape[0], self.patch_size)
        cols = _overlap(self.image_size[1], self.input_size[1], self.shape[1], self.patch_size)
        return rows @ mask.astype(np.float64) @ cols.T / self.patch_size**2


def _overlap(n_pixels: int, n_input: int, n_cells: int, patch: int) -> np.ndarray:
    """(n_cells, n_pixels): length, in input pixels, of image pixel j's extent inside cell i."""
    edges = np.arange(n_pixels + 1) * (n_input / n_pixels)
    start = np.arange(n_cells)[:, None] * patch
    stop = np.minimum(start + patch, n_input)
    return np.clip(np.minimum(edges[1:], stop) - np.maximum(edges[:-1], start), 0.0, None)


class PatchFeatures(Protocol):
    """A backend giving one feature vector per patch cell of an image."""

    name: str  # what the features are, for provenance

    def patch_grid(self, images: np.ndarray) -> tuple[np.ndarray, PatchGrid]:
        """uint8 (B, H, W, 3) images -> float32 features (B, gh, gw, D) and the grid they lie on."""


def patch_features_of(backend, frames, indices, batch: int = 8):
    """({frame index: (gh, gw, D) patch features}, their shared PatchGrid) of ``frames[indices]``,
    sent to ``backend.patch_grid`` ``batch`` frames at a time (grid None with no index)."""
    features, grid = {}, None
    indices = list(indices)
    for i in range(0, len(indices), batch):
        chunk = indices[i:i + batch]
        out, grid = backend.patch_grid(frames[chunk])
        features.update(zip(chunk, out))
    return features, grid


def pool_under_mask(features: np.ndarray, mask: np.ndarray, grid: PatchGrid) -> np.ndarray | None:
    """(D,) mean of the cell features (gh, gw, D) weighted by how much of each cell the mask covers.

    Soft weights keep a thin or small mask from taking whole cells of background at full weight.
    Returns None for an empty mask: there is no observation to pool, which the metrics count as a
    missing (invalid) revisit.
    """
    weights = grid.cell_coverage(mask)
    if features.shape[:2] != weights.shape:
        raise ValueError(f"features of grid {features.shape[:2]} for a grid of {weights.shape}")
    total = weights.sum()
    if total == 0:
        return None
    pooled = np.tensordot(weights, features.astype(np.float64), axes=([0, 1], [0, 1])) / total
    return pooled.astype(np.float32)


def global_feature(features: np.ndarray) -> np.ndarray:
    """(..., D) unweighted mean over all cells of (..., gh, gw, D): the whole-frame feature.

    Frames compared with each other have the same size and hence the same padding, so the border
    cells weigh the same in both; ``pool_under_mask`` with a full mask is the area-weighted variant.
    """
    return np.asarray(features, dtype=np.float32).mean(axis=(-3, -2))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine similarity of two vectors; raises for a zero vector, whose direction is undefined."""
    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    norms = np.linalg.norm(a) * np.linalg.norm(b)
    if norms == 0:
        raise ValueError("cosine of a zero vector")
    return float(a @ b / norms)


def feature_backend(name: str, model: str | None = None, device: str = "cpu", max_side: int | None = None):
    """The patch feature backend ``name`` (perception.registry): the non-learned descriptor, or a
    learned backend (DINOv2, CLIP) loaded from the checkpoint ``model`` (a local directory or a
    Hugging Face id; the score CLIs' ``--features-model``) on ``device``."""
    from worldmemory.perception import registry

    if name == registry.NONE or not hasattr(registry.backend_class("features", name), "from_pretrained"):
        return registry.create("features", name)
    if model is None:
        raise ValueError(f"features {name!r} need a checkpoint (--features-model DIR_OR_HF_ID)")
    return registry.backend_class("features", name).from_pretrained(model, device, max_side)
