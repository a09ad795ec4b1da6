"""cosmos_benchmark: one clip of five 16x16 chunks, timed, with its memory."""

import math

import torch
from worldmemory.models.cosmos_ar import CosmosARConfig
from worldmemory.models.cosmos_benchmark import run


def test_one_clip_of_1280_tokens_is_timed_and_sized():
    config = CosmosARConfig.tiny()
    result = run(config, torch.device("cpu"), torch.float32)
    assert result["tokens"] == 1280 and result["dtype"] == "float32"
    assert result["parameters"] == 82304
    assert result["forward_s"] > 0 and result["peak_rss_gib"] > 0
    assert result["uniform"] == -math.log(config.vocab_size)
    assert abs(result["mean_log_likelihood"] - result["uniform"]) < 0.5  # random weights: near uniform
