"""Known answers of the autoregressive readout (Section 4.5, Appendix F) through fake token models
with the call of ``token_log_likelihoods``: uniform logits give evidence 0, a model that copies the
last chunk and a model that has seen the ball give their closed-form evidence, and the sequences
take the absent (without-ball) world's prefix."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from worldmemory.permanence import cosmos_readout as R
from worldmemory.permanence import cosmos_scenes as S
from worldmemory.permanence.render import Scene

V = R.VOCABULARY
BALL = 7  # the token a ball cell gets in the hand-made token clips
EPS = 0.01


def pick(condition: torch.Tensor, yes: float, no: float) -> torch.Tensor:
    """torch.where in float64 (python floats would make it float32)."""
    return torch.where(condition, torch.tensor(yes, dtype=torch.float64), torch.tensor(no, dtype=torch.float64))


def uniform(tokens: torch.Tensor) -> torch.Tensor:
    out = torch.full(tokens.shape, -math.log(V), dtype=torch.float64)
    out[:, 0, 0, 0] = float("nan")
    return out


def copies_last_chunk(tokens: torch.Tensor) -> torch.Tensor:
    """log p = log(1 - EPS) for the token the previous chunk had at that cell, else log(EPS / (V - 1))."""
    out = torch.full(tokens.shape, -math.log(V), dtype=torch.float64)
    same = tokens[:, 1:] == tokens[:, :-1]
    out[:, 1:] = pick(same, math.log(1 - EPS), math.log(EPS / (V - 1)))
    out[:, 0, 0, 0] = float("nan")
    return out


def seen_the_ball(region: np.ndarray, q: float = 0.9):
    """Puts mass q on the ball token in the region of the reveal chunk, whatever came before."""
    mask = torch.as_tensor(region)

    def loglik(tokens):
        out = uniform(tokens)
        chunk = tokens[:, S.REVEAL_CHUNK]
        is_ball = chunk == BALL
        scored = pick(is_ball, math.log(q), math.log((1 - q) / (V - 1)))
        out[:, S.REVEAL_CHUNK] = torch.where(mask, scored, out[:, S.REVEAL_CHUNK])
        return out

    return loglik


def token_pair(region: np.ndarray, ball_in_prefix: bool = False):
    """(with ball, without ball) token clips: background token 0, the ball token in the region of
    the reveal chunk (and of chunk 3 when ``ball_in_prefix``) of the with-ball clip only."""
    without = torch.zeros(S.CHUNKS, S.GRID, S.GRID, dtype=torch.long)
    with_ball = without.clone()
    with_ball[S.REVEAL_CHUNK][torch.as_tensor(region)] = BALL
    if ball_in_prefix:
        with_ball[S.REVEAL_CHUNK - 1][torch.as_tensor(region)] = BALL
    return with_ball, without


REGION = S.box_region(S.condition_named("moving_h08"), 16)
K = int(REGION.sum())


def test_uniform_logits_give_evidence_exactly_zero():
    assert R.pair_evidences(uniform, [token_pair(REGION)], [REGION])[0] == 0.0


def test_a_model_that_copies_the_last_chunk_prefers_the_absent_world():
    evidence = R.pair_evidences(copies_last_chunk, [token_pair(REGION)], [REGION])[0]
    assert evidence == pytest.approx(K * (math.log(EPS / (V - 1)) - math.log(1 - EPS)), rel=1e-12)
    assert evidence < 0


def test_a_model_that_has_seen_the_ball_prefers_the_present_world():
    evidence = R.pair_evidences(seen_the_ball(REGION), [token_pair(REGION)], [REGION])[0]
    assert evidence == pytest.approx(K * (math.log(0.9) - math.log(0.1 / (V - 1))), rel=1e-12)
    assert evidence > 0


def test_only_the_region_of_the_scored_chunk_counts():
    # a ball in the reveal chunk outside the region, and one in the last prefix chunk: no evidence
    with_ball, without = token_pair(REGION)
    with_ball[S.REVEAL_CHUNK][~torch.as_tensor(REGION)] = BALL + 1
    outside = R.pair_evidences(copies_last_chunk, [(with_ball, without)], [REGION])[0]
    assert outside == pytest.approx(K * (math.log(EPS / (V - 1)) - math.log(1 - EPS)), rel=1e-12)
    assert R.pair_evidences(copies_last_chunk, [(with_ball, without)], [np.zeros_like(REGION)])[0] == 0.0


def test_both_sequences_take_the_absent_worlds_prefix_and_the_swap_the_present_one():
    # the with-ball clip shows the ball in chunk 3 too: only its own prefix lets the copier expect it
    pair = token_pair(REGION, ball_in_prefix=True)
    absent_prefix = R.pair_evidences(copies_last_chunk, [pair], [REGION])[0]
    present_prefix = R.pair_evidences(copies_last_chunk, [pair], [REGION], prefix="with")[0]
    gap = K * (math.log(1 - EPS) - math.log(EPS / (V - 1)))
    assert absent_prefix == pytest.approx(-gap, rel=1e-12)
    assert present_prefix == pytest.approx(gap, rel=1e-12)
    sequence = R.teacher_forced(pair[1], pair[0])
    assert torch.equal(sequence[: S.REVEAL_CHUNK], pair[1][: S.REVEAL_CHUNK])
    assert torch.equal(sequence[S.REVEAL_CHUNK], pair[0][S.REVEAL_CHUNK])


def test_batches_give_the_same_evidence_as_one_call():
    pairs = [token_pair(REGION), token_pair(REGION, ball_in_prefix=True)] * 3
    one = R.pair_evidences(copies_last_chunk, pairs, [REGION] * 6, batch_size=12)
    assert np.array_equal(one, R.pair_evidences(copies_last_chunk, pairs, [REGION] * 6, batch_size=1))


def chunk_tokenizer(clip: np.ndarray) -> torch.Tensor:
    """A causal stand-in for the DV8x16x16 encoder: each token is its chunk's mean colour over its
    16x16 cell, quantised (chunk 0: frame 0; chunk k: frames 8k-7..8k)."""
    chunks = [clip[list(S.chunk_frames(k))].astype(float).mean(axis=0) for k in range(S.CHUNKS)]
    cells = np.stack(chunks).reshape(S.CHUNKS, S.GRID, S.SPATIAL, S.GRID, S.SPATIAL, 3).mean(axis=(2, 4))
    q = (cells // 32).astype(np.int64)
    return torch.as_tensor(q[..., 0] * 64 + q[..., 1] * 8 + q[..., 2])


def test_every_pair_shares_its_prefix_by_construction_and_differs_only_in_the_region():
    scene = Scene(8, 4, 1)
    for condition in S.CONDITIONS:
        region = S.box_region(condition, scene.radius)
        for pair in S.PAIRS:
            with_ball, without = S.render_pair(scene, condition, pair)
            assert np.array_equal(with_ball[: S.REVEAL_FRAME], without[: S.REVEAL_FRAME]), (condition, pair)
            differ = (with_ball != without).any(axis=(0, 3))
            cells = np.zeros_like(region)
            rows, cols = np.nonzero(differ)
            cells[rows // S.SPATIAL, cols // S.SPATIAL] = True
            assert cells.any() and not (cells & ~region).any(), (condition, pair)
            tokens = [chunk_tokenizer(c) for c in (with_ball, without)]
            assert R.prefix_differences(*tokens) == 0


def test_score_scenes_end_to_end_with_uniform_logits():
    scenes = [Scene(16, 0, 0)]
    table = R.score_scenes(chunk_tokenizer, uniform, scenes, S.CONDITIONS[:2])
    assert len(table) == 2 * len(S.PAIRS)
    assert (table["evidence"] == 0).all() and (table["evidence_swapped"] == 0).all()
    assert (table["prefix_tokens_differing"] == 0).all()


def test_score_scenes_reads_a_ball_in_the_box_with_a_model_that_has_seen_it():
    # the chunk tokenizer's ball cells differ from the box's: a model sure of the present world's
    # reveal tokens rates the main pair and both controls' with-ball chunks alike
    condition = S.condition_named("stationary_h08")
    scene = Scene(32, 0, 0)
    present = chunk_tokenizer(S.render_pair(scene, condition, "main")[0])

    def knows_present(tokens):
        out = uniform(tokens)
        hit = tokens[:, S.REVEAL_CHUNK] == present[S.REVEAL_CHUNK]
        out[:, S.REVEAL_CHUNK] = pick(hit, math.log(0.5), math.log(0.5 / (V - 1)))
        return out

    table = R.score_scenes(chunk_tokenizer, knows_present, [scene], [condition])
    assert (table["evidence"] > 0).all()
    assert table["evidence"].nunique() == 1


def test_mean_loglik_skips_the_first_token():
    clips = [torch.zeros(S.CHUNKS, S.GRID, S.GRID, dtype=torch.long)] * 3
    mean, count = R.mean_loglik(uniform, clips, batch_size=2)
    assert mean == pytest.approx(R.UNIFORM_LOGLIK) and count == 3 * (S.CHUNKS * S.GRID * S.GRID - 1)
    assert R.UNIFORM_LOGLIK == pytest.approx(-11.07, abs=0.005)


def test_clip_geometry_and_the_box_region_have_their_known_values():
    assert [list(S.chunk_frames(k))[::7] for k in range(S.CHUNKS)] == [[0], [1, 8], [9, 16], [17, 24], [25, 32]]
    # the box closes at clip frame 25 - hidden = full-clip frame 32, opens at 25 (a chunk's first frame)
    assert [S.clip_frames(h)[25 - h] for h in (8, 16, 0)] == [32, 32, 32]
    # the stationary box: closed rows 146..233 -> token rows 9..14; columns 78..157 (centre 28 + 3.2 * 28,
    # rounded, +-40) -> token columns 4..9
    expected = np.zeros((16, 16), bool)
    expected[9:15, 4:10] = True
    assert np.array_equal(S.box_region(S.condition_named("stationary_h08"), 16), expected)
