"""What every perception backend shares: the interfaces of the capabilities and Unavailable."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np

BLANK_STD = 0.01  # a frame whose intensities (in [0, 1]) vary less shows nothing: black, uniform


def shown_frames(frames) -> np.ndarray:
    """(T,) bool: the frames (T, H, W, 3) uint8 that show anything, their grey (channel mean)
    varying by at least BLANK_STD."""
    grey = np.asarray(frames, dtype=np.float32).mean(axis=3) / 255.0
    return grey.std(axis=(1, 2)) >= BLANK_STD


class Unavailable(Exception):
    """A capability without a backend; str(exception) is the reason recorded beside a NaN."""


def rgb_frames(frames) -> np.ndarray:
    """``frames`` as an (N, H, W, 3) uint8 RGB array; ValueError naming what was given otherwise."""
    frames = np.asarray(frames)
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise ValueError(f"expected (N, H, W, 3) uint8 RGB frames, got {frames.shape} {frames.dtype}")
    return frames


def local_model_dir(model: str, what: str) -> Path:
    """``model`` as the local directory of a saved model (config.json inside); FileNotFoundError
    naming ``what`` and how to get it otherwise (the workflow's prefetch step, or a local directory)."""
    path = Path(model)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path} holds no saved {what} (config.json): fetch it with "
                                "`./run.sh snakemake --until prefetch_perception` (rule prefetch_perception), "
                                "or give a local model directory")
    return path


PROCESSOR_FILES = ("processor_config.json", "preprocessor_config.json")  # where a saved processor starts


def local_processor(path: Path, loader, what: str):
    """The processor saved beside the model in ``path``, loaded offline by ``loader`` (a processor
    class, or AutoProcessor); FileNotFoundError naming the files looked for and the fix where the
    directory holds none (transformers' own error would not say which model it was for)."""
    if not any((path / name).is_file() for name in PROCESSOR_FILES):
        raise FileNotFoundError(f"{path} holds the {what} but not its processor (expected "
                                f"{' or '.join(PROCESSOR_FILES)}): fetch the checkpoint with `./run.sh snakemake "
                                "--until prefetch_perception`, which fetches its *.json, or save its processor "
                                "there (processor.save_pretrained(DIR))")
    return loader.from_pretrained(path, local_files_only=True)


def track_inputs(frames, first_mask, start: int) -> tuple[np.ndarray, np.ndarray]:
    """A tracker's (frames, first mask) checked: RGB frames (rgb_frames), a bool mask of their
    size, ``start`` one of their indices; ValueError naming what does not fit."""
    frames = rgb_frames(frames)
    first = np.asarray(first_mask, dtype=bool)
    if first.shape != frames.shape[1:3]:
        raise ValueError(f"first_mask {first.shape} does not match frames {frames.shape}")
    if not 0 <= start < len(frames):
        raise ValueError(f"start {start} outside 0..{len(frames) - 1}")
    return frames, first


class Tracker(Protocol):
    """Target masks through a video, from the target's mask in its first frame."""

    name: str

    def track(self, frames: np.ndarray, first_mask: np.ndarray) -> np.ndarray:
        """frames (T, H, W, 3) uint8 RGB, first_mask (H, W) bool -> (T, H, W) bool, empty where
        the target is not in view."""


class CameraEstimator(Protocol):
    """Camera poses of a video from its pixels and the intrinsics."""

    name: str

    def estimate(self, frames: np.ndarray, K: np.ndarray) -> np.ndarray:
        """frames (T, H, W, 3) uint8 RGB, K (3, 3) -> (T, 4, 4) camera-to-world poses (OpenCV
        convention), frame 0 the identity, translation up to one scale."""


class FrameQuality(Protocol):
    """A no-reference per-frame quality predictor, with its own scale."""

    name: str

    def score(self, frames: np.ndarray) -> np.ndarray:
        """frames (N, H, W, 3) uint8 RGB -> (N,) raw scores on the backend's scale."""

    @classmethod
    def normalise(cls, raw: float) -> float:
        """A video's mean raw score mapped to [0, 1], 1 the best (a classmethod: scoring
        normalises cached raw scores without loading the predictor)."""
