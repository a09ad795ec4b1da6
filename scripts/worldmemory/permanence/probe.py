"""The belief probe (Section 3.2, Appendix I of *Tracking Is Not Permanence*) over rendered scenes.

For each scene, motion (moving / stationary) and condition, the frozen encoder sees the visible
context, the frozen predictor infers the hidden band, and every readout slot (0 to 3.47 s since
the ball was last visible) is compared with the encoder's full-world references in the readout
region (box of R + 8 px around the expected position). Conditions per motion:

* ``{motion}``: the present world with the band hidden from the event on (main mask);
* ``{motion}_never_rendered``: no ball drawn, main mask (geometry-matched control, Appendix I);
* ``{motion}_never_visible``: the band hidden in every frame (Section 3.3);
* ``{motion}_copy_last_view``: the encoder's tokens of the last visible slot (Appendix I (c)).

Every condition is read against the main condition's references z_present and z_absent ("every
control is read on the same axis"). For the moving ball, the nearest of the moving, static and
gone worlds over the slot's whole hidden band is recorded too (three-world readout, Section 3.3).

Encodings are cached by content: the key is the exact model input of the visible tokens, so a
context shared by several conditions (the never-visible context of the moving and the stationary
ball, the never-rendered context of both) is encoded once. A backend that reads hidden pixels
(``reads_hidden``: the privileged calibration predictors, permanence.calibration) is keyed on the
whole clip instead.

Calibration predictors (``source: calibration`` specs, permanence.calibration) run through the
same Prober; :func:`main` builds them with calibration.probe_backend.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from worldmemory.common.provenance import write_job_info
from worldmemory.common.video import read_video
from worldmemory.models.device import torch_device
from worldmemory.models.masked_predictor import MaskedLatentPredictor
from worldmemory.models.vjepa2 import copy_last_view, describe, deterministic, weights_digest
from worldmemory.permanence.calibration import probe_backend
from worldmemory.permanence.masks import ProbeGeometry, TokenGrid, seconds_since_visible, slot_ball_x
from worldmemory.permanence.readouts import nearest_world, scene_row

MOTIONS = ("moving", "stationary")
THREE_WORLDS = {"moving": "present", "static": "static", "gone": "absent"}


class EncodingCache:
    """Content-addressed store of encoder and predictor outputs, keyed by the exact model input."""

    def __init__(self):
        self.store: dict[str, torch.Tensor] = {}
        self.requests = 0
        self.computed = 0

    def clear(self):
        self.store.clear()

    def get_many(self, keys: list[str], compute):
        """Return one tensor per key, calling ``compute(missing_positions)`` once for the misses."""
        self.requests += len(keys)
        first: dict[str, int] = {}
        for i, k in enumerate(keys):
            first.setdefault(k, i)
        missing = [i for k, i in first.items() if k not in self.store]
        if missing:
            out = compute(missing)
            for j, i in enumerate(missing):
                self.store[keys[i]] = out[j]
            self.computed += len(missing)
        return torch.stack([self.store[k] for k in keys])


def _digest(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else np.ascontiguousarray(p).tobytes())
    return h.hexdigest()


def _positions(target: np.ndarray, tokens: np.ndarray, what: str) -> np.ndarray:
    """Rows of the sorted ``target`` holding ``tokens``; ValueError if one is not predicted."""
    at = np.searchsorted(target, tokens)
    if (at >= len(target)).any() or (target[np.minimum(at, len(target) - 1)] != tokens).any():
        missing = np.setdiff1d(tokens, target)
        raise ValueError(f"{what} has tokens outside the predicted target set: {missing[:8].tolist()}")
    return at


class Prober:
    """Runs one model over the scenes of a manifest and returns the per-scene, per-slot readouts."""

    def __init__(self, backend: MaskedLatentPredictor, model_name: str, manifest: dict, scenes_dir: Path,
                 margin: int = 8):
        self.backend = backend
        self.model_key = weights_digest(backend.model)
        self.name = model_name
        self.manifest = manifest
        self.dir = scenes_dir
        self.margin = margin
        tub = backend.tubelet_size
        self.grid = TokenGrid(backend.crop_size, backend.patch_size, tub, manifest["window_frames"], manifest["size"])
        self.event_slot = (manifest["event_frame"] - manifest["window_start"]) // tub
        self.fps = manifest["fps"]
        self.encodings = EncodingCache()
        self.predictions = EncodingCache()

    # -- encoder / predictor through the cache ---------------------------------------------------
    def _token_pixels(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, 3, H, W) -> (B, N, patch values), the exact input of each token."""
        b, t, c, h, w = x.shape
        p, tub = self.backend.patch_size, self.backend.tubelet_size
        x = x.reshape(b, t // tub, tub, c, h // p, p, w // p, p).permute(0, 1, 4, 6, 2, 3, 5, 7)
        return x.reshape(b, -1, tub * c * p * p)

    def encode(self, x: torch.Tensor, visible: np.ndarray | None) -> tuple[torch.Tensor, list[str]]:
        tokens = self._token_pixels(x)
        if visible is not None and not getattr(self.backend, "reads_hidden", False):
            tokens = tokens[:, torch.as_tensor(visible)]
        vis_bytes = b"all" if visible is None else np.asarray(visible, np.int64).tobytes()
        keys = [_digest(self.model_key.encode(), vis_bytes, t.cpu().numpy()) for t in tokens]
        out = self.encodings.get_many(keys, lambda idx: self.backend.encode(x[idx], visible))
        return out, keys

    def predict(self, ctx: torch.Tensor, ctx_keys: list[str], visible, target) -> torch.Tensor:
        tgt = np.asarray(target, np.int64).tobytes()
        keys = [_digest(b"pred", k.encode(), tgt) for k in ctx_keys]
        return self.predictions.get_many(keys, lambda idx: self.backend.predict(ctx[idx], visible, target))

    # -- one batch of scenes of one radius ------------------------------------------------------
    def _load(self, scenes: list[dict], world: str) -> torch.Tensor:
        clips = np.stack([read_video(self.dir / s["worlds"][world]) for s in scenes])
        return self.backend.preprocess(clips)

    def probe_batch(self, by_motion: dict[str, list[dict]], radius: int) -> list[dict]:
        geom = ProbeGeometry(self.grid, radius, self.event_slot, self.margin)
        main_hidden, never_visible_hidden = geom.hidden(self.event_slot), geom.hidden(0)
        main_visible, never_visible_visible = geom.visible(main_hidden), geom.visible(never_visible_hidden)
        rows = []
        for motion, scenes in by_motion.items():
            clips = {w: self._load(scenes, w) for w in scenes[0]["worlds"]}
            refs = {w: self.encode(clips[w], None)[0] for w in ("present", "absent", "static") if w in clips}
            ctx, keys = self.encode(clips["present"], main_visible)
            nv_ctx, nv_keys = self.encode(clips["present"], never_visible_visible)
            nr_ctx, nr_keys = self.encode(clips["never_rendered"], main_visible)
            preds = {
                motion: (self.predict(ctx, keys, main_visible, main_hidden), main_hidden),
                f"{motion}_never_rendered": (self.predict(nr_ctx, nr_keys, main_visible, main_hidden), main_hidden),
                f"{motion}_never_visible": (
                    self.predict(nv_ctx, nv_keys, never_visible_visible, never_visible_hidden),
                    never_visible_hidden,
                ),
                f"{motion}_copy_last_view": (
                    copy_last_view(ctx, main_visible, main_hidden, self.grid.side**2),
                    main_hidden,
                ),
            }
            rows += self._readouts(motion, scenes, geom, refs, preds)
        return rows

    def _readouts(self, motion, scenes, geom, refs, preds) -> list[dict]:
        rows = []
        refs = {w: r.cpu().numpy() for w, r in refs.items()}
        for condition, (pred, target) in preds.items():
            pred = pred.cpu().numpy()
            for b, scene in enumerate(scenes):
                xs = slot_ball_x(scene["ball_x"], self.grid.tubelet_size)
                for slot in geom.readout_slots():
                    region = geom.region(slot, xs[slot])
                    at = _positions(target, region, f"{condition}: the readout region of slot {slot}")
                    p, zp, za = pred[b, at], refs["present"][b, region], refs["absent"][b, region]
                    row = {
                        "model": self.name,
                        "condition": condition,
                        "scene_id": scene["id"],
                        "radius": scene["radius"],
                        "n_distractors": scene["n_distractors"],
                        "seed": scene["seed"],
                        "slot": slot - self.event_slot,
                        "t_s": round(seconds_since_visible(slot, self.event_slot, self.grid.tubelet_size, self.fps), 6),
                        **scene_row(p, zp, za),
                        "nearest_band": "",
                    }
                    if "static" in refs:
                        band = geom.band(slot)
                        at_band = _positions(target, band, f"{condition}: the hidden band of slot {slot}")
                        worlds = {name: refs[w][b, band] for name, w in THREE_WORLDS.items()}
                        row["nearest_band"] = nearest_world(pred[b, at_band], worlds)
                    rows.append(row)
        return rows

    def run(self, batch_size: int, log=print) -> pd.DataFrame:
        scenes = self.manifest["scenes"]
        radii = sorted({s["radius"] for s in scenes})
        ids = {r: sorted({s["id"] for s in scenes if s["radius"] == r}) for r in radii}
        lookup = {(s["motion"], s["id"]): s for s in scenes}
        rows, start = [], time.time()
        total = sum(len(v) for v in ids.values())
        done = 0
        for r in radii:
            for i in range(0, len(ids[r]), batch_size):
                chunk = ids[r][i : i + batch_size]
                by_motion = {m: [lookup[(m, sid)] for sid in chunk] for m in MOTIONS if (m, chunk[0]) in lookup}
                with torch.inference_mode():
                    rows += self.probe_batch(by_motion, r)
                self.encodings.clear()  # shared contexts never cross a batch: keep memory flat
                self.predictions.clear()
                done += len(chunk)
                log(f"[probe {self.name}] {done}/{total} scenes (radius {r}), {time.time() - start:.1f}s")
        df = pd.DataFrame(rows)
        return df.sort_values(["condition", "scene_id", "slot"], kind="stable").reset_index(drop=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenes", required=True, type=Path, help="directory written by permanence.render")
    ap.add_argument("--model-name", required=True)
    ap.add_argument("--spec", required=True,
                    help="model spec (JSON) from the config; a calibration spec carries its encoder's as encoder_spec")
    ap.add_argument("--weights", default=None,
                    help="directory of a saved VJEPA2Model (trained or prefetched; a calibration model's encoder's)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--margin", type=int, default=8)
    ap.add_argument("--out", required=True, type=Path, help="per-scene readouts (CSV)")
    ap.add_argument("--out-info", required=True, type=Path, help="model identity and cache statistics (JSON)")
    args = ap.parse_args(argv)
    torch_device(args.device)  # a missing GPU fails here, before any work

    torch.set_num_threads(args.threads)
    deterministic(args.device)
    spec = json.loads(args.spec)
    manifest = json.loads((args.scenes / "manifest.json").read_text())
    backend = probe_backend(spec, args.weights, args.device)
    prober = Prober(backend, args.model_name, manifest, args.scenes, args.margin)
    df = prober.run(args.batch_size)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out, index=False, float_format="%.8g")
    identity = describe(backend.model, spec, prober.model_key)  # a calibration predictor: its encoder's
    if hasattr(backend, "describe"):
        identity["calibration"] = backend.describe()
    info = {  # the job's sidecar, with the packages of its environment (common.provenance)
        "model": args.model_name,
        "identity": identity,
        "device": args.device,
        "scenes": len({s["id"] for s in manifest["scenes"]}),
        "encoder_requests": prober.encodings.requests,
        "encoder_passes": prober.encodings.computed,
        "encoder_passes_saved": prober.encodings.requests - prober.encodings.computed,
        "predictor_passes_saved": prober.predictions.requests - prober.predictions.computed,
    }
    write_job_info(args.out_info, **info)
    print(f"[probe {args.model_name}] {len(df)} readouts; the cache saved {info['encoder_passes_saved']} of "
          f"{info['encoder_requests']} encoder passes", file=sys.stderr)


if __name__ == "__main__":
    main()
