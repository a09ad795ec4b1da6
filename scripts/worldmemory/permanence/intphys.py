"""IntPhys-2019 under a masked latent predictor: the surprise of every window of every video.

*Tracking Is Not Permanence*, Section 3.5 (the fixed-context variant of Garrido et al. 2025: "7.5
fps, two context frames, a 14-frame horizon, the prediction error averaged over windows as
surprise (for predictors trained with the scale of (i), its negative log-likelihood)"), under one of
the two protocols of permanence.intphys_scoring (``reference``, Garrido et al.'s evaluation code, or
``paper-text``), which also holds the pairs, rules and intervals that turn these surprises into
Tables 1 and 10.

Choices where the paper is silent, fixed here:

* Frames: a video's PNGs (sorted by name) are taken at ``i * source_fps / 7.5`` (rounded) for
  i = 0, 1, ..., i.e. subsampled to 7.5 fps (the reference protocol drops the last of them), and
  squash-resized to the model's crop size (PIL's box filter, an area average like the backend's own
  resize). The dev set's frame rate is not in its files: it is 15 fps (100 frames a video; the
  dataset's 15k training videos are "approx. 25 hours", 28 h at 15 fps, 56 h at 7.5), which is why
  the reference takes every second frame; the caller gives it (``--source-fps``). The workflow's
  fixture (permanence.intphys_fixture) records its own rate, 7.5 fps, in each status.json.
* Windows: C context frames then the protocol's horizon (14 frames, or 16 - C in the reference),
  encoded as one clip. The first C / tubelet slots are visible, the horizon's slots are the target
  (C = 2: one visible slot). A window starts at every tubelet-aligned frame (stride = the tubelet
  size, 2 frames, the reference's stride too) where it fits in the video.
* Target: the encoder's tokens of the whole window, layer-normed over features as V-JEPA's
  training target is (permanence.train; the reference's normalize_targets): surprise is the
  prediction error of training (the belief probe instead compares worlds with
  ``backend.encode(x)`` as it comes out). A calibration predictor predicts encoder tokens, so its
  predictions are layer-normed the same way (the persistence oracle's surprise is then exactly 0).
* Surprise of a window: the mean absolute error over every element of the horizon's tokens (the
  L1 loss V-JEPA 2 trains with), or, given a Laplace scale b, the mean of |e| / b + log(2b). With a
  scale the same forward pass also gives the plain L1 error as ``surprise_l1`` (Table 1's "L_1
  readout" column); without one ``surprise`` already is the L1 readout.
* Pairs: each video's reference pair (column ``match``, intphys_scoring.opening_matches) is found
  on the frames as read, under both protocols; only the reference scores by it.
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
from worldmemory.models.device import add_torch_arguments, start_torch_job
from worldmemory.models.masked_predictor import MaskedLatentPredictor
from worldmemory.permanence.calibration import CalibrationPredictor, probe_backend, probe_identity
from worldmemory.permanence.intphys_scoring import (
    CONTEXTS,
    FIXED_CONTEXT,
    FPS,
    HORIZON,
    PROTOCOLS,
    SURPRISE_L1,
    VIDEO_COLUMNS,
    Protocol,
    context_accuracies,
    l1_readout,
    opening_matches,
    protocol_named,
    rule_table,
    value_columns,
    video_surprises,
)
from worldmemory.permanence.objectives import SCALE_HEAD_WEIGHTS, LaplaceScaleHead

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


def recorded_fps(videos: list[Video]) -> float:
    """The frame rate the first video's status.json records (fixture.fps, which the workflow's fixture
    writes); the dev set records none, so its rate must be given (--source-fps)."""
    path = videos[0].path / "status.json"
    fps = json.loads(path.read_text()).get("fixture", {}).get("fps")
    if not isinstance(fps, (int, float)) or isinstance(fps, bool) or fps <= 0:
        raise ValueError(f"{path} records no frame rate (fixture.fps), as the IntPhys dev set does not: pass "
                         "--source-fps (permanence.intphys.source_fps, 15 for the dev set)")
    return float(fps)


def frame_indices(n_frames: int, source_fps: float, fps: float = FPS, drop_last: bool = False) -> np.ndarray:
    """Source frames nearest to the times i / fps: every source_fps / fps-th frame, less the last one
    with ``drop_last`` (the reference protocol's 49 of a 100-frame video's 50)."""
    if source_fps < fps:
        raise ValueError(f"source_fps {source_fps} is below the protocol's {fps} fps: frames cannot be added")
    step = source_fps / fps
    indices = np.floor(np.arange(int((n_frames - 1) / step + 1e-9) + 1) * step + 0.5).astype(int)
    return indices[:-1] if drop_last else indices


def read_frames(video_dir: Path, size: int, source_fps: float = FPS, drop_last: bool = False) -> np.ndarray:
    """uint8 (T, size, size, 3): scene/*.png at 7.5 fps (frame_indices), squash-resized (box filter) to
    ``size``. ``source_fps`` is the rate the PNGs were rendered at; the default is the fixture's."""
    pngs = sorted((Path(video_dir) / "scene").glob("*.png"))
    if not pngs:
        raise ValueError(f"{Path(video_dir) / 'scene'} holds no PNG frames")
    frames = []
    for i in frame_indices(len(pngs), source_fps, drop_last=drop_last):
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


def score_video(backend: MaskedLatentPredictor, clip: torch.Tensor, contexts, protocol: Protocol,
                scale: Scale | None = None, batch_size: int = 16) -> pd.DataFrame:
    """Window surprises of one clip at every context length, windows as the protocol cuts them:
    columns context, start, surprise (and surprise_l1 with a scale)."""
    parts = []
    for c in contexts:
        starts, values = window_surprises(backend, clip, c, protocol.horizon(c), scale, batch_size)
        parts.append(pd.DataFrame({"context": c, "start": starts, **values}))
    return pd.concat(parts, ignore_index=True)


def score_dataset(backend: MaskedLatentPredictor, videos: list[Video], contexts, source_fps: float,
                  protocol: Protocol, scale: Scale | None = None, batch_size: int = 16, log=print) -> pd.DataFrame:
    """Window surprises of every video: VIDEO_COLUMNS (``match``: the reference's pair, from the
    frames as read) + context, start, surprise (and surprise_l1 with a scale). Logs per scene."""
    scenes: dict[tuple[str, str], list[Video]] = {}
    for v in videos:
        scenes.setdefault((v.block, v.scene), []).append(v)
    parts, begin = [], time.time()
    for n, ((block, scene), members) in enumerate(scenes.items(), start=1):
        frames = [read_frames(v.path, backend.crop_size, source_fps, protocol.drop_last_frame) for v in members]
        for v, clip, match in zip(members, frames, opening_matches(frames)):
            windows = score_video(backend, backend.preprocess(clip[None]), contexts, protocol, scale, batch_size)
            parts.append(windows.assign(block=v.block, scene=v.scene, video=v.video, is_possible=v.is_possible,
                                        match=match))
        log(f"{block}/{scene}: {n}/{len(scenes)} scenes, {time.time() - begin:.1f}s")
    windows = pd.concat(parts, ignore_index=True)
    return windows[[*VIDEO_COLUMNS, "context", "start", *value_columns(windows)]]


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
    ap.add_argument("--source-fps", type=float, default=None,
                    help="frame rate of the dataset's PNGs: 15 for the dev set, which does not record it (default: "
                         "the rate the videos' status.json records, as the workflow's fixture does)")
    ap.add_argument("--protocol", default="reference", choices=sorted(PROTOCOLS),
                    help="frames and windows of Garrido et al.'s evaluation code, or of the seed's text "
                         "(permanence.intphys_scoring)")
    ap.add_argument("--contexts", type=int, nargs="+", default=list(CONTEXTS), help="context lengths (frames)")
    add_torch_arguments(ap)
    ap.add_argument("--batch-size", type=int, default=16, help="windows per model call")
    ap.add_argument("--out", required=True, type=Path, help="per-video surprises (CSV)")
    ap.add_argument("--out-summary", required=True, type=Path, help="accuracy per rule and model identity (JSON)")
    args = ap.parse_args(argv)
    if FIXED_CONTEXT not in args.contexts:
        raise ValueError(f"--contexts {args.contexts} lacks {FIXED_CONTEXT}, the fixed rule's context length")
    start_torch_job(args.device, args.threads)
    spec, chosen = json.loads(args.spec), protocol_named(args.protocol)
    backend = probe_backend(spec, args.weights, args.device)
    scale = scale_head(args.weights, backend)
    videos = read_dataset(args.dataset)
    source_fps = args.source_fps or recorded_fps(videos)
    windows = score_dataset(backend, videos, args.contexts, source_fps, chosen, scale=scale, batch_size=args.batch_size,
                            log=lambda msg: print(f"[intphys {args.model_name}] {msg}", flush=True))
    per_video = video_surprises(windows)
    l1 = l1_readout(per_video)  # a scale head's run: its L1 readout's rules as well (Table 1)
    l1_rules = {} if l1 is None else {"rules_l1": rule_table(l1, args.model_name, chosen).to_dict(orient="records")}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    per_video.to_csv(args.out, index=False, float_format="%.8g")
    identity = probe_identity(backend, spec)
    write_job_info(args.out_summary, model=args.model_name, identity=identity, device=args.device,
                   protocol=chosen.name, source_fps=source_fps, fps=FPS,
                   window=chosen.window or f"C + {HORIZON}", contexts=args.contexts,
                   stride=backend.tubelet_size, videos=len(videos),
                   readout="laplace_nll" if scale is not None else "l1",
                   rules=rule_table(per_video, args.model_name, chosen).to_dict(orient="records"),
                   by_context=context_accuracies(per_video, chosen),
                   **l1_rules)
    print(f"[intphys {args.model_name}] {len(videos)} videos -> {args.out}, {args.out_summary}", flush=True)


if __name__ == "__main__":
    main()
