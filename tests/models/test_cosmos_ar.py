"""Cosmos-Predict1 transformer: GQA, the 3D rotary embedding, causality, loading by released names."""

import math

import pytest
import torch
from worldmemory.models.cosmos_ar import (
    Attention,
    CosmosAR,
    CosmosARConfig,
    apply_rope,
    grid_positions,
    load_cosmos_ar,
    random_cosmos_ar,
    rope_angles,
    token_log_likelihoods,
)
from worldmemory.models.cosmos_tokenizer import SCRIPTED_CODEBOOK_SIZE

TINY = CosmosARConfig.tiny()
GRID = (3, 4, 4)


def random_tokens(shape, vocab=TINY.vocab_size, seed=0):
    return torch.randint(0, vocab, shape, generator=torch.Generator().manual_seed(seed))


def test_released_sizes_and_parameter_count():
    config = CosmosARConfig.released()
    assert (config.n_layers, config.dim, config.n_heads, config.n_kv_heads, config.head_dim,
            config.ffn_hidden_size, config.vocab_size, config.rope_theta) == (
        16, 4096, 32, 8, 128, 14336, 64000, 5e5)
    with torch.device("meta"):
        model = CosmosAR(config)
    per_layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096 + 2 * 128
    assert sum(p.numel() for p in model.parameters()) == 2 * 64000 * 4096 + 16 * per_layer + 4096


def test_tiny_vocab_is_the_scripted_codebook():
    assert TINY.vocab_size == SCRIPTED_CODEBOOK_SIZE
    assert TINY.head_dim % 2 == 0 and TINY.n_heads > TINY.n_kv_heads > 1  # GQA is exercised


def test_state_dict_keys_are_the_released_names():
    names = set(random_cosmos_ar(TINY, dtype=torch.float32).state_dict())
    layer = {f"layers.1.{k}.weight" for k in (
        "attention.wq", "attention.wk", "attention.wv", "attention.wo", "attention.q_norm",
        "attention.k_norm", "feed_forward.w1", "feed_forward.w2", "feed_forward.w3",
        "attention_norm", "ffn_norm")}
    assert {k for k in names if k.startswith("layers.1.")} == layer
    assert {k for k in names if not k.startswith("layers.")} == {
        "tok_embeddings.weight", "norm.weight", "output.weight"}


def test_rope_matches_a_direct_per_axis_rotation():
    """Head 128: 22 temporal, 21 height, 21 width frequency pairs; dim i rotates with dim i + 64."""
    head_dim, theta = 128, 5e5
    grid = (5, 16, 16)
    index = torch.tensor([0, 1, 17, 255, 256, 700, 1279])
    positions = grid_positions(1280, grid)[index]
    x = torch.randn(1, len(index), 2, head_dim, dtype=torch.float64)
    got = apply_rope(x, rope_angles(positions, head_dim, theta).double())
    want = torch.empty_like(x)
    for n, (t, h, w) in enumerate(positions.tolist()):
        for i in range(64):
            if i < 22:
                angle = t * theta ** (-2 * i / 44)
            elif i < 43:
                angle = h * theta ** (-2 * (i - 22) / 42)
            else:
                angle = w * theta ** (-2 * (i - 43) / 42)
            a, b = x[0, n, :, i], x[0, n, :, i + 64]
            want[0, n, :, i] = a * math.cos(angle) - b * math.sin(angle)
            want[0, n, :, i + 64] = a * math.sin(angle) + b * math.cos(angle)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)  # angles are float32, as upstream
    assert positions.tolist()[3] == [0, 15, 15] and positions.tolist()[4] == [1, 0, 0]


def test_gqa_attention_matches_a_direct_computation():
    torch.manual_seed(0)
    attention = Attention(TINY).double()
    with torch.no_grad():  # non-trivial norm weights so q_norm and k_norm are checked too
        attention.q_norm.weight.uniform_(0.5, 1.5)
        attention.k_norm.weight.uniform_(0.5, 1.5)
    length, hd, rep = math.prod(GRID), TINY.head_dim, TINY.n_heads // TINY.n_kv_heads
    x = torch.randn(2, length, TINY.dim, dtype=torch.float64)
    angles = rope_angles(grid_positions(length, GRID), hd, TINY.rope_theta).double()
    got = attention(x, angles)

    def rms(v, weight):
        return v / torch.sqrt(v.pow(2).mean(-1, keepdim=True) + 1e-5) * weight

    q = apply_rope(rms(attention.wq(x).view(2, length, -1, hd), attention.q_norm.weight), angles)
    k = apply_rope(rms(attention.wk(x).view(2, length, -1, hd), attention.k_norm.weight), angles)
    v = attention.wv(x).view(2, length, -1, hd)
    causal = torch.ones(length, length, dtype=torch.bool).tril()
    heads = []
    for j in range(TINY.n_heads):
        g = j // rep  # query head j reads key-value head j // n_rep
        scores = q[:, :, j] @ k[:, :, g].transpose(1, 2) / math.sqrt(hd)
        weights = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
        heads.append(weights @ v[:, :, g])
    want = attention.wo(torch.cat(heads, dim=-1))
    torch.testing.assert_close(got, want)


