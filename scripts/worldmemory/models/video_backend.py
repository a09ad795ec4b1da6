"""What the two masked latent predictors share (*Tracking Is Not Permanence*, Sections 3.2 and 3.4).

V-JEPA 2 and VideoMAE both take ImageNet-normalised clips squash-resized to a square crop and cut
them into tubelet x patch x patch tokens; both run in bf16 on a GPU and fp32 on the CPU, and both
load from a config's model spec the same way. :class:`VideoBackend` holds that once; each backend
adds its own ``encode`` / ``predict`` (the probe's contract: ``masked_predictor``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F
from transformers.image_utils import IMAGENET_DEFAULT_MEAN, IMAGENET_DEFAULT_STD


def imagenet_stats(device, dtype=torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    """ImageNet's channel mean and std, shaped (1, 1, 3, 1, 1) to broadcast over (B, T, 3, H, W)."""
    def shaped(values):
        return torch.tensor(values, device=device, dtype=dtype).view(1, 1, 3, 1, 1)
    return shaped(IMAGENET_DEFAULT_MEAN), shaped(IMAGENET_DEFAULT_STD)


def imagenet_clips(clips, size: int, mean: torch.Tensor, std: torch.Tensor, device) -> torch.Tensor:
    """uint8 clips (B, T, H, W, 3) -> ImageNet-normalised float (B, T, 3, size, size), squash-resized
    by area: the input of V-JEPA 2 and of VideoMAE."""
    x = torch.as_tensor(np.asarray(clips), device=device)
    if x.ndim != 5 or x.shape[-1] != 3:
        raise ValueError(f"expected clips of shape (B, T, H, W, 3), got {tuple(x.shape)}")
    b, t, h, w, _ = x.shape
    x = x.permute(0, 1, 4, 2, 3).float().div_(255.0)
    if (h, w) != (size, size):
        x = F.interpolate(x.reshape(b * t, 3, h, w), size=(size, size), mode="area").reshape(b, t, 3, size, size)
    return (x - mean) / std


class VideoBackend:
    """A transformers video model on a device, fed ImageNet-normalised square clips.

    ``crop_key`` names the config attribute that holds the input side (V-JEPA 2 calls it
    ``crop_size``, VideoMAE ``image_size``).
    """

    crop_key = "crop_size"

    def __init__(self, model: torch.nn.Module, device: str = "cpu"):
        self.model = model.eval().to(device)
        self.device = torch.device(device)
        self.config = model.config
        # bf16 on a GPU (fast on accelerators); fp32 on the CPU
        self.autocast = self.device.type == "cuda"
        self.mean, self.std = imagenet_stats(self.device)

    @property
    def crop_size(self) -> int:
        return getattr(self.config, self.crop_key)

    @property
    def patch_size(self) -> int:
        return self.config.patch_size

    @property
    def tubelet_size(self) -> int:
        return self.config.tubelet_size

    def preprocess(self, clips: np.ndarray | torch.Tensor) -> torch.Tensor:
        """uint8 (B, T, H, W, 3) -> normalised float (B, T, 3, crop, crop); squash-resize by area."""
        return imagenet_clips(clips, self.crop_size, self.mean, self.std, self.device)

    def precision(self):
        """The autocast context the model runs in: bf16 on a GPU, none (fp32) on the CPU."""
        if self.autocast:
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return torch.autocast("cpu", enabled=False)


def model_from_spec(spec: dict, weights: str | None, build: Callable[..., torch.nn.Module],
                    load: Callable[[str], torch.nn.Module]) -> torch.nn.Module:
    """The model a config's model spec names, built by ``build(config, seed=)`` or read by ``load(path)``.

    ``source``: ``train`` (trained by the workflow) and ``hf`` (prefetched into resources/models/)
    load from ``weights``; ``local`` loads ``spec['path']``; ``random`` builds ``spec['config']``
    with random weights (tests, benchmarks).
    """
    source = spec["source"]
    if source == "random":
        return build(spec["config"], seed=spec.get("seed", 0))
    if source == "local":
        return load(spec["path"])
    if source in ("train", "hf"):
        if weights is None:
            raise ValueError(f"a model with source '{source}' needs --weights (the trained or prefetched directory)")
        return load(weights)
    raise ValueError(f"unknown model source '{source}' (expected train, hf, local or random)")
