"""VideoMAE's pixel readout as a masked latent predictor (*Tracking Is Not Permanence*, Section 3.4, Appendix E).

"For VideoMAE we drop the same band and let the decoder reconstruct its per-patch normalised
pixels; the decision compares the reconstruction with each world's patch targets" (Section 3.4).
A token's feature is therefore the target VideoMAE is trained on with ``norm_pix_loss``, exactly as
transformers' ``VideoMAEForPreTraining`` computes its labels:

* the model input is de-normalised with the ImageNet mean and std (``x * std + mean``, in [0, 1]);
* each token's tubelet x patch x patch cube is laid out (tubelet, row, col, channel), and every
  channel is normalised by the cube's own mean and unbiased standard deviation:
  ``(v - mean) / (sqrt(var) + 1e-6)``;
* the feature is the flattened cube, ``tubelet * patch * patch * 3`` values per token, tokens
  time-major (slot, row, column), as the contract's token index.

``encode(x, None)`` returns these targets for every token (the references). ``encode(x, visible)``
returns ``cat(targets[:, visible], pixels[:, visible])``: the first ``len(visible)`` rows are the
visible tokens in reference space (so vjepa2.copy_last_view reads them as it reads a latent
context), the next ``len(visible)`` rows the visible tokens' model input (the targets discard each
cube's mean and std, which the decoder needs). The context is a function of the visible pixels
only, so ``reads_hidden`` is False and the Prober keys it on the visible pixels.

``predict`` scatters the visible pixels into a clip whose hidden pixels are zero and runs
``VideoMAEForPreTraining`` with ``bool_masked_pos`` = every token outside ``visible``. Its encoder
drops the masked tokens before its blocks (``VideoMAEEmbeddings``: ``embeddings[~bool_masked_pos]``;
the patch embedding is a Conv3d whose stride equals its kernel), so hidden pixels could not reach
it even if they were there; the decoder's logits list the masked tokens in ascending token index.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from transformers import VideoMAEConfig, VideoMAEForPreTraining

from worldmemory.models import vjepa2
from worldmemory.models.video_backend import VideoBackend, imagenet_stats, model_from_spec

NORM_EPS = 1e-6  # VideoMAEForPreTraining: (v - mean) / (std + 1e-6)
ARCHITECTURE_KEYS = (
    "image_size", "patch_size", "tubelet_size", "num_frames", "hidden_size", "num_hidden_layers",
    "num_attention_heads", "decoder_hidden_size", "decoder_num_hidden_layers", "decoder_num_attention_heads",
    "norm_pix_loss",
)


def build_videomae(config: dict, seed: int = 0) -> VideoMAEForPreTraining:
    """A randomly initialised VideoMAEForPreTraining of the given config (tests and pretraining)."""
    torch.manual_seed(seed)
    return VideoMAEForPreTraining(VideoMAEConfig(**config))


def load_videomae(source: str) -> VideoMAEForPreTraining:
    """Load a VideoMAEForPreTraining (with its pixel decoder) from a local directory or a Hugging Face id."""
    path = Path(source)
    if path.exists() and not (path / "config.json").exists():
        raise FileNotFoundError(f"{path} has no config.json: not a saved VideoMAEForPreTraining directory")
    model, info = VideoMAEForPreTraining.from_pretrained(str(path) if path.exists() else source,
                                                         output_loading_info=True)
    if info["missing_keys"]:
        raise ValueError(f"{source} lacks {len(info['missing_keys'])} weights of VideoMAEForPreTraining (e.g. "
                         f"{sorted(info['missing_keys'])[0]}): the pixel readout needs a pretraining checkpoint "
                         "with its decoder, e.g. MCG-NJU/videomae-base, not a fine-tuned encoder")
    return model


def to_cubes(frames: torch.Tensor, tubelet: int, patch: int) -> torch.Tensor:
    """(B, T, C, H, W) -> (B, N, tubelet * patch * patch, C): each token's cube, laid out as transformers' labels."""
    b, t, c, h, w = frames.shape
    x = frames.view(b, t // tubelet, tubelet, c, h // patch, patch, w // patch, patch)
    return x.permute(0, 1, 4, 6, 2, 5, 7, 3).contiguous().view(b, -1, tubelet * patch * patch, c)


def from_cubes(cubes: torch.Tensor, tubelet: int, patch: int, side: int) -> torch.Tensor:
    """The inverse of :func:`to_cubes` (cubes flattened or not): (B, N, ...) -> (B, T, 3, H, W)."""
    b = cubes.shape[0]
    x = cubes.reshape(b, -1, side, side, tubelet, patch, patch, 3)  # slot, row, col, frame, y, x, channel
    x = x.permute(0, 1, 4, 7, 2, 5, 3, 6)  # slot, frame, channel, row, y, col, x
    return x.reshape(b, -1, 3, side * patch, side * patch)


def patch_targets(x: torch.Tensor, tubelet: int, patch: int) -> torch.Tensor:
    """VideoMAE's norm_pix_loss targets (B, N, tubelet * patch * patch * 3) of an ImageNet-normalised input."""
    mean, std = imagenet_stats(x.device, x.dtype)
    cubes = to_cubes(x * std + mean, tubelet, patch)  # de-normalised first, as transformers does
    normed = (cubes - cubes.mean(dim=-2, keepdim=True)) / (cubes.var(dim=-2, unbiased=True, keepdim=True).sqrt()
                                                           + NORM_EPS)
    return normed.view(x.shape[0], cubes.shape[1], -1)


