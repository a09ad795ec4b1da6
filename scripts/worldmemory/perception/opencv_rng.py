"""OpenCV's random generator, reset per video.

OpenCV's RANSAC fits (homographies, essential matrices, PnP) draw from one generator per process.
Reset at the start of each video, an estimate depends on that video alone, not on the videos the
same process read before: a case's perception job reads one case, a model's job read them all, and
both must give the same masks and poses.
"""

import cv2


def reset_opencv_rng() -> None:
    cv2.setRNGSeed(0)
