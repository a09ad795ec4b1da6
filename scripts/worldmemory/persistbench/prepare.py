"""PersistBench data preparation (Method 1): 360-degree video -> seamless target track -> camera
pair -> perspective input and reference videos.

Sequences come from the embedded default (``world360`` scenes, ``--per-kind`` static and dynamic,
the renderer's instance map as segmentation) or from a directory of the user's 360-degree videos,
each with a label video from any segmenter and the target's label (``user_panorama``). The target
is tracked on the tiled canvas from its first-frame mask (``tracking.SeamlessTracker`` over a
``LabelTracker``), the yaw/pitch paths of the input and reference cameras are planned for the
schedule (``camera_paths.plan_pair``: visible, then invisible on [start, end), then visible again
if the window ends before the clip) and both views are cropped from the panorama. A pair that
misses its schedule after optimisation is listed with its reasons under "dropped" in the
manifest and printed, never kept. OUT/<sequence>/ holds:

    sequence.json  id, kind, category, target instance (1), n_frames, fps, schedule, cameras (yaw
                   and pitch paths, fov, size) and, embedded, the scene (world360.Scene.to_dict)
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

from worldmemory.common.ids import check_id
from worldmemory.common.npz import save_npz
from worldmemory.common.video import read_video, write_video
from worldmemory.persistbench.camera_paths import PathParams, Schedule, TargetTrack, plan_pair
from worldmemory.persistbench.equirect import perspective
from worldmemory.persistbench.tracking import LabelTracker, SeamlessTracker
from worldmemory.worlds import world360

FPS = 8.0  # frames per second of the written videos (the renderer has no clock)


def sequence_ids(per_kind: int) -> list[tuple[str, str]]:
    """(sequence id, kind) of the embedded default: static_000.., dynamic_000.."""
    return [(f"{kind}_{i:03d}", kind) for kind in world360.KINDS for i in range(per_kind)]


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


def user_panorama(video_dir) -> Panorama:
    """A user's 360-degree video: DIR/panorama.mkv or .mp4 (equirectangular, width = 2 x height),
    DIR/labels.npz with 'labels' (T, H, W) int (any segmentation, e.g. SAM's, tiled or not) and
    DIR/video.json {"kind": "static"|"dynamic", "category": str, "target": its label, "fps"}."""
    video_dir = Path(video_dir)
    name = check_id("sequence", video_dir.name, f"rename the directory {video_dir}")
    try:
        meta = json.loads((video_dir / "video.json").read_text())
        video = next(p for p in (video_dir / "panorama.mkv", video_dir / "panorama.mp4")
                     if p.is_file())
        with np.load(video_dir / "labels.npz") as npz:
            labels = npz["labels"]
    except (OSError, StopIteration, KeyError, json.JSONDecodeError) as e:
        raise ValueError(f"360-degree video {name}: needs panorama.mkv/.mp4, labels.npz "
                         f"('labels') and video.json ({e or 'no panorama video'})") from e
    rgb = read_video(video)
    problems = []
    if meta.get("kind") not in world360.KINDS:
        problems.append(f"kind {meta.get('kind')!r} is not one of {world360.KINDS}")
    if labels.shape != rgb.shape[:3]:
        problems.append(f"labels {labels.shape} do not match the video {rgb.shape[:3]}")
    elif rgb.shape[2] != 2 * rgb.shape[1]:
        problems.append(f"frames {rgb.shape[2]}x{rgb.shape[1]} are not equirectangular (2:1)")
    elif not (labels[0] == meta.get("target")).any():
        problems.append(f"target label {meta.get('target')!r} is not in the first frame")
    if problems:
        raise ValueError(f"360-degree video {name}: " + "; ".join(problems))
    return Panorama(name, meta["kind"], str(meta.get("category", "")), rgb, labels,
                    int(meta["target"]), float(meta.get("fps", FPS)))


def prepare_sequence(pano: Panorama, schedule: Schedule, params: PathParams,
                     out_dir: Path) -> dict:
    """Prepare one sequence under out_dir/<id>/; returns its manifest entry, or the reasons it
    was dropped ({"id", "dropped": [...]}) with nothing written."""
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
            "n_frames": len(pano.rgb), "fps": pano.fps, "schedule": asdict(schedule),
            "cameras": {**pair.to_json(), "fov_deg": params.fov_deg, "width": params.width,
                        "height": params.height}, **pano.extra}
    (seq_dir / "sequence.json").write_text(json.dumps(meta, sort_keys=True) + "\n")
    return {"id": pano.id, "kind": pano.kind, "category": pano.category,
            "visible_frames": int(visible.sum())}


def panoramas(source: str, per_kind: int, n_frames: int, pano_width: int):
    """The sequences to prepare, one at a time: the embedded default's, or a user directory's
    (one sub-directory per video, see user_panorama)."""
    if source == "embedded":
        for sequence_id, kind in sequence_ids(per_kind):
            yield embedded_panorama(sequence_id, kind, n_frames, pano_width)
        return
    videos = sorted(p for p in Path(source).iterdir() if (p / "video.json").is_file())
    if not videos:
        raise ValueError(f"{source}: no 360-degree video directories (with video.json)")
    for video_dir in videos:
        yield user_panorama(video_dir)


def prepare(out_dir, per_kind: int, n_frames: int, pano_width: int, invisible: tuple[int, int],
            params: PathParams, source: str = "embedded") -> dict:
    """Prepare every sequence of ``source``; write and return the manifest."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    kept, dropped = [], []
    for pano in panoramas(source, per_kind, n_frames, pano_width):
        start = time.perf_counter()
        schedule = Schedule(len(pano.rgb), *invisible)
        entry = prepare_sequence(pano, schedule, params, out_dir)
        took = time.perf_counter() - start
        if "dropped" in entry:
            dropped.append(entry)
            print(f"[prepare] {pano.id}: DROPPED, schedule missed: "
                  f"{'; '.join(entry['dropped']) or 'see report'} ({took:.1f} s)", flush=True)
        else:
            kept.append(entry)
            print(f"[prepare] {pano.id} ({entry['category']}): target visible in "
                  f"{entry['visible_frames']}/{len(pano.rgb)} input frames ({took:.1f} s)",
                  flush=True)
    if not kept:
        raise RuntimeError("every sequence missed its camera schedule; nothing to evaluate")
    manifest = {"sequences": kept, "dropped": dropped, "source": source,
                "invisible": list(invisible), "camera": asdict(params)}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def load_sequences(directory) -> tuple[list[dict], Path]:
    """The kept sequences' sequence.json contents, in manifest order, and the directory."""
    directory = Path(directory)
    manifest = json.loads((directory / "manifest.json").read_text())
    return ([json.loads((directory / s["id"] / "sequence.json").read_text())
             for s in manifest["sequences"]], directory)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--source", default="embedded",
                        help="'embedded' or a directory of 360-degree videos (see user_panorama)")
    parser.add_argument("--per-kind", type=int, default=2, help="sequences per kind")
    parser.add_argument("--n-frames", type=int, default=48)
    parser.add_argument("--pano-width", type=int, default=256, help="panorama width (height = /2)")
    parser.add_argument("--invisible", type=int, nargs=2, default=(16, 32), metavar=("START", "END"),
                        help="frames [START, END) in which the input camera must not see the target")
    parser.add_argument("--camera", default="{}",
                        help="camera_paths.PathParams keyword arguments (JSON), e.g. fov_deg")
    args = parser.parse_args(argv)
    params = PathParams(**json.loads(args.camera))
    prepare(args.out, args.per_kind, args.n_frames, args.pano_width, tuple(args.invisible), params,
            args.source)


if __name__ == "__main__":
    main()
