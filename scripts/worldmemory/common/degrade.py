"""Degradations of a video the way generated video degrades: the recipes of the degraded replays.

The perception-agreement tables (worldmembench/agreement.py, persistbench/agreement.py) replay each
reference model's video as an external model; a real world model's video is rarely that clean. The
degraded replays (worldmemory.external.replay ``--degrade``) deliver the same video degraded by one
recipe, seeded, so each table row says how far an estimator moves when a generator blurs, adds
noise, compresses, changes resolution or has nothing to show where the camera looks:

  * ``blur-noise``: Gaussian blur, sigma 1.5 px, then additive Gaussian noise of std 8 grey levels
    (independent per pixel, channel and frame; the generator seeded by the recipe's seed);
  * ``h264``: libx264 at crf 40, 4:2:0 chroma (a strong web compression; crf 51 is the worst);
  * ``resize``: down 2x (area averaging) and back up (bilinear): a model generating at half the
    resolution, upsampled to the requested size;
  * ``black`` / ``uniform``: every pixel beyond the conditioning view is black / the conditioning
    frame's mean colour, as a model that has nothing to show there. "Beyond the conditioning view"
    is geometry (:func:`seen_by_view`) from the replayed rollout's truth: on WorldMemBench a pixel
    whose surface point (z-depth, camera-to-world pose, K) projects outside frame 0, the
    conditioning frame (occlusion is not tested); on PersistBench, whose models see the whole
    input video and whose cameras share their centre, a pixel whose direction no input-camera
    frame up to that time showed, unless it shows one of the objects the source drew (the model
    knows them; the background it has not seen is what it lacks). worldmemory.external.replay
    builds the mask.
  * ``sliver``: ``black``, and where content comes back after a fully black frame it first shows
    only as a thin strip for ``SLIVER_FRAMES`` frames: the seen pixels within ``SLIVER_PX`` px of
    the black (the content's edge, a few pixels of a striped wall), the rest of them black; then
    the whole seen view. A model that blanks what it does not know and fades content back in
    edge first; a strip that little cannot place the camera (the feature-matching camera's
    re-anchoring must not trust it; docs/perception.md, "Degraded replays").

Blur sigma 1.5 is the issue's measured case; the noise std, the crf and the factor are chosen as
clearly visible but typical (documented in docs/perception.md, "Degraded replays").
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from worldmemory.common.video import read_video, write_mp4

RECIPES = ("blur-noise", "h264", "resize", "black", "uniform", "sliver")
GEOMETRIC = ("black", "uniform", "sliver")  # the recipes that need the conditioning view (a ``seen`` mask)


def blur_noise(frames, seed, sigma: float = 1.5, noise_std: float = 8.0) -> np.ndarray:
    """Gaussian blur of ``sigma`` px, then Gaussian noise of ``noise_std`` grey levels; ``seed``
    an int or a numpy Generator."""
    import cv2  # OpenCV loads only where a recipe needs it (a clean replay job imports this module)

    frames = np.asarray(frames)
    blurred = np.stack([cv2.GaussianBlur(f, (0, 0), sigma, borderType=cv2.BORDER_REFLECT) for f in frames])
    noise = np.random.default_rng(seed).normal(0.0, noise_std, size=frames.shape)
    return np.clip(np.rint(blurred + noise), 0, 255).astype(np.uint8)


def h264_roundtrip(frames, fps: float = 8.0, crf: int = 40) -> np.ndarray:
    """The frames as a libx264 crf ``crf`` 4:2:0 stream decodes them."""
    with tempfile.TemporaryDirectory(prefix="worldmemory-h264-") as tmp:
        path = Path(tmp) / "degraded.mp4"
        write_mp4(path, frames, fps, crf=crf, pix_fmt="yuv420p")
        return read_video(path)


def resize_down_up(frames, factor: int = 2) -> np.ndarray:
    """Down ``factor`` times by area averaging, back up to the original size bilinearly."""
    import cv2

    frames = np.asarray(frames)
    height, width = frames.shape[1:3]
    small = (max(1, width // factor), max(1, height // factor))
    return np.stack([cv2.resize(cv2.resize(f, small, interpolation=cv2.INTER_AREA), (width, height),
                                interpolation=cv2.INTER_LINEAR) for f in frames])


def fill_unseen(frames, seen, colour) -> np.ndarray:
    """``frames`` with every pixel where ``seen`` (T, H, W) is False set to ``colour`` (RGB)."""
    out = np.array(frames, copy=True)
    out[~np.asarray(seen, bool)] = np.asarray(colour, dtype=np.uint8)
    return out


SLIVER_PX = 2  # width of the strip the ``sliver`` recipe shows first when content returns
SLIVER_FRAMES = 6  # frames the strip lasts


def sliver(seen, width: int = SLIVER_PX, frames: int = SLIVER_FRAMES) -> np.ndarray:
    """(T, H, W) bool: ``seen`` where, for the first ``frames`` frames of content after a frame
    with nothing seen, only the seen pixels within ``width`` px (chessboard distance) of an unseen
    pixel stay seen: content returning after black shows first as a strip along its edge."""
    import cv2

    seen = np.asarray(seen, bool)
    out = seen.copy()
    kernel = np.ones((2 * width + 1, 2 * width + 1), np.uint8)
    since_black = frames  # content frames since the last fully black one
    for t in range(len(seen)):
        if not seen[t].any():
            since_black = 0
            continue
        if since_black < frames:  # erode's default border keeps the image edge: no strip there
            out[t] = seen[t] & ~cv2.erode(seen[t].astype(np.uint8), kernel).astype(bool)
        since_black += 1
    return out


def seen_by_view(poses, K, view, width: int, height: int, depth=None) -> np.ndarray:
    """(T, H, W) bool: whether each pixel's surface point lies inside the image of the camera
    ``view`` (4, 4), the conditioning frame's camera.

    ``poses`` (T, 4, 4) camera-to-world (OpenCV axes); ``K`` (3, 3) in pixels, continuous
    coordinates (pixel centres at +0.5), shared by both cameras; ``depth`` (T, H, W) z-depth, or
    None where every pixel is a direction at infinity (a panorama's cameras share their centre).
    A pixel without finite depth (nothing hit) is rotated into the view, not translated.
    Occlusion is not tested."""
    poses = np.asarray(poses, float)
    T, H, W = len(poses), int(height), int(width)
    depth = np.full((T, H, W), np.inf) if depth is None else np.asarray(depth, float)
    to_view = np.linalg.inv(np.asarray(view, float)) @ poses  # camera t -> the conditioning camera
    finite = np.isfinite(depth)
    points = _rays(K, W, H)[None] * np.where(finite, depth, 1.0)[..., None]  # (T, H, W, 3) in camera t
    cam = (np.einsum("tij,thwj->thwi", to_view[:, :3, :3], points)
           + finite[..., None] * to_view[:, None, None, :3, 3])
    return _inside(cam, K, W, H)


def _rays(K, width: int, height: int) -> np.ndarray:
    """(H, W, 3) camera-frame rays with z = 1 through the pixel centres."""
    u, v = np.meshgrid(np.arange(width) + 0.5, np.arange(height) + 0.5)
    return np.stack([u, v, np.ones_like(u)], -1) @ np.linalg.inv(K).T


def _inside(cam, K, width: int, height: int) -> np.ndarray:
    """Whether camera-frame points (..., 3) are in front of the camera and project into its image."""
    z = cam[..., 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        x = K[0, 0] * cam[..., 0] / z + K[0, 2]
        y = K[1, 1] * cam[..., 1] / z + K[1, 2]
    return (z > 1e-9) & (x >= 0) & (x <= width) & (y >= 0) & (y <= height)


def degrade(frames, recipe: str, seed, fps: float, seen=None) -> np.ndarray:
    """``frames`` (T, H, W, 3) uint8 degraded by ``recipe`` (RECIPES); ``seen`` (T, H, W) bool is
    the conditioning view the geometric recipes keep."""
    if recipe not in RECIPES:
        raise ValueError(f"unknown degradation {recipe!r}; valid: {', '.join(RECIPES)}")
    if recipe == "blur-noise":
        return blur_noise(frames, seed)
    if recipe == "h264":
        return h264_roundtrip(frames, fps)
    if recipe == "resize":
        return resize_down_up(frames)
    if seen is None:
        raise ValueError(f"the {recipe!r} degradation needs the conditioning view (seen mask)")
    if recipe == "sliver":
        return fill_unseen(frames, sliver(seen), (0, 0, 0))
    colour = (0, 0, 0) if recipe == "black" else np.rint(np.asarray(frames[0]).reshape(-1, 3).mean(0))
    return fill_unseen(frames, seen, colour)
