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
classes: how a target is followed, re-found and thresholded, and the torch pre- and
post-processing, are described in :mod:`worldmemory.perception.sam2`.

Normalisation: SAM3 normalises with mean = std = (0.5, 0.5, 0.5), not SAM2's ImageNet values:
transformers' ``Sam3ImageProcessor`` defaults to them (``IMAGENET_STANDARD_MEAN`` / ``_STD``), and
so does the SAM3 repository's video loading (``load_video_frames`` and the video predictor's
``image_mean`` / ``image_std``, facebookresearch/sam3). transformers has no SAM3 video processor
class of its own: ``Sam3TrackerVideoProcessor`` takes the video processor its checkpoint's
processor_config.json names, whose class default (``Sam2VideoVideoProcessor``) is ImageNet's. So
the values are read from the checkpoint's saved processor when it has one
(:func:`~worldmemory.perception.sam2.video_normalisation`) and are (0.5, 0.5, 0.5) otherwise.

The checkpoint: a saved ``Sam3TrackerVideoModel``, or a full SAM3 video checkpoint such as
facebook/sam3 (config ``model_type`` ``sam3_video``): transformers then builds the tracker from its
``tracker_config`` and loads the ``tracker_model.*`` weights, skipping the detector's.
"""

from __future__ import annotations

from transformers import Sam3TrackerVideoInferenceSession, Sam3TrackerVideoModel
from transformers.image_utils import IMAGENET_STANDARD_MEAN, IMAGENET_STANDARD_STD

from worldmemory.perception.sam2 import SamVideoTracker


class Sam3Tracker(SamVideoTracker):
    """Target masks through a video by SAM3's tracker (``Sam3TrackerVideoModel``), prompted with the
    target's mask; options as :class:`~worldmemory.perception.sam2.SamVideoTracker`."""

    name = "sam3"
    what = "SAM3 tracker video model"
    model_class = Sam3TrackerVideoModel
    session_class = Sam3TrackerVideoInferenceSession
    normalisation = (IMAGENET_STANDARD_MEAN, IMAGENET_STANDARD_STD)
