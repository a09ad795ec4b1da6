"""Frames per second of each learned estimator, on random weights of the real architecture sizes.

    python -m worldmemory.perception.throughput --device cuda               # a GPU node
    python -m worldmemory.perception.throughput --sizes tiny --frames 4     # a check of the script

Random weights cost what released ones cost (the same classes, shapes and kernels), so this needs
no download. Each estimator is saved to a temporary directory and loaded by its backend, as a
prefetched checkpoint is, then run over ``--frames`` random frames of ``--height`` x ``--width``
(a world model's 480 x 832 by default) ``--repeats`` times after one warm-up run. One JSON line per
estimator: its backend, the architecture it was built with, parameters (millions), frames/s
(median over repeats) and the peak GPU memory. At the real sizes the parameter counts are the
released checkpoints' (DINOv2-B with registers 86.6 M, CLIP ViT-L/14 vision 303.2 M and whole
427.6 M, Depth Anything V2-L 335.3 M, SAM2.1 Hiera-L 224.4 M). The VLM judges are left out: a served model's
throughput is its server's, and the paper's judge is given by name only. SAM2 runs through its
processor, which needs torchvision (envs/perception.yaml, .venv-perception/).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

REAL = {
    # facebook/dinov2-with-registers-base
    "dinov2": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072,
                   patch_size=14, image_size=518, num_register_tokens=4),
    # openai/clip-vit-large-patch14: its vision tower, projection and text tower
    "clip": dict(hidden_size=1024, intermediate_size=4096, num_hidden_layers=24, num_attention_heads=16,
                 patch_size=14, image_size=224),
    "clip_projection": 768,
    "clip_text": dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12),
    # Depth Anything V2 Large: a DINOv2-L backbone and its DPT head
    "depth": dict(backbone=dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                intermediate_size=4096, patch_size=14, image_size=518,
                                out_indices=[5, 12, 18, 24]),
                  neck_hidden_sizes=[256, 512, 1024, 1024], fusion_hidden_size=256, size=518),
    # SAM2.1 Hiera-L (hidden 144, stages 2-6-36-4, global attention in blocks 23, 33, 43)
    "sam2": dict(dims=[144, 288, 576, 1152], blocks=[2, 6, 36, 4], heads=[2, 4, 8, 16], windows=[8, 4, 16, 8],
                 global_blocks=[23, 33, 43], background=[7, 7], size=1024, fpn=256, memory_layers=4),
}
TINY = {
    "dinov2": dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                   patch_size=14, image_size=28, num_register_tokens=4),
    "clip": dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                 patch_size=14, image_size=28),
    "clip_projection": 8,
    "clip_text": dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, vocab_size=64,
                      max_position_embeddings=8),
    "depth": dict(backbone=dict(hidden_size=32, num_hidden_layers=4, num_attention_heads=2, intermediate_size=64,
                                patch_size=14, image_size=28, out_indices=[1, 2, 3, 4]),
                  neck_hidden_sizes=[8, 16, 32, 32], fusion_hidden_size=16, size=28),
    "sam2": dict(dims=[8, 16, 32, 64], blocks=[1, 1, 1, 1], heads=[1, 1, 1, 1], windows=[4, 4, 4, 2],
                 global_blocks=[0], background=[4, 4], size=64, fpn=128, memory_layers=1),
}


def dinov2(sizes: dict, path: Path, device: str):
    from transformers import Dinov2WithRegistersConfig, Dinov2WithRegistersModel

    from worldmemory.perception.dinov2 import Dinov2Features

    Dinov2WithRegistersModel(Dinov2WithRegistersConfig(**sizes["dinov2"])).save_pretrained(path)
    backend = Dinov2Features.from_pretrained(str(path), device)
    return backend, lambda frames: backend.patch_grid(frames)


def clip(sizes: dict, path: Path, device: str):
    from transformers import CLIPVisionConfig, CLIPVisionModel

    from worldmemory.perception.clip_features import ClipFeatures

    CLIPVisionModel(CLIPVisionConfig(**sizes["clip"])).save_pretrained(path)
    backend = ClipFeatures.from_pretrained(str(path), device)
    return backend, lambda frames: backend.patch_grid(frames)


def aesthetic(sizes: dict, path: Path, device: str):
    import torch
    from torch import nn
    from transformers import CLIPConfig, CLIPImageProcessorPil, CLIPModel

    from worldmemory.perception.aesthetic import LaionAesthetic

    vision, dim = sizes["clip"], sizes["clip_projection"]
    config = CLIPConfig(projection_dim=dim, text_config=sizes["clip_text"], vision_config=vision)
    CLIPModel(config).save_pretrained(path)
    side = vision["image_size"]
    CLIPImageProcessorPil(size={"shortest_edge": side}, crop_size={"height": side, "width": side}).save_pretrained(path)
    head = nn.Linear(dim, 1)
    torch.save({"weight": head.weight.detach(), "bias": head.bias.detach()}, path / "head.pth")
    backend = LaionAesthetic(str(path), str(path / "head.pth"), device=device)
    return backend, backend.score


def depth(sizes: dict, path: Path, device: str):
    from transformers import DepthAnythingConfig, DepthAnythingForDepthEstimation, Dinov2Config, DPTImageProcessorPil

    from worldmemory.perception.depth import DepthAnythingDepth

    spec = sizes["depth"]
    backbone = Dinov2Config(**spec["backbone"], out_features=[f"stage{i}" for i in spec["backbone"]["out_indices"]],
                            reshape_hidden_states=False)
    config = DepthAnythingConfig(backbone_config=backbone, reassemble_hidden_size=spec["backbone"]["hidden_size"],
                                 neck_hidden_sizes=spec["neck_hidden_sizes"],
                                 fusion_hidden_size=spec["fusion_hidden_size"], depth_estimation_type="metric",
                                 max_depth=20)
    DepthAnythingForDepthEstimation(config).save_pretrained(path)
    DPTImageProcessorPil(size={"height": spec["size"], "width": spec["size"]}, keep_aspect_ratio=True,
                         ensure_multiple_of=14, do_pad=False).save_pretrained(path)
    backend = DepthAnythingDepth(str(path), device)
    return backend, backend.estimate


def sam2(sizes: dict, path: Path, device: str):
    from transformers import Sam2ImageProcessor, Sam2VideoConfig, Sam2VideoModel, Sam2VideoProcessor
    from transformers import Sam2VideoVideoProcessor as VideoProcessor

    from worldmemory.perception.sam2 import Sam2Tracker

    s = sizes["sam2"]
    size, dims = s["size"], s["dims"]
    backbone = dict(model_type="sam2_hiera_det_model", hidden_size=dims[0], image_size=[size, size],
                    blocks_per_stage=s["blocks"], embed_dim_per_stage=dims, num_attention_heads_per_stage=s["heads"],
                    window_size_per_stage=s["windows"], global_attention_blocks=s["global_blocks"],
                    window_positional_embedding_background_size=s["background"])
    vision = dict(model_type="sam2_vision_model", backbone_config=backbone, backbone_channel_list=dims[::-1],
                  backbone_feature_sizes=[[size // 4] * 2, [size // 8] * 2, [size // 16] * 2], fpn_hidden_size=s["fpn"])
    config = Sam2VideoConfig(
        image_size=size, vision_config=vision,
        prompt_encoder_config=dict(hidden_size=s["fpn"], image_size=size, patch_size=16),
        mask_decoder_config=dict(hidden_size=s["fpn"]), memory_attention_hidden_size=s["fpn"],
        memory_attention_num_layers=s["memory_layers"], memory_attention_rope_feat_sizes=[size // 16] * 2,
        memory_encoder_hidden_size=s["fpn"], mask_downsampler_embed_dim=s["fpn"], memory_fuser_embed_dim=s["fpn"])
    Sam2VideoModel(config).save_pretrained(path)
    square = {"height": size, "width": size}
    masks = {"height": size // 4, "width": size // 4}
    Sam2VideoProcessor(image_processor=Sam2ImageProcessor(size=square, mask_size=masks),
                       video_processor=VideoProcessor(size=square)).save_pretrained(path)
    backend = Sam2Tracker(str(path), device)

    def track(frames):
        first = np.zeros(frames.shape[1:3], bool)
        first[frames.shape[1] // 3:frames.shape[1] // 2, frames.shape[2] // 3:frames.shape[2] // 2] = True
        return backend.track(frames, first)

    return backend, track


ESTIMATORS = {"features/dinov2": dinov2, "features/clip": clip, "aesthetic_quality/laion-aesthetic": aesthetic,
              "depth/depth-anything": depth, "tracking/sam2": sam2}


def measure(name: str, sizes: dict, frames: np.ndarray, device: str, repeats: int) -> dict:
    """One estimator's row: built at ``sizes``, loaded by its backend, timed over ``frames``."""
    import torch

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory(prefix="worldmemory-throughput-") as tmp:
        backend, run = ESTIMATORS[name](sizes, Path(tmp), device)
    cuda = device.startswith("cuda")
    run(frames)  # warm-up: kernels chosen, memory allocated
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(frames)
        if cuda:
            torch.cuda.synchronize()
        rates.append(len(frames) / (time.perf_counter() - start))
    return {"estimator": name, "architecture": "real" if sizes is REAL else "tiny",
            "params_m": round(sum(p.numel() for p in backend.model.parameters()) / 1e6, 3),
            "frames": len(frames), "height": frames.shape[1], "width": frames.shape[2],
            "frames_per_s": round(statistics.median(rates), 2),
            "peak_gpu_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--sizes", choices=["real", "tiny"], default="real")
    ap.add_argument("--frames", type=int, default=32)
    ap.add_argument("--height", type=int, default=480)
    ap.add_argument("--width", type=int, default=832)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", nargs="*", choices=list(ESTIMATORS), default=list(ESTIMATORS))
    args = ap.parse_args(argv)
    frames = np.random.default_rng(0).integers(0, 256, (args.frames, args.height, args.width, 3), dtype=np.uint8)
    sizes = REAL if args.sizes == "real" else TINY
    for name in args.only:
        print(json.dumps(measure(name, sizes, frames, args.device, args.repeats)), flush=True)


if __name__ == "__main__":
    main()
