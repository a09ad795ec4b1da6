"""Training windows drawn from a directory of the user's own video clips (*Tracking Is Not
Permanence*, Section 3.5 (i) and (iv), Appendix C).

The paper trains (i) and (iv) on natural video it cannot ship (EgoDex, EPIC-KITCHENS-100, DROID,
FunQA): a curriculum whose config names ``clips_dir`` draws its windows from the video files there
instead of the renderer. A window is ``n_frames`` frames ``frame_step`` apart (Appendix C's (i):
"16-frame windows at frame step 2") from a random start in a random clip, every clip equally
likely; its frames are decoded with decord (or ffmpeg, common.video.read_video, where decord
fails) and squash-resized by area to the model's input (``size`` px square, as the backends
resize), so a batch of clips of any resolution stacks. Windows are decoded per batch: nothing is
pooled, as the renderer's curricula.
"""

from __future__ import annotations

from pathlib import Path

import decord
import numpy as np
import torch
import torch.nn.functional as F

from worldmemory.common.video import read_video, video_shape

VIDEO_SUFFIXES = (".mp4", ".mkv", ".avi", ".mov", ".webm")


class ClipDirectory:
    """The video files under ``root`` (recursively, sorted) long enough for one window."""

    def __init__(self, root, n_frames: int, size: int, frame_step: int = 1):
        self.root, self.n_frames, self.size, self.step = Path(root), n_frames, size, frame_step
        if frame_step < 1 or n_frames < 1:
            raise ValueError(f"n_frames ({n_frames}) and frame_step ({frame_step}) must be positive")
        if not self.root.is_dir():
            raise FileNotFoundError(f"clips_dir {self.root} is not a directory: point the curriculum's clips_dir at "
                                    f"a directory of video files ({', '.join(VIDEO_SUFFIXES)})")
        span = (n_frames - 1) * frame_step + 1
        paths = sorted(p for p in self.root.rglob("*") if p.suffix.lower() in VIDEO_SUFFIXES and p.is_file())
        self.paths, self.lengths = [], []
        for path in paths:
            length = video_shape(path)[0]
            if length >= span:
                self.paths.append(path)
                self.lengths.append(length)
        if not self.paths:
            raise ValueError(f"clips_dir {self.root} holds {len(paths)} video file(s), none with the {span} frames "
                             f"a window needs ({n_frames} frames, frame step {frame_step}): add longer clips or "
                             "lower frame_step")

    def window(self, index: int, start: int) -> np.ndarray:
        """uint8 (n_frames, size, size, 3): clip ``index`` from frame ``start``, every ``frame_step``-th frame."""
        path, frames = self.paths[index], list(range(start, start + self.n_frames * self.step, self.step))
        try:
            clip = decord.VideoReader(str(path), ctx=decord.cpu(0)).get_batch(frames).asnumpy()
        except decord.DECORDError:  # e.g. widths where decord copies a padded row buffer
            clip = read_video(path)[frames]
        return squash_resize(clip, self.size)

    def sample(self, rng: np.random.Generator, batch_size: int) -> np.ndarray:
        """uint8 (B, n_frames, size, size, 3): windows of random clips at random starts."""
        span = (self.n_frames - 1) * self.step + 1
        clips = rng.integers(0, len(self.paths), batch_size)
        return np.stack([self.window(i, int(rng.integers(0, self.lengths[i] - span + 1))) for i in clips])


def squash_resize(frames: np.ndarray, size: int) -> np.ndarray:
    """uint8 (T, H, W, 3) -> (T, size, size, 3) by area averaging (aspect ratio not kept), rounded."""
    if frames.shape[1:3] == (size, size):
        return frames
    x = torch.from_numpy(frames).permute(0, 3, 1, 2).float()
    x = F.interpolate(x, size=(size, size), mode="area").round_().clamp_(0, 255)
    return x.to(torch.uint8).permute(0, 2, 3, 1).numpy()
