"""The contract every masked latent predictor fulfils for the belief probe (Section 3.2).

A backend encodes a clip from a given set of visible token indices (the hidden ones never reach
the encoder), predicts the features of given target indices from those visible tokens, and encodes
a full clip for the references. Tokens are indexed time-major: (tubelet, row, column).
:class:`worldmemory.models.vjepa2.VJEPA2Backend` is the V-JEPA 2 implementation.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np
import torch


class MaskedLatentPredictor(Protocol):
    crop_size: int  # model input side in pixels (clips are squash-resized to it)
    patch_size: int  # side of one token's patch in input pixels
    tubelet_size: int  # frames per token
    model: torch.nn.Module  # for the weights digest of provenance and cache keys

    def preprocess(self, clips: np.ndarray) -> torch.Tensor:
        """uint8 (B, T, H, W, 3) clips -> the model input (B, T, 3, crop, crop)."""

    def encode(self, x: torch.Tensor, visible=None) -> torch.Tensor:
        """Encoder features (B, n, D) of the ``visible`` token indices, or of all tokens when None."""

    def predict(self, context: torch.Tensor, visible, target) -> torch.Tensor:
        """Predicted features (B, n_target, D) of ``target`` from the encoded ``visible`` tokens."""
