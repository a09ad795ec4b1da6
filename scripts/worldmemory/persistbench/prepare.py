"""PersistBench data preparation (Method 1): 360-degree video -> seamless target track -> camera
pair -> perspective input and reference videos.

For each sequence of the embedded default (``world360`` scenes, ``--per-kind`` static and dynamic)
the panorama video is rendered, the target is tracked on the tiled canvas from its first-frame
mask (``tracking.SeamlessTracker``; the embedded base tracker follows the renderer's instance
map), the yaw/pitch paths of the input and reference cameras are planned for the schedule
(``camera_paths.plan_pair``: visible, then invisible on [start, end), then visible again if the
window ends before the clip) and both views are cropped from the panorama. A pair that misses its
schedule after optimisation is listed with its reasons under "dropped" in the manifest and
printed, never kept. OUT/<sequence>/ holds:

    sequence.json  id, kind, category, target instance, n_frames, fps, schedule, cameras (yaw and
                   pitch paths, fov, size), the scene (world360.Scene.to_dict)
    panorama.mkv   the 360-degree video; panorama.npz: its instance map (the omniscient truth)
    background.png the panorama without the target (what the forgetting model fades to)
    input.mkv, reference.mkv  the two perspective videos; views.npz: their instance maps
                   (input_instance, reference_instance) and visible_in_input (T,) bool

and OUT/manifest.json lists the kept sequences and the dropped ones (sorted, no timestamps).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
from PIL import Image

from worldmemory.common.video import write_video
from worldmemory.persistbench import world360
from worldmemory.persistbench.camera_paths import PathParams, Schedule, TargetTrack, plan_pair
from worldmemory.persistbench.equirect import perspective
from worldmemory.persistbench.tracking import LabelTracker, SeamlessTracker
from worldmemory.worldmembench.rollout import save_npz

FPS = 8.0  # frames per second of the written videos (the renderer has no clock)


def sequence_ids(per_kind: int) -> list[tuple[str, str]]:
    """(sequence id, kind) of the embedded default: static_000.., dynamic_000.."""
    return [(f"{kind}_{i:03d}", kind) for kind in world360.KINDS for i in range(per_kind)]


def crop_video(frames, yaw, pitch, params: PathParams, nearest: bool = False) -> np.ndarray:
    """A perspective video along a camera path, one crop per panorama frame."""
    return np.stack([perspective(frame, y, p, params.fov_deg, params.width, params.height,
                                 nearest=nearest) for frame, y, p in zip(frames, yaw, pitch)])


def prepare_sequence(sequence_id: str, kind: str, n_frames: int, pano_width: int,
                     schedule: Schedule, params: PathParams, out_dir: Path) -> dict:
    """Prepare one sequence under out_dir/<id>/; returns its manifest entry, or the reasons it
    was dropped ({"id", "dropped": [...]}) with nothing written."""
    scene = world360.generate_scene(sequence_id, kind, n_frames)
    pano = world360.render_video(scene, n_frames, pano_width, pano_width // 2)
    target = pano["instance"] == scene.target_instance
    tracked = SeamlessTracker(LabelTracker(pano["instance"])).run(pano["rgb"], target[0])
    pair = plan_pair(TargetTrack.from_masks(tracked.masks), schedule, params)
    if not pair.ok:
        return {"id": sequence_id, "kind": kind, "dropped": pair.report.get("reasons", [])}
    views = {
        "input": crop_video(pano["rgb"], pair.input_yaw, pair.input_pitch, params),
        "reference": crop_video(pano["rgb"], pair.reference_yaw, pair.reference_pitch, params),
        "input_instance": crop_video(pano["instance"], pair.input_yaw, pair.input_pitch, params,
                                     nearest=True),
        "reference_instance": crop_video(pano["instance"], pair.reference_yaw,
                                         pair.reference_pitch, params, nearest=True),
    }
    visible = (views["input_instance"] == scene.target_instance).any(axis=(1, 2))
    seq_dir = out_dir / sequence_id
    write_video(seq_dir / "panorama.mkv", pano["rgb"], FPS)
    save_npz(seq_dir / "panorama.npz", {"instance": pano["instance"]})
    Image.fromarray(world360.render_background(scene, pano_width, pano_width // 2)).save(
        seq_dir / "background.png")
    write_video(seq_dir / "input.mkv", views["input"], FPS)
    write_video(seq_dir / "reference.mkv", views["reference"], FPS)
    save_npz(seq_dir / "views.npz", {"input_instance": views["input_instance"],
                                     "reference_instance": views["reference_instance"],
                                     "visible_in_input": visible})
    meta = {"id": sequence_id, "kind": kind, "category": scene.category,
            "target_instance": scene.target_instance, "n_frames": n_frames, "fps": FPS,
            "schedule": asdict(schedule),
            "cameras": {**pair.to_json(), "fov_deg": params.fov_deg, "width": params.width,
                        "height": params.height},
            "seam_crossing": bool(scene.crosses_seam(n_frames)), "scene": scene.to_dict()}
    (seq_dir / "sequence.json").write_text(json.dumps(meta, sort_keys=True) + "\n")
    return {"id": sequence_id, "kind": kind, "category": scene.category,
            "visible_frames": int(visible.sum())}


def prepare(out_dir, per_kind: int, n_frames: int, pano_width: int, invisible: tuple[int, int],
            params: PathParams) -> dict:
    """Prepare every embedded sequence; write and return the manifest."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    schedule = Schedule(n_frames, *invisible)
    kept, dropped = [], []
    for sequence_id, kind in sequence_ids(per_kind):
        start = time.perf_counter()
        entry = prepare_sequence(sequence_id, kind, n_frames, pano_width, schedule, params,
                                 out_dir)
        took = time.perf_counter() - start
        if "dropped" in entry:
            dropped.append(entry)
            print(f"[prepare] {sequence_id}: DROPPED, schedule missed: "
                  f"{'; '.join(entry['dropped']) or 'see report'} ({took:.1f} s)", flush=True)
        else:
            kept.append(entry)
            print(f"[prepare] {sequence_id} ({entry['category']}): target visible in "
                  f"{entry['visible_frames']}/{n_frames} input frames ({took:.1f} s)", flush=True)
    if not kept:
        raise RuntimeError("every sequence missed its camera schedule; nothing to evaluate")
    manifest = {"sequences": kept, "dropped": dropped, "n_frames": n_frames,
                "schedule": asdict(schedule), "camera": asdict(params)}
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
    parser.add_argument("--per-kind", type=int, default=2, help="sequences per kind")
    parser.add_argument("--n-frames", type=int, default=48)
    parser.add_argument("--pano-width", type=int, default=256, help="panorama width (height = /2)")
    parser.add_argument("--invisible", type=int, nargs=2, default=(16, 32), metavar=("START", "END"),
                        help="frames [START, END) in which the input camera must not see the target")
    parser.add_argument("--camera", default="{}",
                        help="camera_paths.PathParams keyword arguments (JSON), e.g. fov_deg")
    args = parser.parse_args(argv)
    params = PathParams(**json.loads(args.camera))
    prepare(args.out, args.per_kind, args.n_frames, args.pano_width, tuple(args.invisible), params)


if __name__ == "__main__":
    main()
