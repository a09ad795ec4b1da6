"""Which sequences PersistBench prepares, known before any is: the workflow plans one job per
sequence (and per model and sequence) from these ids."""

from __future__ import annotations

import dataclasses
import difflib
import json
import typing
from pathlib import Path

from worldmemory.common.confine import confinement_problem
from worldmemory.common.ids import check_case_distinct, check_id
from worldmemory.common.limits import fps_problem
from worldmemory.common.npz import npz_problem
from worldmemory.common.params import expected
from worldmemory.worlds.world360 import KINDS

# The files of a user's 360-degree video folder (prepare.user_panorama reads them).
VIDEO_JSON, LABELS, PANORAMAS = "video.json", "labels.npz", ("panorama.mkv", "panorama.mp4")


@dataclasses.dataclass(frozen=True)
class VideoMeta:
    """A user's 360-degree video's video.json: the target's ``kind`` (one of KINDS) and
    ``target`` (its label in labels.npz); ``category`` names it in the tables; ``fps`` is the
    video's frame rate (within common.limits), None for prepare.FPS, the rate of the embedded
    default."""

    kind: str
    target: int
    category: str = ""
    fps: float | None = None


def video_meta(path) -> VideoMeta:
    """video.json at ``path`` as a VideoMeta, its keys and types those of the dataclass's fields;
    anything else raises ValueError naming the file, the key, the value, what was expected and
    the fix. sequence_plan reads each one, so a bad file stops the workflow before any job."""
    path = Path(path)
    fields = {f.name: f for f in dataclasses.fields(VideoMeta)}
    types = typing.get_type_hints(VideoMeta)
    try:
        meta = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not a readable JSON file ({e}). Fix: write it as a JSON object, "
                         'e.g. {"kind": "static", "target": 1}') from e
    if not isinstance(meta, dict):
        raise ValueError(f"{path}: holds {type(meta).__name__} {meta!r}, expected a JSON object with "
                         f"{', '.join(fields)}. Fix: write it as {{\"kind\": \"static\", \"target\": 1}}")
    problems = []
    for key, value in meta.items():
        if key not in fields:
            close = difflib.get_close_matches(key, list(fields), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            problems.append(f"{key} = {value!r}: unknown key; expected some of {', '.join(fields)}. Fix: {hint}"
                            "rename or remove it")
        elif want := expected(value, types[key]):
            problems.append(f"{key} = {value!r}: expected {want}. Fix: write it as a bare JSON value of that type")
    problems += [f"{key}: missing; expected {expected(None, types[key])}. Fix: add it"
                 for key, f in fields.items() if f.default is dataclasses.MISSING and key not in meta]
    if not problems and meta["kind"] not in KINDS:
        problems.append(f"kind = {meta['kind']!r}: expected one of {', '.join(KINDS)}. Fix: use one of those")
    if not problems and meta.get("fps") is not None and (problem := fps_problem(meta["fps"])):
        problems.append(f"fps = {meta['fps']!r}: expected {problem}. Fix: the video's frame rate, or remove it")
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))
    return VideoMeta(**meta)


def user_video(video_dir) -> VideoMeta:
    """The checks of a user's 360-degree video folder that decode nothing, so sequence_plan runs
    them before any job: its files (VIDEO_JSON, LABELS, PANORAMAS) inside the folder
    (common.confine: no symlink leading out), video.json valid (video_meta) and labels.npz, when
    there, an archive with an array 'labels' that loads without pickle (common.npz). Returns the
    video.json; ValueError naming the sequence, the file, what was expected and the fix."""
    video_dir = Path(video_dir)
    escaping = [p for name in (VIDEO_JSON, LABELS, *PANORAMAS)
                if (p := confinement_problem(video_dir, name, name, name))]
    if escaping:
        raise ValueError(f"360-degree video {video_dir.name}: " + "; ".join(escaping))
    meta = video_meta(video_dir / VIDEO_JSON)
    if (video_dir / LABELS).exists() and (problem := npz_problem(video_dir / LABELS, ["labels"])):
        raise ValueError(f"360-degree video {video_dir.name}: {LABELS} {problem}; expected a NumPy archive with an "
                         "integer array 'labels' (T, H, W), which the workflow loads without pickle. Fix: write it "
                         f"with np.savez('{video_dir / LABELS}', labels=labels.astype(np.int32))")
    return meta


def sequence_ids(per_kind: int) -> list[tuple[str, str]]:
    """(sequence id, kind) of the embedded default: static_000.., dynamic_000.."""
    return [(f"{kind}_{i:03d}", kind) for kind in KINDS for i in range(per_kind)]


def sequence_plan(source: str, per_kind: int) -> list[str]:
    """The ids of the sequences to prepare, in preparation order: the embedded default's
    (sequence_ids), or the sub-directories of a user's directory that hold a video.json, sorted
    (each a valid id: it names the sequence's results, no two equal up to case; each folder's
    files confined and valid: user_video)."""
    if source == "embedded":
        return [sequence_id for sequence_id, _ in sequence_ids(per_kind)]
    directory = Path(source)
    if not directory.is_dir():
        raise ValueError(f"{source}: not a directory of 360-degree videos (or 'embedded')")
    videos = sorted(p.name for p in directory.iterdir() if (p / VIDEO_JSON).is_file())
    if not videos:
        raise ValueError(f"{source}: no 360-degree video directories (with video.json)")
    check_case_distinct("sequence", videos, f"rename one of the directories in {directory}")
    for name in videos:
        check_id("sequence", name, f"rename the directory {directory / name}")
        user_video(directory / name)
    return videos
