"""The architectures of the released checkpoints the permanence probe reads, by Hugging Face id.

A preflight (worldmemory.workflow.preflight) times a probe clip on a node before the weights are
there: random weights of the same architecture cost what the released ones cost (the same
classes, shapes and kernels). Only the keys that differ from transformers' defaults are listed:
``VJEPA2Config()`` is the ViT-L at 256 px and 64 frames, ``VideoMAEConfig()`` VideoMAE-B at 224 px
and 16 frames. ViT-H and ViT-g are V-JEPA 2's ``vit_huge`` (width 1280, 32 blocks, 16 heads) and
``vit_giant_xformers`` (width 1408, 40 blocks, 22 heads, MLP ratio 48/11); all three share the
predictor of width 384, 12 blocks, 12 heads (Assran et al., 2025).
"""

from __future__ import annotations

VJEPA2 = {
    "facebook/vjepa2-vitl-fpc64-256": {},
    "facebook/vjepa2-vith-fpc64-256": {"hidden_size": 1280, "num_hidden_layers": 32, "num_attention_heads": 16},
    "facebook/vjepa2-vitg-fpc64-256": {"hidden_size": 1408, "num_hidden_layers": 40, "num_attention_heads": 22,
                                       "mlp_ratio": 48 / 11},
}
VIDEOMAE = {"MCG-NJU/videomae-base": {}, "MCG-NJU/videomae-base-ssv2": {}}


def random_stand_in(spec: dict) -> dict | None:
    """The spec of a random-weight model of ``spec``'s released architecture (``source: random``),
    or None where the id is not listed here."""
    table = VIDEOMAE if spec.get("family") == "videomae" else VJEPA2
    if spec.get("source") != "hf" or spec.get("id") not in table:
        return None
    return {**spec, "source": "random", "config": dict(table[spec["id"]]), "seed": 0}
