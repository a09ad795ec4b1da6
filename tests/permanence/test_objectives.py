"""Known answers of the curricula's losses (Section 3.5 (i), Appendix C): L1 and the Laplace NLL."""

import json
import math

import pytest
import torch
from worldmemory.permanence.objectives import (
    SCALE_HEAD_CONFIG,
    SCALE_HEAD_WEIGHTS,
    LaplaceScaleHead,
    l1_loss,
    laplace_nll,
    token_nll,
)

PRED = torch.tensor([[[1.0, -2.0], [0.5, 0.0]]])  # (B=1, n=2, D=2)
TARGET = torch.tensor([[[0.0, 1.0], [0.5, 2.0]]])  # errors |e| = (1, 3) and (0, 2)


def test_l1_is_the_mean_absolute_error():
    assert l1_loss(PRED, TARGET).item() == pytest.approx((1 + 3 + 0 + 2) / 4)


def test_nll_equals_the_closed_form_on_hand_values():
    b = torch.tensor([[0.5, 2.0]])
    # token 0: (1/0.5 + 3/0.5) / 2 + log(1); token 1: (0/2 + 2/2) / 2 + log(4)
    expected = [4.0 + math.log(1.0), 0.5 + math.log(4.0)]
    assert token_nll(PRED, TARGET, b)[0].tolist() == pytest.approx(expected)
    assert token_nll(PRED, TARGET, b.unsqueeze(-1))[0].tolist() == pytest.approx(expected)
    assert laplace_nll(PRED, TARGET, b).item() == pytest.approx(sum(expected) / 2)


def test_the_best_constant_scale_is_the_mean_absolute_error():
    errors = torch.tensor([[[0.2, 1.5, 0.1], [2.0, 0.7, 0.3]]], dtype=torch.float64)  # float32 is too flat here
    log_b = torch.zeros((), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([log_b], lr=0.5, max_iter=200, tolerance_grad=1e-10, tolerance_change=1e-12)

    def closure():
        opt.zero_grad()
        loss = laplace_nll(errors, torch.zeros_like(errors), log_b.exp().expand(1, 2))
        loss.backward()
        return loss

    opt.step(closure)
    assert log_b.exp().item() == pytest.approx(errors.abs().mean().item(), rel=1e-6)


def test_a_fresh_head_gives_l1_plus_log2_and_gradients_reach_it():
    torch.manual_seed(0)
    tokens = torch.randn(2, 5, 8)
    target = torch.randn(2, 5, 8)
    head = LaplaceScaleHead(8)
    scale = head(tokens)
    assert scale.shape == (2, 5, 1)
    assert torch.allclose(scale, torch.ones_like(scale))
    loss = laplace_nll(tokens, target, scale)
    assert loss.item() == pytest.approx(l1_loss(tokens, target).item() + math.log(2), rel=1e-6)
    loss.backward()
    assert head.linear.weight.grad.abs().sum() > 0 and head.linear.bias.grad.abs() > 0


def test_the_scale_stays_above_eps():
    head = LaplaceScaleHead(3, eps=1e-3)
    with torch.no_grad():
        head.linear.bias.fill_(-1e4)
    assert head(torch.zeros(1, 2, 3)).min().item() == pytest.approx(1e-3)


def test_save_and_load_round_trip(tmp_path):
    torch.manual_seed(1)
    head = LaplaceScaleHead(6, eps=1e-2, init_scale=0.5)
    torch.nn.init.normal_(head.linear.weight)
    path = head.save(tmp_path / "model")
    assert path == tmp_path / "model" / SCALE_HEAD_WEIGHTS
    assert json.loads((tmp_path / "model" / SCALE_HEAD_CONFIG).read_text())["eps"] == 1e-2
    loaded = LaplaceScaleHead.load(tmp_path / "model")
    tokens = torch.randn(2, 4, 6)
    assert torch.equal(loaded(tokens), head(tokens))
    assert (loaded.dim, loaded.eps, loaded.init_scale) == (6, 1e-2, 0.5)


def test_refusals_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="pred has shape"):
        l1_loss(PRED, TARGET[:, :1])
    with pytest.raises(ValueError, match="one value per token"):
        laplace_nll(PRED, TARGET, torch.ones(1, 3))
    with pytest.raises(ValueError, match="dim = 4"):
        LaplaceScaleHead(4)(torch.zeros(1, 1, 5))
    with pytest.raises(ValueError, match="init_scale"):
        LaplaceScaleHead(4, eps=0.1, init_scale=0.05)
    with pytest.raises(FileNotFoundError, match="scale_head"):
        LaplaceScaleHead.load(tmp_path)
