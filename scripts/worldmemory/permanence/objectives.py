"""Training losses of the curricula (*Tracking Is Not Permanence*, Section 3.5 (i) and Appendix C).

The released V-JEPA 2 objective is an L1 loss between the predictor's output and the target
encoder's tokens (:func:`l1_loss`). Intervention (i) and every curriculum built on it replace it by
"an L1 loss under a learned per-token Laplace scale (Kendall & Gal, 2017)": the negative
log-likelihood of a Laplace distribution centred on the prediction,

    NLL = mean over tokens and channels of |pred - target| / b + log(2 b),

with one scale ``b`` per predicted token, shared by its channels, from a small head on the
predictor's output tokens (:class:`LaplaceScaleHead`). The same NLL is the surprise of such a
predictor on IntPhys-2019 (Section 3.5), so :func:`token_nll` keeps it per token.

Choices where the paper is silent:

* ``b = softplus(s) + eps`` with ``eps = 1e-3``, not ``exp(log_b)``: softplus grows linearly, so a
  large head output cannot overflow the scale, and ``eps`` keeps ``1 / b`` and ``log b`` finite when
  the head drives ``s`` far negative on easy tokens;
* the head is one Linear layer (hidden size -> 1) with zero weights and a bias that starts every
  scale at ``init_scale = 1``: at initialisation the NLL is the L1 loss plus ``log 2``, so training
  starts from the released objective's gradients on the predictor.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

SCALE_HEAD_WEIGHTS = "scale_head.pt"
SCALE_HEAD_CONFIG = "scale_head.json"
PARAMETERISATION = "softplus"


def l1_loss(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """The released objective: mean absolute error between predicted and target tokens."""
    _check_pair(pred, target)
    return (pred - target).abs().mean()


def token_nll(pred: torch.Tensor, target: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """Laplace negative log-likelihood per token (B, n), averaged over channels (Section 3.5 (i)).

    ``scale`` holds one positive ``b`` per token, shaped (B, n) or (B, n, 1).
    """
    _check_pair(pred, target)
    b = scale if scale.ndim == pred.ndim else scale.unsqueeze(-1)
    if b.shape != (*pred.shape[:-1], 1):
        raise ValueError(f"scale has shape {tuple(scale.shape)}; expected one value per token, "
                         f"{tuple(pred.shape[:-1])} or {(*pred.shape[:-1], 1)}: pass the head's output for these "
                         "tokens")
    return ((pred - target).abs() / b + torch.log(2 * b)).mean(dim=-1)


def laplace_nll(pred: torch.Tensor, target: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """The curricula's loss: mean over tokens of :func:`token_nll` (every token has as many channels)."""
    return token_nll(pred, target, scale).mean()


def _check_pair(pred: torch.Tensor, target: torch.Tensor) -> None:
    if pred.shape != target.shape:
        raise ValueError(f"pred has shape {tuple(pred.shape)} but target {tuple(target.shape)}; expected equal "
                         "shapes (B, n, D): gather the target tokens at the predicted indices")


class LaplaceScaleHead(nn.Module):
    """Per-token Laplace scale ``b = softplus(Linear(token)) + eps`` on the predictor's output tokens.

    Saved beside a ``VJEPA2Model`` directory as ``scale_head.pt`` (state dict) plus ``scale_head.json``
    (its constructor arguments), so a scoring step can rebuild it without the training code.
    """

    def __init__(self, dim: int, eps: float = 1e-3, init_scale: float = 1.0):
        super().__init__()
        if not isinstance(dim, int) or dim < 1:
            raise ValueError(f"dim must be a positive integer (the predictor's output size), got {dim!r}")
        if not eps > 0:
            raise ValueError(f"eps must be > 0 (the floor of the scale), got {eps!r}")
        if not init_scale > eps:
            raise ValueError(f"init_scale must exceed eps = {eps} (softplus is positive), got {init_scale!r}")
        self.dim, self.eps, self.init_scale = dim, float(eps), float(init_scale)
        self.linear = nn.Linear(dim, 1)
        nn.init.zeros_(self.linear.weight)
        with torch.no_grad():  # softplus^-1(init_scale - eps): every token starts at b = init_scale
            self.linear.bias.fill_(math.log(math.expm1(init_scale - eps)))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Scales (B, n, 1) for predicted tokens (B, n, dim)."""
        if tokens.shape[-1] != self.dim:
            raise ValueError(f"tokens have {tokens.shape[-1]} channels; this head expects dim = {self.dim}: "
                             "build it with the predictor's output size (the encoder's hidden_size)")
        return F.softplus(self.linear(tokens)) + self.eps

    def config(self) -> dict:
        return {"dim": self.dim, "eps": self.eps, "init_scale": self.init_scale, "parameterisation": PARAMETERISATION}

    def save(self, directory: str | Path) -> Path:
        """Write scale_head.pt and scale_head.json into ``directory`` (created); returns the weights' path."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        torch.save({k: v.detach().cpu() for k, v in self.state_dict().items()}, directory / SCALE_HEAD_WEIGHTS)
        (directory / SCALE_HEAD_CONFIG).write_text(json.dumps(self.config(), indent=1, sort_keys=True) + "\n")
        return directory / SCALE_HEAD_WEIGHTS

    @classmethod
    def load(cls, directory: str | Path) -> LaplaceScaleHead:
        """The head saved in ``directory`` by :meth:`save`, on the CPU."""
        directory = Path(directory)
        missing = [name for name in (SCALE_HEAD_WEIGHTS, SCALE_HEAD_CONFIG) if not (directory / name).exists()]
        if missing:
            raise FileNotFoundError(f"{directory} has no {' or '.join(missing)}: not a directory written by "
                                    "LaplaceScaleHead.save (was the run trained with the L1 loss?)")
        config = json.loads((directory / SCALE_HEAD_CONFIG).read_text())
        if config.pop("parameterisation", None) != PARAMETERISATION:
            raise ValueError(f"{directory / SCALE_HEAD_CONFIG}: parameterisation must be '{PARAMETERISATION}'; "
                             "the head was saved by another version of this module")
        head = cls(**config)
        head.load_state_dict(torch.load(directory / SCALE_HEAD_WEIGHTS, map_location="cpu", weights_only=True))
        return head
