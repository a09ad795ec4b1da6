"""The autoregressive readout: teacher-forced log-likelihood of the reveal chunk (Table 8, Figure 5b).

"Tracking Is Not Permanence" (../shared/seeds/002_711b6a3281a3fb41.txt), Section 3.4
("Autoregressive"), Section 4.5 and Appendix F, for Cosmos-Predict1-4B (or any model with its
call, ``token_log_likelihoods``):

* Teacher forcing: a sequence is the tokens of chunks 0 .. REVEAL_CHUNK of a clip, and the model's
  log p of each token given every token before it (raster order over (t, h, w)) is read at once.
* "Both sequences share the absent world's prefix": for a pair (with ball, without ball) of
  ``cosmos_scenes``, the two sequences are the without-ball clip's chunks 0..3 followed by chunk 4
  of either clip. Only the first differing chunk (REVEAL_CHUNK) is scored: after it the present
  sequence has already shown the model the ball.
* Evidence = sum over the box region's tokens of log p(with-ball chunk) - log p(without-ball
  chunk), in nats (``pair_evidence``).
* The prefix check: the tokenizer is causal and the two clips are pixel-identical before the
  reveal, so their prefix tokens should agree; the number that differ is recorded per scene
  ("identical between the two worlds in 29 of the 30 scenes"). The prefix swap repeats the
  comparison with the with-ball clip's prefix; where the prefixes agree it is the same sequence
  and the evidence is copied, not recomputed.
* Memory = evidence(main) - evidence(control) per scene, for the never-shown-box and exit
  controls (``cosmos_tables``).

``python -m worldmemory.permanence.cosmos_readout`` scores every scene of every condition and
writes one row per (condition, scene, pair); ``--loglik-out`` instead writes the natural-video
check (Appendix F: "per-token log-likelihoods of natural video tokens average -5.5 nats against
-11.1 for a uniform distribution"), the mean log p over every predicted token of clips, beside
the uniform distribution over the model's own vocabulary (64,000 for the released model) and the
paper's two numbers.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from worldmemory.permanence import cosmos_scenes as S
from worldmemory.permanence.render import scene_grid
from worldmemory.report.tables import write_csv

# tokens (B, T, H, W) long -> teacher-forced log p (B, T, H, W), position (0, 0, 0) NaN
LogLik = Callable[[torch.Tensor], torch.Tensor]
VOCABULARY = 64000  # Cosmos-Predict1's video tokens (Appendix F)
UNIFORM_LOGLIK = -math.log(VOCABULARY)  # -11.07 nats
PAPER_NATURAL_LOGLIK = -5.5  # Appendix F
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def teacher_forced(prefix: torch.Tensor, candidate: torch.Tensor, chunk: int = S.REVEAL_CHUNK) -> torch.Tensor:
    """(chunk+1, H, W): chunks 0..chunk-1 of ``prefix`` followed by chunk ``chunk`` of ``candidate``."""
    return torch.cat([prefix[:chunk], candidate[chunk : chunk + 1]])


def pair_evidences(loglik: LogLik, pairs, regions, chunk: int = S.REVEAL_CHUNK, prefix: str = "without",
                   batch_size: int = 8) -> np.ndarray:
    """Evidence (nats) of each pair (with_ball, without_ball) of token tensors (T, H, W): log p of
    the with-ball chunk minus log p of the without-ball chunk, summed over ``regions[i]`` (bool
    [H, W]), both after the ``prefix`` ("without" or "with") clip's chunks 0..chunk-1."""
    if prefix not in ("with", "without"):
        raise ValueError(f"prefix must be 'with' or 'without', got {prefix!r}")
    sequences = []
    for with_ball, without_ball in pairs:
        shared = without_ball if prefix == "without" else with_ball
        sequences += [teacher_forced(shared, with_ball, chunk), teacher_forced(shared, without_ball, chunk)]
    scored = []
    for start in range(0, len(sequences), batch_size):
        with torch.no_grad():
            scored.append(loglik(torch.stack(sequences[start : start + batch_size]))[:, chunk].double().cpu())
    scored = torch.cat(scored)
    out = np.empty(len(pairs))
    for i, region in enumerate(regions):
        mask = torch.as_tensor(np.asarray(region, bool))
        out[i] = float(scored[2 * i][mask].sum() - scored[2 * i + 1][mask].sum())
    return out


def prefix_differences(with_ball: torch.Tensor, without_ball: torch.Tensor, chunk: int = S.REVEAL_CHUNK) -> int:
    """How many prefix tokens (chunks 0..chunk-1) differ between the two clips' tokens."""
    return int((with_ball[:chunk] != without_ball[:chunk]).sum())