def _indices(tokens, n_tokens: int, what: str) -> np.ndarray:
    tokens = np.asarray(tokens, np.int64).reshape(-1)
    if tokens.size and (tokens.min() < 0 or tokens.max() >= n_tokens):
        raise ValueError(f"{what} holds token indices outside 0..{n_tokens - 1} (the clip's tokens)")
    if len(np.unique(tokens)) != len(tokens):
        raise ValueError(f"{what} repeats token indices; pass each token once")
    return tokens


class VideoMAEBackend(VideoBackend):
    """VideoMAE as a :class:`~worldmemory.models.masked_predictor.MaskedLatentPredictor` (module docstring)."""

    reads_hidden = False  # the context is built from the visible tokens' pixels only
    crop_key = "image_size"

    def __init__(self, model: VideoMAEForPreTraining, device: str = "cpu"):
        cfg = model.config
        if not cfg.norm_pix_loss or cfg.num_channels != 3:
            raise ValueError(f"the pixel readout compares per-patch normalised RGB targets (Section 3.4); this model "
                             f"has norm_pix_loss={cfg.norm_pix_loss}, num_channels={cfg.num_channels}: use a "
                             "checkpoint trained with norm_pix_loss=True on RGB clips")
        super().__init__(model, device)
        self.side = cfg.image_size // cfg.patch_size
        self.n_tokens = cfg.num_frames // cfg.tubelet_size * self.side**2

    @property
    def window_frames(self) -> int:
        """The clip length the model takes (its position embeddings are fixed): the probe reads the
        first this many frames of its window (Appendix E: 16 frames)."""
        return self.config.num_frames

    def preprocess(self, clips: np.ndarray | torch.Tensor) -> torch.Tensor:
        """uint8 (B, T, H, W, 3) -> ImageNet-normalised float (B, T, 3, size, size), squash-resized by area.

        T must be config.num_frames: the fixed position embeddings fix the token count.
        """
        t = np.shape(clips)[1] if np.ndim(clips) == 5 else None
        if t is not None and t != self.config.num_frames:
            raise ValueError(f"VideoMAE takes clips of {self.config.num_frames} frames (config.num_frames), got {t}: "
                             f"cut or subsample the clips to {self.config.num_frames} frames")
        return super().preprocess(clips)

    def encode(self, x: torch.Tensor, visible=None) -> torch.Tensor:
        """The patch targets (B, N, D) of every token, or the context ``cat(targets, pixels)`` of ``visible``."""
        targets = patch_targets(x, self.tubelet_size, self.patch_size)
        if visible is None:
            return targets
        visible = torch.as_tensor(_indices(visible, self.n_tokens, "visible"), device=x.device)
        pixels = to_cubes(x, self.tubelet_size, self.patch_size).flatten(2)
        return torch.cat([targets[:, visible], pixels[:, visible]], dim=1)

    def predict(self, context: torch.Tensor, visible, target) -> torch.Tensor:
        """The decoder's reconstruction (B, n_target, D) of ``target`` (masked tokens) from the visible pixels."""
        visible = _indices(visible, self.n_tokens, "visible")
        target = _indices(target, self.n_tokens, "target")
        if context.shape[1] != 2 * len(visible):
            raise ValueError(f"the context has {context.shape[1]} rows; expected 2 x {len(visible)} (visible tokens' "
                             "targets, then their pixels), as encode(x, visible) returns")
        masked = np.setdiff1d(np.arange(self.n_tokens), visible)  # sorted: the order of the logits
        outside = np.setdiff1d(target, masked)
        if outside.size:
            raise ValueError(f"target tokens {outside[:8].tolist()} are visible: the decoder reconstructs only the "
                             "masked tokens; pass targets outside `visible`")
        b, dev = context.shape[0], context.device
        cubes = context.new_zeros(b, self.n_tokens, context.shape[2])  # hidden pixels: never present
        cubes[:, torch.as_tensor(visible, device=dev)] = context[:, len(visible):]
        x = from_cubes(cubes, self.tubelet_size, self.patch_size, self.side)
        bool_masked_pos = torch.ones(b, self.n_tokens, dtype=torch.bool, device=dev)
        bool_masked_pos[:, torch.as_tensor(visible, device=dev)] = False  # the same count in every item
        with self.precision():
            logits = self.model(pixel_values=x, bool_masked_pos=bool_masked_pos).logits
        return logits[:, torch.as_tensor(np.searchsorted(masked, target), device=dev)].float()


def videomae_backend_from_spec(spec: dict, weights: str | None = None, device: str = "cpu") -> VideoMAEBackend:
    """The backend a config's model spec names (its sources: ``video_backend.model_from_spec``;
    ``train`` is videomae_train's output)."""
    return VideoMAEBackend(model_from_spec(spec, weights, build_videomae, load_videomae), device)


def describe(model: VideoMAEForPreTraining, spec: dict, digest: str | None = None) -> dict:
    """Identity of a VideoMAE for provenance: vjepa2.describe with VideoMAE's architecture keys."""
    return vjepa2.describe(model, spec, digest, keys=ARCHITECTURE_KEYS)
