"""The discrete video tokenizer of Cosmos-Predict1 (``nvidia/Cosmos-Tokenize1-DV8x16x16-720p``).

*Tracking Is Not Permanence*, Section 4.5 and Appendix F: clips of 33 frames at 256x256 are
tokenised by the released DV8x16x16 encoder into five latent chunks of 16x16 tokens. The tokenizer
is causal in time: chunk 0 encodes frame 0 alone and chunk k >= 1 frames 8k-7 .. 8k, so a video of
1 + 8k frames gives 1 + k chunks, and space is compressed 16x.

The released files are TorchScript programs (``encoder.jit``, ``decoder.jit``,
``autoencoder.jit``), loaded with ``torch.jit.load`` as NVIDIA's Cosmos-Tokenizer
(``cosmos_tokenizer/utils.py``, ``video_lib.py``) and cosmos-predict1
(``autoregressive/tokenizer/discrete_video.py``) do. The encoder takes (B, 3, T, H, W) in [-1, 1]
(uint8 frames / 255 * 2 - 1; bf16 upstream) and returns a tuple ``(indices, codes, loss)``:
indices (B, t, h, w) into the FSQ codebook of levels (8, 8, 8, 5, 5, 5) = 64,000 entries, the
quantised codes (B, 6, t, h, w), and a dummy loss. Upstream switches TorchScript's tensor-expression
fuser off so consecutive calls give the same output; :func:`load_tokenizer` does too.

:func:`write_scripted_tokenizer` writes a small stand-in ``encoder.jit`` with the same call
interface, the same temporal and spatial geometry and causality, and FSQ quantisation onto a codebook
of ``SCRIPTED_CODEBOOK_SIZE`` entries (levels 4, 4, 4) after a fixed seeded projection of each
chunk's pixels, so the embedded default and the tests run the same loading path as the released
tokenizer.
"""

from __future__ import annotations

import math
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
from torch import nn

TEMPORAL = 8  # frames per latent chunk after the first
SPATIAL = 16  # pixels per latent token side
SCRIPTED_LEVELS = (4, 4, 4)
SCRIPTED_CODEBOOK_SIZE = math.prod(SCRIPTED_LEVELS)


