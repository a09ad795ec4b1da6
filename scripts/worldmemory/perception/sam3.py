"""Target masks from SAM3's video tracker (transformers' ``Sam3TrackerVideoModel``), prompted by a mask.

PersistBench tracks its targets with SAM3; WorldMemBench reads Human and Object memory through a
SAM-based tracker. SAM3 (Carion et al., 2025, "SAM 3: Segment Anything with Concepts") is a
text-prompted detector and a memory-based tracker on one shared backbone. Only the tracker is used
here (``Sam3TrackerVideoModel``, not ``Sam3VideoModel``, the detector-plus-tracker that needs a
text prompt): it is SAM2's tracker (memory attention over a memory bank that always holds the
prompted frame, object pointers, an occlusion head, a mask prompt taken as the truth of its frame)
on SAM3's Perception Encoder ViT (1008-pixel square input, 14-pixel patches, 288 x 288 mask
logits). Its transformers API is SAM2's (same inference session, ``add_mask_inputs``,
``propagate_in_video_iterator``; ``Sam3TrackerVideoProcessor`` is ``Sam2VideoProcessor`` renamed),
so :class:`Sam3Tracker` is :class:`~worldmemory.perception.sam2.SamVideoTracker` with SAM3's
classes: how a target is followed, re-found and thresholded, and the pre- and post-processing by
the checkpoint's own processor (here ``Sam3TrackerVideoProcessor``), are described in
:mod:`worldmemory.perception.sam2`.

Normalisation: the SAM3 repository normalises frames with mean = std = (0.5, 0.5, 0.5), not SAM2's
ImageNet values (``load_video_frames`` and the video predictor's ``image_mean`` / ``image_std``,
facebookresearch/sam3), as transformers' ``Sam3ImageProcessor`` does by default. The frames go
through the video processor that the checkpoint's processor_config.json names, at its saved
settings, whose class default (``Sam2VideoVideoProcessor``) is ImageNet's: so what normalises a
video is the checkpoint's saved processor, as in transformers' own use of it, and a checkpoint
saved without its mean and std would be read with ImageNet's.

The checkpoint: a saved ``Sam3TrackerVideoModel``, or a full SAM3 video checkpoint such as
facebook/sam3 (config ``model_type`` ``sam3_video``): transformers then builds the tracker from its
``tracker_config`` and loads the ``tracker_model.*`` weights, skipping the detector's.
"""

from __future__ import annotations

from transformers import Sam3TrackerVideoModel, Sam3TrackerVideoProcessor

from worldmemory.perception.sam2 import SamVideoTracker


class Sam3Tracker(SamVideoTracker):
    """Target masks through a video by SAM3's tracker (``Sam3TrackerVideoModel``), prompted with the
    target's mask, through its ``Sam3TrackerVideoProcessor``; options as
    :class:`~worldmemory.perception.sam2.SamVideoTracker`."""

    name = "sam3"
    what = "SAM3 tracker video model"
    model_class = Sam3TrackerVideoModel
    processor_class = Sam3TrackerVideoProcessor
