"""Seamless target tracking on equirectangular videos (PersistBench, Method 1).

An equirectangular frame is periodic in longitude, but its image is not: a target that leaves at
the right border (lon -> +180 deg) re-enters at the left one, a frame's width away, and while it
straddles the seam it is two pieces. A video tracker sees a different segment appear far away
and either jumps to it or loses the target. PersistBench's remedy, implemented by
``SeamlessTracker`` around any ``MaskTracker``:

1. tile every frame horizontally into a double-width canvas [frame | frame], on which the
   object is whole and moves continuously across the original seam (canvas column W);
2. prompt the base tracker with ONE copy of the first mask (the copy nearest the canvas centre)
   and track on the canvas;
3. de-duplicate: each frame, of the object's two copies on the canvas only the one continuous
   with the previous frame is kept (the W-wide window centred on the previous centroid, which
   holds every panorama column exactly once), whatever the base returned elsewhere;
4. recentre: when the kept copy drifts more than W/2 (+ a hysteresis margin) from the canvas
   centre it would soon run off the canvas, so the track switches to the other copy (shifted by
   -+W, the same pixels of the panorama) and the base tracker is re-prompted there;
5. fold the kept copy back modulo W (OR of the canvas' two halves).

The result keeps one identity through any number of seam crossings, with a continuous
(unwrapped) longitude. Conventions of ``common.equirect``: column u's centre has longitude
((u + 0.5) / W) 360 - 180 degrees.

The paper tracks with SAM3; real backends (SAM2/SAM3) are a later issue. The embedded backend is
``LabelTracker``, which follows a connected segment of known label maps (the renderer's instance
maps) and knows nothing about the seam: on a raw panorama it fails exactly where a real tracker
does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from scipy import ndimage

EIGHT = np.ones((3, 3), dtype=bool)  # 8-connectivity for segments


@runtime_checkable
class MaskTracker(Protocol):
    """A video object tracker (SAM2/SAM3-like).

    ``track(frames (T, H, W, 3) uint8, first_mask (H, W) bool, start=0) -> (T, H, W) bool``:
    the object given by ``first_mask`` on frame ``start`` followed through frames start..T-1
    (frames before ``start`` get empty masks; an empty mask means the object is lost). ``start``
    is the frame a prompt is placed on, as in SAM2's ``add_new_mask(frame_idx=...)`` +
    ``propagate_in_video(start_frame_idx=...)``; ``SeamlessTracker`` re-prompts with it.
    """

    def track(self, frames: np.ndarray, first_mask: np.ndarray, start: int = 0) -> np.ndarray:
        ...


class LabelTracker:
    """Embedded tracker: follows one connected segment of known label maps, frame to frame.

    ``labels`` (T, H, W) int: per-frame segmentations of the video (the renderer's instance maps;
    ``background`` is never tracked). On frame t the tracker takes the label under the previous
    mask (its most frequent non-background value; the last one seen if the previous mask covers
    none), splits the pixels of that label into 8-connected segments (``scipy.ndimage.label``)
    and keeps the segment that overlaps the previous mask most, or, when none overlaps, the one
    whose centroid is nearest to the previous mask's in image pixels (lost, an empty mask,
    when that is farther than ``max_jump`` pixels, if given). After a loss it matches against
    the last non-empty mask. Distances are plain image distances: it knows nothing of the seam.

    It stands in for a segmenter that is run on the frames it is given: on a canvas of k
    horizontal copies of the video (width k W, as ``SeamlessTracker`` builds), its segmentation
    is k copies of ``labels``. The frames' pixels are not looked at.
    """

    def __init__(self, labels, background: int = 0, max_jump: float | None = None):
        self.labels = np.asarray(labels)
        if self.labels.ndim != 3:
            raise ValueError(f"labels must be (T, H, W), got {self.labels.shape}")
        self.background = background
        self.max_jump = max_jump

    def track(self, frames, first_mask, start: int = 0) -> np.ndarray:
        frames = np.asarray(frames)
        labels = self._segment(frames.shape)
        prev = np.asarray(first_mask, dtype=bool)
        if prev.shape != labels.shape[1:]:
            raise ValueError(f"first_mask {prev.shape} does not match frames {frames.shape}")
        out = np.zeros(labels.shape, dtype=bool)
        value = None
        for t in range(start, len(labels)):
            out[t], value = self._step(labels[t], prev, value)
            if out[t].any():
                prev = out[t]
        return out

    def _segment(self, shape) -> np.ndarray:
        T, H, W = self.labels.shape
        if len(shape) != 4 or shape[:2] != (T, H) or shape[2] % W:
            raise ValueError(f"frames {tuple(shape)} are not (T, H, k W, 3) for labels "
                             f"{self.labels.shape}")
        reps = shape[2] // W
        return self.labels if reps == 1 else np.tile(self.labels, (1, 1, reps))

    def _step(self, label_map, prev, value) -> tuple[np.ndarray, object]:
        under = label_map[prev]
        under = under[under != self.background]
        if under.size:
            values, counts = np.unique(under, return_counts=True)
            value = values[counts.argmax()]
        empty = np.zeros(label_map.shape, dtype=bool)
        if value is None:
            return empty, None
        segments, n = ndimage.label(label_map == value, structure=EIGHT)
        if n == 0:
            return empty, value
        overlap = np.bincount(segments[prev], minlength=n + 1)[1:]
        if overlap.max() > 0:
            return segments == overlap.argmax() + 1, value
        centres = np.array(ndimage.center_of_mass(np.ones_like(segments), segments,
                                                  range(1, n + 1)))
        dist = np.linalg.norm(centres - np.argwhere(prev).mean(axis=0), axis=1)
        k = int(dist.argmin())
        if self.max_jump is not None and dist[k] > self.max_jump:
            return empty, value
        return segments == k + 1, value


@dataclass
class PanoramaTrack:
    """``SeamlessTracker.run``'s result.

    masks (T, H, W) bool: the target on the panorama (folded back); longitude (T,): unwrapped
    longitude (degrees) of the kept copy's centroid column, continuous through seam crossings,
    NaN where lost; track_id (T,): ``track_identities(longitude, max_step_deg)``, -1 where lost;
    recentred: frames where the track switched to the other copy on the canvas.
    """

    masks: np.ndarray
    longitude: np.ndarray
    track_id: np.ndarray
    recentred: list


class SeamlessTracker:
    """Seam-free tracking on equirectangular videos around a base ``MaskTracker`` (module doc).

    ``margin`` (fraction of W): hysteresis of recentring, which happens when the kept copy's
    centroid leaves [W/2 - margin W, 3W/2 + margin W] on the 2W canvas; ``max_step_deg``: a
    larger jump of the longitude between consecutive tracked frames starts a new track id.
    """

    def __init__(self, base: MaskTracker, margin: float = 0.125, max_step_deg: float = 30.0):
        self.base = base
        self.margin = margin
        self.max_step_deg = max_step_deg

    def track(self, frames, first_mask, start: int = 0) -> np.ndarray:
        """``MaskTracker`` interface: the folded masks (T, H, W) bool."""
        return self.run(frames, first_mask, start).masks

    def run(self, frames, first_mask, start: int = 0) -> PanoramaTrack:
        frames = np.asarray(frames)
        T, H, W = frames.shape[:3]
        mask = np.asarray(first_mask, dtype=bool)
        if mask.shape != (H, W):
            raise ValueError(f"first_mask {mask.shape} does not match frames {frames.shape}")
        if not mask.any():
            raise ValueError("first_mask is empty")
        canvas = np.concatenate([frames, frames], axis=2)
        c = circular_centroid_column(mask)
        centre = c if c >= W / 2 else c + W  # the copy nearest the canvas centre W
        prompt = _lift(mask, centre)
        columns = np.arange(2 * W) + 0.5
        kept = np.zeros((T, H, 2 * W), dtype=bool)
        longitude = np.full(T, np.nan)
        # longitude = canvas longitude + 360 turns, in [-180, 180) at the start; each recentring
        # on the copy W to the left (right) adds (subtracts) a turn
        turns, recentred, t0 = -int(centre >= W), [], start
        while t0 is not None:
            out = np.asarray(self.base.track(canvas, prompt, start=t0), dtype=bool)
            restart = None
            for t in range(t0, T):
                m = out[t] & (np.abs(columns - centre) < W / 2)  # the copy continuous with t - 1
                if not m.any():
                    continue
                centre = _mean_column(m)
                if t > t0 and abs(centre - W) > W / 2 + self.margin * W:
                    shift = -W if centre > W else W
                    m, centre = np.roll(m, shift, axis=1), centre + shift
                    turns -= shift // W
                    recentred.append(t)
                    prompt, restart = m, t
                kept[t] = m
                longitude[t] = centre / W * 360 - 180 + 360 * turns
                if restart is not None:
                    break
            t0 = restart
        masks = kept[:, :, :W] | kept[:, :, W:]
        return PanoramaTrack(masks, longitude, track_identities(longitude, self.max_step_deg),
                             recentred)


def _lift(mask, centre: float) -> np.ndarray:
    """The copy of a panorama mask (H, W) on the 2W canvas whose columns lie within W/2 of the
    canvas column ``centre`` (in [W/2, 3W/2]): one whole copy, even if it straddles the seam."""
    H, W = mask.shape
    canvas = np.zeros((H, 2 * W), dtype=bool)
    here = np.arange(W) + 0.5 >= centre - W / 2  # columns that stay; the others move right by W
    canvas[:, :W][:, here] = mask[:, here]
    canvas[:, W:][:, ~here] = mask[:, ~here]
    return canvas


def _mean_column(mask) -> float:
    """Centroid column of a mask (pixel centres at u + 0.5), plain image mean."""
    cols = mask.sum(axis=0)
    return float((np.arange(len(cols)) + 0.5) @ cols / cols.sum())


def circular_centroid_column(mask) -> float:
    """Centroid column in [0, W) of an equirectangular mask (H, W), as a circular mean of the
    pixels' longitudes, so a mask straddling the seam has its centroid at the seam."""
    cols = np.asarray(mask, dtype=bool).sum(axis=0)
    W = len(cols)
    angle = 2 * np.pi * (np.arange(W) + 0.5) / W
    mean = np.arctan2(np.sin(angle) @ cols, np.cos(angle) @ cols)
    return float((mean * W / (2 * np.pi)) % W)


