"""Model parameters from a config entry, checked against the model's defaults."""

from __future__ import annotations

import difflib
import math
import types
import typing

_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false", type(None): "null"}


def expected(value: object, annotation) -> str | None:
    """None if ``value`` (as YAML or JSON gives it) fits ``annotation`` (int, float, str, bool, or a
    union of them, e.g. ``int | None``); otherwise what was expected, in words. A float takes an
    int (YAML reads 1 for 1.0), a number is finite and never a bool (YAML's `yes` is one), so
    ``"241"``, ``.nan`` and ``true`` never reach the code as numbers."""
    options = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    for option in options:
        if option in (int, float):
            number = (int,) if option is int else (int, float)
            if isinstance(value, number) and not isinstance(value, bool) and math.isfinite(value):
                return None
        elif isinstance(value, option):
            return None
    return " or ".join(_NAMES.get(o, getattr(o, "__name__", str(o))) for o in options)


def unknown_key(key: str, block: dict, name: str, valid, expected: str) -> str:
    """The problem of ``block[name]``, a key of the mapping at ``key`` that is none of ``valid``
    (``expected`` says what those are), with the closest valid name as a hint."""
    close = difflib.get_close_matches(name, valid, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return (f"{key}.{name} = {block[name]!r}: unknown key {name!r}; expected one of {expected}: "
            f"{', '.join(sorted(valid)) or 'none'}. Fix: {hint}rename or remove it")


def param_problem(value: object, default: object, minimum: float | None = None) -> str | None:
    """None if ``value`` can stand for a parameter whose default is ``default`` (its type, see
    ``expected``) and is at least ``minimum``; otherwise what was expected, in words."""
    if expected(value, type(default)) is None and (minimum is None or value >= minimum):
        return None
    return _NAMES.get(type(default), type(default).__name__) + ("" if minimum is None else f" >= {minimum}")


def resolve_params(model: str, params: dict, defaults: dict[str, dict],
                   minimum: dict[str, float] | None = None) -> dict:
    """``defaults[model]`` updated with ``params``; an unknown model or parameter, or a value of
    another type than the default's or below ``minimum[name]``, raises ValueError listing the
    valid ones, so a typo in the config never passes silently."""
    if model not in defaults:
        raise ValueError(f"unknown reference model {model!r}; valid: {', '.join(defaults)}")
    unknown = sorted(set(params) - set(defaults[model]))
    if unknown:
        valid = ", ".join(defaults[model]) or "none"
        raise ValueError(f"{model}: unknown parameters {', '.join(unknown)}; valid: {valid}")
    for name, value in params.items():
        if problem := param_problem(value, defaults[model][name], (minimum or {}).get(name)):
            raise ValueError(f"{model}: parameter {name} = {value!r}: expected {problem}")
    return {**defaults[model], **params}
