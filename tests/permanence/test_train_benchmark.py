"""The training-step benchmark counts the step's FLOPs, the CPU attention kernels included."""

from torch.utils.flop_counter import FlopCounterMode
from worldmemory.permanence import train_benchmark
from worldmemory.permanence.train_benchmark import Steps

MICRO = dict(crop_size=64, patch_size=16, frames_per_clip=8, tubelet_size=2, hidden_size=48,
             num_attention_heads=4, num_hidden_layers=1, pred_hidden_size=32,
             pred_num_attention_heads=4, pred_num_hidden_layers=1, num_pooler_layers=1)
SETTINGS = dict(seed=3, batch_size=2, lr=1e-3, mask_kinds=["short_tube", "long_tube"])


def test_flops_include_the_cpu_attention_kernels(monkeypatch):
    with_attention = Steps(MICRO, SETTINGS, pool_clips=2).flops(n=2)
    monkeypatch.setattr(train_benchmark, "FlopCounterMode", lambda **kw: FlopCounterMode(display=False))
    without = Steps(MICRO, SETTINGS, pool_clips=2).flops(n=2)
    assert with_attention > without > 0
