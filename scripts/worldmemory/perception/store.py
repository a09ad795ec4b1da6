"""Estimates on disk: one file per model, case and capability, so that scoring never reruns an estimator.

A perception job runs the configured backends over the videos of one case (or sequence) of a
model and writes ``results/<study>/perception/<model>/<case>/<capability>.npz``: for each video
(its key, e.g. ``case/trajectory`` or ``sequence``) the arrays the backend produced
(``<key>/<field>``), and the backend's name (``__backend__``). Byte-stable (common.npz): equal
estimates, equal bytes. ``load_model_estimates`` reads a capability over every case of a model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from worldmemory.common.npz import save_npz
from worldmemory.perception import registry
from worldmemory.perception.base import Unavailable

BACKEND_KEY = "__backend__"


def save_estimates(path, backend: str, estimates: dict[str, dict[str, np.ndarray]]) -> None:
    """Write ``estimates`` (video key -> field -> array) made by ``backend`` to ``path``."""
    arrays = {BACKEND_KEY: np.array(backend)}
    for key, fields in estimates.items():
        for field, value in fields.items():
            if "/" in field:
                raise ValueError(f"field {field!r} of {key}: no '/' in field names")
            arrays[f"{key}/{field}"] = value
    save_npz(Path(path), arrays)


@dataclass
class Estimates:
    """The estimates of one model and capability, read back."""

    backend: str
    arrays: dict[str, np.ndarray]
    path: Path

    def videos(self) -> set[str]:
        """The keys of the videos with estimates (array names are ``key/field``)."""
        return {name.rsplit("/", 1)[0] for name in self.arrays}

    def of(self, key: str) -> dict[str, np.ndarray]:
        """Field -> array of one video; ValueError naming the file if it holds none for ``key``."""
        prefix = f"{key}/"
        fields = {name[len(prefix):]: value for name, value in self.arrays.items() if name.startswith(prefix)}
        if not fields:
            raise ValueError(f"{self.path}: no {self.backend} estimates of {key}")
        return fields


def load_estimates(path) -> Estimates:
    path = Path(path)
    with np.load(path, allow_pickle=False) as npz:
        arrays = {name: npz[name] for name in npz.files}
    backend = str(arrays.pop(BACKEND_KEY))
    return Estimates(backend, arrays, path)


def load_model_estimates(model_dir, capability: str) -> Estimates | None:
    """A model's estimates of ``capability`` over all its cases (``model_dir``/<case>/<capability>.npz,
    merged); None when it has none (the capability has no backend)."""
    files = sorted(Path(model_dir).glob(f"*/{capability}.npz"))
    if not files:
        return None
    parts = [load_estimates(f) for f in files]
    backends = {part.backend for part in parts}
    if len(backends) > 1:
        raise ValueError(f"{model_dir}: {capability} estimates of several backends ({', '.join(sorted(backends))}); "
                         "rebuild them")
    return Estimates(parts[0].backend, {k: v for part in parts for k, v in part.arrays.items()}, Path(model_dir))


def cached_sources(capabilities, backends: dict[str, str], directory, config_key: str) -> dict:
    """Capability -> its Estimates (``directory``/<capability>.npz), or the reason it has none for
    a capability configured as ``none`` (the reason names ``config_key``.<capability>). Refuses
    estimates made by another backend than the configured one: a stale file."""
    sources = {}
    for capability in capabilities:
        name = backends.get(capability, registry.NONE)
        if name == registry.NONE:
            sources[capability] = registry.not_configured(f"{config_key}.{capability}", capability)
            continue
        estimates = load_estimates(Path(directory) / f"{capability}.npz")
        if estimates.backend != name:
            raise ValueError(f"{estimates.path}: made by {estimates.backend!r}, but {config_key}.{capability} "
                             f"is {name!r}; rebuild it")
        sources[capability] = estimates
    return sources


@dataclass
class CachedView:
    """One video's view of a model's cached estimates: ``sources`` from cached_sources."""

    sources: dict
    key: str  # the video, e.g. case/trajectory or sequence

    def fields(self, capability: str) -> dict[str, np.ndarray]:
        """The cached arrays of ``capability`` for this video; Unavailable with the reason when
        the capability has no backend."""
        source = self.sources[capability]
        if isinstance(source, str):
            raise Unavailable(source)
        return source.of(self.key)
