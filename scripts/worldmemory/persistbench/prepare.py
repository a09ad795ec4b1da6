"""PersistBench data preparation (Method 1): 360-degree video -> seamless target track -> camera
pair -> perspective input and reference videos.

Sequences come from the embedded default (``world360`` scenes, ``--per-kind`` static and dynamic,
the renderer's instance map as segmentation) or from a directory of the user's 360-degree videos,
each with a label video from any segmenter and the target's label (``user_panorama``). The target
is tracked on the tiled canvas from its first-frame mask (``tracking.SeamlessTracker`` over a
``LabelTracker``), the yaw/pitch paths of the input and reference cameras are planned for the
schedule (``camera_paths.plan_pair``) and both views are cropped from the panorama.

The schedule (``camera_paths.ScheduleSpec``) is a shape, visible-invisible-visible,
visible-invisible ("visible, then gone") or invisible-visible-invisible, with the fractions of
each video's length where its segments meet (``--schedule``), or the older absolute window
``--invisible START END`` (frames [START, END), the same for every video). A user's video is
resized to the working resolution ``--pano-width`` x ``--pano-width / 2`` (``resize_panorama``:
the colours filtered seamlessly across the left/right edge, the labels nearest-neighbour so
that they stay exact). A video too short for its schedule (a segment that rounds to no frame,
a window past its end), one whose target vanishes at the working resolution and a pair that
misses its schedule after optimisation are listed with their reasons under "dropped" in the
manifest and printed, never kept; preparation fails only when no sequence is left.

One job per sequence (``--sequence ID``; the ids are known before anything is prepared:
``sequence_plan``), then one that lists them (``--collect ID ...``: OUT/manifest.json). A dropped
sequence's directory holds only its sequence.json, with the reasons under "dropped"; its rollout,
perception and score jobs then write nothing but say so. A kept one's OUT/<sequence>/ holds:

    sequence.json  id, kind, category, target instance (1), n_frames, fps, schedule (its frames;
                   with --schedule also shape and bounds), cameras (yaw and pitch paths, fov,
                   size), visible_frames (input frames that show the target) and, embedded, the
                   scene (world360.Scene.to_dict); a user's video: its source size
    panorama.mkv   the 360-degree video; panorama.npz: the tracked target ('instance', 1 = target)
    background.png the panorama without the target (embedded only: what 'forgetting' fades to)
    input.mkv, reference.mkv  the two perspective videos; views.npz: the target's crops
                   (input_instance, reference_instance) and visible_in_input (T,) bool

and OUT/manifest.json lists the kept sequences and the dropped ones (sorted, no timestamps).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image

from worldmemory.common.equirect import perspective
from worldmemory.common.ids import check_id
from worldmemory.common.npz import save_npz
from worldmemory.common.video import read_video, write_video
from worldmemory.persistbench.camera_paths import (
    PathParams,
    Schedule,
    ScheduleError,
    ScheduleSpec,
    TargetTrack,
    plan_pair,
)
from worldmemory.persistbench.plan import LABELS, PANORAMAS, VIDEO_JSON, sequence_plan, user_video
from worldmemory.persistbench.tracking import LabelTracker, SeamlessTracker
from worldmemory.worlds import world360

FPS = 8.0  # frames per second of the written videos (the renderer has no clock)


def crop_video(frames, yaw, pitch, params: PathParams, nearest: bool = False) -> np.ndarray:
    """A perspective video along a camera path, one crop per panorama frame."""
    return np.stack([perspective(frame, y, p, params.fov_deg, params.width, params.height,
                                 nearest=nearest) for frame, y, p in zip(frames, yaw, pitch)])


@dataclass
class Panorama:
    """One 360-degree sequence before its cameras: frames, a label map, the target's label."""

    id: str
    kind: str
    category: str
    rgb: np.ndarray  # (T, H, W, 3) uint8, equirectangular
    labels: np.ndarray  # (T, H, W) int: a segmentation whose label `target` is the target
    target: int
    fps: float
    background: np.ndarray | None = None  # (H, W, 3): the panorama without the target, if known
    extra: dict = field(default_factory=dict)  # recorded in sequence.json


