"""Depth maps from Depth Anything (transformers' ``DepthAnythingForDepthEstimation``).

WorldMemBench's Environment Memory (Section 4.4) reads depth from Depth Anything 3: the Spearman
correlation of the conditioning frame's depth map with the revisit frame's, and the Spherical
Reconstruction Score of both maps back-projected with the camera poses. transformers holds Depth
Anything V1/V2 (DA3 itself runs as an external command, not built yet); a checkpoint declares its
output in ``config.depth_estimation_type``:

* ``metric`` (e.g. the Depth-Anything-V2-Metric checkpoints): z-depth in metres, which both
  metrics read;
* ``relative``: an affine-invariant inverse depth per image (larger is nearer). The Spearman
  correlation of two such maps equals that of the true depths (each map is a decreasing function
  of its depth, and rank correlation ignores the same monotone map applied to both), so Depth
  reads it; the Reconstruction score needs metric depth and is NaN with that reason.

Frames go through the checkpoint's own image processor (resized to a multiple of the patch size,
ImageNet-normalised) and the prediction is resized back to the frame with the processor's
``post_process_depth_estimation``. Nothing is downloaded: the model loads from a local directory.
"""

from __future__ import annotations

import numpy as np
import torch
from transformers import AutoImageProcessor, DepthAnythingForDepthEstimation

from worldmemory.models.device import torch_device
from worldmemory.perception.base import local_model_dir, rgb_frames


class DepthAnythingDepth:
    """Per-frame depth (metric checkpoints) or relative inverse depth (relative ones) at the frame's size."""

    name = "depth-anything"

    def __init__(self, model: str, device: str = "cpu", batch_size: int = 8):
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.device = torch_device(device)  # a missing GPU fails before anything is read
        path = local_model_dir(model, "Depth Anything model")
        self.model = DepthAnythingForDepthEstimation.from_pretrained(
            path, dtype=torch.float32, local_files_only=True).eval().to(self.device)
        self.processor = AutoImageProcessor.from_pretrained(path, local_files_only=True)
        self.metric = self.model.config.depth_estimation_type == "metric"
        self.batch_size = int(batch_size)

    def estimate(self, frames: np.ndarray) -> np.ndarray:
        """frames (T, H, W, 3) uint8 RGB -> (T, H, W) float32 depth, or relative inverse depth."""
        frames = rgb_frames(frames)
        out = [self._batch(frames[i:i + self.batch_size]) for i in range(0, len(frames), self.batch_size)]
        return np.concatenate(out) if out else np.zeros(frames.shape[:3], np.float32)

    def _batch(self, batch: np.ndarray) -> np.ndarray:
        inputs = self.processor(images=list(batch), return_tensors="pt")
        with torch.inference_mode():
            outputs = self.model(pixel_values=inputs["pixel_values"].to(self.device))
        maps = self.processor.post_process_depth_estimation(outputs, target_sizes=[batch.shape[1:3]] * len(batch))
        return np.stack([m["predicted_depth"].float().cpu().numpy() for m in maps]).astype(np.float32)
