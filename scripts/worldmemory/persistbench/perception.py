"""What PersistBench's scoring sees in one generated video: the oracle or a model's cached estimates.

Perm needs two estimators (Method 2): the tracker (SAM2 in the paper, initialised on the
generated sequence's first frame by DINO matching) and the same-entity judge (a VLM comparing the
reference crop with the generated crop); Cont and App read the tracker's masks.

  * ``OraclePerception``: a reference model's record of what it drew, its target masks (the
    tracker) and whether the drawn target is the reference one (the judge).
  * ``EstimatedPerception``: the masks and judgements the perception jobs cached (perceive.py)
    and, for a capability configured as ``none``, Unavailable with the reason naming its config key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from worldmemory.perception.store import CachedView, cached_sources

CAPABILITIES = ("tracking", "judge")
FAMILY = "persistence"  # Perm, Cont and App: one score family, as Cont and App average the frames Perm keeps
MIN_PIXELS = 4  # a tracker mask smaller than this is no valid mask
CONFIG_KEY = "persistbench.perception"


class Perception(Protocol):
    def track(self, frames, first_mask) -> np.ndarray:
        """(T, h, w) bool masks of the target in the generated frames."""

    def same_entity(self, generated, reference, pred_masks, ref_masks) -> np.ndarray:
        """(T,) bool: whether each generated frame shows the reference target (ignoring
        position and lighting)."""


@dataclass
class OraclePerception:
    """A reference model's record of what it drew (truth.npz)."""

    masks: np.ndarray  # (T, h, w) bool
    drawn_target: np.ndarray  # (T,) bool

    def track(self, frames, first_mask) -> np.ndarray:
        return self.masks

    def same_entity(self, generated, reference, pred_masks, ref_masks) -> np.ndarray:
        return self.drawn_target


class EstimatedPerception(CachedView):
    """One sequence's view of a model's cached estimates (perception.store.CachedView)."""

    def track(self, frames, first_mask) -> np.ndarray:
        return self.fields("tracking")["masks"]

    def same_entity(self, generated, reference, pred_masks, ref_masks) -> np.ndarray:
        return self.fields("judge")["same_entity"]


def estimated_sources(backends: dict[str, str], directory) -> dict:
    """The cached estimates (or reasons) of the tracker and the judge."""
    return cached_sources(CAPABILITIES, backends, directory, CONFIG_KEY)
