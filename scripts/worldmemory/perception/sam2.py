"""Target masks from SAM-family video segmentation: SAM2 here (transformers' ``Sam2VideoModel``),
SAM3's tracker in :mod:`worldmemory.perception.sam3`, both through :class:`SamVideoTracker`.

WorldMemBench (Section 4.4, Appendix C) reads Human and Object memory through a SAM-based video
tracker prompted with the target's mask in the conditioning frame, one that re-finds the target
after it left the view (departure D_k) and came back (return R_k); PersistBench (Method 2) runs
SAM2 on the generated video from the target's mask in its first frame. :class:`Sam2Tracker` is
that tracker; :class:`~worldmemory.perception.tracking.FlowTracker` is the weight-free stand-in.

How a target is followed: the given mask is a mask prompt on frame ``start``. SAM2 takes a mask
prompt as the truth of its frame (its output there is the prompt itself), encodes it into its
memory bank, and segments each later frame by attending to that memory, to the memories of the
last ``num_maskmem - 1`` frames and to the object pointers of up to
``max_object_pointers_in_encoder`` frames. The prompted frame's memory is attended to in every
frame to the end of the video, so a target that left the view is matched against it again when it
comes back: this is how SAM2 re-finds a target after a departure. Its occlusion head decides
whether the target is in view; where it says not, the model's mask logits are all very low
(-1024) and the mask is empty. A mask of fewer than ``min_pixels`` pixels is empty too (out of
view), as for FlowTracker.

Pre- and post-processing: the checkpoint's ``Sam2VideoProcessor`` needs torchvision, which the
workflow's environments do not install, so its three steps are done here in torch, as it does
them: each frame is resized to the model's square ``config.image_size`` (bilinear, antialiased,
rounded to uint8 levels as its uint8 resize does), scaled to [0, 1] and normalised with its video
processor's mean and std (:func:`video_normalisation`: ImageNet's for SAM2); the prompt mask is
resized to the same square (bilinear, antialiased, >= 0.5); the predicted low-resolution mask
logits are resized back to the frame (bilinear) and thresholded at ``threshold``. Nothing is
downloaded: the model loads from a local directory.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from transformers import Sam2VideoInferenceSession, Sam2VideoModel
from transformers.image_utils import IMAGENET_DEFAULT_MEAN, IMAGENET_DEFAULT_STD

from worldmemory.models.device import torch_device
from worldmemory.perception.base import local_model_dir, track_inputs

OBJECT_ID = 1  # the one object of a session: one target per track() call


def video_normalisation(path: Path, mean, std) -> tuple[list[float], list[float]]:
    """The (mean, std) a checkpoint's video processor normalises with, read where transformers'
    ``AutoVideoProcessor.from_pretrained`` reads its settings: the ``video_processor`` entry of
    processor_config.json (the nested layout of transformers 5), else video_preprocessor_config.json,
    else preprocessor_config.json; ``mean`` / ``std`` (the processor class's defaults) where the
    checkpoint saved none or its settings leave them out."""
    settings = None
    nested = path / "processor_config.json"
    if nested.is_file():
        settings = json.loads(nested.read_text()).get("video_processor")
    for name in ("video_preprocessor_config.json", "preprocessor_config.json"):
        if settings is None and (path / name).is_file():
            settings = json.loads((path / name).read_text())
    settings = settings or {}
    return list(settings.get("image_mean", mean)), list(settings.get("image_std", std))


class SamVideoTracker:
    """Target masks through a video by a transformers SAM video model prompted with the target's mask
    (module docstring); subclasses name the model: its class, its inference-session class and its
    video processor's default normalisation (used where the checkpoint saved no processor).

    ``model``: a local directory holding the saved model (config.json and weights), ``device``: a
    torch device (on CUDA the model runs under bfloat16 autocast, as SAM2's own video predictor
    does; float32 elsewhere), ``threshold``: the mask-logit threshold (0: a probability of one
    half), ``min_pixels``: a smaller mask is empty (out of view).
    """

    name: str
    what: str  # the saved model, as the missing-directory error names it
    model_class: type
    session_class: type
    normalisation: tuple  # (mean, std): the video processor class's defaults

    def __init__(self, model: str, device: str = "cpu", threshold: float = 0.0, min_pixels: int = 20):
        self.device = torch_device(device)  # a missing GPU fails before anything is read
        path = local_model_dir(model, self.what)
        self.model = self.model_class.from_pretrained(path, dtype=torch.float32, local_files_only=True)
        self.model = self.model.eval().to(self.device)
        self.size = int(self.model.config.image_size)
        self.threshold = float(threshold)
        self.min_pixels = int(min_pixels)
        mean, std = video_normalisation(path, *self.normalisation)
        self.mean = torch.tensor(mean, device=self.device).view(1, 3, 1, 1)
        self.std = torch.tensor(std, device=self.device).view(1, 3, 1, 1)

    def track(self, frames: np.ndarray, first_mask: np.ndarray, start: int = 0, camera=None) -> np.ndarray:
        """frames: (T, H, W, 3) uint8 RGB; first_mask: (H, W) bool, the target in frames[start]
        (frames before it get empty masks); camera: accepted for FlowTracker's interface and
        ignored (the model re-finds a target from its memory bank, not from the camera path).
        Returns (T, H, W) bool: the target's mask in every frame, empty where it is not in view."""
        frames, first = track_inputs(frames, first_mask, start)
        T, h, w = frames.shape[:3]
        out = np.zeros((T, h, w), dtype=bool)
        if not first.any():
            return out
        # the session holds frames start.. only: its frame 0 is the video's frame start
        session = self.session_class(
            video=torch.cat([self._pixels(frame) for frame in frames[start:]]), video_height=h, video_width=w,
            inference_device=self.device, inference_state_device=self.device, video_storage_device=self.device,
            dtype=torch.float32)
        # what the processor's add_inputs_to_inference_session(input_masks=...) does
        session.add_mask_inputs(session.obj_id_to_idx(OBJECT_ID), 0, self._prompt(first))
        session.obj_with_new_inputs = [OBJECT_ID]
        bf16 = torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.device.type == "cuda")
        with bf16:
            for step in self.model.propagate_in_video_iterator(session, start_frame_idx=0):
                logits = F.interpolate(step.pred_masks.float(), size=(h, w), mode="bilinear", align_corners=False)
                mask = (logits[0, 0] > self.threshold).cpu().numpy()
                if mask.sum() >= self.min_pixels:
                    out[start + step.frame_idx] = mask
        return out

    def _pixels(self, frame: np.ndarray) -> torch.Tensor:
        """One (H, W, 3) uint8 frame as the model's (1, 3, S, S) input."""
        x = torch.tensor(frame, device=self.device).permute(2, 0, 1)[None].float()
        x = F.interpolate(x, size=(self.size, self.size), mode="bilinear", align_corners=False, antialias=True)
        return (x.round().clamp(0, 255) / 255 - self.mean) / self.std

    def _prompt(self, mask: np.ndarray) -> torch.Tensor:
        """The (H, W) bool mask as the model's (1, 1, S, S) 0/1 mask prompt."""
        x = torch.tensor(mask, device=self.device, dtype=torch.float32)[None, None]
        x = F.interpolate(x, size=(self.size, self.size), mode="bilinear", align_corners=False, antialias=True)
        return (x >= 0.5).float()


class Sam2Tracker(SamVideoTracker):
    """Target masks through a video by SAM2 (``Sam2VideoModel``), prompted with the target's mask
    (module docstring); normalised as ``Sam2VideoVideoProcessor`` does by default (ImageNet's mean
    and std) unless the checkpoint's saved processor says otherwise."""

    name = "sam2"
    what = "SAM2 video model"
    model_class = Sam2VideoModel
    session_class = Sam2VideoInferenceSession
    normalisation = (IMAGENET_DEFAULT_MEAN, IMAGENET_DEFAULT_STD)
