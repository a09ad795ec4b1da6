"""CLIP vision patch features (Radford et al., 2021) for the appearance metrics, via transformers.

PersistBench's feature-backbone ablation swaps DINOv2 for CLIP ViT-L/14 (and DINOv2-B/14) in
App. :class:`ClipFeatures` gives CLIP's per-patch features with the same contract
as :class:`~worldmemory.perception.dinov2.Dinov2Features`, so the shared pooling
(:mod:`worldmemory.perception.features`) and every metric take either unchanged.

Pixels are handled exactly as for DINOv2 (:class:`~worldmemory.perception.vit.VitPatchFeatures`):
no resize by default, padding at the bottom and right to whole patches (14 pixels for ViT-L/14),
zero padding after normalisation, but with CLIP's own normalisation (OPENAI_CLIP_MEAN/STD), so the
padding is CLIP's mean colour. CLIP's position embeddings are learned for one square grid (16 x 16
at 224 pixels); the model is always called with ``interpolate_pos_encoding=True``, which
resamples them (bicubic) to the input's patch grid, so any padded size is a valid input.

Which tokens, and which normalisation: the features are the final encoder layer's patch tokens
(the CLS token, ``last_hidden_state[:, 0]``, belongs to no image location and is dropped) passed
through CLIP's ``post_layernorm``. In transformers (and OpenAI's ``ln_post``) that layer norm is
applied only to the CLS token, from which CLIP's image embedding is made; applying the same
per-token layer norm to every patch token puts the patch features in the space CLIP trained its
embedding in (dense uses of CLIP such as MaskCLIP also apply it to patch tokens), and makes them
the counterpart of DINOv2's features, which are likewise the final layer-normed tokens. It also
removes the per-token scale of the raw residual stream (large ViTs, CLIP's included, carry a few
very high-norm tokens; Darcet et al., 2024) that would otherwise dominate mask pooling. The visual
projection (``CLIPVisionModelWithProjection``) is not applied: it exists only to meet the text
tower, and the appearance metrics compare images with images.

Released checkpoints (e.g. openai/clip-vit-large-patch14, a full ``CLIPModel``) load from a Hugging
Face id or a local directory: ``CLIPVisionModel`` takes the vision tower and leaves the text tower
unread. Tests build the same class from a small config with random weights.
"""

from __future__ import annotations

import torch
from transformers import AutoConfig, CLIPVisionConfig, CLIPVisionModel
from transformers.image_utils import OPENAI_CLIP_MEAN, OPENAI_CLIP_STD

from worldmemory.models.device import torch_device
from worldmemory.perception.vit import VitPatchFeatures, checkpoint_source

# checkpoints CLIPVisionModel reads: a whole CLIP model (its vision tower) or the vision tower alone
CLIP_MODEL_TYPES = ("clip", "clip_vision_model")


class ClipFeatures(VitPatchFeatures):
    """Layer-normed patch tokens of a ``CLIPVisionModel`` as a :class:`PatchFeatures` (see module)."""

    name = "clip"

    def __init__(self, model: CLIPVisionModel, device: str = "cpu", max_side: int | None = None):
        if not isinstance(model, CLIPVisionModel):
            raise TypeError(f"expected a CLIPVisionModel, got {type(model).__name__}")
        super().__init__(model, device, max_side, model.config.patch_size, OPENAI_CLIP_MEAN, OPENAI_CLIP_STD)

    @classmethod
    def from_pretrained(cls, source: str, device: str = "cpu", max_side: int | None = None) -> ClipFeatures:
        """Load the vision tower of a CLIP checkpoint (a local directory or a Hugging Face id);
        a missing GPU fails first, before the model is read. A checkpoint of another model type,
        or one lacking vision weights, is refused rather than filled with random weights."""
        torch_device(device)
        source = checkpoint_source(source, "CLIP")
        model_type = AutoConfig.from_pretrained(source).model_type
        if model_type not in CLIP_MODEL_TYPES:
            raise ValueError(f"{source} is a {model_type!r} model, not CLIP ({' or '.join(CLIP_MODEL_TYPES)})")
        model, info = CLIPVisionModel.from_pretrained(source, dtype=torch.float32, output_loading_info=True)
        if info["missing_keys"]:
            missing = sorted(info["missing_keys"])
            raise ValueError(f"{source} lacks {len(missing)} CLIP vision weight(s), e.g. {missing[:3]}")
        return cls(model, device, max_side)

    @classmethod
    def from_config(cls, config: dict, seed: int = 0, device: str = "cpu",
                    max_side: int | None = None) -> ClipFeatures:
        """Random weights of a ``CLIPVisionConfig``."""
        torch.manual_seed(seed)
        return cls(CLIPVisionModel(CLIPVisionConfig(**config)), device, max_side)

    def patch_tokens(self, pixels: torch.Tensor) -> torch.Tensor:
        """``post_layernorm`` of the last hidden state's patch tokens (the CLS token dropped), with
        the position embeddings interpolated to the input's grid."""
        tokens = self.model(pixel_values=pixels, interpolate_pos_encoding=True).last_hidden_state
        return self.model.post_layernorm(tokens[:, 1:])
