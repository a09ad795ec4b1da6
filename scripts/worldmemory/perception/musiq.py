"""Imaging Quality as the paper reads it: MUSIQ with its SPAQ checkpoint, through pyiqa.

WorldMemBench (Section 4.2) scores every fourth frame with MUSIQ-SPAQ and reports it normalised to
[0, 1]. VBench's imaging_quality reads the same model the same way, and its recipe is followed
here (the paper gives none): pyiqa's ``MUSIQ`` with the SPAQ weights (pyiqa's
``musiq_spaq_ckpt-358bb6af.pth``, one output, 0-100), each frame as RGB in [0, 1]; a frame whose
longer side exceeds 512 pixels is first resized so that it is 512 (torchvision's ``resize`` of the
uint8 frame, bilinear without antialiasing: VBench's default ``longer`` mode); a video's mean
raw score is normalised as raw / 100 (video_quality.NORMALISATION), clipped.

The weights are a file (``weights``), read by pyiqa's own loader (``create_metric("musiq-spaq",
pretrained_model_path=...)``, strict: a file of another model fails here). Nothing is
downloaded: pyiqa fetches from the Hugging Face Hub only when it is given no path.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from worldmemory.models.device import torch_device
from worldmemory.perception.base import rgb_frames

METRIC = "musiq-spaq"  # pyiqa's name: MUSIQ, one output (SPAQ's 0-100 MOS)
LONGER_SIDE = 512  # VBench's `longer` preprocessing


class MusiqQuality:
    """MUSIQ-SPAQ raw scores per frame (0-100, higher is better) and their [0, 1] normalisation.

    ``weights``: pyiqa's MUSIQ-SPAQ state dict (musiq_spaq_ckpt-358bb6af.pth), ``device``: a torch device.
    """

    name = "musiq-spaq"
    low, high = 0.0, 100.0  # video_quality.NORMALISATION["imaging_quality"]: VBench divides by 100

    def __init__(self, weights: str, device: str = "cpu"):
        import pyiqa  # torchvision and pyiqa load only when this backend runs (.venv-perception/)

        self.device = torch_device(device)  # a missing GPU fails before anything is read
        if not Path(weights).is_file():
            raise FileNotFoundError(f"MUSIQ weights {weights} do not exist: expected pyiqa's "
                                    "musiq_spaq_ckpt-358bb6af.pth; place it there "
                                    "(docs/perception.md, \"Learned estimators\")")
        try:
            self.metric = pyiqa.create_metric(METRIC, pretrained_model_path=str(weights), device=self.device)
        except (RuntimeError, KeyError, TypeError, AttributeError) as e:  # load_state_dict's mismatches
            cause = " ".join(str(e).split())[:300]
            raise ValueError(f"{weights} is not a MUSIQ-SPAQ state dict for pyiqa's MUSIQ ({type(e).__name__}: "
                             f"{cause}); expected pyiqa's musiq_spaq_ckpt-358bb6af.pth") from None

    def score(self, frames: np.ndarray) -> np.ndarray:
        """frames (N, H, W, 3) uint8 RGB -> (N,) raw MUSIQ-SPAQ scores, one frame at a time (as
        VBench: MUSIQ's multi-scale patches depend on each frame's size)."""
        return np.array([float(self.metric(self.pixels(frame).to(self.device)))
                         for frame in rgb_frames(frames)], dtype=float)

    @staticmethod
    def pixels(frame: np.ndarray):
        """One (H, W, 3) uint8 frame as MUSIQ's (1, 3, H', W') input in [0, 1], the longer side at
        most LONGER_SIDE (VBench's ``longer`` mode: int() of the scaled sides)."""
        import torch
        from torchvision.transforms.functional import resize

        x = torch.from_numpy(np.ascontiguousarray(frame)).permute(2, 0, 1)[None]
        h, w = frame.shape[:2]
        if max(h, w) > LONGER_SIDE:
            scale = LONGER_SIDE / max(h, w)
            x = resize(x, [int(scale * h), int(scale * w)], antialias=False)
        return x.float() / 255.0

    @classmethod
    def normalise(cls, raw: float) -> float:
        return float(np.clip((raw - cls.low) / (cls.high - cls.low), 0.0, 1.0))
