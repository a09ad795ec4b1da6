"""transformers' V-JEPA 2 transformer blocks with their rotary tables built once per forward pass.

``VJEPA2RopeAttention`` rebuilds its rotary sines and cosines for every query and key of every
layer, per batch item and head, and rotates the three position axes in three slices it then
concatenates: on the embedded default's small model that bookkeeping cost more than the attention
matrices. The functions here run the same blocks (the modules' own weights, the same operations
on the same values: SDPA, the V-JEPA 2 rotary quirk of tiling rather than interleaving the
frequencies) with one table per pass, shared by every layer, batch item and head, and the three
axes rotated in one go. ``tests/models/test_vjepa2_layers.py`` checks outputs and gradients against
transformers' forward. Blocks of another attention implementation, or with stochastic depth on,
run through transformers' own forward.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def rope_tables(attention, ids: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin (1, 1, N, rotated dims) of ``attention``'s rotary embedding at token indices ``ids`` (N,).

    ``dtype`` is the queries' (transformers computes the frequencies in it: bf16 under autocast).
    """
    ids = ids.reshape(1, -1)
    axes = attention.get_position_ids(ids, masks=ids)  # (1, heads, N) each
    dims = (attention.d_dim, attention.h_dim, attention.w_dim)
    cos, sin = [], []
    for pos, dim in zip(axes, dims):
        omega = torch.arange(dim // 2, dtype=dtype, device=ids.device)
        omega /= dim / 2.0
        omega = 1.0 / 10000**omega
        freq = pos[:, :1].unsqueeze(-1) * omega  # (1, 1, N, dim / 2)
        cos.append(freq.cos().repeat(1, 1, 1, 2))
        sin.append(freq.sin().repeat(1, 1, 1, 2))
    return torch.cat(cos, dim=-1), torch.cat(sin, dim=-1)


def rotate(x: torch.Tensor, tables: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Rotary embedding of queries or keys (B, heads, N, head dim); dimensions past the tables stay as they are."""
    cos, sin = tables
    rotated = cos.shape[-1]
    part = x[..., :rotated]
    pairs = part.unflatten(-1, (-1, 2))
    first, second = pairs.unbind(dim=-1)
    turned = torch.stack((-second, first), dim=-1).flatten(-2)
    out = (part * cos) + (turned * sin)
    return out if rotated == x.shape[-1] else torch.cat([out, x[..., rotated:]], dim=-1)


def fast_path(layer) -> bool:
    """Whether :func:`layer_forward` computes this block as transformers does (SDPA, no stochastic depth)."""
    return layer.config._attn_implementation == "sdpa" and isinstance(layer.drop_path, torch.nn.Identity)


def layer_forward(layer, hidden: torch.Tensor, ids: torch.Tensor, tables: dict) -> torch.Tensor:
    """One ``VJEPA2Layer`` (pre-norm attention with rotary embeddings, then the MLP), both residual.

    ``tables`` caches the rotary tables of token indices ``ids`` per dtype across the layers of a pass.
    """
    attention = layer.attention
    x = layer.norm1(hidden)
    shape = (*x.shape[:-1], -1, attention.attention_head_size)
    query = attention.query(x).view(shape).transpose(1, 2)
    key = attention.key(x).view(shape).transpose(1, 2)
    value = attention.value(x).view(shape).transpose(1, 2)
    if key.dtype not in tables:
        tables[key.dtype] = rope_tables(attention, ids, key.dtype)
    key, query = rotate(key, tables[key.dtype]), rotate(query, tables[key.dtype])
    context = F.scaled_dot_product_attention(
        query, key, value, dropout_p=attention.dropout_prob if attention.training else 0.0, scale=attention.scaling
    )
    context = context.transpose(1, 2).contiguous()
    hidden = attention.proj(context.reshape(*context.shape[:-2], attention.all_head_size)) + hidden
    return layer.mlp(layer.norm2(hidden)) + hidden


def run_layers(layers, hidden: torch.Tensor, positions: torch.Tensor | None) -> torch.Tensor:
    """A stack of ``VJEPA2Layer`` over tokens at ``positions`` (B, N) shared by the batch (None: 0..N-1)."""
    if not all(fast_path(layer) for layer in layers):
        for layer in layers:
            hidden = layer(hidden, positions)[0]
        return hidden
    ids = torch.arange(hidden.shape[1], device=hidden.device) if positions is None else positions[0]
    tables = {}
    for layer in layers:
        hidden = layer_forward(layer, hidden, ids, tables)
    return hidden
