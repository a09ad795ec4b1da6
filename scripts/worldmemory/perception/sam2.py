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

Pre- and post-processing are the checkpoint's own processor's (``Sam2VideoProcessor``, loaded
from the model directory, as transformers' examples load it beside the model):
``init_video_session`` resizes each frame to the processor's square and normalises it with its
mean and std (ImageNet's for SAM2), ``add_inputs_to_inference_session(input_masks=...)`` resizes
the prompt mask to that square (bilinear, antialiased, >= 0.5), and ``post_process_masks`` resizes
the predicted low-resolution mask logits back to the frame (bilinear) and thresholds them at
``threshold``. A checkpoint directory therefore holds its processor's configuration too (the
released ones do, as JSON, which ``prefetch_perception`` fetches). The processors need
torchvision: envs/perception.yaml and .venv-perception/ hold it. Nothing is downloaded: model and
processor load from a local directory.
"""

from __future__ import annotations

import numpy as np
import torch
from transformers import Sam2VideoModel, Sam2VideoProcessor

from worldmemory.models.device import torch_device
from worldmemory.perception.base import local_model_dir, local_processor, track_inputs

OBJECT_ID = 1  # the one object of a session: one target per track() call


class SamVideoTracker:
    """Target masks through a video by a transformers SAM video model prompted with the target's mask
    (module docstring); subclasses name the model class and its processor class.

    ``model``: a local directory holding the saved model (config.json and weights) and its saved
    processor, ``device``: a torch device (on CUDA the model runs under bfloat16 autocast, as SAM2's
    own video predictor does; float32 elsewhere), ``threshold``: the mask-logit threshold (0: a
    probability of one half), ``min_pixels``: a smaller mask is empty (out of view).
    """

    name: str
    what: str  # the saved model, as the missing-directory error names it
    model_class: type
    processor_class: type

    def __init__(self, model: str, device: str = "cpu", threshold: float = 0.0, min_pixels: int = 20):
        self.device = torch_device(device)  # a missing GPU fails before anything is read
        path = local_model_dir(model, self.what)
        self.processor = local_processor(path, self.processor_class, self.what)
        self.model = self.model_class.from_pretrained(path, dtype=torch.float32, local_files_only=True)
        self.model = self.model.eval().to(self.device)
        self.threshold = float(threshold)
        self.min_pixels = int(min_pixels)

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
        session = self.processor.init_video_session(video=frames[start:], inference_device=self.device,
                                                    dtype=torch.float32)
        self.processor.add_inputs_to_inference_session(session, frame_idx=0, obj_ids=OBJECT_ID, input_masks=first)
        bf16 = torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.device.type == "cuda")
        with bf16:
            for step in self.model.propagate_in_video_iterator(session, start_frame_idx=0):
                masks = self.processor.post_process_masks([step.pred_masks.float()], original_sizes=[[h, w]],
                                                          mask_threshold=self.threshold)
                mask = masks[0][0, 0].cpu().numpy()
                if mask.sum() >= self.min_pixels:
                    out[start + step.frame_idx] = mask
        return out


class Sam2Tracker(SamVideoTracker):
    """Target masks through a video by SAM2 (``Sam2VideoModel`` and its ``Sam2VideoProcessor``),
    prompted with the target's mask (module docstring)."""

    name = "sam2"
    what = "SAM2 video model"
    model_class = Sam2VideoModel
    processor_class = Sam2VideoProcessor
