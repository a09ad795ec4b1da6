"""Human Identity's face embeddings: faces found by YuNet, aligned, embedded by ArcFace.

WorldMemBench (Section 4.4, Eq. 4) compares ArcFace embeddings (Deng et al., 2022) of each person's
face in the revisit frames with those of the initial observation. The paper names the embedder,
not the detector; here, per frame:

1. **detection**: YuNet through OpenCV's ``cv2.FaceDetectorYN`` (the decoding, score threshold and
   non-maximum suppression are OpenCV's), from an ONNX file such as opencv_zoo's
   ``face_detection_yunet_2023mar.onnx``; each face gives a box, five landmarks (eyes, nose tip,
   mouth corners) and a score. The defaults are opencv_zoo's demo settings (score >= 0.9, NMS 0.3);
2. **alignment**: the least-squares similarity (Umeyama) taking the five landmarks onto ArcFace's
   112 x 112 template, as insightface's ``norm_crop`` does, applied with ``cv2.warpAffine``;
3. **embedding**: an ArcFace ONNX file (insightface's ``w600k_r50.onnx`` of buffalo_l, or any
   model with one (N, 3, S, S) input and one (N, D) output) run by onnxruntime on the RGB crop
   normalised as (x - 127.5) / 127.5, insightface's convention for these models.

Which face belongs to which person is scoring's business (face_detections.FaceDetections.on_target): a
face counts for a target in a frame when its nose tip lies inside the target's mask there.
Nothing is downloaded: both models are files named in the config (``detector``, ``recognizer``).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from worldmemory.common.geometry import umeyama
from worldmemory.perception.base import rgb_frames
from worldmemory.perception.face_detections import FaceDetections

# insightface's ArcFace template (utils/face_align.py, arcface_dst): where the right eye, left eye,
# nose tip, right and left mouth corners of a face sit in a 112 x 112 crop.
ARCFACE_TEMPLATE = np.array([[38.2946, 51.6963], [73.5318, 51.5014], [56.0252, 71.7366],
                             [41.5493, 92.3655], [70.7299, 92.2041]])


def alignment(landmarks: np.ndarray, size: int = 112) -> np.ndarray:
    """The 2 x 3 similarity taking ``landmarks`` (5, 2) onto ArcFace's template at ``size`` px."""
    s, R, t = umeyama(landmarks, ARCFACE_TEMPLATE * (size / 112))
    return np.hstack([s * R, t[:, None]])


class ArcFaceIdentity:
    """YuNet detection + template alignment + ArcFace embedding (module docstring)."""

    name = "arcface"

    def __init__(self, detector: str, recognizer: str, score_threshold: float = 0.9, nms_threshold: float = 0.3):
        import onnxruntime  # only the faces job needs it

        for what, path in (("detector", detector), ("recognizer", recognizer)):
            if not Path(path).is_file():
                raise FileNotFoundError(f"face {what} model {path} does not exist: set "
                                        f"worldmembench.perception.faces.{what} to its ONNX file")
        self.detector = cv2.FaceDetectorYN.create(str(detector), "", (320, 320), score_threshold,
                                                  nms_threshold, 5000)
        # on the CPU: a 112 px ResNet per face is cheap beside the video models' GPU jobs
        self.session = onnxruntime.InferenceSession(str(recognizer), providers=["CPUExecutionProvider"])
        inputs, outputs = self.session.get_inputs(), self.session.get_outputs()
        shape = inputs[0].shape
        square = len(shape) == 4 and isinstance(shape[2], int) and shape[2] == shape[3]
        if len(inputs) != 1 or len(outputs) != 1 or not square:
            raise ValueError(f"{recognizer}: expected one (N, 3, S, S) input and one output (an ArcFace "
                             f"model), got inputs {[i.shape for i in inputs]}, outputs {[o.shape for o in outputs]}")
        self.input_name, self.crop_size = inputs[0].name, shape[2]
        self.dim = outputs[0].shape[-1] if isinstance(outputs[0].shape[-1], int) else 0

    def detect(self, frame: np.ndarray) -> np.ndarray:
        """(n, 15) rows of OpenCV's YuNet: box (4), landmarks (10), score, for one RGB frame."""
        height, width = frame.shape[:2]
        self.detector.setInputSize((width, height))
        _, faces = self.detector.detect(np.ascontiguousarray(frame[..., ::-1]))  # OpenCV wants BGR
        return np.zeros((0, 15), np.float32) if faces is None else faces

    def crop(self, frame: np.ndarray, landmarks: np.ndarray) -> np.ndarray:
        """The aligned RGB face crop (S, S, 3) uint8."""
        return cv2.warpAffine(frame, alignment(landmarks, self.crop_size), (self.crop_size,) * 2,
                              borderValue=0.0)

    def embed(self, crops: np.ndarray, batch: int = 64) -> np.ndarray:
        """(n, D) float32 ArcFace embeddings of aligned RGB crops (n, S, S, 3), ``batch`` at a time."""
        out = [np.zeros((0, self.dim), np.float32)]
        for start in range(0, len(crops), batch):
            blob = (crops[start : start + batch].astype(np.float32).transpose(0, 3, 1, 2) - 127.5) / 127.5
            out.append(self.session.run(None, {self.input_name: blob})[0].astype(np.float32))
        return np.concatenate(out)

    def faces(self, frames) -> FaceDetections:
        """Every face of ``frames`` (T, H, W, 3) uint8 RGB with its embedding."""
        frames = rgb_frames(frames)
        rows, index = [], []
        for t, frame in enumerate(frames):
            found = self.detect(frame)
            rows.append(found)
            index += [t] * len(found)
        found = np.concatenate(rows) if rows else np.zeros((0, 15), np.float32)
        landmarks = found[:, 4:14].reshape(-1, 5, 2).astype(float)
        crops = np.zeros((len(index), self.crop_size, self.crop_size, 3), np.uint8)
        for i, (t, lm) in enumerate(zip(index, landmarks)):
            crops[i] = self.crop(frames[t], lm)
        return FaceDetections(np.array(index, dtype=int), found[:, :4].astype(float), landmarks,
                              found[:, 14].astype(float), self.embed(crops))