def score_scenes(encode: Callable[[np.ndarray], torch.Tensor], loglik: LogLik, scenes, conditions=S.CONDITIONS,
                 batch_size: int = 8) -> pd.DataFrame:
    """One row per (condition, scene, pair): the evidence after the absent (without-ball) prefix,
    after the with-ball prefix (``evidence_swapped``), and how many prefix tokens differ."""
    rows = []
    for condition in conditions:
        for scene in scenes:
            region = S.box_region(condition, scene.radius)
            tokens = {p: tuple(encode(clip) for clip in S.render_pair(scene, condition, p)) for p in S.PAIRS}
            evidence = pair_evidences(loglik, tokens.values(), [region] * len(tokens), batch_size=batch_size)
            differing = {p: prefix_differences(*t) for p, t in tokens.items()}
            swapped = dict(zip(tokens, evidence))
            redo = [p for p in tokens if differing[p]]
            if redo:
                swapped.update(zip(redo, pair_evidences(loglik, [tokens[p] for p in redo], [region] * len(redo),
                                                        prefix="with", batch_size=batch_size)))
            for pair, value in zip(tokens, evidence):
                rows.append({"condition": condition.name, "motion": condition.motion,
                             "hidden_frames": condition.hidden_frames, "hidden_s": condition.hidden_s,
                             "scene": scene.id, "radius": scene.radius,
                             "n_distractors": scene.n_distractors, "seed": scene.seed, "pair": pair,
                             "evidence": value, "evidence_swapped": swapped[pair],
                             "prefix_tokens_differing": differing[pair], "region_tokens": int(region.sum())})
        print(f"[cosmos] {condition.name}: {len(scenes)} scenes scored")
    return pd.DataFrame(rows)


def mean_loglik(loglik: LogLik, token_clips, batch_size: int = 8) -> tuple[float, int]:
    """(mean log p over every predicted token of the clips, how many tokens): Appendix F's check."""
    total, count = 0.0, 0
    for start in range(0, len(token_clips), batch_size):
        with torch.no_grad():
            ll = loglik(torch.stack(token_clips[start : start + batch_size])).double()
        predicted = ~torch.isnan(ll)
        total += float(ll[predicted].sum())
        count += int(predicted.sum())
    return total / count, count


def loglik_clips(videos: str | None, scenes) -> tuple[list[np.ndarray], str]:
    """The check's clips, (clips, description): every video file under ``videos`` (its first 33
    frames at 256x256), or, with None, the present world of every scene and box condition."""
    if videos is None:
        clips = [S.render_pair(scene, c, "main")[0] for c in S.CONDITIONS if c.hidden_frames for scene in scenes]
        return clips, f"rendered: the present world of {len(scenes)} scenes x 4 box conditions (not natural video)"
    from worldmemory.common.video import read_video_at

    paths = sorted(p for p in Path(videos).rglob("*") if p.suffix.lower() in (".mp4", ".mkv", ".webm", ".avi", ".mov"))
    if not paths:
        raise ValueError(f"permanence.cosmos.loglik_videos = {videos!r}: no video file (.mp4 .mkv .webm .avi .mov) "
                         "under it; point it at a directory of natural video, or null for the rendered clips")
    clips = [read_video_at(p, S.SIZE, S.SIZE, range(S.CLIP_FRAMES)) for p in paths]
    return clips, f"{len(paths)} videos under {videos}"


def load(spec: dict, weights: str | None, tokenizer: str | None, device: str, scratch: str):
    """(encode, loglik, vocabulary size) of permanence.cosmos: the released weights (hf, local) with
    the tokenizer directory, or a random model of a named size (random: ``tiny`` in the embedded
    default) with the scripted stand-in tokenizer, written into ``scratch``."""
    from worldmemory.models.cosmos_ar import CosmosARConfig, load_cosmos_ar, random_cosmos_ar, token_log_likelihoods
    from worldmemory.models.cosmos_tokenizer import load_tokenizer, write_scripted_tokenizer

    dtype = DTYPES[spec.get("dtype", "float32")]
    if spec["source"] == "random":
        seed = spec.get("seed", 0)
        model = random_cosmos_ar(getattr(CosmosARConfig, spec.get("config", "tiny"))(), seed, device, dtype)
        tokenizer = write_scripted_tokenizer(scratch, seed).parent
    else:
        model = load_cosmos_ar(weights, device, dtype)
    codec = load_tokenizer(tokenizer, device, dtype)
    return codec.encode, lambda tokens: token_log_likelihoods(model, tokens.to(device)), model.config.vocab_size


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", required=True, help="permanence.cosmos as JSON")
    ap.add_argument("--weights", default=None, help="the model's weights (hf, local)")
    ap.add_argument("--tokenizer", default=None, help="the tokenizer's directory (hf, local)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", help="per-scene evidence CSV")
    ap.add_argument("--loglik-out", help="the natural-video check instead (CSV)")
    args = ap.parse_args(argv)
    if bool(args.out) == bool(args.loglik_out):
        ap.error("give exactly one of --out and --loglik-out")
    torch.set_num_threads(args.threads)
    spec = json.loads(args.spec)
    grid = spec.get("scenes", {})
    scenes = scene_grid(grid.get("radii", S.DEFAULT_RADII), grid.get("distractors", S.DEFAULT_DISTRACTORS),
                        grid.get("seeds", S.DEFAULT_SEEDS))
    with tempfile.TemporaryDirectory() as scratch:
        encode, loglik, vocabulary = load(spec, args.weights, args.tokenizer, args.device, scratch)
    batch = spec.get("batch_size", 8)
    if args.out:
        table = score_scenes(encode, loglik, scenes, batch_size=batch)
        write_csv(table.assign(model=spec["name"]).round(6), args.out)
        return
    clips, source = loglik_clips(spec.get("loglik_videos"), scenes)
    mean, count = mean_loglik(loglik, [encode(c) for c in clips], batch)
    check = pd.DataFrame([{"model": spec["name"], "clips": len(clips), "tokens": count, "mean_loglik": mean,
                           "uniform": -math.log(vocabulary), "paper_natural": PAPER_NATURAL_LOGLIK,
                           "paper_uniform": UNIFORM_LOGLIK, "source": source}])
    write_csv(check.round(4), args.loglik_out)
    print(check.to_string(index=False))


if __name__ == "__main__":
    main()
