"""IntPhys-2019 under a masked latent predictor: surprise, pairwise accuracy and the scene bootstrap.

*Tracking Is Not Permanence*, Section 3.5 (the fixed-context variant of Garrido et al. 2025: "7.5
fps, two context frames, a 14-frame horizon, the prediction error averaged over windows as
surprise (for predictors trained with the scale of (i), its negative log-likelihood), and pairwise
accuracy over the 360 possible/impossible pairs of the dev set"), Appendix I "Protocol" and Table 10
(three aggregation rules) and Appendix I "Resampling the 90 scenes" (the scene-level bootstrap).

Choices where the paper is silent, fixed here:

* Frames: a video's PNGs (sorted by name) are taken at ``i * source_fps / 7.5`` (rounded) for
  i = 0, 1, ..., i.e. subsampled to 7.5 fps, and squash-resized to the model's crop size (PIL's box
  filter, an area average like the backend's own resize). The dev set's frame rate is not in its
  files: the caller gives it (``source_fps``); the default is the rate of the workflow's fixture
  (permanence.intphys_fixture), 7.5 fps, which needs no subsampling.
* Windows: C context frames then the 14-frame horizon, encoded as one clip of C + 14 frames. The
  first C / tubelet slots are visible, the horizon's slots are the target (C = 2: one visible
  slot). A window starts at every tubelet-aligned frame (stride = the tubelet size, 2 frames) where
  it fits in the video.
* Target: the encoder's tokens of the whole window, layer-normed over features as V-JEPA's
  training target is (permanence.train): surprise is the prediction error of training (the belief
  probe instead compares worlds with ``backend.encode(x)`` as it comes out). A calibration
  predictor predicts encoder tokens, so its predictions are layer-normed the same way (the
  persistence oracle's surprise is then exactly 0).
* Surprise of a window: the mean absolute error over every element of the horizon's tokens (the
  L1 loss V-JEPA 2 trains with), or, given a Laplace scale b, the mean of |e| / b + log(2b). With a
  scale the same forward pass also gives the plain L1 error as ``surprise_l1`` (Table 1's "L_1
  readout" column, scored by ``l1_readout``); without one ``surprise`` already is the L1 readout.
* Rules (Table 10): ``fixed``, the mean over windows at C = 2; ``best``, the C in 2..10 with the
  highest accuracy (ties to the smallest C); ``min``, per start frame the minimum over C of the
  window surprise, then the mean over start frames, counting only start frames where every C's
  window fits (the longest context's starts).
* Pairs: in each scene every possible video against every impossible one (2 x 2 = 4 pairs); a pair
  is correct when the impossible video's surprise is the larger, and an exact tie counts 0.5 (a
  predictor that cannot tell the videos apart scores 50%, not 0 or 100%).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from PIL import Image

from worldmemory.common.provenance import write_job_info
from worldmemory.common.seeds import stable_rng
from worldmemory.models.device import torch_device
from worldmemory.models.masked_predictor import MaskedLatentPredictor
from worldmemory.models.vjepa2 import deterministic
from worldmemory.permanence.calibration import CalibrationPredictor, probe_backend, probe_identity
from worldmemory.permanence.objectives import SCALE_HEAD_WEIGHTS, LaplaceScaleHead

FPS = 7.5  # the protocol's frame rate (Section 3.5)
HORIZON = 14  # frames predicted per window (Section 3.5)
FIXED_CONTEXT = 2  # the main text's setting (Appendix I, "Protocol")
CONTEXTS = (2, 4, 6, 8, 10)  # "context lengths 2-10" (Table 10)
MIN_READOUT = "min"
RULES = ("fixed", "best", "min")
RESAMPLES = 10_000  # Appendix I: "10,000 resamples"
LEVEL = 0.95
BOOTSTRAP_NAMESPACE = "worldmemory.permanence.intphys.bootstrap.v1"
VIDEO_COLUMNS = ["block", "scene", "video", "is_possible"]
SURPRISE_L1 = "surprise_l1"  # the L1 readout beside a scale head's negative log-likelihood (Table 1)
READOUTS = ("surprise", SURPRISE_L1)  # the value columns of the window and per-video tables, when present
Scale = Callable[[torch.Tensor], torch.Tensor]  # predicted tokens (B, n, D) -> Laplace scale b, broadcastable


@dataclass(frozen=True)
class Video:
    """One video of the dev set: root/<block>/<scene>/<video>/ with scene/*.png and status.json."""

    block: str
    scene: str
    video: str
    is_possible: bool
    path: Path


# -- reading the dev set ---------------------------------------------------------------------------
def _subdirs(path: Path) -> list[Path]:
    """Directories in ``path``, numbers in numeric order (video 10 after video 9)."""
    dirs = [p for p in path.iterdir() if p.is_dir()]
    return sorted(dirs, key=lambda p: (not p.name.isdigit(), int(p.name) if p.name.isdigit() else 0, p.name))


def read_status(path: Path) -> bool:
    """header.is_possible of a video's status.json."""
    try:
        value = json.loads(path.read_text())["header"]["is_possible"]
    except FileNotFoundError:
        raise ValueError(f"{path} is missing: every IntPhys video directory holds a status.json") from None
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise ValueError(f"{path}: expected JSON with header.is_possible, could not read it ({err!r}); "
                         "restore the file from the dev set") from None
    if not isinstance(value, bool):
        raise ValueError(f"{path}: header.is_possible must be true or false, found {value!r}")
    return value


def read_scene(scene_dir: Path) -> list[Video]:
    """The videos of one scene; ValueError unless it holds 2 possible and 2 impossible ones."""
    videos = [Video(scene_dir.parent.name, scene_dir.name, d.name, read_status(d / "status.json"), d)
              for d in _subdirs(scene_dir)]
    n_possible = sum(v.is_possible for v in videos)
    if len(videos) != 4 or n_possible != 2:
        found = ", ".join(f"{v.video}: {'possible' if v.is_possible else 'impossible'}" for v in videos)
        raise ValueError(f"{scene_dir}: an IntPhys scene holds 2 possible and 2 impossible videos, found "
                         f"{found or 'no video directories'}; remove stray directories or complete the scene")
    return videos


def read_dataset(root) -> list[Video]:
    """Every video of root/<block>/<scene>/<video>/, sorted by block, scene and video."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"IntPhys dataset {root} is not a directory: pass the dev set's root (holding O1, O2, O3)")
    videos = [v for block in _subdirs(root) for scene in _subdirs(block) for v in read_scene(scene)]
    if not videos:
        raise ValueError(f"{root} holds no <block>/<scene>/<video>/ directories: pass the dev set's root "
                         "(holding O1, O2, O3)")
    return videos


def frame_indices(n_frames: int, source_fps: float, fps: float = FPS) -> np.ndarray:
    """Source frames nearest to the times i / fps: every source_fps / fps-th frame."""
    if source_fps < fps:
        raise ValueError(f"source_fps {source_fps} is below the protocol's {fps} fps: frames cannot be added")
    step = source_fps / fps
    return np.floor(np.arange(int((n_frames - 1) / step + 1e-9) + 1) * step + 0.5).astype(int)


def read_frames(video_dir: Path, size: int, source_fps: float = FPS) -> np.ndarray:
    """uint8 (T, size, size, 3): scene/*.png at 7.5 fps, squash-resized (box filter) to ``size``.

    ``source_fps`` is the rate the PNGs were rendered at; IntPhys does not store it, so the user
    gives the dev set's. The default is the workflow fixture's 7.5 fps (no subsampling).
    """
    pngs = sorted((Path(video_dir) / "scene").glob("*.png"))
    if not pngs:
        raise ValueError(f"{Path(video_dir) / 'scene'} holds no PNG frames")
    frames = []
    for i in frame_indices(len(pngs), source_fps):
        with Image.open(pngs[i]) as image:
            image = image.convert("RGB")
            if image.size != (size, size):
                image = image.resize((size, size), Image.Resampling.BOX)
            frames.append(np.asarray(image))
    return np.stack(frames)


# -- windows and surprise ----------------------------------------------------------------------------
def check_window(context: int, horizon: int, tubelet: int) -> None:
    """Windows hold whole tubelets: C and the horizon must be positive multiples of the tubelet size."""
    for name, n in (("context", context), ("horizon", horizon)):
        if n <= 0 or n % tubelet:
            raise ValueError(f"{name} of {n} frames is not a positive multiple of the tubelet size {tubelet}: "
                             f"use an even number of frames (C = {tubelet} is one visible slot)")


def window_starts(n_frames: int, context: int, horizon: int, tubelet: int) -> np.ndarray:
    """First frames of the windows that fit in ``n_frames``: every tubelet-aligned frame."""
    check_window(context, horizon, tubelet)
    return np.arange(0, n_frames - (context + horizon) + 1, tubelet)


def window_tokens(context: int, horizon: int, tubelet: int, side: int) -> tuple[np.ndarray, np.ndarray]:
    """(visible, target) token indices of a window: the context's slots, then the horizon's (time-major)."""
    check_window(context, horizon, tubelet)
    per_slot = side * side
    n_visible = context // tubelet * per_slot
    return np.arange(n_visible), np.arange(n_visible, (context + horizon) // tubelet * per_slot)


def surprise(pred: torch.Tensor, target: torch.Tensor, scale: Scale | None = None) -> torch.Tensor:
    """Per window (B,): mean |pred - target| over the horizon's tokens and features (Section 3.5), or,
    with a Laplace scale b = scale(pred), the mean negative log-likelihood |e| / b + log(2b)."""
    error = (pred - target).abs()
    if scale is None:
        return error.mean(dim=(1, 2))
    b = torch.as_tensor(scale(pred), dtype=error.dtype, device=error.device)
    if not bool((b > 0).all()):
        raise ValueError("the Laplace scale b must be positive for every predicted token")
    return (error / b + torch.log(2 * b)).expand_as(error).mean(dim=(1, 2))


def window_readouts(pred: torch.Tensor, target: torch.Tensor, scale: Scale | None) -> dict[str, torch.Tensor]:
    """The surprises (B,) of one batch of windows: ``surprise``, and with a scale also the L1 readout
    ``surprise_l1`` of the same predictions."""
    out = {"surprise": surprise(pred, target, scale)}
    if scale is not None:
        out[SURPRISE_L1] = surprise(pred, target, None)
    return out


def window_surprises(backend: MaskedLatentPredictor, clip: torch.Tensor, context: int, horizon: int = HORIZON,
                     scale: Scale | None = None, batch_size: int = 16) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """(start frames, {column: surprises}) of every window of one preprocessed clip (1, T, 3, H, W):
    ``surprise``, and with a scale ``surprise_l1`` from the same forward pass (window_readouts)."""
    tubelet = backend.tubelet_size
    starts = window_starts(clip.shape[1], context, horizon, tubelet)
    if not len(starts):
        raise ValueError(f"a video of {clip.shape[1]} frames at {FPS} fps is shorter than one window of "
                         f"{context} + {horizon} frames")
    visible, target = window_tokens(context, horizon, tubelet, backend.crop_size // backend.patch_size)
    length, out = context + horizon, []
    with torch.inference_mode():
        for i in range(0, len(starts), batch_size):
            x = torch.cat([clip[:, s : s + length] for s in starts[i : i + batch_size]])
            pred = backend.predict(backend.encode(x, visible), visible, target)
            if isinstance(backend, CalibrationPredictor):  # encoder tokens: into the target's space
                pred = F.layer_norm(pred, pred.shape[-1:])
            reference = backend.encode(x)[:, torch.as_tensor(target, device=x.device)]
            reference = F.layer_norm(reference, reference.shape[-1:])
            out.append(window_readouts(pred, reference, scale))
    return starts, {k: torch.cat([o[k] for o in out]).cpu().double().numpy() for k in out[0]}


def score_video(backend: MaskedLatentPredictor, clip: torch.Tensor, contexts=CONTEXTS, horizon: int = HORIZON,
                scale: Scale | None = None, batch_size: int = 16) -> pd.DataFrame:
    """Window surprises of one clip at every context length: columns context, start, surprise (and
    surprise_l1 with a scale)."""
    parts = []
    for c in contexts:
        starts, values = window_surprises(backend, clip, c, horizon, scale, batch_size)
        parts.append(pd.DataFrame({"context": c, "start": starts, **values}))
    return pd.concat(parts, ignore_index=True)


def score_dataset(backend: MaskedLatentPredictor, videos: list[Video], contexts=CONTEXTS,
                  source_fps: float = FPS, horizon: int = HORIZON, scale: Scale | None = None,
                  batch_size: int = 16, log=print) -> pd.DataFrame:
    """Window surprises of every video: VIDEO_COLUMNS + context, start, surprise (and surprise_l1 with
    a scale). Logs per scene."""
    scenes: dict[tuple[str, str], list[Video]] = {}
    for v in videos:
        scenes.setdefault((v.block, v.scene), []).append(v)
    parts, begin = [], time.time()
    for n, ((block, scene), members) in enumerate(scenes.items(), start=1):
        for v in members:
            clip = backend.preprocess(read_frames(v.path, backend.crop_size, source_fps)[None])
            windows = score_video(backend, clip, contexts, horizon, scale, batch_size)
            parts.append(windows.assign(block=v.block, scene=v.scene, video=v.video, is_possible=v.is_possible))
        log(f"{block}/{scene}: {n}/{len(scenes)} scenes, {time.time() - begin:.1f}s")
    windows = pd.concat(parts, ignore_index=True)
    return windows[[*VIDEO_COLUMNS, "context", "start", *value_columns(windows)]]


# -- aggregation rules ---------------------------------------------------------------------------------
def _readout_order(label: str) -> tuple:
    """Sort key of the per-video table's ``context`` values: "2", "4", ..., "10", then "min"."""
    return (label == MIN_READOUT, int(label) if label != MIN_READOUT else 0)


def value_columns(table: pd.DataFrame) -> list[str]:
    """The surprise columns a window or per-video table carries: surprise, and surprise_l1 if there."""
    return [c for c in READOUTS if c in table.columns]


def video_surprises(windows: pd.DataFrame) -> pd.DataFrame:
    """Per video and readout: the mean window surprise at each context length, and the min rule's
    mean over start frames of the minimum over context lengths (start frames where every context
    length's window fits), for each surprise column alike. Columns VIDEO_COLUMNS + context (str),
    surprise (and surprise_l1 when the windows carry it)."""
    values = value_columns(windows)
    per_c = windows.groupby([*VIDEO_COLUMNS, "context"])[values].mean().reset_index()
    per_c = per_c.sort_values(["context", "block", "scene", "video"], kind="stable")
    wide = windows.set_index([*VIDEO_COLUMNS, "start", "context"])[values].unstack("context").dropna()
    minimum = pd.concat({v: wide[v].min(axis=1) for v in values}, axis=1)
    minimum = minimum.groupby(level=VIDEO_COLUMNS).mean().reset_index()
    out = pd.concat([per_c.assign(context=per_c["context"].map(str)), minimum.assign(context=MIN_READOUT)],
                    ignore_index=True)
    return out[[*VIDEO_COLUMNS, "context", *values]]


def l1_readout(videos: pd.DataFrame) -> pd.DataFrame | None:
    """The per-video table scored by its L1 readout (surprise_l1 as surprise, for pairs and the rules),
    or None when it has no surprise_l1 (its surprise already is the L1 readout)."""
    if SURPRISE_L1 not in videos.columns:
        return None
    return videos.drop(columns="surprise").rename(columns={SURPRISE_L1: "surprise"})


def pairs(videos: pd.DataFrame) -> pd.DataFrame:
    """The possible/impossible pairs of one readout's per-video surprises: block, scene, possible,
    impossible, correct (1 if the impossible video is the more surprising, 0.5 on a tie, else 0)."""
    rows = []
    for (block, scene), group in videos.groupby(["block", "scene"], sort=True):
        possible, impossible = group[group["is_possible"]], group[~group["is_possible"]]
        if len(possible) != 2 or len(impossible) != 2:
            raise ValueError(f"scene {block}/{scene}: expected 2 possible and 2 impossible videos in one readout, "
                             f"found {len(possible)} and {len(impossible)}; filter the table to one context first")
        for p in possible.itertuples():
            for i in impossible.itertuples():
                correct = 1.0 if i.surprise > p.surprise else 0.5 if i.surprise == p.surprise else 0.0
                rows.append({"block": block, "scene": scene, "possible": p.video, "impossible": i.video,
                             "correct": correct})
    return pd.DataFrame(rows)


def accuracy(pair_table: pd.DataFrame) -> float:
    """Pairwise accuracy in %."""
    return 100.0 * float(pair_table["correct"].mean())


def readout(videos: pd.DataFrame, label: str) -> pd.DataFrame:
    """The per-video rows of one readout; ValueError naming the readouts there are otherwise."""
    rows = videos[videos["context"].astype(str) == label]
    if rows.empty:
        raise ValueError(f"no per-video surprises for context {label!r}; the table has "
                         f"{sorted(videos['context'].astype(str).unique(), key=_readout_order)}")
    return rows


def context_accuracies(videos: pd.DataFrame) -> dict[str, float]:
    """Accuracy (%) per readout: each context length and the min rule."""
    labels = sorted(videos["context"].astype(str).unique(), key=_readout_order)
    return {label: accuracy(pairs(readout(videos, label))) for label in labels}


def rule_readout(videos: pd.DataFrame, rule: str) -> str:
    """The readout a rule scores (Table 10): C = 2, the best context length (ties to the smallest), or min."""
    if rule == "fixed":
        return str(FIXED_CONTEXT)
    if rule == "min":
        return MIN_READOUT
    if rule != "best":
        raise ValueError(f"unknown rule {rule!r}; expected one of {RULES}")
    by_context = {k: v for k, v in context_accuracies(videos).items() if k != MIN_READOUT}
    return max(by_context, key=lambda k: (by_context[k], -int(k)))


def scene_accuracy(pair_table: pd.DataFrame) -> pd.Series:
    """Fraction of correct pairs per scene, indexed by (block, scene): the bootstrap's unit."""
    return pair_table.groupby(["block", "scene"])["correct"].mean()


def rule_table(videos: pd.DataFrame, key: str, resamples: int = RESAMPLES) -> pd.DataFrame:
    """One row per rule: the readout it scores, accuracy (%), per-block accuracy and the 95% scene
    bootstrap interval of the accuracy (seeded by ``key``, e.g. the model name)."""
    rows = []
    for rule in RULES:
        label = rule_readout(videos, rule)
        table = pairs(readout(videos, label))
        interval = bootstrap([scene_accuracy(table)], key=f"{key}/{rule}", resamples=resamples)
        by_block = {f"accuracy_{b}": accuracy(t) for b, t in table.groupby("block")}
        rows.append({"rule": rule, "context": label, "accuracy": accuracy(table), "pairs": len(table),
                     "low": interval["low"], "high": interval["high"], **by_block})
    return pd.DataFrame(rows)


# -- scene-level bootstrap --------------------------------------------------------------------------------
def _seed_mean(seeds: list[pd.Series], name: str) -> pd.Series:
    """Per-scene accuracy averaged over a checkpoint's seeds ("seed-averaged per scene")."""
    if not seeds:
        raise ValueError(f"checkpoint {name} has no seed's per-scene accuracies")
    first = seeds[0].index
    for i, s in enumerate(seeds[1:], start=1):
        if set(s.index) != set(first):
            raise ValueError(f"seed {i} of checkpoint {name} covers other scenes than seed 0: "
                             f"{sorted(set(s.index) ^ set(first))[:4]}; score every seed on the same dev set")
    return pd.concat([s.reindex(first) for s in seeds], axis=1).mean(axis=1)


def bootstrap(a: list[pd.Series], b: list[pd.Series] | None = None, key: str = "", resamples: int = RESAMPLES,
              level: float = LEVEL) -> dict:
    """Scene bootstrap (Appendix I): resample scenes with replacement, each with its pairs, and take
    the percentile interval of the accuracy (%) of checkpoint ``a`` or of the difference a - b.

    ``a`` and ``b`` are lists of per-scene accuracies (scene_accuracy), one per training seed,
    averaged over seeds per scene first. The draws come from stable_rng(``key``): the same key gives
    the same interval in every process.
    """
    values = _seed_mean(a, "a")
    if b is not None:
        other = _seed_mean(b, "b")
        differ = sorted(set(other.index) ^ set(values.index))
        if differ:
            raise ValueError(f"checkpoints a and b cover different scenes: {differ[:4]}; compare them on the same "
                             "dev set")
        values = values - other.reindex(values.index)
    points = 100.0 * values.to_numpy(dtype=float)
    rng = stable_rng(key, BOOTSTRAP_NAMESPACE)
    means = points[rng.integers(0, len(points), size=(resamples, len(points)))].mean(axis=1)
    low, high = np.percentile(means, [50 * (1 - level), 50 * (1 + level)])
    return {"estimate": float(points.mean()), "low": float(low), "high": float(high), "scenes": len(points),
            "resamples": resamples}


# -- CLI ----------------------------------------------------------------------------------------------------
def scale_head(weights, backend) -> Scale | None:
    """The checkpoint's Laplace scale head (a curriculum's, objectives.LaplaceScaleHead) when it has one:
    its surprise is then the negative log-likelihood (Section 3.5), with the L1 readout beside it as
    surprise_l1; None (the L1 readout only) otherwise."""
    if isinstance(backend, CalibrationPredictor):  # its weights are its encoder's, not a predictor's
        return None
    if weights is None or not (Path(weights) / SCALE_HEAD_WEIGHTS).exists():
        return None
    return LaplaceScaleHead.load(weights).to(backend.device).eval()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", required=True, type=Path, help="IntPhys-2019 dev set root (O1, O2, O3 inside)")
    ap.add_argument("--model-name", required=True)
    ap.add_argument("--spec", required=True,
                    help="model spec (JSON) from the config; a calibration spec carries its encoder's as encoder_spec")
    ap.add_argument("--weights", default=None,
                    help="directory of a saved VJEPA2Model (trained or prefetched; a calibration model's encoder's)")
    ap.add_argument("--source-fps", type=float, default=FPS,
                    help=f"frame rate of the dataset's PNGs (not stored in IntPhys; default {FPS}, the fixture's)")
    ap.add_argument("--contexts", type=int, nargs="+", default=list(CONTEXTS), help="context lengths (frames)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=16, help="windows per model call")
    ap.add_argument("--out", required=True, type=Path, help="per-video surprises (CSV)")
    ap.add_argument("--out-summary", required=True, type=Path, help="accuracy per rule and model identity (JSON)")
    args = ap.parse_args(argv)
    if FIXED_CONTEXT not in args.contexts:
        raise ValueError(f"--contexts {args.contexts} lacks {FIXED_CONTEXT}, the fixed rule's context length")
    torch_device(args.device)  # a missing GPU fails here, before any work
    torch.set_num_threads(args.threads)
    deterministic(args.device)
    spec = json.loads(args.spec)
    backend = probe_backend(spec, args.weights, args.device)
    scale = scale_head(args.weights, backend)
    videos = read_dataset(args.dataset)
    windows = score_dataset(backend, videos, args.contexts, args.source_fps, scale=scale, batch_size=args.batch_size,
                            log=lambda msg: print(f"[intphys {args.model_name}] {msg}", flush=True))
    per_video = video_surprises(windows)
    l1 = l1_readout(per_video)  # a scale head's run: its L1 readout's rules as well (Table 1)
    l1_rules = {} if l1 is None else {"rules_l1": rule_table(l1, args.model_name).to_dict(orient="records")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    per_video.to_csv(args.out, index=False, float_format="%.8g")
    identity = probe_identity(backend, spec)
    write_job_info(args.out_summary, model=args.model_name, identity=identity, device=args.device,
                   source_fps=args.source_fps, fps=FPS, horizon=HORIZON, contexts=args.contexts,
                   stride=backend.tubelet_size, videos=len(videos),
                   readout="laplace_nll" if scale is not None else "l1",
                   rules=rule_table(per_video, args.model_name).to_dict(orient="records"),
                   by_context=context_accuracies(per_video),
                   **l1_rules)
    print(f"[intphys {args.model_name}] {len(videos)} videos -> {args.out}, {args.out_summary}", flush=True)


if __name__ == "__main__":
    main()
