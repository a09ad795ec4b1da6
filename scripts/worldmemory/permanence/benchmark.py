"""Throughput of the belief probe: scene-conditions per second and encoder passes saved by the cache.

Two models: the embedded default's architecture (the trained checkpoint when ``--embedded-weights``
is given, else the same config with random weights: the cost is the same) over ``--scenes`` scenes,
and a ViT-L-shaped random-init V-JEPA 2 (facebook/vjepa2-vitl-fpc64-256's architecture at 256 px)
over ``--vitl-scenes`` scenes. Each is timed ``--repeats`` times; the median is printed.

    python -m worldmemory.permanence.benchmark --scenes 12 --vitl-scenes 1 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from worldmemory.models.device import add_torch_arguments, start_torch_job
from worldmemory.models.vjepa2 import VJEPA2Backend, build_model, load_model
from worldmemory.permanence.probe import Prober
from worldmemory.permanence.readouts import CONDITIONS
from worldmemory.permanence.render import write_scenes

REPO = Path(__file__).resolve().parents[3]
VITL = dict(crop_size=256, patch_size=16, frames_per_clip=64, tubelet_size=2, hidden_size=1024,
            num_attention_heads=16, num_hidden_layers=24, pred_hidden_size=384,
            pred_num_attention_heads=12, pred_num_hidden_layers=12, num_pooler_layers=1)


def subset(manifest: dict, n_scenes: int) -> dict:
    """The first ``n_scenes`` scene ids (both motions), spread over the radii."""
    ids = sorted({s["id"] for s in manifest["scenes"]}, key=lambda i: (int(i.split("_")[2][1:]), i))[:n_scenes]
    return {**manifest, "scenes": [s for s in manifest["scenes"] if s["id"] in ids]}


def measure(backend, name, manifest, scenes_dir, batch_size, repeats) -> dict:
    times, prober = [], None
    for _ in range(repeats):
        prober = Prober(backend, name, manifest, scenes_dir)
        start = time.perf_counter()
        prober.run(batch_size, log=lambda *_: None)
        times.append(time.perf_counter() - start)
    n = len({s["id"] for s in manifest["scenes"]}) * len(CONDITIONS)
    median = statistics.median(times)
    return {
        "model": name, "scene_conditions": n, "seconds_median": round(median, 2),
        "seconds_min": round(min(times), 2), "seconds_max": round(max(times), 2),
        "scene_conditions_per_s": round(n / median, 3),
        "encoder_requests": prober.encodings.requests, "encoder_passes": prober.encodings.computed,
        "encoder_passes_saved": prober.encodings.requests - prober.encodings.computed,
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", type=int, default=12, help="scenes for the embedded model")
    ap.add_argument("--vitl-scenes", type=int, default=1, help="scenes for the ViT-L-shaped model (0: skip)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--embedded-weights", default=None, help="trained embedded model directory")
    add_torch_arguments(ap, threads=2)
    args = ap.parse_args(argv)
    start_torch_job(args.device, args.threads)

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())["permanence"]
    spec = config["models"]["vjepa2-tiny-scratch"]
    scenes = config["scenes"]
    with tempfile.TemporaryDirectory() as tmp:
        manifest = write_scenes(tmp, scenes["radii"], scenes["distractors"], 1)
        model = load_model(args.embedded_weights) if args.embedded_weights else build_model(spec["config"])
        results = [measure(VJEPA2Backend(model, args.device), "vjepa2-tiny-scratch", subset(manifest, args.scenes),
                           Path(tmp), config["batch_size"], args.repeats)]
        if args.vitl_scenes:
            vitl = VJEPA2Backend(build_model(VITL), args.device)
            results.append(measure(vitl, "vitl-shaped-random", subset(manifest, args.vitl_scenes), Path(tmp),
                                   config["batch_size"], args.repeats))
    for r in results:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
