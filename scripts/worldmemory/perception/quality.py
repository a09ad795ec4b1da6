"""No-reference imaging quality without weights: BRISQUE, whose fitted model ships in its package.

WorldMemBench's Imaging Quality (Section 4.2) is MUSIQ-SPAQ, which needs downloaded weights. The
no-weights stand-in is BRISQUE (Mittal et al., 2012): natural-scene statistics of the frame fed to
a support vector regressor fitted on the LIVE database, from the PyPI package ``brisque`` (0.2.0),
whose libsvm model and feature normalisation ship inside the package (brisque/models/svm.txt,
normalize.pickle), so nothing is downloaded. Its scale is not MUSIQ's: raw scores run from about 0
(best) to 100 (worst), mapped to [0, 1] with 1 the best as 1 - raw / 100, clipped. A table column
computed with it is therefore not comparable with the paper's MUSIQ column; the backend's name is
in each score job's sidecar.

A frame without texture (constant colour) has no BRISQUE statistics; it scores NaN and is left
out of its video's mean (a video of such frames only is NaN).
"""

from __future__ import annotations

import math

import numpy as np

from worldmemory.perception.base import rgb_frames


class BrisqueQuality:
    """BRISQUE raw scores per frame (lower is better) and their [0, 1] normalisation."""

    name = "brisque"
    low, high = 0.0, 100.0  # the raw scale: best, worst

    def __init__(self) -> None:
        from brisque import BRISQUE  # scikit-image and libsvm load only when this backend runs

        class _Brisque(BRISQUE):
            # brisque 0.2.0 on numpy >= 2.4: some features are 1-element arrays, and float() of
            # those raises; scale the same numbers as plain floats
            def scale_features(self, features):
                return super().scale_features([np.asarray(f, dtype=np.float64).reshape(-1)[0]
                                               for f in features])

        self._model = _Brisque(url=False)  # the bundled model: no network

    def score(self, frames: np.ndarray) -> np.ndarray:
        frames = rgb_frames(frames)
        return np.array([self._frame(frame) for frame in frames], dtype=float)

    def _frame(self, frame: np.ndarray) -> float:
        with np.errstate(invalid="ignore", divide="ignore"):  # a flat frame gives 0/0
            raw = float(self._model.score(frame))
        return raw if math.isfinite(raw) else math.nan

    @classmethod
    def normalise(cls, raw: float) -> float:
        return float(np.clip(1.0 - (raw - cls.low) / (cls.high - cls.low), 0.0, 1.0))
