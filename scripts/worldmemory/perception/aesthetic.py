"""Aesthetic Quality: the LAION aesthetic predictor on CLIP ViT-L/14 image embeddings.

WorldMemBench (Section 4.2) scores every fourth frame of a rollout with "the LAION aesthetic
predictor based on CLIP features", normalised to [0, 1]. As in VBench's aesthetic_quality: the
CLIP image embedding (``CLIPModel.get_image_features``, pixels prepared by the checkpoint's own
``CLIPImageProcessor``) is L2-normalised and fed to the LAION head, whose raw score is on a
1-10 scale; a video's mean raw score is normalised as raw / 10, clipped to [0, 1].

Two head files are accepted, told apart by their state-dict keys:

- ``sa_0_4_vit_l_14_linear.pth`` (LAION-AI/aesthetic-predictor; what VBench uses): one
  ``nn.Linear(embed_dim, 1)``, keys ``weight`` and ``bias``;
- ``sac+logos+ava1-l14-linearMSE.pth`` (christophschuhmann/improved-aesthetic-predictor): an MLP
  ``Linear(embed_dim, 1024), Dropout, Linear(1024, 128), Dropout, Linear(128, 64), Dropout,
  Linear(64, 16), Linear(16, 1)``, keys ``layers.{0,2,4,6,7}.{weight,bias}``.

Nothing is downloaded at run time: the CLIP model loads from a local directory or the local
Hugging Face cache (fetched beforehand by the workflow's prefetch step), the head from a file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from transformers import CLIPImageProcessor, CLIPModel

from worldmemory.models.device import torch_device
from worldmemory.perception.base import rgb_frames

LINEAR_KEYS = ("weight", "bias")
MLP_LINEARS = (0, 2, 4, 6, 7)  # indices of the Linear layers in improved-aesthetic-predictor's nn.Sequential
MLP_KEYS = tuple(f"layers.{i}.{p}" for i in MLP_LINEARS for p in ("weight", "bias"))


class _Mlp(nn.Module):
    """improved-aesthetic-predictor's MLP (its state-dict keys are ``layers.N.*``)."""

    def __init__(self, embed_dim: int):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(embed_dim, 1024), nn.Dropout(0.2),
            nn.Linear(1024, 128), nn.Dropout(0.2),
            nn.Linear(128, 64), nn.Dropout(0.1),
            nn.Linear(64, 16),
            nn.Linear(16, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def load_head(path: str | Path) -> nn.Module:
    """The LAION head in ``path`` (either layout, told by its keys), float32 in eval mode."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"LAION aesthetic head {path} does not exist")
    state = torch.load(path, map_location="cpu", weights_only=True)
    keys = sorted(state) if isinstance(state, dict) else []
    if set(keys) == set(LINEAR_KEYS):
        head = nn.Linear(state["weight"].shape[-1], 1)
    elif set(keys) == set(MLP_KEYS):
        head = _Mlp(state["layers.0.weight"].shape[-1])
    else:
        found = ", ".join(keys) if isinstance(state, dict) else f"a {type(state).__name__}, not a state dict"
        raise ValueError(
            f"{path} is not a LAION aesthetic head: found keys [{found}]; expected either the linear "
            f"head (sa_0_4_vit_l_14_linear.pth: {', '.join(LINEAR_KEYS)}) or the MLP of "
            f"improved-aesthetic-predictor (sac+logos+ava1-l14-linearMSE.pth: {', '.join(MLP_KEYS)})")
    try:
        head.load_state_dict({k: v.float() for k, v in state.items()})
    except RuntimeError as e:
        shapes = ", ".join(f"{k} {tuple(v.shape)}" for k, v in sorted(state.items()))
        raise ValueError(f"{path}: the head's weights have unexpected shapes ({shapes}): {e}") from None
    return head.float().eval()


class LaionAesthetic:
    """LAION aesthetic raw scores per frame (1-10, higher is better) and their [0, 1] normalisation.

    ``model``: a local directory or Hugging Face id of a CLIPModel (e.g. openai/clip-vit-large-patch14),
    ``revision``: used for an id only, ``head``: the LAION head .pth file, ``device``: a torch
    device (on CUDA the CLIP forward runs under bfloat16 autocast), ``batch_size``: frames per forward.
    """

    name = "laion-aesthetic"
    low, high = 0.0, 10.0  # as video_quality.NORMALISATION["aesthetic_quality"]: VBench divides by 10

    def __init__(self, model: str, head: str, revision: str = "main", device: str = "cpu",
                 batch_size: int = 32):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.device = torch_device(device)  # a missing GPU fails before anything is read
        self.batch_size = int(batch_size)
        self.head = load_head(head).to(self.device)  # the small file first: a wrong one fails at once
        self.model, self.processor = _load_clip(model, revision)
        self.model = self.model.float().eval().to(self.device)
        embed_dim = int(self.model.config.projection_dim)
        head_dim = self.head.in_features if isinstance(self.head, nn.Linear) else self.head.layers[0].in_features
        if head_dim != embed_dim:
            raise ValueError(f"head {head} takes {head_dim}-dim embeddings, but CLIP model {model} gives "
                             f"{embed_dim}-dim ones (the LAION heads are for ViT-L/14: 768)")

    def embed(self, frames: np.ndarray) -> np.ndarray:
        """frames (N, H, W, 3) uint8 RGB -> L2-normalised CLIP image embeddings (N, D) float32."""
        frames = rgb_frames(frames)
        out = [self._embed(frames[i:i + self.batch_size]) for i in range(0, len(frames), self.batch_size)]
        dim = int(self.model.config.projection_dim)
        return torch.cat(out).cpu().numpy() if out else np.zeros((0, dim), dtype=np.float32)

    def score(self, frames: np.ndarray) -> np.ndarray:
        """frames (N, H, W, 3) uint8 RGB -> (N,) raw aesthetic scores (nominally 1-10)."""
        frames = rgb_frames(frames)
        scores = []
        for i in range(0, len(frames), self.batch_size):
            with torch.inference_mode():
                scores.append(self.head(self._embed(frames[i:i + self.batch_size])).squeeze(-1).cpu())
        return torch.cat(scores).double().numpy() if scores else np.zeros(0, dtype=float)

    def _embed(self, batch: np.ndarray) -> torch.Tensor:
        pixels = self.processor(images=list(batch), return_tensors="pt",
                                input_data_format="channels_last")["pixel_values"]
        bf16 = torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.device.type == "cuda")
        with torch.inference_mode():
            with bf16:
                features = self.model.get_image_features(pixel_values=pixels.to(self.device))
            if not isinstance(features, torch.Tensor):  # transformers 5: an output, pooler_output projected
                features = features.pooler_output
            return F.normalize(features.float(), dim=-1)

    @classmethod
    def normalise(cls, raw: float) -> float:
        return float(np.clip((raw - cls.low) / (cls.high - cls.low), 0.0, 1.0))


def _load_clip(clip: str, revision: str) -> tuple[CLIPModel, CLIPImageProcessor]:
    """CLIPModel and its image processor from a local directory or the local Hugging Face cache."""
    path = Path(clip).expanduser()
    if not path.exists() and (path.is_absolute() or clip.startswith((".", "~")) or clip.count("/") > 1):
        raise FileNotFoundError(
            f"the CLIP model directory {path} for the aesthetic predictor does not exist. Fetch the "
            "model first with the workflow's prefetch step, or give an existing local directory")
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"{path} has no config.json: not a saved CLIP model directory")
        source, kwargs, what = str(path), {}, f"local directory {path}"
    else:
        source, kwargs, what = clip, {"revision": revision}, f"{clip!r} at revision {revision!r}"
    try:
        model = CLIPModel.from_pretrained(source, dtype=torch.float32, local_files_only=True, **kwargs)
        processor = CLIPImageProcessor.from_pretrained(source, local_files_only=True, **kwargs)
    except (OSError, ValueError) as e:
        cause = " ".join(str(e).split())
        cause = cause if len(cause) <= 300 else cause[:297] + "..."
        raise FileNotFoundError(
            f"cannot load the CLIP model {what} for the aesthetic predictor without downloading: "
            f"{type(e).__name__}: {cause}. Fetch it first with the workflow's prefetch step, or give "
            "a local directory holding the saved CLIPModel and its preprocessor_config.json") from None
    return model, processor
