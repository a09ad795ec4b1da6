"""DINOv2 patch features (Oquab et al., 2024) for the appearance metrics, via transformers.

WorldMemBench (Section 4.4) pools DINOv2 features within person and object masks (Eq. 4) and
compares global DINOv2 features (Visible Memory); PersistBench pools full-frame DINOv2 features
under the target mask. :class:`Dinov2Features` gives the per-patch features these pool; the pooling
itself is shared by every backend (:mod:`worldmemory.perception.features`), the pixel handling
below and the model run by every ViT backend (:mod:`worldmemory.perception.vit`).

Images are not resized by default: they are padded at the bottom and right to whole 14-pixel
patches, so every patch sees the frame's own pixels at the frame's own scale and a mask maps to
patches by plain block geometry. transformers' DINOv2 embeddings always interpolate the position
embeddings to the input's patch grid, so any padded size is a valid input. ``max_side`` bounds the
cost on large frames by shrinking them first (aspect ratio kept).

Released checkpoints load from a Hugging Face id or a local directory; tests build the same
classes from a small config with random weights.
"""

from __future__ import annotations

import torch
from transformers import (
    AutoModel,
    Dinov2Config,
    Dinov2Model,
    Dinov2WithRegistersConfig,
    Dinov2WithRegistersModel,
)
from transformers.image_utils import IMAGENET_DEFAULT_MEAN, IMAGENET_DEFAULT_STD

from worldmemory.models.device import torch_device
from worldmemory.perception.vit import VitPatchFeatures, checkpoint_source


class Dinov2Features(VitPatchFeatures):
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
        super().__init__(model, device, max_side, model.config.patch_size, IMAGENET_DEFAULT_MEAN, IMAGENET_DEFAULT_STD)
        self.num_register_tokens = int(getattr(self.config, "num_register_tokens", 0))
        self.name = "dinov2-with-registers" if self.num_register_tokens else "dinov2"

    @classmethod
    def from_pretrained(cls, source: str, device: str = "cpu",
                        max_side: int | None = None) -> Dinov2Features:
        """Load a checkpoint from a local directory or a Hugging Face id (the class follows its config);
        a missing GPU fails first, before the model is read."""
        torch_device(device)
        model = AutoModel.from_pretrained(checkpoint_source(source, "DINOv2"), dtype=torch.float32)
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

    def patch_tokens(self, pixels: torch.Tensor) -> torch.Tensor:
        """The last hidden state after the final layer norm, less the CLS and register tokens."""
        tokens = self.model(pixel_values=pixels).last_hidden_state
        return tokens[:, 1 + self.num_register_tokens:]
