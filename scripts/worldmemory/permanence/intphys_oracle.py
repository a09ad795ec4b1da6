"""The known-answer predictor of the IntPhys-format fixture (permanence.intphys_fixture).

:class:`ConsistentWorldOracle` predicts the physically consistent continuation of each fixture
video, so its surprise is 0 on the possible videos and positive on the impossible ones: 100%
pairwise accuracy under every rule of *Tracking Is Not Permanence*, Table 10 (the evaluator's
calibration; tests/permanence/test_intphys_fixture.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from worldmemory.models.vjepa2 import VJEPA2Backend
from worldmemory.permanence.calibration import CalibrationPredictor
from worldmemory.permanence.intphys import read_frames


def consistent_video(video_dir: Path) -> Path:
    """The sibling video of the physically consistent world: the possible one that starts as this one does."""
    video_dir = Path(video_dir)
    before = json.loads((video_dir / "status.json").read_text())["fixture"]["ball_before"]
    world = "present" if before else "absent"
    for sibling in sorted(video_dir.parent.iterdir()):
        status = sibling / "status.json"
        if status.exists() and json.loads(status.read_text())["fixture"]["world"] == world:
            return sibling
    raise ValueError(f"{video_dir.parent} has no {world!r} video: not a scene written by intphys_fixture")


class ConsistentWorldOracle(CalibrationPredictor):
    """The right oracle for IntPhys: it predicts the physically consistent continuation.

    The persistence oracle (permanence.calibration) fills the hidden tokens with the true pixels of
    the clip it is given, so its surprise is 0 on every video and every pair ties. This oracle is
    built for one video with the clips (preprocessed, (1, T, 3, H, W)) of that video and of its
    consistent world (consistent_video: the ball stays as it started); it fills the hidden tokens of
    a window with the consistent world's pixels at the same frames. It is privileged (it knows the
    scene) and needs memory beyond the window, which no fixed-context predictor has: a window whose
    context shows only the occluder does not say whether a ball is behind it. It finds the window's
    frames by content in the observed clip (the fixture's moving distractors make windows unique;
    a window found at several places with different consistent pixels raises).
    """

    def __init__(self, inner: VJEPA2Backend, observed: torch.Tensor, consistent: torch.Tensor):
        super().__init__(inner, "persistence_oracle")
        if observed.shape != consistent.shape:
            raise ValueError(f"observed clip {tuple(observed.shape)} and consistent clip "
                             f"{tuple(consistent.shape)} differ in shape: they must be two worlds of one scene")
        self.rule = "consistent_world"
        self.observed, self.consistent = observed, consistent

    def _hidden_features(self, x, visible, hidden, hid) -> torch.Tensor:
        worlds = torch.stack([self.consistent_window(window) for window in x])
        return self.inner.encode(worlds)[:, torch.as_tensor(hidden, device=x.device)]

    def consistent_window(self, window: torch.Tensor) -> torch.Tensor:
        """The consistent world's frames at the frames where ``window`` (T, 3, H, W) lies in the observed clip."""
        n = window.shape[0]
        starts = [s for s in range(self.observed.shape[1] - n + 1) if torch.equal(self.observed[0, s : s + n], window)]
        if not starts:
            raise ValueError(f"a window of {n} frames is not part of the observed clip this oracle was built for")
        world = self.consistent[0, starts[0] : starts[0] + n]
        if any(not torch.equal(world, self.consistent[0, s : s + n]) for s in starts[1:]):
            raise ValueError(f"a window of {n} frames appears at frames {starts} of the observed clip with different "
                             "consistent continuations: the oracle cannot place it")
        return world


def consistent_oracle(inner: VJEPA2Backend, video_dir: Path) -> ConsistentWorldOracle:
    """The oracle of one fixture video, its clips read as the evaluator reads them (intphys.read_frames)."""
    clips = [inner.preprocess(read_frames(d, inner.crop_size)[None]) for d in (video_dir, consistent_video(video_dir))]
    return ConsistentWorldOracle(inner, *clips)
