"""What every learned ViT patch-feature backend shares: loading, pixels onto whole patches, the run.

A backend (:mod:`~worldmemory.perception.dinov2`, :mod:`~worldmemory.perception.clip_features`)
subclasses :class:`VitPatchFeatures`, gives its model's normalisation and patch size, and says in
:meth:`VitPatchFeatures.patch_tokens` how its model turns pixels into one token per patch. The
pixel side is identical for all of them: normalise with the model's mean/std, optionally shrink
(``max_side``), pad at the bottom and right to whole patches with zeros (after normalisation,
i.e. the model's mean colour), on the :class:`~worldmemory.perception.features.PatchGrid` the
pooling uses.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from worldmemory.perception.features import PatchGrid


def checkpoint_source(source: str, what: str) -> str:
    """``source`` as ``from_pretrained`` takes it: an existing directory (which must hold
    config.json) or a Hugging Face id (owner/name). FileNotFoundError for a directory without
    config.json and for a missing path that cannot be an id (absolute, ./, ../, ~, not exactly
    one slash), which transformers would otherwise report as a malformed repo id."""
    path = Path(source)
    if path.exists():
        if not (path / "config.json").exists():
            raise FileNotFoundError(f"{path} has no config.json: not a saved {what} model directory")
        return str(path)
    source = str(source)
    if path.is_absolute() or source.startswith((".", "~")) or source.count("/") != 1:
        raise FileNotFoundError(f"{source}: no such directory, nor a Hugging Face id (owner/name) "
                                f"of a {what} model")
    return source


class VitPatchFeatures:
    """A :class:`~worldmemory.perception.features.PatchFeatures` from a ViT's patch tokens.

    Subclasses set ``name`` and implement :meth:`patch_tokens`; the model runs in float32, under
    bf16 autocast on CUDA only, and the features come back as float32.
    """

    name: str

    def __init__(self, model: torch.nn.Module, device: str, max_side: int | None, patch_size: int,
                 mean, std):
        self.device = torch.device(device)
        self.model = model.float().eval().to(self.device)
        self.config = model.config
        self.max_side = max_side
        self.patch_size = int(patch_size)
        self.mean = torch.tensor(mean, device=self.device).view(1, 3, 1, 1)
        self.std = torch.tensor(std, device=self.device).view(1, 3, 1, 1)

    def preprocess(self, images: np.ndarray) -> tuple[torch.Tensor, PatchGrid]:
        """uint8 (B, H, W, 3) -> normalised (B, 3, gh*p, gw*p) and its grid.

        The model's mean/std normalisation, then zero padding at the bottom and right: zero after
        normalisation is the model's mean colour, the most neutral value it knows. An image whose
        sides are already multiples of the patch size is not padded.
        """
        x = torch.as_tensor(np.asarray(images), device=self.device)
        if x.ndim != 4 or x.shape[-1] != 3 or x.dtype != torch.uint8:
            raise ValueError(f"expected uint8 images of shape (B, H, W, 3), got {x.dtype} {tuple(x.shape)}")
        grid = PatchGrid.fit(tuple(x.shape[1:3]), self.patch_size, self.max_side)
        x = x.permute(0, 3, 1, 2).float().div_(255.0)
        if grid.input_size != grid.image_size:
            x = F.interpolate(x, size=grid.input_size, mode="bilinear", antialias=True, align_corners=False)
        x = (x - self.mean) / self.std
        (h, w), (ph, pw) = grid.input_size, grid.padded_size
        return F.pad(x, (0, pw - w, 0, ph - h)), grid

    def patch_tokens(self, pixels: torch.Tensor) -> torch.Tensor:
        """(B, gh*gw, D) patch tokens, row-major over the grid, of preprocessed ``pixels``."""
        raise NotImplementedError

    def patch_grid(self, images: np.ndarray) -> tuple[np.ndarray, PatchGrid]:
        """float32 patch features (B, gh, gw, D) (:meth:`patch_tokens`) and their grid."""
        pixels, grid = self.preprocess(images)
        bf16 = torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.device.type == "cuda")
        with torch.inference_mode(), bf16:
            tokens = self.patch_tokens(pixels)
        patches = tokens.float()
        return patches.reshape(len(patches), *grid.shape, -1).cpu().numpy(), grid
