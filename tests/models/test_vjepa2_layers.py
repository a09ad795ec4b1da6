"""The V-JEPA 2 blocks run with shared rotary tables compute what transformers' blocks compute.

The reference is transformers' own forward: ``VJEPA2Layer.__call__`` over the tokens at their
positions, and ``VJEPA2Predictor.forward`` on a full-length context. Outputs and every parameter's
gradient must agree to float32 rounding (on x86 they are the same bits); a wrong rotary axis, an
interleaved instead of tiled frequency table, or a lost residual is off by orders of magnitude more.
"""

import numpy as np
import pytest
import torch
from worldmemory.models.vjepa2 import build_model, encode_visible, predict_hidden
from worldmemory.models.vjepa2_layers import fast_path, rope_tables, rotate
from worldmemory.permanence.mask_generators import sample_mask

# Head sizes that rotate the whole head (encoder 24 = 3 x 8) and that leave a remainder unrotated
# (encoder 32: 3 x 10 + 2; predictor 16: 3 x 4 + 4), as the embedded default and released models do.
CONFIGS = {
    "whole-head": dict(hidden_size=48, num_attention_heads=2, pred_hidden_size=32, pred_num_attention_heads=2),
    "remainder": dict(hidden_size=64, num_attention_heads=2, pred_hidden_size=48, pred_num_attention_heads=3),
}
BASE = dict(crop_size=32, patch_size=8, frames_per_clip=8, tubelet_size=2, num_hidden_layers=2,
            pred_num_hidden_layers=2, num_pooler_layers=1)


def transformers_encode(encoder, x, visible=None):
    h, positions = encoder.embeddings(x), None
    if visible is not None:
        visible = torch.as_tensor(visible)
        h, positions = h[:, visible], visible.unsqueeze(0).expand(h.shape[0], -1)
    for layer in encoder.layer:
        h = layer(h, positions)[0]
    return encoder.layernorm(h)


def transformers_predict(predictor, context, visible, target):
    visible, target = torch.as_tensor(visible), torch.as_tensor(target)
    b, _, d = context.shape
    full = context.new_zeros(b, int(max(visible.max(), target.max())) + 1, d)
    full[:, visible] = context
    return predictor(encoder_hidden_states=full, context_mask=[visible.unsqueeze(0).expand(b, -1)],
                     target_mask=[target.unsqueeze(0).expand(b, -1)]).last_hidden_state


def outputs_and_gradients(model, x, visible, hidden, encode, predict):
    model.zero_grad(set_to_none=True)
    full = encode(model.encoder, x)
    pred = predict(model.predictor, encode(model.encoder, x, visible), visible, hidden)
    (pred.abs().mean() + full.square().mean()).backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    return full.detach(), pred.detach(), grads


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("kind", ["short_tube", "causal"])
def test_training_pass_matches_transformers(name, kind):
    model = build_model({**BASE, **CONFIGS[name]}, seed=1).train()
    assert all(fast_path(layer) for layer in [*model.encoder.layer, *model.predictor.layer])
    x = torch.randn(2, 8, 3, 32, 32)
    hidden = sample_mask(np.random.default_rng(2), kind, 4, 4)
    visible = np.setdiff1d(np.arange(64), hidden)
    ours = outputs_and_gradients(model, x, visible, hidden, encode_visible, predict_hidden)
    theirs = outputs_and_gradients(model, x, visible, hidden, transformers_encode, transformers_predict)
    torch.testing.assert_close(ours[:2], theirs[:2], rtol=1e-5, atol=1e-6)
    assert ours[2].keys() == theirs[2].keys() and len(ours[2]) > 50  # every block's weights got a gradient
    torch.testing.assert_close(ours[2], theirs[2], rtol=1e-5, atol=1e-7)


def test_rotary_tables_tile_the_frequencies_per_axis():
    """V-JEPA 2 tiles [f0..f3, f0..f3] over an axis's 8 dims; the frame axis comes first."""
    attention = build_model({**BASE, **CONFIGS["whole-head"]}).encoder.layer[0].attention
    ids = torch.tensor([0, 16 + 4 + 1])  # token 0, and the token at frame 1, row 1, column 1
    cos, sin = rope_tables(attention, ids, torch.float32)
    assert cos.shape == (1, 1, 2, 24)
    torch.testing.assert_close(cos[0, 0, 0], torch.ones(24))
    omega = 1.0 / 10000 ** (torch.arange(4) / 4.0)
    torch.testing.assert_close(sin[0, 0, 1], torch.sin(omega).repeat(6))


def test_rotation_turns_each_pair_and_leaves_the_remainder():
    x = torch.arange(1.0, 7.0).view(1, 1, 1, 6)
    cos, sin = torch.zeros(1, 1, 1, 4), torch.ones(1, 1, 1, 4)  # a quarter turn on the first 4 dims
    assert rotate(x, (cos, sin)).flatten().tolist() == [-2.0, 1.0, -4.0, 3.0, 5.0, 6.0]


def test_blocks_the_fast_path_does_not_cover_run_through_transformers():
    model = build_model({**BASE, **CONFIGS["whole-head"], "drop_path_rate": 0.1}, seed=0).eval()
    assert not any(fast_path(layer) for layer in model.encoder.layer)
    x = torch.randn(1, 8, 3, 32, 32)
    with torch.no_grad():
        assert torch.equal(encode_visible(model.encoder, x), transformers_encode(model.encoder, x))