def mask_longitudes(masks, circular: bool = True) -> np.ndarray:
    """Centroid longitude (degrees, in [-180, 180)) of each mask (T, H, W); NaN where empty.

    circular=True: ``circular_centroid_column`` (where the target is on the sphere);
    circular=False: the plain image mean column (where a seam-blind tracker thinks it is).
    """
    masks = np.asarray(masks, dtype=bool)
    W = masks.shape[-1]
    out = np.full(len(masks), np.nan)
    for t, m in enumerate(masks):
        if m.any():
            col = circular_centroid_column(m) if circular else _mean_column(m)
            out[t] = col / W * 360 - 180
    return out


def track_identities(longitude, max_step_deg: float = 30.0) -> np.ndarray:
    """Track id per frame from a track's centroid longitudes (degrees, NaN where lost).

    Ids start at 0; a new id starts when the track reappears after a lost frame or its longitude
    moves by more than ``max_step_deg`` between consecutive frames (no wrapping: pass unwrapped
    longitudes for a seam-aware track, image longitudes for a seam-blind one); -1 where lost.
    """
    longitude = np.asarray(longitude, dtype=float)
    ids = np.full(len(longitude), -1)
    current, last = -1, np.nan
    for t, lon in enumerate(longitude):
        if np.isnan(lon):
            last = np.nan
            continue
        if np.isnan(last) or abs(lon - last) > max_step_deg:
            current += 1
        ids[t], last = current, lon
    return ids
