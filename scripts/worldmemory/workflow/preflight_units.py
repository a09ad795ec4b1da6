"""One unit of a GPU job kind, timed in a process of its own: what ``./run.sh preflight`` runs.

    python -m worldmemory.workflow.preflight_units '<unit as JSON>'

prints one JSON line: the unit, the weights it ran with (``real``: the configured directory;
``random``: the same architecture at its real size with random weights, because the weights are
not on this machine yet), its wall and CPU seconds (the last of ``repeats`` runs, so a GPU's
first-call kernel selection is left out), the process's peak resident memory and, on a GPU, torch's peak
allocated memory. A process per unit keeps each peak the unit's own.

Kinds:

* ``probe``: one batch of probe clips (permanence.probe's unit of work): a 32-frame window at
  256 px squash-resized to the model's input, the lower quarter of every tubelet from the fourth
  on hidden; the encoder reads the visible tokens, the predictor infers the hidden ones.
* ``cosmos``: one batch of Cosmos-Predict1 readout clips (permanence.cosmos_readout): a 33-frame
  256 px clip tokenised, then the batch's token clips scored teacher-forced; without the weights,
  the released 4B transformer at its real size with random weights and the scripted tokenizer
  (models.cosmos_tokenizer), so the tokenizer's own cost is then not in the figure.
* ``estimator``: one learned estimator (worldmemory.perception) over ``frames`` random frames of
  the study's video size, through its backend's own call (a tracker from a box in frame 0).
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

SCENE_SIDE = 256  # the probe's scenes (Appendix B), squash-resized to each model's input
SCENE_WINDOW = 32  # frames of the probe window (permanence.render)


def probe_unit(unit: dict) -> dict:
    """Time one batch of probe clips of ``unit['spec']`` (weights ``unit['weights']``; None: a
    random stand-in of its released or configured architecture)."""
    import torch

    from worldmemory.models.released import random_stand_in
    from worldmemory.permanence.calibration import probe_backend
    from worldmemory.permanence.probe import model_window

    spec, weights = unit["spec"], unit.get("weights")
    encoder_spec = spec.get("encoder_spec", spec)
    if weights is None and encoder_spec.get("source") != "random":
        stand_in = random_stand_in(encoder_spec) or (
            {**encoder_spec, "source": "random"} if "config" in encoder_spec else None)
        if stand_in is None:
            return {"skipped": f"weights not here and architecture of {encoder_spec.get('id')!r} not listed "
                               "(worldmemory.models.released): fetch the weights first"}
        spec = {**spec, "encoder_spec": stand_in} if "encoder_spec" in spec else stand_in
    backend = probe_backend(spec, weights, unit["device"])
    frames = model_window(backend, SCENE_WINDOW)
    slots, side = frames // backend.tubelet_size, backend.crop_size // backend.patch_size
    grid = np.arange(slots * side * side).reshape(slots, side, side)
    hidden = np.zeros(grid.shape, bool)
    hidden[3:, 3 * side // 4:] = True
    visible, target = grid[~hidden], grid[hidden]
    clips = np.random.default_rng(0).integers(0, 256, (unit["batch"], frames, SCENE_SIDE, SCENE_SIDE, 3), np.uint8)

    def run():
        with torch.no_grad():
            x = backend.preprocess(clips)
            backend.predict(backend.encode(x, visible), visible, target)

    return {"weights": "real" if weights else "random", "clips": unit["batch"], "frames": frames,
            "input": f"{frames}x{backend.crop_size}x{backend.crop_size}",
            "params_m": round(sum(p.numel() for p in backend.model.parameters()) / 1e6, 1),
            **timed(run, unit["device"], unit.get("repeats", 1))}


def cosmos_unit(unit: dict) -> dict:
    """Time one batch of Cosmos readout clips of ``unit['spec']`` (permanence.cosmos): its model
    and tokenizer (``unit['weights']``, ``unit['tokenizer']``) where here, else a random stand-in."""
    import torch

    from worldmemory.permanence.cosmos_readout import load
    from worldmemory.permanence.cosmos_scenes import CLIP_FRAMES, SIZE

    spec, real = unit["spec"], unit.get("weights") is not None
    if not real and spec["source"] != "random":
        spec = {**spec, "source": "random", "config": "released", "seed": 0}
    clip = np.random.default_rng(0).integers(0, 256, (CLIP_FRAMES, SIZE, SIZE, 3), np.uint8)
    with tempfile.TemporaryDirectory(prefix="worldmemory-preflight-") as scratch:
        encode, loglik, _ = load(spec, unit.get("weights"), unit.get("tokenizer"), unit["device"], scratch)

        def run():
            with torch.no_grad():
                tokens = encode(clip)
                loglik(tokens.unsqueeze(0).expand(unit["batch"], *tokens.shape))

        return {"weights": "real" if real else "random", "clips": unit["batch"], "frames": CLIP_FRAMES,
                "input": f"{CLIP_FRAMES}x{SIZE}x{SIZE}", **timed(run, unit["device"], unit.get("repeats", 1))}


def estimator_unit(unit: dict) -> dict:
    """Time one estimator over ``unit['frames']`` random frames of ``unit['height']`` x
    ``unit['width']``: its configured weights where ``unit['weights']`` is set, else the
    architecture at perception.throughput's sizes (``unit['sizes']``: real or tiny) with random
    weights."""
    from worldmemory.perception import registry, throughput

    frames = np.random.default_rng(0).integers(0, 256, (unit["frames"], unit["height"], unit["width"], 3), np.uint8)
    name = f"{unit['capability']}/{unit['backend']}"
    with tempfile.TemporaryDirectory(prefix="worldmemory-preflight-") as tmp:
        if unit.get("weights"):
            backend = registry.create(unit["capability"], unit["backend"], **unit["options"])
            run = call(unit["capability"], backend)
        elif name in throughput.ESTIMATORS:
            sizes = throughput.REAL if unit.get("sizes", "real") == "real" else throughput.TINY
            backend, run = throughput.ESTIMATORS[name](sizes, Path(tmp), unit["device"])
        else:
            return {"skipped": "weights not here and no random stand-in of this backend "
                               "(perception.throughput.ESTIMATORS): fetch or place its weights first"}
        return {"weights": "real" if unit.get("weights") else "random", "frames": unit["frames"],
                "input": f"{unit['frames']}x{unit['height']}x{unit['width']}",
                **timed(lambda: run(frames), unit["device"], unit.get("repeats", 1))}


TIMED_CAPABILITIES = ("features", "tracking", "depth", "imaging_quality", "aesthetic_quality")  # call's


def call(capability: str, backend):
    """The backend's own call on a clip (T, H, W, 3), per capability (perception.base's protocols)."""
    if capability == "features":
        return backend.patch_grid
    if capability == "tracking":
        def track(frames):
            first = np.zeros(frames.shape[1:3], bool)
            first[frames.shape[1] // 3:frames.shape[1] // 2, frames.shape[2] // 3:frames.shape[2] // 2] = True
            return backend.track(frames, first)
        return track
    if capability == "depth":
        return backend.estimate
    return backend.score  # imaging and aesthetic quality


def timed(run, device: str, repeats: int) -> dict:
    """``run()`` ``repeats`` times: the last run's wall and CPU seconds, the process's peak RSS (MB) and,
    on a GPU, torch's peak allocated memory (MB) over the timed run."""
    import torch

    cuda = device.startswith("cuda")
    for _ in range(repeats):
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        start, cpu = time.perf_counter(), time.process_time()
        run()
        if cuda:
            torch.cuda.synchronize()
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            "peak_gpu_mb": round(torch.cuda.max_memory_allocated() / 2**20) if cuda else None}


def main(argv=None) -> None:
    unit = json.loads((argv or sys.argv[1:])[0])
    from worldmemory.models.device import start_torch_job

    start_torch_job(unit["device"], unit.get("threads", 1))
    result = {"probe": probe_unit, "cosmos": cosmos_unit, "estimator": estimator_unit}[unit["kind"]](unit)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