@contextmanager
def _torchscript():
    """torch.jit warns that it is deprecated; the released tokenizer files are TorchScript."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*torch\.jit\..* is deprecated", category=DeprecationWarning)
        yield


class CosmosTokenizer:
    """A loaded TorchScript encoder: ``encode`` maps uint8 frames to latent token ids."""

    def __init__(self, encoder: torch.jit.ScriptModule, path: Path, device: torch.device,
                 dtype: torch.dtype):
        self.encoder, self.path, self.device, self.dtype = encoder, path, device, dtype

    @torch.inference_mode()
    def encode(self, video: np.ndarray) -> torch.Tensor:
        """(T, H, W, 3) uint8 with T = 1 + 8k and H, W multiples of 16 -> LongTensor (1 + k, H/16, W/16)."""
        video = np.asarray(video)
        if video.dtype != np.uint8 or video.ndim != 4 or video.shape[-1] != 3:
            raise ValueError(f"tokenizer {self.path}: expected uint8 frames (T, H, W, 3), got "
                             f"{video.dtype} {video.shape}")
        frames, height, width, _ = video.shape
        if frames % TEMPORAL != 1:
            raise ValueError(f"tokenizer {self.path}: {frames} frames; the causal tokenizer needs "
                             f"1 + {TEMPORAL}k frames (e.g. 33 = 1 + 8*4 for five chunks): render or "
                             "cut the clip to such a length")
        if height % SPATIAL or width % SPATIAL:
            raise ValueError(f"tokenizer {self.path}: frames of {height}x{width} pixels; both sides "
                             f"must be multiples of {SPATIAL} (the probe uses 256x256)")
        x = torch.from_numpy(video).to(self.device).permute(3, 0, 1, 2)[None]
        x = (x.float() / 255.0 * 2.0 - 1.0).to(self.dtype)
        indices = self.encoder(x)[0][0]
        expected = (1 + frames // TEMPORAL, height // SPATIAL, width // SPATIAL)
        if tuple(indices.shape) != expected:
            raise ValueError(f"tokenizer {self.path}: returned indices of shape {tuple(indices.shape)} "
                             f"for {frames}x{height}x{width} frames, expected {expected}: not a "
                             "DV8x16x16 encoder.jit")
        return indices.long().cpu()


def load_tokenizer(directory: str | Path, device: str | torch.device = "cpu",
                   dtype: torch.dtype = torch.bfloat16) -> CosmosTokenizer:
    """Load ``encoder.jit`` from a tokenizer directory (released or :func:`write_scripted_tokenizer`)."""
    path = Path(directory) / "encoder.jit"
    if not path.is_file():
        raise FileNotFoundError(
            f"no tokenizer encoder at {path}: expected the TorchScript encoder.jit of "
            "nvidia/Cosmos-Tokenize1-DV8x16x16-720p; fetch it with `python -m "
            "worldmemory.models.prefetch --id nvidia/Cosmos-Tokenize1-DV8x16x16-720p "
            "--patterns '*.jit' --out DIR`, or write the test stand-in with write_scripted_tokenizer")
    torch._C._jit_set_texpr_fuser_enabled(False)  # as upstream: identical output on repeated calls
    with _torchscript():
        encoder = torch.jit.load(str(path), map_location=device).eval()
    return CosmosTokenizer(encoder, path, torch.device(device), dtype)


class ScriptedDVEncoder(nn.Module):
    """Stand-in DV8x16x16 encoder: per-chunk seeded linear projection, then FSQ quantisation."""

    def __init__(self, seed: int, levels: tuple[int, ...] = SCRIPTED_LEVELS):
        super().__init__()
        self.temporal, self.spatial = TEMPORAL, SPATIAL  # attributes: TorchScript reads no globals
        generator = torch.Generator().manual_seed(seed)
        first, chunk = 3 * SPATIAL * SPATIAL, 3 * TEMPORAL * SPATIAL * SPATIAL
        gain = 2.0  # pixels in [-1, 1] -> projections of std ~1, spread over the FSQ levels
        self.register_buffer("first", torch.randn(first, len(levels), generator=generator) * gain / first ** 0.5)
        self.register_buffer("chunk", torch.randn(chunk, len(levels), generator=generator) * gain / chunk ** 0.5)
        self.register_buffer("levels", torch.tensor(levels, dtype=torch.float32))
        basis = torch.cumprod(torch.tensor((1,) + levels[:-1], dtype=torch.float32), dim=0)
        self.register_buffer("basis", basis)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        b, c, t, h, w = x.shape
        s = self.spatial
        hh, ww, k = h // s, w // s, (t - 1) // self.temporal
        y = x.float()
        first = y[:, :, :1].reshape(b, c, 1, hh, s, ww, s).permute(0, 2, 3, 5, 1, 4, 6)
        rest = y[:, :, 1:].reshape(b, c, k, self.temporal, hh, s, ww, s).permute(0, 2, 4, 6, 1, 3, 5, 7)
        z = torch.cat([first.reshape(b, 1, hh, ww, -1) @ self.first,
                       rest.reshape(b, k, hh, ww, -1) @ self.chunk], dim=1)
        # FSQ (Mentzer et al. 2023, as in Cosmos-Tokenizer's FSQuantizer): bound, round, index
        half_l = (self.levels - 1) * (1 + 1e-3) / 2
        offset = torch.where(self.levels % 2 == 0, 0.5, 0.0)
        shift = torch.atanh(offset / half_l)
        rounded = torch.round(torch.tanh(z + shift) * half_l - offset)
        half_width = torch.floor(self.levels / 2)
        indices = ((rounded + half_width) * self.basis).sum(dim=-1).to(torch.int32)
        codes = (rounded / half_width).permute(0, 4, 1, 2, 3).to(x.dtype)
        return indices, codes, torch.zeros((), dtype=x.dtype, device=x.device)


def write_scripted_tokenizer(directory: str | Path, seed: int = 0) -> Path:
    """Write the stand-in ``encoder.jit`` (TorchScript) into ``directory``; return its path."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "encoder.jit"
    with _torchscript():
        torch.jit.save(torch.jit.script(ScriptedDVEncoder(seed)), str(path))
    return path
