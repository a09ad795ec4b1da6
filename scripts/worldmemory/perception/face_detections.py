"""The faces a face-identity job found in a video, and which of them belongs to a target.

Kept apart from the estimator (faces.py, which needs OpenCV and onnxruntime) so that scoring reads
the cached detections with numpy alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NOSE = 2  # the nose tip's row among the five landmarks (faces.ARCFACE_TEMPLATE's order)


@dataclass
class FaceDetections:
    """Every face found in a video: one row per face, ``frame`` its frame index."""

    frame: np.ndarray  # (N,) int
    box: np.ndarray  # (N, 4) x, y, width, height in pixels
    landmarks: np.ndarray  # (N, 5, 2) x, y in pixels (ARCFACE_TEMPLATE's order)
    score: np.ndarray  # (N,) detection score
    embedding: np.ndarray  # (N, D) float32

    def on_target(self, masks: np.ndarray) -> dict[int, np.ndarray]:
        """frame -> the embedding of the best-scoring face whose nose tip lies inside ``masks``
        (T, H, W) bool of that frame; frames without such a face are absent."""
        masks = np.asarray(masks, dtype=bool)
        height, width = masks.shape[1:]
        best: dict[int, int] = {}
        for i, (frame, nose) in enumerate(zip(self.frame, self.landmarks[:, NOSE])):
            x, y = int(np.floor(nose[0])), int(np.floor(nose[1]))
            inside = 0 <= x < width and 0 <= y < height and masks[frame, y, x]
            if inside and (frame not in best or self.score[i] > self.score[best[frame]]):
                best[int(frame)] = i
        return {frame: self.embedding[i] for frame, i in best.items()}

    def fields(self) -> dict[str, np.ndarray]:
        """The arrays a perception cache stores (perception.store)."""
        return {"frame": self.frame, "box": self.box, "landmarks": self.landmarks, "score": self.score,
                "embedding": self.embedding}

    @classmethod
    def from_fields(cls, fields: dict) -> FaceDetections:
        return cls(*(np.asarray(fields[k]) for k in ("frame", "box", "landmarks", "score", "embedding")))
