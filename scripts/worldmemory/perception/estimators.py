"""A configured estimator: its backend, the backend's options, its weights and the job's resources.

A study's ``perception.<capability>`` is a backend name (``optical-flow``) or a mapping::

    aesthetic_quality:
      backend: laion-aesthetic
      model: openai/clip-vit-large-patch14      # a Hugging Face id, or a local directory
      revision: 32bd64288804d66eefd0ccbe215aa642df71cc41
      head: resources/laion/sa_0_4_vit_l_14_linear.pth   # the backend's own options
      device: cuda
      gpu: 1                                    # the perception job's resources
      mem_mb: 16000
      runtime: 120

``model`` names the weights. A local directory is read in place; a Hugging Face id is fetched once
at ``revision`` into ``resources/models/perception/<id>@<revision>`` by the local rule
``prefetch_perception`` (a login node's job), and every perception job then reads that directory
with ``HF_HUB_OFFLINE=1``. The backend receives ``model`` as the local directory and every other
key except the resources as keyword arguments. Snakemake wiring reads this module; nothing here
imports a backend.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

PREFETCH_ROOT = "resources/models/perception"
# options naming a file a backend reads: inputs of its jobs, checked before any runs
FILE_OPTIONS = ("head", "detector", "recognizer", "weights")
RESOURCES = {"gpu": 0, "mem_mb": 4000, "runtime": 15}  # an estimator's defaults (runtime: minutes per case)
_KEEP = re.compile(r"[^A-Za-z0-9.-]")  # what weights_slug escapes


@dataclass(frozen=True)
class Estimator:
    backend: str
    options: dict = field(default_factory=dict)  # the backend's keyword arguments, ``model`` as configured
    resources: dict = field(default_factory=lambda: dict(RESOURCES))

    @property
    def model(self) -> str | None:
        return self.options.get("model")

    @property
    def revision(self) -> str:
        return str(self.options.get("revision", "main"))

    @property
    def fetched(self) -> bool:
        """Whether the weights are a Hugging Face id that prefetch_perception downloads."""
        return self.model is not None and not os.path.isdir(self.model)

    def weights_dir(self) -> str | None:
        """The directory the backend loads: the local one, or where the id is prefetched; None without weights."""
        if self.model is None:
            return None
        return os.path.join(PREFETCH_ROOT, weights_slug(self.model, self.revision)) if self.fetched else self.model

    def inputs(self) -> list[str]:
        """What the perception job reads besides the videos: the weights directory and option files."""
        files = [self.options[k] for k in FILE_OPTIONS if k in self.options]
        return ([self.weights_dir()] if self.model is not None else []) + files

    def backend_options(self) -> dict:
        """The backend's keyword arguments, ``model`` pointing at the local weights directory."""
        options = {k: v for k, v in self.options.items() if k != "revision"}
        if self.model is not None:
            options["model"] = self.weights_dir()
        return options


def parse(value) -> Estimator:
    """An ``Estimator`` from a config entry: a backend name or a mapping with ``backend``."""
    if isinstance(value, str):
        return Estimator(value)
    if not isinstance(value, dict) or not isinstance(value.get("backend"), str):
        raise ValueError(f"an estimator is a backend name or a mapping with a 'backend' name, got {value!r}")
    resources = {k: value.get(k, default) for k, default in RESOURCES.items()}
    options = {k: v for k, v in value.items() if k != "backend" and k not in RESOURCES}
    return Estimator(value["backend"], options, resources)


def weights_slug(model_id: str, revision: str) -> str:
    """One path component naming a Hugging Face id at a revision, ``owner__name@revision``, and
    no other pair: each part keeps [A-Za-z0-9.-], writes '/' as '__' and every other character
    ('_' itself, a space, '@') as '_' and the hex of its UTF-8 bytes, a leading '.' too, so
    ``refs/pr/3`` is ``refs__pr__3``, ``v1_x`` ``v1_5fx`` and ``v1 x`` ``v1_20x``; two
    estimators never share a directory. '_' rather than URL's '%' as the escape keeps the slug
    in the characters of an id (and '@'), which no shell or format string reads."""
    return f"{_escape(model_id)}@{_escape(revision)}"


def _escape(text: str) -> str:
    escaped = _KEEP.sub(lambda m: "__" if m.group() == "/" else "".join(f"_{b:02x}" for b in m.group().encode()),
                        text)
    return f"_2e{escaped[1:]}" if escaped.startswith(".") else escaped


def prefetched(studies: dict) -> dict[str, tuple[str, str]]:
    """slug -> (Hugging Face id, revision) of every estimator of ``studies`` (name -> study config)
    to fetch: the perception entries and a ``features`` entry given as a mapping."""
    out = {}
    for study in studies.values():
        features = [study["features"]] if isinstance(study.get("features"), dict) else []
        for value in [*study.get("perception", {}).values(), *features]:
            estimator = parse(value)
            if estimator.fetched:
                out[weights_slug(estimator.model, estimator.revision)] = (estimator.model, estimator.revision)
    return out
