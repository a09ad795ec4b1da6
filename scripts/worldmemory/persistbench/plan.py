"""Which sequences PersistBench prepares, known before any is: the workflow plans one job per
sequence (and per model and sequence) from these ids."""

from __future__ import annotations

from pathlib import Path

from worldmemory.common.ids import check_id
from worldmemory.worlds.world360 import KINDS


def sequence_ids(per_kind: int) -> list[tuple[str, str]]:
    """(sequence id, kind) of the embedded default: static_000.., dynamic_000.."""
    return [(f"{kind}_{i:03d}", kind) for kind in KINDS for i in range(per_kind)]


def sequence_plan(source: str, per_kind: int) -> list[str]:
    """The ids of the sequences to prepare, in preparation order: the embedded default's
    (sequence_ids), or the sub-directories of a user's directory that hold a video.json, sorted
    (each a valid id: it names the sequence's results)."""
    if source == "embedded":
        return [sequence_id for sequence_id, _ in sequence_ids(per_kind)]
    directory = Path(source)
    if not directory.is_dir():
        raise ValueError(f"{source}: not a directory of 360-degree videos (or 'embedded')")
    videos = sorted(p.name for p in directory.iterdir() if (p / "video.json").is_file())
    if not videos:
        raise ValueError(f"{source}: no 360-degree video directories (with video.json)")
    return [check_id("sequence", name, f"rename the directory {directory / name}") for name in videos]
