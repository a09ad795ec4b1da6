"""Backends by name, per capability: what the config's ``perception:`` blocks choose from.

A backend is named by the config and found here as ``module:attribute``, imported only when it
is created, so that choosing the non-learned descriptor never imports torch. ``none`` is valid for
every capability: its metrics are NaN with a reason naming the config key. ``oracle`` is not in
this table: it is what a reference model's truth channels give (``oracle``), never configured.
"""

from __future__ import annotations

import importlib

from worldmemory.perception.base import Unavailable

NONE = "none"
ORACLE = "oracle"

# capability -> (what it gives, the estimator the papers use)
CAPABILITIES = {
    "tracking": ("target masks", "SAM-family video segmentation"),
    "camera": ("camera poses", "DA3 and ViPE"),
    "second_camera": ("a second estimate of the camera poses, averaged in RPE_trans (Eq. 2)", "ViPE beside DA3"),
    "depth": ("depth maps", "DA3"),
    "faces": ("face identity embeddings", "ArcFace"),
    "imaging_quality": ("imaging quality scores", "MUSIQ-SPAQ"),
    "aesthetic_quality": ("aesthetic scores", "the LAION aesthetic predictor"),
    "judge": ("visual judge answers", "a VLM (Qwen3.8-27B)"),
    "features": ("patch features", "DINOv2"),
}

BACKENDS = {
    "tracking": {"optical-flow": "worldmemory.perception.tracking:FlowTracker",
                 "sam2": "worldmemory.perception.sam2:Sam2Tracker",
                 "sam3": "worldmemory.perception.sam3:Sam3Tracker"},
    "camera": {"feature-matching": "worldmemory.perception.camera:FeatureMatchingCamera",
               "external-command": "worldmemory.perception.external_estimator:ExternalCommandCamera"},
    "second_camera": {},  # the camera backends (below)
    "depth": {"depth-anything": "worldmemory.perception.depth:DepthAnythingDepth",
              "external-command": "worldmemory.perception.external_estimator:ExternalCommandDepth"},
    "faces": {"arcface": "worldmemory.perception.faces:ArcFaceIdentity"},
    "imaging_quality": {"metric-q": "worldmemory.perception.quality:ContentQ",
                        "brisque": "worldmemory.perception.quality:BrisqueQuality",
                        "musiq-spaq": "worldmemory.perception.musiq:MusiqQuality"},
    "aesthetic_quality": {"laion-aesthetic": "worldmemory.perception.aesthetic:LaionAesthetic"},
    "judge": {"transformers-vlm": "worldmemory.perception.judge:TransformersJudge",
              "openai-compatible": "worldmemory.perception.judge:OpenAICompatibleJudge",
              "structure-match": "worldmemory.perception.structure_judge:StructureMatchJudge"},
    "features": {"patch-colour-gradient-descriptor": "worldmemory.perception.descriptor:ColourGradientPatches",
                 "dinov2": "worldmemory.perception.dinov2:Dinov2Features",
                 "clip": "worldmemory.perception.clip_features:ClipFeatures"},
}


BACKENDS["second_camera"] = BACKENDS["camera"]


def names(capability: str) -> list[str]:
    """The names the config may give ``capability`` (its backends, then ``none``)."""
    return [*_backends(capability), NONE]


def create(capability: str, name: str, **options):
    """The backend ``name`` of ``capability``, built with ``options``; ValueError naming the valid
    names for an unknown one, Unavailable for ``none``."""
    if name == NONE:
        raise Unavailable(f"{capability} is 'none'")
    return backend_class(capability, name)(**options)


def backend_class(capability: str, name: str):
    """The class of backend ``name`` without building it (e.g. a quality scale's normalisation)."""
    backends = _backends(capability)
    if name not in backends:
        raise ValueError(f"unknown {capability} backend {name!r}; valid: {', '.join(names(capability))}")
    module, attribute = backends[name].split(":")
    return getattr(importlib.import_module(module), attribute)


def judges_of(question: str) -> list[str]:
    """The judge backends that answer ``question`` (their ``questions``: perception.judge)."""
    return [name for name in _backends("judge") if question in backend_class("judge", name).questions]


def not_configured(key: str, capability: str) -> str:
    """The reason recorded for the metrics of a capability set to ``none`` at config ``key``."""
    what, paper = CAPABILITIES[capability]
    offered = ", ".join(_backends(capability))
    return (f"{key} is 'none': nothing estimated the {what} (the paper uses {paper}); "
            f"set {key} to one of the workflow's backends ({offered})")


def no_oracle(capability: str) -> str:
    """The reason for a reference model's metrics that its truth channels cannot give."""
    what, paper = CAPABILITIES[capability]
    return f"a reference model's truth channels hold no {what} (the paper uses {paper})"


def _backends(capability: str) -> dict[str, str]:
    if capability not in BACKENDS:
        raise ValueError(f"unknown capability {capability!r}; valid: {', '.join(BACKENDS)}")
    return BACKENDS[capability]
