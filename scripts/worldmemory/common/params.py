"""Model parameters from a config entry, checked against the model's defaults."""

from __future__ import annotations


def resolve_params(model: str, params: dict, defaults: dict[str, dict]) -> dict:
    """``defaults[model]`` updated with ``params``; an unknown model or parameter raises
    ValueError listing the valid ones, so a typo in the config never passes silently."""
    if model not in defaults:
        raise ValueError(f"unknown reference model {model!r}; valid: {', '.join(defaults)}")
    unknown = sorted(set(params) - set(defaults[model]))
    if unknown:
        valid = ", ".join(defaults[model]) or "none"
        raise ValueError(f"{model}: unknown parameters {', '.join(unknown)}; valid: {valid}")
    return {**defaults[model], **params}
