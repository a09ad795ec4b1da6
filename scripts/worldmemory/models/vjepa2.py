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
import torch.nn.functional as F
from transformers import VJEPA2Config, VJEPA2Model
from transformers.image_utils import IMAGENET_DEFAULT_MEAN, IMAGENET_DEFAULT_STD

from worldmemory.models.vjepa2_layers import run_layers

ARCHITECTURE_KEYS = (
    "crop_size", "patch_size", "tubelet_size", "frames_per_clip", "hidden_size", "num_hidden_layers",
    "num_attention_heads", "pred_hidden_size", "pred_num_hidden_layers", "pred_num_attention_heads",
)


def deterministic(device: str) -> None:
    """Same inputs, same numbers: strict on the CPU; on a GPU, warn where cuBLAS/cuDNN cannot promise it.

    Deterministic mode also fills every new tensor with NaN, a guard against reading memory never
    written; no kernel used here does (outputs are the same bits without it), and filling took a
    tenth of a training step.
    """
    torch.use_deterministic_algorithms(True, warn_only=device != "cpu")
    torch.utils.deterministic.fill_uninitialized_memory = False


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


def imagenet_clips(clips, size: int, mean: torch.Tensor, std: torch.Tensor, device) -> torch.Tensor:
    """uint8 clips (B, T, H, W, 3) -> ImageNet-normalised float (B, T, 3, size, size), squash-resized
    by area: the input of V-JEPA 2 and of VideoMAE."""
    x = torch.as_tensor(np.asarray(clips), device=device)
    if x.ndim != 5 or x.shape[-1] != 3:
        raise ValueError(f"expected clips of shape (B, T, H, W, 3), got {tuple(x.shape)}")
    b, t, h, w, _ = x.shape
    x = x.permute(0, 1, 4, 2, 3).float().div_(255.0)
    if (h, w) != (size, size):
        x = F.interpolate(x.reshape(b * t, 3, h, w), size=(size, size), mode="area").reshape(b, t, 3, size, size)
    return (x - mean) / std


class VJEPA2Backend:
    """V-JEPA 2 as a :class:`~worldmemory.models.masked_predictor.MaskedLatentPredictor`."""

    def __init__(self, model: VJEPA2Model, device: str = "cpu"):
        self.model = model.eval().to(device)
        self.device = torch.device(device)
        self.config = model.config
        # bf16 on a GPU (Section 6 of the design: fast on accelerators); fp32 on the CPU.
        self.autocast = self.device.type == "cuda"
        self.mean = torch.tensor(IMAGENET_DEFAULT_MEAN, device=self.device).view(1, 1, 3, 1, 1)
        self.std = torch.tensor(IMAGENET_DEFAULT_STD, device=self.device).view(1, 1, 3, 1, 1)

    @property
    def crop_size(self) -> int:
        return self.config.crop_size

    @property
    def patch_size(self) -> int:
        return self.config.patch_size

    @property
    def tubelet_size(self) -> int:
        return self.config.tubelet_size

    def preprocess(self, clips: np.ndarray | torch.Tensor) -> torch.Tensor:
        """uint8 (B, T, H, W, 3) -> normalised float (B, T, 3, crop, crop); squash-resize by area."""
        return imagenet_clips(clips, self.crop_size, self.mean, self.std, self.device)

    def _ctx(self):
        if self.autocast:
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return torch.autocast("cpu", enabled=False)

    def encode(self, x: torch.Tensor, visible=None) -> torch.Tensor:
        """Encoder output (B, n, D) for the visible token indices (all tokens when ``visible`` is None)."""
        with self._ctx():
            return encode_visible(self.model.encoder, x, visible).float()

    def predict(self, context: torch.Tensor, visible, target) -> torch.Tensor:
        """Predictor output (B, n_target, D) for ``target`` from the encoded ``visible`` tokens."""
        with self._ctx():
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
    """The backend a config's model spec names.

    ``source``: ``train`` (trained by the workflow) and ``hf`` (prefetched into resources/models/)
    load from ``weights``; ``local`` loads ``spec['path']``; ``random`` builds ``spec['config']``
    with random weights (tests, benchmarks).
    """
    source = spec["source"]
    if source == "random":
        model = build_model(spec["config"], seed=spec.get("seed", 0))
    elif source == "local":
        model = load_model(spec["path"])
    elif source in ("train", "hf"):
        if weights is None:
            raise ValueError(f"a model with source '{source}' needs --weights (the trained or prefetched directory)")
        model = load_model(weights)
    else:
        raise ValueError(f"unknown model source '{source}' (expected train, hf, local or random)")
    return VJEPA2Backend(model, device)


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
