"""DINOv2 patch features (Oquab et al., 2024) for the appearance metrics, via transformers.

WorldMemBench (Section 4.4) pools DINOv2 features within person and object masks (Eq. 4) and
compares global DINOv2 features (Visible Memory); PersistBench pools full-frame DINOv2 features
under the target mask. :class:`Dinov2Features` gives the per-patch features these pool; the pooling
itself is shared by every backend (:mod:`worldmemory.perception.features`).

Images are not resized by default: they are padded at the bottom and right to whole 14-pixel
patches, so every patch sees the frame's own pixels at the frame's own scale and a mask maps to
patches by plain block geometry. transformers' DINOv2 embeddings always interpolate the position
embeddings to the input's patch grid, so any padded size is a valid input. ``max_side`` bounds the
cost on large frames by shrinking them first (aspect ratio kept).

Released checkpoints load from a Hugging Face id or a local directory; tests build the same
classes from a small config with random weights.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from transformers import (
    AutoModel,
    Dinov2Config,
    Dinov2Model,
    Dinov2WithRegistersConfig,
    Dinov2WithRegistersModel,
)
from transformers.image_utils import IMAGENET_DEFAULT_MEAN, IMAGENET_DEFAULT_STD

from worldmemory.models.device import torch_device
from worldmemory.perception.features import PatchGrid


class Dinov2Features:
    """Patch tokens of a ``Dinov2Model`` or ``Dinov2WithRegistersModel`` as a :class:`PatchFeatures`.

    Only the patch tokens are returned: the CLS token and the register tokens (Darcet et al., 2024,
    "Vision Transformers Need Registers") belong to no image location. Registers are extra tokens
    that take over the global computations which otherwise show up as high-norm artefacts in
    background patches; they carry no pixels of their own, so pooling them under a mask or into a
    frame average would mix in information from outside the region.
    """

    def __init__(self, model: Dinov2Model | Dinov2WithRegistersModel, device: str = "cpu",
                 max_side: int | None = None):
        if not isinstance(model, (Dinov2Model, Dinov2WithRegistersModel)):
            raise TypeError(f"expected a (registers) Dinov2Model, got {type(model).__name__}")
        self.device = torch.device(device)
        self.model = model.float().eval().to(self.device)
        self.config = model.config
        self.max_side = max_side
        self.patch_size = int(self.config.patch_size)
        self.num_register_tokens = int(getattr(self.config, "num_register_tokens", 0))
        self.name = "dinov2-with-registers" if self.num_register_tokens else "dinov2"
        self.mean = torch.tensor(IMAGENET_DEFAULT_MEAN, device=self.device).view(1, 3, 1, 1)
        self.std = torch.tensor(IMAGENET_DEFAULT_STD, device=self.device).view(1, 3, 1, 1)

    @classmethod
    def from_pretrained(cls, source: str, device: str = "cpu",
                        max_side: int | None = None) -> Dinov2Features:
        """Load a checkpoint from a local directory or a Hugging Face id (the class follows its config);
        a missing GPU fails first, before the model is read."""
        torch_device(device)
        path = Path(source)
        if path.exists() and not (path / "config.json").exists():
            raise FileNotFoundError(f"{path} has no config.json: not a saved DINOv2 model directory")
        model = AutoModel.from_pretrained(str(path) if path.exists() else source, dtype=torch.float32)
        return cls(model, device, max_side)

    @classmethod
    def from_config(cls, config: dict, seed: int = 0, device: str = "cpu",
                    max_side: int | None = None) -> Dinov2Features:
        """Random weights of a config; positive ``num_register_tokens`` builds the registers model."""
        torch.manual_seed(seed)
        if config.get("num_register_tokens", 0) > 0:
            model = Dinov2WithRegistersModel(Dinov2WithRegistersConfig(**config))
        else:
            model = Dinov2Model(Dinov2Config(**config))
        return cls(model, device, max_side)

    def preprocess(self, images: np.ndarray) -> tuple[torch.Tensor, PatchGrid]:
        """uint8 (B, H, W, 3) -> normalised (B, 3, gh*14, gw*14) and its grid.

        ImageNet mean/std normalisation, then zero padding at the bottom and right: zero after
        normalisation is the ImageNet mean colour, the most neutral value the model knows. An
        image whose sides are already multiples of the patch size is not padded.
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

    def patch_grid(self, images: np.ndarray) -> tuple[np.ndarray, PatchGrid]:
        """float32 patch features (B, gh, gw, D) after the final layer norm, and their grid."""
        pixels, grid = self.preprocess(images)
        bf16 = torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.device.type == "cuda")
        with torch.inference_mode(), bf16:
            tokens = self.model(pixel_values=pixels).last_hidden_state
        patches = tokens[:, 1 + self.num_register_tokens:].float()
        return patches.reshape(len(patches), *grid.shape, -1).cpu().numpy(), grid
