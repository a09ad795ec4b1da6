"""The DV8x16x16 tokenizer loaded from TorchScript: geometry, temporal causality, determinism, refusals."""

import numpy as np
import pytest
import torch
from worldmemory.models.cosmos_tokenizer import (
    SCRIPTED_CODEBOOK_SIZE,
    load_tokenizer,
    write_scripted_tokenizer,
)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tokenizer")
    write_scripted_tokenizer(directory, seed=0)
    return load_tokenizer(directory)


def clip(frames=33, size=256, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (frames, size, size, 3), dtype=np.uint8)


def test_33_frames_of_256_give_five_chunks_of_16x16(tokenizer):
    tokens = tokenizer.encode(clip())
    assert tokens.shape == (5, 16, 16) and tokens.dtype == torch.int64
    assert 0 <= tokens.min() and tokens.max() < SCRIPTED_CODEBOOK_SIZE
    assert len(tokens.unique()) > SCRIPTED_CODEBOOK_SIZE // 2  # the codebook is used, not one code


def test_the_written_file_has_the_released_encoder_interface(tmp_path):
    path = write_scripted_tokenizer(tmp_path, seed=0)
    assert path == tmp_path / "encoder.jit"
    encoder = torch.jit.load(str(path))
    x = torch.rand(2, 3, 17, 32, 48, dtype=torch.bfloat16) * 2 - 1  # (B, 3, T, H, W) in [-1, 1]
    indices, codes, loss = encoder(x)
    assert indices.shape == (2, 3, 2, 3) and indices.dtype == torch.int32
    assert codes.shape == (2, 3, 3, 2, 3) and codes.dtype == torch.bfloat16
    assert codes.abs().max() <= 1 and loss.ndim == 0


@pytest.mark.parametrize("frame, chunk", [(0, 0), (1, 1), (8, 1), (9, 2), (32, 4)])
def test_chunk_k_reads_frames_8k_minus_7_to_8k_only(tokenizer, frame, chunk):
    video = clip()
    changed = video.copy()
    changed[frame] = 255 - changed[frame]
    before, after = tokenizer.encode(video), tokenizer.encode(changed)
    differs = [not torch.equal(before[k], after[k]) for k in range(5)]
    assert differs == [k == chunk for k in range(5)]


def test_changing_frames_after_chunk_k_leaves_chunks_up_to_k(tokenizer):
    video = clip(seed=1)
    changed = video.copy()
    changed[17:] = clip(seed=2)[17:]  # frames of chunks 3 and 4
    before, after = tokenizer.encode(video), tokenizer.encode(changed)
    assert torch.equal(before[:3], after[:3])
    assert not torch.equal(before[3:], after[3:])


def test_deterministic_across_calls_loads_and_writes(tmp_path, tokenizer):
    video = clip(seed=3)
    first = tokenizer.encode(video)
    assert torch.equal(first, tokenizer.encode(video))
    write_scripted_tokenizer(tmp_path / "again", seed=0)
    assert torch.equal(first, load_tokenizer(tmp_path / "again").encode(video))
    write_scripted_tokenizer(tmp_path / "other", seed=1)
    assert not torch.equal(first, load_tokenizer(tmp_path / "other").encode(video))


def test_wrong_clips_and_a_missing_file_are_refused(tokenizer, tmp_path):
    with pytest.raises(ValueError, match=r"32 frames.*1 \+ 8k frames"):
        tokenizer.encode(clip(frames=32))
    with pytest.raises(ValueError, match=r"250x250 pixels.*multiples of 16"):
        tokenizer.encode(clip(frames=9, size=250))
    with pytest.raises(ValueError, match="uint8 frames"):
        tokenizer.encode(clip(frames=9).astype(np.float32))
    with pytest.raises(FileNotFoundError, match=r"Cosmos-Tokenize1-DV8x16x16-720p.*--patterns '\*.jit'"):
        load_tokenizer(tmp_path)


def test_loading_switches_the_tensor_expression_fuser_off(tmp_path):
    """Upstream does this so that repeated encoder calls give identical tokens (Appendix F)."""
    write_scripted_tokenizer(tmp_path, seed=0)
    torch._C._jit_set_texpr_fuser_enabled(True)
    load_tokenizer(tmp_path)
    assert not torch._C._jit_texpr_fuser_enabled()
