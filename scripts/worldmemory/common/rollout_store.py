"""Finished rollouts kept apart from Snakemake's outputs, so that a failure costs one rollout.

A rollout job writes one case's videos (WorldMemBench: one per trajectory; PersistBench: one per
sequence) into its output directory, and Snakemake deletes that directory when the job fails,
when another job of its SLURM group fails, and before it reruns the job (a forced rerun, a rule
whose shell command changed). At the papers' size an external model's video is minutes of GPU.
So an external model writes each rollout into a store first,

    results/<study>/rollout_store/<model>/<case>/<trajectory>/   (PersistBench: .../<sequence>/)

marks it finished with its *identity* (what the video depends on: the model's command, the
request's values and files, the videos it replays) and then hard-links its files into the job's
output (no second copy on disk; a copy where links are impossible). A rerun of the job links every
rollout whose identity is unchanged instead of running the model again, so only the rollout that
failed is redone. A rollout that did not finish has no mark and is made again from scratch.

To make a model's videos again with an unchanged entry (new weights behind the same command),
delete its store directory, ``results/<study>/rollout_store/<model>/``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

FINISHED = "finished.json"


def add_store_arguments(parser, unit: str) -> None:
    """The rollout CLIs' --store and --replayed options (``unit``: case or sequence)."""
    parser.add_argument("--store", type=Path, default=None,
                        help="--kind external: make each rollout here first, link it into --out once finished")
    parser.add_argument("--replayed", type=Path, nargs="+", default=[],
                        help=f"the {unit}'s rollout directories of the models whose videos the command reads "
                             "(part of the identity)")


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
