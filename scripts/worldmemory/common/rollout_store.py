"""Finished rollouts kept apart from Snakemake's outputs, so that a failure costs one rollout.

A rollout job writes one case's videos (WorldMemBench: one per trajectory; PersistBench: one per
sequence) into its output directory, and Snakemake deletes that directory when the job fails,
when another job of its SLURM group fails, and before it reruns the job (a forced rerun, a rule
whose shell command changed). At the papers' size an external model's video is minutes of GPU.
So an external model writes each rollout into a store first,

    results/<study>/rollout_store/<model>/<case>/<trajectory>/   (PersistBench: .../<sequence>/)

marks it finished with its *identity* (what the video depends on: the model's command, its
``version`` and ``files`` (model_digest), the request's values and files, the videos it replays)
and then hard-links its files into the job's output (no second copy on disk; a copy where links
are impossible). A rerun of the job links every
rollout whose identity is unchanged instead of running the model again, so only the rollout that
failed is redone. A rollout that did not finish has no mark and is made again from scratch.

A model changed behind an unchanged command (an edited script, new weights) is a new model only
if its entry says so: a new ``version``, or the changed file listed in ``files``, whose content
model_digest reads. The rules pass that digest on the rollout's command line (``--model-digest``),
so Snakemake reruns the model's rollout jobs when it changes and the store serves none of the old
videos. ``./run.sh forget MODEL`` (worldmemory.workflow.forget) removes a model's rollouts, store
and everything built from them.

model_digest reads each file once per content: the sha256 of a file is kept in a cache file
(``cache``; the rules' DIGEST_CACHE) under its path, size, inode and modification and change
times (ctime, which no tool sets back), so a multi-GB checkpoint is read again only after it
changed, not by every Snakemake start or cluster job.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

FINISHED = "finished.json"
DIGEST_CACHE = Path(".snakemake", "worldmemory", "file_digests.json")  # model_digest's, in the working directory


def add_store_arguments(parser, unit: str) -> None:
    """The rollout CLIs' --store, --replayed and --model-digest options (``unit``: case or sequence)."""
    parser.add_argument("--store", type=Path, default=None,
                        help="--kind external: make each rollout here first, link it into --out once finished")
    parser.add_argument("--replayed", type=Path, nargs="+", default=[],
                        help=f"the {unit}'s rollout directories of the models whose videos the command reads "
                             "(part of the identity)")
    parser.add_argument("--model-digest", default=None,
                        help="the model's version and files (model_digest; part of the identity)")


def with_model(values: dict, model_digest: str | None) -> dict:
    """A rollout's identity ``values`` with the model's digest (model_digest) under "model", if it
    has one; a model without version and files keeps the identity it had before they existed."""
    return values if model_digest is None else {**values, "model": model_digest}


def identity_digest(values: dict, files: list[Path] = ()) -> str:
    """sha256 of ``values`` (JSON, keys sorted) and of the bytes of ``files`` (each file, or every
    file under a directory, by its path relative to it): what a stored rollout must match."""
    h = hashlib.sha256(json.dumps(values, sort_keys=True).encode())
    for path in files:
        path = Path(path)
        members = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for member in members:
            h.update(str(member.relative_to(path) if path.is_dir() else member.name).encode())
            with open(member, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()


def model_digest(version: str | None, files=(), cache: Path | None = None) -> str:
    """sha256 of a model entry's ``version`` (any text, or None) and the contents of its ``files``
    (in order; a directory by each file under it, with its relative path), read through the
    ``cache`` file if given. A file's name and place are not part of it: a checkpoint moved
    elsewhere is the same model."""
    cached = _read_cache(cache)
    known = dict(cached)
    contents = [_content_digest(Path(path), known) for path in files]
    if cache is not None and known != cached:
        _write_cache(cache, known)
    return hashlib.sha256(json.dumps({"version": version, "files": contents}).encode()).hexdigest()


def _content_digest(path: Path, known: dict) -> str:
    if not path.is_dir():
        return _file_digest(path, known)
    members = sorted(p for p in path.rglob("*") if p.is_file())
    return hashlib.sha256(json.dumps([[str(m.relative_to(path)), _file_digest(m, known)]
                                      for m in members]).encode()).hexdigest()


def _file_digest(path: Path, known: dict) -> str:
    """sha256 of the file's bytes, taken from ``known`` (updated) while its stat is unchanged."""
    st = path.stat()
    key, stamp = str(path.resolve()), [st.st_size, st.st_ino, st.st_mtime_ns, st.st_ctime_ns]
    if known.get(key, {}).get("stat") != stamp:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        known[key] = {"stat": stamp, "sha256": h.hexdigest()}
    return known[key]["sha256"]


def _read_cache(cache: Path | None) -> dict:
    try:
        return json.loads(Path(cache).read_text()) if cache is not None else {}
    except (OSError, json.JSONDecodeError):
        return {}  # none yet, or unreadable: every file is read again


def _write_cache(cache: Path, known: dict) -> None:
    """Write ``known`` whole, through a temporary file renamed over it (a reader never sees half)."""
    cache = Path(cache)
    cache.parent.mkdir(parents=True, exist_ok=True)
    partial = cache.with_name(f"{cache.name}.{os.getpid()}")
    partial.write_text(json.dumps(known, sort_keys=True))
    os.replace(partial, cache)


class RolloutStore:
    """The finished rollouts of one model and case under ``root``; ``root`` None stores nothing
    (every rollout is made in place)."""

    def __init__(self, root: Path | None):
        self.root = None if root is None else Path(root)

    def fetch(self, key: str, identity: str, dest: Path) -> bool:
        """Link the finished rollout ``key`` into ``dest`` if its identity is ``identity``;
        whether it was there."""
        if self.root is None:
            return False
        stored = self.root / key
        try:
            mark = json.loads((stored / FINISHED).read_text())
        except (OSError, json.JSONDecodeError):
            return False
        if mark.get("identity") != identity:
            return False
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(stored, dest, copy_function=_link, ignore=shutil.ignore_patterns(FINISHED))
        return True

    def workdir(self, key: str, dest: Path) -> Path:
        """Where rollout ``key`` is made: an empty directory in the store (a leftover of an
        unfinished attempt removed), or ``dest`` itself without a store."""
        work = dest if self.root is None else self.root / key
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        return work

    def finish(self, key: str, identity: str, dest: Path) -> None:
        """Mark rollout ``key`` finished with ``identity`` and link it into ``dest``."""
        if self.root is None:
            return
        (self.root / key / FINISHED).write_text(json.dumps({"identity": identity}) + "\n")
        if not self.fetch(key, identity, dest):
            raise RuntimeError(f"{self.root / key}: the rollout just finished cannot be read back")


def _link(src, dst) -> None:
    """A hard link of ``src`` at ``dst``, a copy where the filesystem cannot link."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