def embedded_panorama(sequence_id: str, kind: str, n_frames: int, pano_width: int) -> Panorama:
    """A synthetic sequence of world360, with the renderer's instance map as the labels."""
    scene = world360.generate_scene(sequence_id, kind, n_frames)
    pano = world360.render_video(scene, n_frames, pano_width, pano_width // 2)
    return Panorama(sequence_id, kind, scene.category, pano["rgb"], pano["instance"],
                    scene.target_instance, FPS,
                    world360.render_background(scene, pano_width, pano_width // 2),
                    {"seam_crossing": bool(scene.crosses_seam(n_frames)),
                     "scene": scene.to_dict()})


def resize_panorama(rgb: np.ndarray, labels: np.ndarray, width: int):
    """(rgb, labels) of an equirectangular video resized to width x width // 2.

    The colours with PIL's bilinear filter (antialiased when shrinking) on the video tiled three
    times side by side, the middle copy kept, so the left and right edges blend with each other
    as on the sphere; the labels nearest-neighbour (pixel centre to pixel centre), so every
    output label is one of the input's, exactly. The same size is returned unchanged."""
    T, H, W = labels.shape
    height = width // 2
    if (W, H) == (width, height):
        return rgb, labels
    rows = ((2 * np.arange(height) + 1) * H) // (2 * height)
    cols = ((2 * np.arange(width) + 1) * W) // (2 * width)
    out = np.empty((T, height, width, 3), dtype=np.uint8)
    for t in range(T):
        tiled = Image.fromarray(np.ascontiguousarray(np.tile(rgb[t], (1, 3, 1))))
        out[t] = np.asarray(tiled.resize((3 * width, height), Image.Resampling.BILINEAR))[
            :, width:2 * width]
    return out, labels[:, rows][:, :, cols]


def user_panorama(video_dir, pano_width: int | None = None) -> Panorama:
    """A user's 360-degree video: DIR/panorama.mkv or .mp4 (equirectangular, width = 2 x height),
    DIR/labels.npz with 'labels' (T, H, W) int (any segmentation, e.g. SAM's, tiled or not, at
    the video's size) and DIR/video.json (plan.VideoMeta: "kind", "target": its label,
    "category", "fps"), each inside DIR (plan.user_video checks them, labels.npz is loaded
    without pickle). With pano_width, resized to pano_width x pano_width // 2
    (``resize_panorama``); its source size is recorded in ``extra``."""
    video_dir = Path(video_dir)
    name = check_id("sequence", video_dir.name, f"rename the directory {video_dir}")
    meta = user_video(video_dir)
    try:
        video = next(p for p in (video_dir / n for n in PANORAMAS) if p.is_file())
        with np.load(video_dir / LABELS, allow_pickle=False) as npz:
            labels = npz["labels"]
    except (OSError, StopIteration, KeyError) as e:
        raise ValueError(f"360-degree video {name}: needs {' or '.join(PANORAMAS)}, {LABELS} "
                         f"('labels') and {VIDEO_JSON} ({e or 'no panorama video'})") from e
    rgb = read_video(video)
    problems = []
    if labels.shape != rgb.shape[:3]:
        problems.append(f"labels {labels.shape} do not match the video {rgb.shape[:3]}")
    elif rgb.shape[2] != 2 * rgb.shape[1]:
        problems.append(f"frames {rgb.shape[2]}x{rgb.shape[1]} are not equirectangular (2:1)")
    elif not (labels[0] == meta.target).any():
        problems.append(f"target label {meta.target!r} is not in the first frame")
    if problems:
        raise ValueError(f"360-degree video {name}: " + "; ".join(problems))
    source_size = [int(rgb.shape[2]), int(rgb.shape[1])]
    if pano_width is not None:
        rgb, labels = resize_panorama(rgb, labels, int(pano_width))
    return Panorama(name, meta.kind, meta.category, rgb, labels, meta.target,
                    float(FPS if meta.fps is None else meta.fps),
                    extra={"source_size": source_size})


def prepare_sequence(pano: Panorama, schedule: Schedule, params: PathParams,
                     out_dir: Path, spec: ScheduleSpec | None = None) -> dict:
    """Prepare one sequence under out_dir/<id>/; returns its manifest entry, or the reasons it
    was dropped ({"id", "kind", "dropped": [...]}) with nothing written. ``spec``: the
    relative schedule it was resolved from, recorded (shape, bounds) in sequence.json."""
    target = pano.labels == pano.target
    tracked = SeamlessTracker(LabelTracker(pano.labels)).run(pano.rgb, target[0])
    pair = plan_pair(TargetTrack.from_masks(tracked.masks), schedule, params)
    if not pair.ok:
        return {"id": pano.id, "kind": pano.kind, "dropped": pair.report.get("reasons", [])}
    views = {
        "input": crop_video(pano.rgb, pair.input_yaw, pair.input_pitch, params),
        "reference": crop_video(pano.rgb, pair.reference_yaw, pair.reference_pitch, params),
        "input_instance": crop_video(tracked.masks, pair.input_yaw, pair.input_pitch, params,
                                     nearest=True),
        "reference_instance": crop_video(tracked.masks, pair.reference_yaw,
                                         pair.reference_pitch, params, nearest=True),
    }
    visible = views["input_instance"].any(axis=(1, 2))
    seq_dir = out_dir / pano.id
    write_video(seq_dir / "panorama.mkv", pano.rgb, pano.fps)
    save_npz(seq_dir / "panorama.npz", {"instance": tracked.masks.astype(np.int16)})
    if pano.background is not None:
        Image.fromarray(pano.background).save(seq_dir / "background.png")
    write_video(seq_dir / "input.mkv", views["input"], pano.fps)
    write_video(seq_dir / "reference.mkv", views["reference"], pano.fps)
    save_npz(seq_dir / "views.npz", {"input_instance": views["input_instance"].astype(np.int16),
                                     "reference_instance": views["reference_instance"].astype(np.int16),
                                     "visible_in_input": visible})
    meta = {"id": pano.id, "kind": pano.kind, "category": pano.category, "target_instance": 1,
            "n_frames": len(pano.rgb), "fps": pano.fps, "schedule": {**schedule.to_json(),
                                                         **_relative(spec)},
            "cameras": {**pair.to_json(), "fov_deg": params.fov_deg, "width": params.width,
                        "height": params.height}, "visible_frames": int(visible.sum()), **pano.extra}
    (seq_dir / "sequence.json").write_text(json.dumps(meta, sort_keys=True) + "\n")
    return {"id": pano.id, "kind": pano.kind, "category": pano.category,
            "visible_frames": int(visible.sum())}


def _relative(spec: ScheduleSpec | None) -> dict:
    return spec.to_json() if spec is not None and spec.frames is None else {}


def panorama(source: str, sequence_id: str, n_frames: int, pano_width: int) -> Panorama:
    """Sequence ``sequence_id`` of ``source``: an embedded one (its kind from its id), or a user's
    video (user_panorama, resized to pano_width)."""
    if source == "embedded":
        kind = sequence_id.rsplit("_", 1)[0]
        if kind not in world360.KINDS:
            raise ValueError(f"{sequence_id}: not an embedded sequence id (<kind>_<NNN>, kind in {world360.KINDS})")
        return embedded_panorama(sequence_id, kind, n_frames, pano_width)
    return user_panorama(Path(source) / sequence_id, pano_width)


def prepare(out_dir, per_kind: int, n_frames: int, pano_width: int,
            invisible: tuple[int, int] | None, params: PathParams, source: str = "embedded",
            schedule: ScheduleSpec | dict | None = None) -> dict:
    """Prepare every sequence of ``source`` (prepare_one) and write the manifest (collect)."""
    ids = sequence_plan(source, per_kind)
    for sequence_id in ids:
        prepare_one(out_dir, sequence_id, n_frames, pano_width, invisible, params, source, schedule)
    return collect(out_dir, ids, invisible, params, source, schedule)


def _spec(schedule, invisible) -> ScheduleSpec:
    return schedule if isinstance(schedule, ScheduleSpec) else ScheduleSpec.from_config(schedule, invisible)


def prepare_one(out_dir, sequence_id: str, n_frames: int, pano_width: int, invisible: tuple[int, int] | None,
                params: PathParams, source: str = "embedded", schedule: ScheduleSpec | dict | None = None) -> dict:
    """Prepare sequence ``sequence_id`` of ``source`` under out_dir/<id>/; returns its manifest
    entry, or the reasons it was dropped ({"id", "kind", "dropped": [...]}, also its sequence.json).

    The schedule: ``schedule`` (a ``ScheduleSpec`` or the config's {shape, bounds}) if given,
    else the absolute window ``invisible`` (frames [start, end); default [16, 32]), resolved
    for the video's length. A sequence that cannot be prepared (too short for its schedule,
    its target gone at the working resolution, its camera pair missing the schedule) is
    dropped with its reasons and the config key that would keep it.
    """
    spec = _spec(schedule, invisible)
    out_dir = Path(out_dir)
    pano = panorama(source, sequence_id, n_frames, pano_width)
    start = time.perf_counter()
    try:
        sequence_schedule = spec.resolve(len(pano.rgb))
    except ScheduleError as e:
        key = "invisible (or schedule" if spec.frames is not None else "schedule (or invisible"
        why, fix, reasons = ("too short for its schedule", f"persistbench.sequences.{key}, n_frames)", [str(e)])
    else:
        if (pano.labels[0] == pano.target).any():
            entry = prepare_sequence(pano, sequence_schedule, params, out_dir, spec)
            why, fix, reasons = "schedule missed", "persistbench.camera", entry.get("dropped")
        else:
            height, width = pano.labels.shape[1:]
            why, fix = "target lost at the working resolution", "persistbench.sequences.pano_width"
            reasons = [f"target label {pano.target} is not in the first frame at the working "
                       f"resolution {width}x{height} (source {pano.extra.get('source_size')}). "
                       "Fix: raise persistbench.sequences.pano_width"]
    took = time.perf_counter() - start
    if reasons is not None:
        dropped = {"id": pano.id, "kind": pano.kind, "dropped": reasons, "fix": fix}
        (out_dir / pano.id).mkdir(parents=True, exist_ok=True)
        (out_dir / pano.id / "sequence.json").write_text(json.dumps(dropped, sort_keys=True) + "\n")
        print(f"[prepare] {pano.id}: DROPPED, {why}: {'; '.join(reasons) or 'see report'} ({took:.1f} s)",
              flush=True)
        return dropped
    print(f"[prepare] {pano.id} ({entry['category']}): target visible in "
          f"{entry['visible_frames']}/{len(pano.rgb)} input frames ({took:.1f} s)", flush=True)
    return entry


def collect(out_dir, ids: list[str], invisible: tuple[int, int] | None, params: PathParams,
            source: str = "embedded", schedule: ScheduleSpec | dict | None = None) -> dict:
    """Write out_dir/manifest.json from the prepared sequences ``ids`` (their sequence.json, in
    this order): the kept ones and the dropped ones with their reasons; a RuntimeError naming the
    keys to change when none is kept."""
    spec = _spec(schedule, invisible)
    out_dir = Path(out_dir)
    kept, dropped = [], []
    for sequence_id in ids:
        meta = json.loads((out_dir / sequence_id / "sequence.json").read_text())
        if "dropped" in meta:
            dropped.append(meta)
        else:
            kept.append({"id": meta["id"], "kind": meta["kind"], "category": meta["category"],
                         "visible_frames": meta["visible_frames"]})
    if not kept:
        reasons = "; ".join(f"{d['id']}: {d['dropped'][0] if d['dropped'] else 'see report'}"
                            for d in dropped[:3])
        more = f" (and {len(dropped) - 3} more)" if len(dropped) > 3 else ""
        raise RuntimeError(
            f"every sequence missed its schedule or was dropped, nothing to evaluate: "
            f"{reasons}{more}. Fix: change {' / '.join(sorted({d['fix'] for d in dropped}))}")
    manifest = {"sequences": kept, "dropped": [{k: d[k] for k in ("id", "kind", "dropped")} for d in dropped],
                "source": source, "camera": asdict(params)}
    if spec.frames is not None:
        manifest["invisible"] = list(spec.frames)
    else:
        manifest["schedule"] = spec.to_json()
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the prepared sequences' directory")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--sequence", help="prepare this sequence (an id of sequence_plan)")
    which.add_argument("--collect", nargs="+", metavar="ID", help="list these prepared sequences in manifest.json")
    parser.add_argument("--source", default="embedded",
                        help="'embedded' or a directory of 360-degree videos (see user_panorama)")
    parser.add_argument("--n-frames", type=int, default=48)
    parser.add_argument("--pano-width", type=int, default=256,
                        help="panorama width (height = /2): the embedded renders' and the working "
                             "resolution user videos are resized to")
    parser.add_argument("--invisible", type=int, nargs=2, default=(16, 32), metavar=("START", "END"),
                        help="frames [START, END) in which the input camera must not see the "
                             "target (the absolute form; --schedule, when set, replaces it)")
    parser.add_argument("--schedule", default="null",
                        help='the relative schedule (JSON), e.g. {"shape": '
                             '"invisible-visible-invisible", "bounds": [0.33, 0.67]}: shape '
                             "visible-invisible-visible, visible-invisible or invisible-visible-"
                             "invisible, bounds the fractions of each video's length where its "
                             "segments meet (camera_paths.ScheduleSpec); null: --invisible")
    parser.add_argument("--camera", default="{}",
                        help="camera_paths.PathParams keyword arguments (JSON), e.g. fov_deg")
    args = parser.parse_args(argv)
    params = PathParams(**json.loads(args.camera))
    invisible, schedule = tuple(args.invisible), json.loads(args.schedule)
    if args.sequence:
        prepare_one(args.out, args.sequence, args.n_frames, args.pano_width, invisible, params, args.source, schedule)
    else:
        manifest = collect(args.out, args.collect, invisible, params, args.source, schedule)
        print(f"[prepare] {len(manifest['sequences'])} sequences kept, {len(manifest['dropped'])} dropped "
              f"-> {Path(args.out) / 'manifest.json'}")


if __name__ == "__main__":
    main()