def test_changing_token_j_leaves_earlier_predictions_unchanged():
    model = random_cosmos_ar(TINY, seed=1, dtype=torch.float32)
    tokens = random_tokens((1, *GRID))
    j = 21
    changed = tokens.clone().view(-1)
    changed[j] = (changed[j] + 1) % TINY.vocab_size
    changed = changed.view(tokens.shape)
    with torch.no_grad():
        before, after = (model(t.view(1, -1), grid=GRID) for t in (tokens, changed))
    # logits[i] predict token i + 1 from tokens 0..i: rows < j never see token j
    torch.testing.assert_close(before[:, :j], after[:, :j], rtol=0, atol=1e-6)
    assert not torch.allclose(before[:, j:], after[:, j:])
    ll_before, ll_after = (token_log_likelihoods(model, t).view(-1) for t in (tokens, changed))
    torch.testing.assert_close(ll_before[1:j], ll_after[1:j], rtol=0, atol=1e-6)
    assert not torch.allclose(ll_before[j + 1:], ll_after[j + 1:])


def test_log_likelihood_is_the_gathered_log_softmax_of_the_previous_logits():
    model = random_cosmos_ar(TINY, seed=2, dtype=torch.float32)
    tokens = random_tokens((2, *GRID), seed=3)
    ll = token_log_likelihoods(model, tokens)
    assert ll.shape == (2, *GRID) and ll.dtype == torch.float32
    assert torch.isnan(ll[:, 0, 0, 0]).all() and not torch.isnan(ll.view(2, -1)[:, 1:]).any()
    with torch.no_grad():
        logits = model(tokens[1].view(1, -1), grid=GRID)[0]
    flat = tokens[1].view(-1)
    i = 30
    assert ll[1].view(-1)[i].item() == pytest.approx(torch.log_softmax(logits[i - 1], -1)[flat[i]].item(),
                                                     abs=1e-5)


def test_uniform_logits_give_minus_log_vocab():
    model = random_cosmos_ar(TINY, seed=0, dtype=torch.float32)
    with torch.no_grad():
        model.output.weight.zero_()
    ll = token_log_likelihoods(model, random_tokens((1, *GRID))).view(-1)
    assert torch.isnan(ll[0])
    torch.testing.assert_close(ll[1:], torch.full_like(ll[1:], -math.log(TINY.vocab_size)))


def test_random_weights_are_seeded_and_allocated_in_the_dtype():
    a, b = (random_cosmos_ar(TINY, seed=5) for _ in range(2))
    c = random_cosmos_ar(TINY, seed=6)
    assert all(p.dtype == torch.bfloat16 and p.device.type == "cpu" for p in a.parameters())
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert not torch.equal(a.output.weight, c.output.weight)
    assert torch.equal(a.norm.weight, torch.ones_like(a.norm.weight))


@pytest.mark.parametrize("wrap", ["flat", "model_entry_and_prefix"])
def test_released_state_dict_round_trips(tmp_path, wrap):
    model = random_cosmos_ar(TINY, seed=4, dtype=torch.float32)
    state = model.state_dict()
    if wrap != "flat":  # upstream unwraps checkpoint["model"] and strips "model."; drops _extra_state
        state = {"model": {**{f"model.{k}": v for k, v in state.items()},
                           "model.layers.0.attention.wq._extra_state": None}}
    torch.save(state, tmp_path / "model.pt")
    loaded = load_cosmos_ar(tmp_path, dtype=torch.float32, config=TINY)
    tokens = random_tokens((1, *GRID))
    torch.testing.assert_close(token_log_likelihoods(loaded, tokens), token_log_likelihoods(model, tokens),
                               equal_nan=True)
    assert all(p.device.type == "cpu" for p in loaded.parameters())


def test_a_wrong_key_is_refused_with_key_file_and_fix(tmp_path):
    state = random_cosmos_ar(TINY, dtype=torch.float32).state_dict()
    state["layers.1.feed_forward.gate.weight"] = state.pop("layers.1.feed_forward.w1.weight")
    torch.save(state, tmp_path / "model.pt")
    with pytest.raises(ValueError) as info:
        load_cosmos_ar(tmp_path / "model.pt", config=TINY)
    message = str(info.value)
    assert str(tmp_path / "model.pt") in message
    assert "missing keys ['layers.1.feed_forward.w1.weight']" in message
    assert "unexpected keys ['layers.1.feed_forward.gate.weight']" in message
    assert "fix:" in message


def test_a_wrong_shape_and_a_missing_file_are_refused(tmp_path):
    torch.save(random_cosmos_ar(TINY, dtype=torch.float32).state_dict(), tmp_path / "model.pt")
    with pytest.raises(ValueError, match=r"tok_embeddings.weight has shape \(64, 64\).*fix:"):
        load_cosmos_ar(tmp_path, config=CosmosARConfig.tiny(vocab_size=128))
    with pytest.raises(FileNotFoundError, match="nvidia/Cosmos-Predict1-4B.*--patterns model.pt"):
        load_cosmos_ar(tmp_path / "absent")
