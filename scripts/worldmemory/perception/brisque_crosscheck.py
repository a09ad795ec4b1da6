"""BRISQUE backend against OpenCV contrib's BRISQUE with the LIVE model, frame by frame.

    python -m worldmemory.perception.brisque_crosscheck --model brisque_model_live.yml \\
        --range brisque_range_live.yml --step 16 VIDEO ...

Needs opencv-contrib (cv2.quality), which conflicts with the main environment's OpenCV: run it in
a throwaway environment with opencv-contrib-python-headless, brisque 0.2.0, scikit-image and
libsvm-official. The two LIVE files are opencv_contrib's modules/quality/samples/. Videos are read
with OpenCV here (the main environment's decord is not needed). Prints one line per scored frame
(video, frame, our raw score, OpenCV's) and the agreement: Pearson and Spearman correlation and
the median absolute difference of the raw scores. Not part of the test suite.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.stats import pearsonr, spearmanr

from worldmemory.perception.quality import BrisqueQuality


def frames_of(path: str, step: int) -> np.ndarray:
    """Every step-th frame of ``path`` as RGB uint8 (OpenCV decodes BGR)."""
    import cv2

    capture, frames = cv2.VideoCapture(path), []
    ok, frame = capture.read()
    while ok:
        frames.append(frame[..., ::-1])
        ok, frame = capture.read()
    return np.stack(frames[::step])


def main(argv=None) -> None:
    import cv2

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("videos", nargs="+")
    ap.add_argument("--model", required=True, help="brisque_model_live.yml")
    ap.add_argument("--range", required=True, help="brisque_range_live.yml")
    ap.add_argument("--step", type=int, default=16, help="score every step-th frame")
    args = ap.parse_args(argv)
    ours, live = BrisqueQuality(), cv2.quality.QualityBRISQUE_create(args.model, args.range)
    a, b = [], []
    for video in args.videos:
        frames = frames_of(video, args.step)
        for i, (frame, raw) in enumerate(zip(frames, ours.score(frames))):
            theirs = live.compute(np.ascontiguousarray(frame[..., ::-1]))[0]  # OpenCV greys BGR with Rec. 601
            a.append(raw)
            b.append(theirs)
            print(f"{video}\t{i * args.step}\t{raw:.2f}\t{theirs:.2f}")
    a, b = np.array(a), np.array(b)
    keep = np.isfinite(a) & np.isfinite(b)
    print(f"frames {keep.sum()}: Pearson {pearsonr(a[keep], b[keep])[0]:.3f}, "
          f"Spearman {spearmanr(a[keep], b[keep])[0]:.3f}, "
          f"median |ours - OpenCV LIVE| {np.median(np.abs(a[keep] - b[keep])):.2f}")


if __name__ == "__main__":
    main()
