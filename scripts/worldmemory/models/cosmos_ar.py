"""Cosmos-Predict1's autoregressive video transformer: teacher-forced token log-likelihoods.

*Tracking Is Not Permanence*, Section 4.5 and Appendix F: Cosmos-Predict1-4B is a 16-layer
decoder-only transformer of width 4,096 with 32 query and 8 key-value heads (grouped-query
attention), RMSNorm on queries and keys before a 3D rotary embedding (theta = 5e5, no YaRN for the
4B model), SwiGLU feed-forward blocks of width 14,336, a vocabulary of 64,000 video tokens (the
DV8x16x16 tokenizer's FSQ codebook, 8*8*8*5*5*5) and no special tokens: the first video token is
the first input, so it is never predicted.

This module re-implements the forward pass, written from a reading of NVIDIA's cosmos-predict1
(``autoregressive/networks/transformer.py``, ``modules/attention.py``, ``modules/embedding.py``,
``modules/mlp.py``, ``modules/normalization.py``, ``configs/base/model_config.py``):

- block: ``h = x + attention(attention_norm(x))``, ``out = h + feed_forward(ffn_norm(h))``; after
  the last block ``norm`` and the bias-free ``output`` projection to the vocabulary;
- attention: bias-free ``wq``, ``wk``, ``wv``, ``wo``; per-head RMSNorm ``q_norm``/``k_norm``
  (eps 1e-5) on q and k, then the rotary embedding, then causal softmax attention with scale
  1/sqrt(head_dim); key-value head ``g`` serves query heads ``g*n_rep .. g*n_rep + n_rep - 1``
  (``repeat_interleave``, not ``repeat``);
- RMSNorm: ``x * rsqrt(mean(x^2) + eps)`` computed in float32, cast back, times ``weight``;
- feed-forward: ``w2(silu(w1 x) * w3 x)``;
- 3D rotary embedding (the "v2", TransformerEngine-style one): a head of width ``d`` splits into
  ``d_s = d // 6 * 2`` dimensions for height, as many for width and ``d_t = d - 2 d_s`` for time
  (head 128: 44, 42, 42). Each axis has its own frequencies ``theta ** -(2i / d_axis)``, i.e.
  ``d_t/2`` temporal and ``d_s/2`` spatial ones (height and width share them). The angle vector of
  a token at latent position (t, h, w) is ``[t*f_t, h*f_s, w*f_s]`` (length d/2) repeated twice,
  and dimension ``i`` of the first half rotates with dimension ``i + d/2`` of the second half
  (``rotate_half``: ``[-x2, x1]``). Tokens are in raster order over the latent grid (T, H, W).
  cos/sin are cast to the activations' dtype before they are applied, as upstream does.

These are the settings of upstream's base (video-to-world without text) 4B inference
(``inference/world_generation_pipeline.py``: ``create_video2world_model_config`` with
``rope_dim="3D"``, ``add_special_tokens=False``, QK normalisation on, no absolute position
embedding, no cross-attention, 33 frames at 640x1024, i.e. a latent grid of (5, 40, 64)). The probe
tokenises 256x256 frames, a (5, 16, 16) grid; the rotary positions are per axis, so only the grid
changes.

The released checkpoint ``model.pt`` (``nvidia/Cosmos-Predict1-4B``) holds the state dict by the
names of this module (``tok_embeddings.weight``, ``layers.N.attention.wq.weight``,
``layers.N.attention.q_norm.weight``, ``layers.N.feed_forward.w1.weight``,
``layers.N.attention_norm.weight``, ``layers.N.ffn_norm.weight``, ``norm.weight``,
``output.weight``), possibly under a top-level ``"model"`` entry and with a ``model.`` prefix,
both of which upstream strips; TransformerEngine's ``*._extra_state`` entries carry no weights and
are dropped, as upstream does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

EXTRA_STATE = "_extra_state"  # TransformerEngine FP8 bookkeeping entries: no weights


@dataclass(frozen=True)
class CosmosARConfig:
    """Sizes of the transformer and the default latent grid (T, H, W) its tokens are laid out on."""

    n_layers: int
    dim: int
    n_heads: int
    n_kv_heads: int
    ffn_hidden_size: int
    vocab_size: int
    rope_theta: float = 5e5
    norm_eps: float = 1e-5
    latent_shape: tuple[int, int, int] = (5, 16, 16)

    def __post_init__(self):
        if self.dim % self.n_heads or self.n_heads % self.n_kv_heads:
            raise ValueError(f"CosmosARConfig: dim {self.dim} must divide into n_heads {self.n_heads}, "
                             f"and n_heads into n_kv_heads {self.n_kv_heads}")
        if self.head_dim % 2 or self.head_dim // 6 * 2 == 0:
            raise ValueError(f"CosmosARConfig: head_dim {self.head_dim} is too small or odd for the "
                             "3D rotary split (needs an even head_dim of at least 6)")

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    @classmethod
    def released(cls) -> CosmosARConfig:
        """Cosmos-Predict1-4B (Appendix F; cosmos-predict1 ``COSMOS_ARCHITECTURES["4b"]``)."""
        return cls(n_layers=16, dim=4096, n_heads=32, n_kv_heads=8, ffn_hidden_size=14336,
                   vocab_size=64000)

    @classmethod
    def tiny(cls, vocab_size: int | None = None) -> CosmosARConfig:
        """A 2-layer model of the same structure for tests and the embedded default.

        The vocabulary defaults to the scripted tokenizer's codebook size, so its tokens index it.
        """
        from worldmemory.models.cosmos_tokenizer import SCRIPTED_CODEBOOK_SIZE

        return cls(n_layers=2, dim=64, n_heads=4, n_kv_heads=2, ffn_hidden_size=128,
                   vocab_size=SCRIPTED_CODEBOOK_SIZE if vocab_size is None else vocab_size)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.float()
        return (y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rope_frequencies(head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(temporal, spatial) inverse frequencies of the 3D rotary embedding, float32."""
    d_s = head_dim // 6 * 2
    d_t = head_dim - 2 * d_s
    temporal = 1.0 / theta ** (torch.arange(0, d_t, 2, dtype=torch.float32) / d_t)
    spatial = 1.0 / theta ** (torch.arange(0, d_s, 2, dtype=torch.float32) / d_s)
    return temporal, spatial


