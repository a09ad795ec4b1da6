"""V-JEPA 2 as a masked latent predictor, with an encoder that never sees hidden tokens.

transformers' ``VJEPA2Model.forward`` runs the encoder on *all* tokens and masks only the
predictor's input, so pixels of a hidden region reach the context through attention. The belief
probe (Section 3.2 of *Tracking Is Not Permanence*: "The encoder never sees the hidden tokens")
and the official V-JEPA 2 code drop tokens before the encoder blocks. :meth:`VJEPA2Backend.encode`
does the same with transformers' own modules: patch embeddings -> keep the visible tokens ->
encoder layers with the tokens' true positions (RoPE) -> final layer norm. The patch embedding is a
Conv3d whose stride equals its kernel, so a visible token's embedding depends on its own pixels
only.

The same class loads a released checkpoint (Hugging Face id or local directory) and a small model
built from a config dict; the two differ only in configuration.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import torch
from transformers import VJEPA2Config, VJEPA2Model

from worldmemory.models.video_backend import VideoBackend, model_from_spec
from worldmemory.models.vjepa2_layers import run_layers

ARCHITECTURE_KEYS = (
    "crop_size", "patch_size", "tubelet_size", "frames_per_clip", "hidden_size", "num_hidden_layers",
    "num_attention_heads", "pred_hidden_size", "pred_num_hidden_layers", "pred_num_attention_heads",
)


def build_model(config: dict, seed: int = 0) -> VJEPA2Model:
    """A randomly initialised VJEPA2Model of the given config (tests and pretraining)."""
    torch.manual_seed(seed)
    return VJEPA2Model(VJEPA2Config(**config))


def load_model(source: str) -> VJEPA2Model:
    """Load a VJEPA2Model from a local directory or a Hugging Face id (local files only when offline)."""
    path = Path(source)
    if path.exists() and not (path / "config.json").exists():
        raise FileNotFoundError(f"{path} has no config.json: not a saved VJEPA2Model directory")
    return VJEPA2Model.from_pretrained(str(path) if path.exists() else source)


def weights_digest(model: torch.nn.Module) -> str:
    """sha256 over the state dict: the model's identity in provenance and cache keys."""
    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().float().numpy().tobytes())
    return h.hexdigest()


class VJEPA2Backend(VideoBackend):
    """V-JEPA 2 as a :class:`~worldmemory.models.masked_predictor.MaskedLatentPredictor`."""

    def encode(self, x: torch.Tensor, visible=None) -> torch.Tensor:
        """Encoder output (B, n, D) for the visible token indices (all tokens when ``visible`` is None)."""
        with self.precision():
            return encode_visible(self.model.encoder, x, visible).float()

    def predict(self, context: torch.Tensor, visible, target) -> torch.Tensor:
        """Predictor output (B, n_target, D) for ``target`` from the encoded ``visible`` tokens."""
        with self.precision():
            return predict_hidden(self.model.predictor, context, visible, target).float()


def encode_visible(encoder, x: torch.Tensor, visible=None) -> torch.Tensor:
    """Run a VJEPA2Encoder on the visible tokens only, each at its true position.

    Hidden tokens are removed before the first encoder block, so nothing inside the hidden region
    can influence the output (the official V-JEPA 2 encoder applies its masks the same way).
    """
    h = encoder.embeddings(x)
    positions = None
    if visible is not None:
        visible = torch.as_tensor(visible, device=h.device, dtype=torch.long)
        h = h[:, visible]
        positions = visible.unsqueeze(0).expand(h.shape[0], -1)
    return encoder.layernorm(run_layers(encoder.layer, h, positions))


def predict_hidden(predictor, context: torch.Tensor, visible, target) -> torch.Tensor:
    """Run a VJEPA2Predictor from encoded visible tokens to the target token indices.

    ``VJEPA2Predictor.forward`` with the context passed as the encoder's visible tokens (it gathers
    them from a full-length sequence) and the blocks run by :func:`run_layers`.
    """
    visible = torch.as_tensor(visible, device=context.device, dtype=torch.long)
    target = torch.as_tensor(target, device=context.device, dtype=torch.long)
    b = context.shape[0]
    hidden, positions = predictor.embeddings(
        context, [visible.unsqueeze(0).expand(b, -1)], [target.unsqueeze(0).expand(b, -1)])
    order = torch.argsort(positions, dim=1)  # the predictor runs its tokens in clip order
    hidden, positions = predictor.sort_tokens(hidden, positions, order)
    hidden = predictor.layernorm(run_layers(predictor.layer, hidden, positions))
    return predictor.proj(predictor.unsort_tokens(hidden, order)[:, context.shape[1]:])


def backend_from_spec(spec: dict, weights: str | None = None, device: str = "cpu") -> VJEPA2Backend:
    """The backend a config's model spec names (its sources: ``video_backend.model_from_spec``)."""
    return VJEPA2Backend(model_from_spec(spec, weights, build_model, load_model), device)


def copy_last_view(context: torch.Tensor, visible, target, tokens_per_slot: int) -> torch.Tensor:
    """Appendix I (c): each target token takes the encoder's token of the last visible slot at its patch.

    A model that only froze what it saw scores this; it needs no predictor. Raises if a target
    patch was never visible before its slot.
    """
    visible = np.asarray(visible)
    position = {int(v): i for i, v in enumerate(visible)}
    source = []
    for tok in np.asarray(target):
        slot, cell = divmod(int(tok), tokens_per_slot)
        earlier = [s * tokens_per_slot + cell for s in range(slot - 1, -1, -1)]
        hit = next((position[i] for i in earlier if i in position), None)
        if hit is None:
            raise ValueError(f"token {tok} (slot {slot}) has no visible earlier slot to copy")
        source.append(hit)
    return context[:, torch.as_tensor(source, device=context.device)]


def describe(model: torch.nn.Module, spec: dict, digest: str | None = None, keys=ARCHITECTURE_KEYS) -> dict:
    """Identity of a model for provenance: where it came from, its size, its weights digest (pass
    ``digest`` when it is already known: hashing a ViT-g's weights takes seconds) and the config
    ``keys`` that fix its architecture."""
    return {
        "spec": json.loads(json.dumps(spec, sort_keys=True)),
        "class": type(model).__name__,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "weights_sha256": digest or weights_digest(model),
        "config": {k: getattr(model.config, k) for k in keys},
    }
