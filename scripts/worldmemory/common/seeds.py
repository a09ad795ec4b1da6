"""Seeded randomness from stable ids: the same id gives the same numbers in every process."""

from __future__ import annotations

import hashlib

import numpy as np


def stable_rng(key: str, namespace: str) -> np.random.Generator:
    """Generator seeded by SHA-256 of namespace and key (Python's hash() is salted per process)."""
    digest = hashlib.sha256(f"{namespace}/{key}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "little"))
