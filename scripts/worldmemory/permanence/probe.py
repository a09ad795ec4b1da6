"""The belief probe (Section 3.2, Appendix I of *Tracking Is Not Permanence*) over rendered scenes.

For each scene, motion (moving / stationary) and condition, the frozen encoder sees the visible
context, the frozen predictor infers the hidden band, and every readout slot (0 to 3.47 s since
the ball was last visible) is compared with the encoder's full-world references in the readout
region (box of R + 8 px around the expected position). Conditions per motion:

* ``{motion}``: the present world with the band hidden from the event on (main mask);
* ``{motion}_never_rendered``: no ball drawn, main mask (geometry-matched control, Appendix I);
* ``{motion}_never_visible``: the band hidden in every frame (Section 3.3);
* ``{motion}_copy_last_view``: the encoder's tokens of the last visible slot (Appendix I (c)).

* ``moving_exit``: a ball on the same row leaves the frame when the mask starts, main mask (the
  exit control of Section 3.3 / Appendix I; no stationary version exists).

The *reveal at the end* query (Section 3.3, Figure 3; ``query="reveal"``) hides the band from the
event up to the last four frames, which stay visible and show either world:

* ``{motion}_reveal_present`` / ``{motion}_reveal_absent``: the present / absent world's clip with
  the band visible in its last four frames; read in the gap only (0 to 2.93 s).

The *pretraining-consistent* query (Appendix I; ``query="tube"``) reads the tube query's scenes
(render.approach_timing: the moving ball visible for 1.1 or 2.1 s before it enters): the block
ahead of the ball is hidden in every frame, and the decision is read from the entry on:

* ``moving``: the present world under the tube; ``moving_never_rendered``: no ball, same tube.

``query="tube_sparse"`` hides, besides, a random 90% of the remaining context per scene (the
approach band excepted; the same tokens in both conditions of a scene), pretraining's ratio.

The *visible container* query (Section 3.3, Table 6; ``query="container"``) reads the container
scenes (permanence.containers: an opaque box closes over the ball at the event, moves with it or
stays, and opens after 0.53-2.93 s). The box's closed footprint (and the readout region) is hidden
from the opening slot on, and the decision is read at the opening slot; t_s is the time hidden:

* ``container_{motion}``: the ball was in the box; ``container_{motion}_never_shown``: the box
  never held a ball; ``container_{motion}_exit``: a ball left the frame when the box closed;
  ``container_{motion}_copy_last_view``: the closed box's tokens (Appendix I).

Every condition is read against the main condition's references z_present and z_absent ("every
control is read on the same axis"). For the moving ball, the nearest of the moving, static and
gone worlds over the slot's whole hidden band is recorded too (three-world readout, Section 3.3).
The region means of every prediction and of both references are kept (``features``) for the
linear readouts of Appendix I (permanence.linear_readouts).

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
from worldmemory.common.seeds import stable_rng
from worldmemory.common.video import read_video
from worldmemory.models.device import add_torch_arguments, start_torch_job
from worldmemory.models.masked_predictor import MaskedLatentPredictor
from worldmemory.models.vjepa2 import copy_last_view, weights_digest
from worldmemory.permanence.calibration import probe_backend, probe_identity
from worldmemory.permanence.containers import box_cols, box_rows
from worldmemory.permanence.masks import READOUT_MARGIN, ProbeGeometry, TokenGrid, seconds_since_visible, slot_ball_x
from worldmemory.permanence.readouts import nearest_world, scene_row

MOTIONS = ("moving", "stationary")
QUERIES = ("main", "reveal", "tube", "tube_sparse", "container")
REVEAL_FRAMES = 4  # "the band stays visible for the last four frames" (Section 3.3)
SPARSE_HIDDEN = 0.9  # "hiding 90% of the context outside the ball's approach as well" (Appendix I)
SPARSE_NAMESPACE = "worldmemory.permanence.tube_sparse.v1"
# The worlds a query reads where it does not read every world of its scenes (no static world: no
# three-world readout there).
TUBE_WORLDS = ("present", "absent", "never_rendered")
QUERY_WORLDS = {"reveal": ("present", "absent"), "tube": TUBE_WORLDS, "tube_sparse": TUBE_WORLDS}
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


def model_window(backend: MaskedLatentPredictor, scene_frames: int) -> int:
    """Frames of the scenes' window the model reads: all of them, or the first ``window_frames`` of a
    model with a fixed clip length (VideoMAE's 16 frames, Appendix E: its readout slots are the first
    six tubelets after the event)."""
    frames = getattr(backend, "window_frames", scene_frames)
    if frames > scene_frames:
        raise ValueError(f"the model takes {frames}-frame clips but the scenes' window holds {scene_frames} frames: "
                         "render longer windows or use a model of at most that many frames")
    return frames


class Prober:
    """Runs one model over the scenes of a manifest and returns the per-scene, per-slot readouts."""

    def __init__(self, backend: MaskedLatentPredictor, model_name: str, manifest: dict, scenes_dir: Path,
                 margin: int = READOUT_MARGIN, query: str = "main"):
        if query not in QUERIES:
            raise ValueError(f"unknown query {query!r}; expected one of {QUERIES}")
        self.query = query
        self.backend = backend
        self.model_key = weights_digest(backend.model)
        self.name = model_name
        self.manifest = manifest
        self.dir = scenes_dir
        self.margin = margin
        tub = backend.tubelet_size
        self.frames = model_window(backend, manifest["window_frames"])
        self.grid = TokenGrid(backend.crop_size, backend.patch_size, tub, self.frames, manifest["size"])
        self.event_slot = (manifest["event_frame"] - manifest["window_start"]) // tub
        self.fps = manifest["fps"]
        self.encodings = EncodingCache()
        self.predictions = EncodingCache()
        self.features: list[dict] = []  # region means per readout (Appendix I linear readouts)
        self.references: dict[tuple, tuple] = {}  # (motion, scene, slot, t_s) -> (z_present, z_absent) means

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
        clips = np.stack([read_video(self.dir / s["worlds"][world])[: self.frames] for s in scenes])
        return self.backend.preprocess(clips)

    def probe_batch(self, by_motion: dict[str, list[dict]], radius: int) -> list[dict]:
        geom = ProbeGeometry(self.grid, radius, self.event_slot, self.margin)
        conditions = {"main": self._main_conditions, "reveal": self._reveal_conditions,
                      "container": self._container_conditions}.get(self.query, self._tube_conditions)
        rows = []
        for scenes in by_motion.values():
            motion = scenes[0]["motion"]
            worlds = QUERY_WORLDS.get(self.query, scenes[0]["worlds"])
            clips = {w: self._load(scenes, w) for w in worlds}
            refs = {w: self.encode(clips[w], None)[0] for w in ("present", "absent", "static") if w in clips}
            rows += self._readouts(motion, scenes, geom, refs, conditions(motion, clips, geom, scenes))
        return rows

    def _main_conditions(self, motion: str, clips: dict, geom: ProbeGeometry, scenes=None) -> dict:
        """condition -> (prediction, its target tokens, readout slots) of the main query and its controls."""
        main_hidden, never_visible_hidden = geom.hidden(self.event_slot), geom.hidden(0)
        main_visible, never_visible_visible = geom.visible(main_hidden), geom.visible(never_visible_hidden)
        slots = geom.readout_slots()
        ctx, keys = self.encode(clips["present"], main_visible)
        nv_ctx, nv_keys = self.encode(clips["present"], never_visible_visible)
        nr_ctx, nr_keys = self.encode(clips["never_rendered"], main_visible)
        conditions = {
            motion: (self.predict(ctx, keys, main_visible, main_hidden), main_hidden, slots),
            f"{motion}_never_rendered": (self.predict(nr_ctx, nr_keys, main_visible, main_hidden), main_hidden, slots),
            f"{motion}_never_visible": (
                self.predict(nv_ctx, nv_keys, never_visible_visible, never_visible_hidden),
                never_visible_hidden,
                slots,
            ),
            f"{motion}_copy_last_view": (
                copy_last_view(ctx, main_visible, main_hidden, self.grid.side**2),
                main_hidden,
                slots,
            ),
        }
        if "exit" in clips:
            ex_ctx, ex_keys = self.encode(clips["exit"], main_visible)
            exit_pred = self.predict(ex_ctx, ex_keys, main_visible, main_hidden)
            conditions[f"{motion}_exit"] = (exit_pred, main_hidden, slots)
        return conditions

    def _entry_x(self, scene: dict) -> float:
        """The ball's centre when it enters the tube query's block (the scenes' event frame)."""
        if self.manifest.get("approach_frames") is None:
            raise ValueError(f"the {self.query} query reads the tube query's scenes (render --approach-frames); "
                             f"{self.dir} holds another query's")
        return scene["ball_x"][self.manifest["event_frame"] - self.manifest["window_start"]]

    def _tube_conditions(self, motion: str, clips: dict, geom: ProbeGeometry, scenes: list[dict]) -> dict:
        """The pretraining-consistent query: the block ahead of the ball hidden in every frame."""
        block = geom.block(self._entry_x(scenes[0]))  # one speed: every scene enters at the same x
        slots = geom.readout_slots()
        conditions = {}
        for name, world in ((motion, "present"), (f"{motion}_never_rendered", "never_rendered")):
            if self.query == "tube":
                visible = geom.visible(block)
                ctx, keys = self.encode(clips[world], visible)
                pred = self.predict(ctx, keys, visible, block)
            else:  # one random context per scene: one model call per scene
                preds = []
                for b, scene in enumerate(scenes):
                    visible = self.sparse_visible(geom, block, scene)
                    ctx, keys = self.encode(clips[world][b : b + 1], visible)
                    preds.append(self.predict(ctx, keys, visible, block))
                pred = torch.cat(preds)
            conditions[name] = (pred, block, slots)
        return conditions

    def sparse_visible(self, geom: ProbeGeometry, block: np.ndarray, scene: dict) -> np.ndarray:
        """The 90%-ratio context of one scene: the approach band plus 10% of the other tokens
        outside the block, drawn from the scene's id (the same in both conditions)."""
        approach = geom.approach(self._entry_x(scene))
        rest = np.setdiff1d(geom.visible(block), approach)
        rng = stable_rng(scene["id"], f"{SPARSE_NAMESPACE}/r{geom.radius}")
        kept = rng.choice(rest, size=round(len(rest) * (1 - SPARSE_HIDDEN)), replace=False)
        return np.union1d(approach, kept)

    def _container_conditions(self, motion: str, clips: dict, geom: ProbeGeometry, scenes: list[dict]) -> dict:
        """The visible container: the box's closed footprint hidden from the opening slot on."""
        if self.manifest.get("query") != "container":
            raise ValueError(f"the container query reads the container scenes (permanence.containers); "
                             f"{self.dir} holds another query's")
        scene, tub = scenes[0], self.grid.tubelet_size  # one speed: every scene's box is at the same x
        open_at = scene["open_frame"] - self.manifest["window_start"]
        open_slot = open_at // tub
        (top, bottom), (left, right) = box_rows(scene["radius"], closed=True), box_cols(scene["open_frame"], motion)
        rows, cols = self.grid.cells_in_box(left, right - 1, top, bottom - 1)  # half-open pixel ranges
        footprint = self.grid.tokens(range(open_slot, self.grid.slots), rows, cols)
        region = geom.region(open_slot, slot_ball_x(scene["ball_x"], tub)[open_slot])
        hidden = np.union1d(footprint, region)
        visible = geom.visible(hidden)
        name = f"container_{motion}"
        conditions = {}
        for condition, world in ((name, "present"), (f"{name}_never_shown", "never_shown"), (f"{name}_exit", "exit")):
            ctx, keys = self.encode(clips[world], visible)
            conditions[condition] = (self.predict(ctx, keys, visible, hidden), hidden, [open_slot])
            if world == "present":
                copy = copy_last_view(ctx, visible, hidden, self.grid.side**2)
                conditions[f"{name}_copy_last_view"] = (copy, hidden, [open_slot])
        return conditions

    def _reveal_conditions(self, motion: str, clips: dict, geom: ProbeGeometry, scenes=None) -> dict:
        """Reveal at the end: the band hidden from the event until the last four frames, which show either world."""
        last_hidden = self.grid.slots - REVEAL_FRAMES // self.grid.tubelet_size
        hidden = geom.hidden(self.event_slot, last_hidden)
        visible = geom.visible(hidden)
        conditions = {}
        for world in ("present", "absent"):
            ctx, keys = self.encode(clips[world], visible)
            conditions[f"{motion}_reveal_{world}"] = (
                self.predict(ctx, keys, visible, hidden), hidden, range(self.event_slot, last_hidden))
        return conditions

    def _readouts(self, motion, scenes, geom, refs, preds) -> list[dict]:
        rows = []
        refs = {w: r.cpu().numpy() for w, r in refs.items()}
        for condition, (pred, target, slots) in preds.items():
            pred = pred.cpu().numpy()
            for b, scene in enumerate(scenes):
                xs = slot_ball_x(scene["ball_x"], self.grid.tubelet_size)
                for slot in slots:
                    region = geom.region(slot, xs[slot])
                    at = _positions(target, region, f"{condition}: the readout region of slot {slot}")
                    p, zp, za = pred[b, at], refs["present"][b, region], refs["absent"][b, region]
                    t_s = round(seconds_since_visible(slot, self.event_slot, self.grid.tubelet_size, self.fps), 6)
                    if "hidden_frames" in scene:  # a container: the time hidden before it opens
                        t_s = round(scene["hidden_frames"] / self.fps, 6)
                    key = (motion, scene["id"], slot - self.event_slot, t_s)
                    self.references[key] = (zp.mean(axis=0), za.mean(axis=0))
                    self.features.append({"condition": condition, "key": key, "pred": p.mean(axis=0)})
                    row = {
                        "model": self.name,
                        "condition": condition,
                        "scene_id": scene["id"],
                        "radius": scene["radius"],
                        "n_distractors": scene["n_distractors"],
                        "seed": scene["seed"],
                        "slot": slot - self.event_slot,
                        "t_s": t_s,
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

    def feature_arrays(self) -> dict[str, np.ndarray]:
        """The region means of every readout and reference, as the arrays of permanence.linear_readouts.

        pred (N, D) per (condition, motion, scene_id, slot, t_s); z_present and z_absent (M, D) per
        (ref_motion, ref_scene_id, ref_slot, ref_t_s); rows sorted like the per-scene table.
        """
        feats = sorted(self.features, key=lambda f: (f["condition"], f["key"][1], f["key"][2]))
        refs = sorted(self.references)
        keys = [f["key"] for f in feats]
        return {
            "condition": np.array([f["condition"] for f in feats], dtype=str),
            "motion": np.array([k[0] for k in keys], dtype=str),
            "scene_id": np.array([k[1] for k in keys], dtype=str),
            "slot": np.array([k[2] for k in keys], dtype=np.int64),
            "t_s": np.array([k[3] for k in keys], dtype=np.float64),
            "pred": np.stack([f["pred"] for f in feats]).astype(np.float32),
            "ref_motion": np.array([k[0] for k in refs], dtype=str),
            "ref_scene_id": np.array([k[1] for k in refs], dtype=str),
            "ref_slot": np.array([k[2] for k in refs], dtype=np.int64),
            "ref_t_s": np.array([k[3] for k in refs], dtype=np.float64),
            "z_present": np.stack([self.references[k][0] for k in refs]).astype(np.float32),
            "z_absent": np.stack([self.references[k][1] for k in refs]).astype(np.float32),
        }

    def run(self, batch_size: int, log=print) -> pd.DataFrame:
        scenes = self.manifest["scenes"]
        radii = sorted({s["radius"] for s in scenes})
        ids = {r: sorted({s["id"] for s in scenes if s["radius"] == r}) for r in radii}
        # a variant is a motion, or a container's (motion, time hidden): one set of clips per scene
        variant = {id(s): (s["motion"], s.get("hidden_frames", 0)) for s in scenes}
        variants = sorted(set(variant.values()), key=lambda v: (MOTIONS.index(v[0]), v[1]))
        lookup = {(*variant[id(s)], s["id"]): s for s in scenes}
        rows, start = [], time.time()
        total = sum(len(v) for v in ids.values())
        done = 0
        for r in radii:
            for i in range(0, len(ids[r]), batch_size):
                chunk = ids[r][i : i + batch_size]
                by_motion = {v: [lookup[(*v, sid)] for sid in chunk] for v in variants if (*v, chunk[0]) in lookup}
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
    add_torch_arguments(ap)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--margin", type=int, default=READOUT_MARGIN)
    ap.add_argument("--out", required=True, type=Path, help="per-scene readouts (CSV)")
    ap.add_argument("--out-info", required=True, type=Path, help="model identity and cache statistics (JSON)")
    ap.add_argument("--query", default="main", choices=QUERIES,
                    help="main: the main mask and its controls (Table 3); reveal: reveal at the end (Figure 3)")
    ap.add_argument("--out-features", type=Path, default=None,
                    help="region means of predictions and references (npz) for the linear readouts")
    args = ap.parse_args(argv)
    start_torch_job(args.device, args.threads)
    spec = json.loads(args.spec)
    manifest = json.loads((args.scenes / "manifest.json").read_text())
    backend = probe_backend(spec, args.weights, args.device)
    prober = Prober(backend, args.model_name, manifest, args.scenes, args.margin, args.query)
    df = prober.run(args.batch_size)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out, index=False, float_format="%.8g")
    if args.out_features:
        np.savez(args.out_features, **prober.feature_arrays())
    identity = probe_identity(backend, spec, prober.model_key)
    info = {  # the job's sidecar, with the packages of its environment (common.provenance)
        "model": args.model_name,
        "query": args.query,
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
