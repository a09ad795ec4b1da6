"""No-reference imaging quality without weights: Zhu & Milanfar's metric Q, and BRISQUE.

WorldMemBench's Imaging Quality (Section 4.2) is MUSIQ-SPAQ (backend ``musiq-spaq``,
perception.musiq), which needs its weights file and torchvision. Two weight-free stand-ins; neither
is on MUSIQ's scale, so a column computed with either is not comparable with the paper's (the
backend's name is in each score job's sidecar).

``metric-q`` (ContentQ): Zhu & Milanfar, "Automatic parameter selection for denoising algorithms
using a no-reference measure of image content", IEEE TIP 19(12), 2010. The grey frame (Rec. 601,
in [0, 1]) is cut into 8 x 8 patches; per patch the singular values s1 >= s2 of its gradients
(numpy central differences) give the coherence R = (s1 - s2) / (s1 + s2) and the content s1 R. A
patch is anisotropic when R exceeds the paper's significance threshold for an isotropic
white-noise patch (delta = 0.001); Q is the mean of s1 R over all patches, isotropic ones counting
0. Blur lowers s1, noise lowers R and the share of anisotropic patches, so Q falls with both: on
every reference rollout of the embedded default (88 videos) it ranks clean > blur > blur + noise
(worldmemory.perception.quality_calibration). Averaging over the anisotropic patches only does
not (8 of the 88 order blur above blur + noise). The raw Q is mapped to [0, 1] by dividing by 2,
the Q of a frame whose every patch holds one full-contrast straight step edge (clipped: fine
stripes can exceed it); renders score low on it (the omniscient's about 0.04), a textureless or
black frame 0. Q measures structure, so it also falls with contrast: a dark frame
scores below a bright copy of it.

``brisque`` (BrisqueQuality): Mittal et al., 2012, natural-scene statistics fed to a support
vector regressor fitted on the LIVE database, from the PyPI package ``brisque`` (0.2.0), whose
model ships inside it. The grey conversion is the original's Rec. 601 (the MATLAB rgb2gray and
OpenCV's), not the package's skimage Rec. 709. Raw 0 (best) to 100 (worst), mapped as
1 - raw / 100, clipped. Fitted on photographs, it does not order the embedded default's renders:
it scores blur + noise best on every reference rollout (noise makes their statistics look
natural) and many clean frames above 100; so does OpenCV contrib's BRISQUE with the LIVE model
(worldmemory.perception.brisque_crosscheck). A flat frame has no BRISQUE statistics; it scores NaN
and is left out of its video's mean.
"""

from __future__ import annotations

import math

import numpy as np

from worldmemory.perception.base import rgb_frames

REC601 = np.array([0.299, 0.587, 0.114])  # ITU-R BT.601 luma: MATLAB rgb2gray, OpenCV RGB2GRAY


def grey(frame: np.ndarray) -> np.ndarray:
    """An RGB uint8 frame as Rec. 601 grey in [0, 1] (float64)."""
    return frame.astype(np.float64) @ REC601 / 255.0


class ContentQ:
    """Zhu & Milanfar's metric Q per frame (higher is better) and its [0, 1] normalisation."""

    name = "metric-q"
    PATCH = 8
    DELTA = 0.001  # the paper's significance level for "an isotropic white-noise patch"
    low, high = 0.0, 2.0  # 2: every patch one full-contrast step edge (s1 = 2, R = 1)

    def score(self, frames: np.ndarray) -> np.ndarray:
        return np.array([self.frame_q(grey(frame)) for frame in rgb_frames(frames)], dtype=float)

    @classmethod
    def threshold(cls) -> float:
        """Zhu & Milanfar's tau: R of an isotropic white-noise patch of N pixels exceeds it with
        probability delta, tau = sqrt((1 - d) / (1 + d)), d = delta^(1 / (N - 1))."""
        d = cls.DELTA ** (1.0 / (cls.PATCH * cls.PATCH - 1))
        return math.sqrt((1.0 - d) / (1.0 + d))

    @classmethod
    def frame_q(cls, image: np.ndarray) -> float:
        """Q of one grey image in [0, 1]; the rows and columns beyond whole patches are left out."""
        n = cls.PATCH
        gy, gx = np.gradient(image)
        rows, cols = image.shape[0] // n, image.shape[1] // n
        if rows == 0 or cols == 0:
            raise ValueError(f"an image of {image.shape} holds no {n} x {n} patch")

        def patches(g):
            return g[:rows * n, :cols * n].reshape(rows, n, cols, n).swapaxes(1, 2).reshape(-1, n * n)

        gx, gy = patches(gx), patches(gy)
        # the singular values of the (N, 2) gradient matrix: square roots of the 2 x 2 tensor's eigenvalues
        a, b, c = (gx * gx).sum(1), (gx * gy).sum(1), (gy * gy).sum(1)
        spread = np.sqrt(((a - c) / 2) ** 2 + b * b)
        s1 = np.sqrt((a + c) / 2 + spread)
        s2 = np.sqrt(np.maximum((a + c) / 2 - spread, 0.0))
        with np.errstate(invalid="ignore", divide="ignore"):  # a flat patch: 0 / 0
            coherence = np.nan_to_num((s1 - s2) / (s1 + s2))
        content = np.where(coherence > cls.threshold(), s1 * coherence, 0.0)
        return float(content.mean())

    @classmethod
    def normalise(cls, raw: float) -> float:
        return float(np.clip((raw - cls.low) / (cls.high - cls.low), 0.0, 1.0))


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
        # the package greys with skimage's Rec. 709 weights, which sum to 1: a Rec. 601 grey in
        # [0, 1] given as three equal channels comes out of its conversion unchanged
        g = grey(frame)
        with np.errstate(invalid="ignore", divide="ignore"):  # a flat frame gives 0/0
            raw = float(self._model.score(np.stack([g, g, g], axis=-1)))
        return raw if math.isfinite(raw) else math.nan

    @classmethod
    def normalise(cls, raw: float) -> float:
        return float(np.clip(1.0 - (raw - cls.low) / (cls.high - cls.low), 0.0, 1.0))