def grid_positions(length: int, grid: tuple[int, int, int]) -> torch.Tensor:
    """(length, 3) latent positions (t, h, w) of the first ``length`` tokens in raster order."""
    _, height, width = grid
    i = torch.arange(length)
    return torch.stack([i // (height * width), (i // width) % height, i % width], dim=1)


def rope_angles(positions: torch.Tensor, head_dim: int, theta: float) -> torch.Tensor:
    """(L, head_dim) rotation angles for tokens at ``positions`` (L, 3) = (t, h, w)."""
    temporal, spatial = rope_frequencies(head_dim, theta)
    pos = positions.float()
    half = torch.cat([torch.outer(pos[:, 0], temporal), torch.outer(pos[:, 1], spatial),
                      torch.outer(pos[:, 2], spatial)], dim=1)
    return torch.cat([half, half], dim=1)


def apply_rope(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Rotate (B, L, heads, head_dim) by (L, head_dim) angles; dim i pairs with dim i + head_dim/2."""
    cos = angles.cos().to(x.dtype)[None, :, None, :]
    sin = angles.sin().to(x.dtype)[None, :, None, :]
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin


class Attention(nn.Module):
    def __init__(self, config: CosmosARConfig):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = config.n_heads, config.n_kv_heads, config.head_dim
        self.wq = nn.Linear(config.dim, config.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(config.dim, config.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(config.dim, config.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(config.n_heads * self.head_dim, config.dim, bias=False)
        # upstream builds these with the attention module's own default eps (1e-5), not norm_eps
        self.q_norm = RMSNorm(self.head_dim, 1e-5)
        self.k_norm = RMSNorm(self.head_dim, 1e-5)

    def forward(self, x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
        b, length, _ = x.shape
        q = self.q_norm(self.wq(x).view(b, length, self.n_heads, self.head_dim))
        k = self.k_norm(self.wk(x).view(b, length, self.n_kv_heads, self.head_dim))
        v = self.wv(x).view(b, length, self.n_kv_heads, self.head_dim)
        q, k = apply_rope(q, angles), apply_rope(k, angles)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        rep = self.n_heads // self.n_kv_heads
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1.0 / math.sqrt(self.head_dim))
        return self.wo(out.transpose(1, 2).reshape(b, length, -1))


class FeedForward(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, config: CosmosARConfig):
        super().__init__()
        self.attention = Attention(config)
        self.feed_forward = FeedForward(config.dim, config.ffn_hidden_size)
        self.attention_norm = RMSNorm(config.dim, config.norm_eps)
        self.ffn_norm = RMSNorm(config.dim, config.norm_eps)

    def forward(self, x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
        h = x + self.attention(self.attention_norm(x), angles)
        return h + self.feed_forward(self.ffn_norm(h))


class CosmosAR(nn.Module):
    """The decoder-only video-token transformer; parameter names are the released checkpoint's."""

    def __init__(self, config: CosmosARConfig):
        super().__init__()
        self.config = config
        self.tok_embeddings = nn.Embedding(config.vocab_size, config.dim)
        self.layers = nn.ModuleList(TransformerBlock(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.dim, config.norm_eps)
        self.output = nn.Linear(config.dim, config.vocab_size, bias=False)

    def forward(self, tokens: torch.Tensor, grid: tuple[int, int, int] | None = None) -> torch.Tensor:
        """(B, L) token ids in raster order over ``grid`` (default ``config.latent_shape``) -> (B, L, vocab).

        ``logits[:, i]`` is the prediction of token ``i + 1`` from tokens ``0..i``; L may be shorter
        than the grid (a prefix).
        """
        grid = tuple(grid or self.config.latent_shape)
        length = tokens.shape[1]
        if length > math.prod(grid):
            raise ValueError(f"CosmosAR: {length} tokens do not fit the latent grid {grid}")
        angles = rope_angles(grid_positions(length, grid), self.config.head_dim,
                             self.config.rope_theta).to(tokens.device)
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h, angles)
        return self.output(self.norm(h))


@torch.inference_mode()
def token_log_likelihoods(model: CosmosAR, tokens: torch.Tensor) -> torch.Tensor:
    """Teacher-forced log p(token_i | tokens_<i) in nats, (B, T, H, W) -> float32 (B, T, H, W).

    Token i is predicted from the logits at i - 1 (log-softmax in float32). The first token (t, h,
    w) = (0, 0, 0) has no prediction (no special tokens, Appendix F) and holds NaN; the readout
    scores chunks >= 1 only.
    """
    if tokens.ndim != 4:
        raise ValueError(f"token_log_likelihoods: tokens must be (B, T, H, W), got {tuple(tokens.shape)}")
    b, t, h, w = tokens.shape
    flat = tokens.reshape(b, -1).to(model.output.weight.device)
    logp = torch.log_softmax(model(flat, grid=(t, h, w))[:, :-1].float(), dim=-1)
    scored = logp.gather(-1, flat[:, 1:, None])[..., 0]
    first = torch.full((b, 1), float("nan"), device=scored.device)
    return torch.cat([first, scored], dim=1).reshape(b, t, h, w).cpu()


def _init_weights(model: CosmosAR, seed: int) -> None:
    """In place: N(0, 0.02) for embeddings and projections, 1 for norm weights (same dtype/device)."""
    generator = torch.Generator(device=model.output.weight.device).manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                param.fill_(1.0)
            else:
                param.normal_(0.0, 0.02, generator=generator)


def random_cosmos_ar(config: CosmosARConfig, seed: int = 0, device: str | torch.device = "cpu",
                     dtype: torch.dtype = torch.bfloat16) -> CosmosAR:
    """A randomly initialised model allocated once, directly in ``dtype`` on ``device``.

    Built on the meta device, then materialised with ``to_empty``: the real size in bf16 takes its
    ~8 GB and no float32 copy. Deterministic for a (config, seed, device).
    """
    with torch.device("meta"):
        model = CosmosAR(config)
    model = model.to(dtype).to_empty(device=device)  # dtype first: meta tensors cost nothing
    _init_weights(model, seed)
    return model.eval()


def _checkpoint_path(source: str | Path) -> Path:
    path = Path(source)
    if path.is_dir():
        path = path / "model.pt"
    if not path.is_file():
        raise FileNotFoundError(
            f"Cosmos-Predict1 checkpoint {path} does not exist: expected the released model.pt of "
            "nvidia/Cosmos-Predict1-4B (or its directory); fetch it with `python -m "
            "worldmemory.models.prefetch --id nvidia/Cosmos-Predict1-4B --patterns model.pt --out DIR`")
    return path


def released_state_dict(raw: dict, path: Path) -> dict[str, torch.Tensor]:
    """The transformer's weights out of a loaded ``model.pt``: unwrap ``"model"``, strip ``model.``."""
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a state dict (a dict of tensors), got {type(raw).__name__}")
    state = raw["model"] if isinstance(raw.get("model"), dict) else raw
    return {(k[len("model."):] if k.startswith("model.") else k): v
            for k, v in state.items() if EXTRA_STATE not in k}


def load_cosmos_ar(source: str | Path, device: str | torch.device = "cpu",
                   dtype: torch.dtype = torch.bfloat16, config: CosmosARConfig | None = None) -> CosmosAR:
    """Load the released ``model.pt`` (a file or its directory) by its key names, strictly.

    ``config`` defaults to :meth:`CosmosARConfig.released`. The file is memory-mapped and each
    tensor moved once to ``device``/``dtype`` and assigned, so no second copy of the weights exists.
    """
    config = config or CosmosARConfig.released()
    path = _checkpoint_path(source)
    state = released_state_dict(torch.load(path, map_location="cpu", mmap=True, weights_only=True), path)
    with torch.device("meta"):
        model = CosmosAR(config)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    if missing or unexpected:
        raise ValueError(
            f"{path} does not match the Cosmos-Predict1 transformer of {config}: "
            + (f"missing keys {missing[:5]}{' ...' if len(missing) > 5 else ''} ({len(missing)}); "
               if missing else "")
            + (f"unexpected keys {unexpected[:5]}{' ...' if len(unexpected) > 5 else ''} "
               f"({len(unexpected)}); " if unexpected else "")
            + "fix: point at the released nvidia/Cosmos-Predict1-4B model.pt (PyTorch backend, "
              "not a TransformerEngine or tensor-parallel shard) or pass the config it was saved with")
    for key, tensor in expected.items():
        if state[key].shape != tensor.shape:
            raise ValueError(f"{path}: {key} has shape {tuple(state[key].shape)}, the config {config} "
                             f"expects {tuple(tensor.shape)}; fix: pass the config the file was saved with")
    model.load_state_dict({k: v.to(device=device, dtype=dtype) for k, v in state.items()},
                          strict=True, assign=True)
    return model.eval()
