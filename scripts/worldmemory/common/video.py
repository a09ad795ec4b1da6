"""Lossless RGB video I/O.

Rendered minimal pairs must reach the model bit-exactly: the present and absent
worlds are pixel-identical before the event, and a lossy codec would blur that
guarantee. Videos are therefore stored as lossless RGB H.264 (libx264rgb, qp 0)
in Matroska and decoded with decord, which returns the written bytes exactly.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import decord
import imageio_ffmpeg
import numpy as np


def write_video(path: str | os.PathLike, frames: np.ndarray, fps: float) -> None:
    """Write frames [T,H,W,3] uint8 losslessly to ``path`` (.mkv).

    The file is written to a temporary name in the same directory and renamed,
    so a crashed job never leaves a truncated video under the final name.
    """
    frames = np.asarray(frames)
    if frames.dtype != np.uint8:
        raise ValueError(f"frames must be uint8, got {frames.dtype}")
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.shape[0] == 0:
        raise ValueError(f"frames must have shape [T>0,H,W,3], got {frames.shape}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".mkv")
    os.close(fd)
    try:
        height, width = frames.shape[1:3]
        writer = imageio_ffmpeg.write_frames(
            tmp,
            (width, height),
            pix_fmt_in="rgb24",
            pix_fmt_out="rgb24",
            fps=fps,
            quality=None,
            codec="libx264rgb",
            # bitexact: no random container ids or encoder tags, so the same frames give the same bytes;
            # ultrafast: lossless at any preset, and half the encoding time of the default (files ~3x larger)
            output_params=["-qp", "0", "-preset", "ultrafast", "-fflags", "+bitexact", "-flags:v", "+bitexact"],
            macro_block_size=1,
            ffmpeg_log_level="error",
        )
        writer.send(None)  # start the generator
        for frame in frames:
            writer.send(np.ascontiguousarray(frame))
        writer.close()
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; videos are shared outputs
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_mp4(path: str | os.PathLike, frames, fps: float, crf: int = 0, pix_fmt: str = "yuv444p") -> None:
    """Write frames (each [H,W,3] uint8 RGB) as the H.264 MP4 an external model delivers: by
    default 4:4:4, crf 0, so only the RGB -> YUV rounding is lost (the bundled still-frame and
    replay models); a higher ``crf`` and "yuv420p" compress as the web does (common.degrade)."""
    _encode(path, frames, fps, "libx264", pix_fmt, ["-crf", str(int(crf))])


def write_webm(path: str | os.PathLike, frames, fps: float, crf: int = 24) -> None:
    """Write frames (each [H,W,3] uint8 RGB) as a VP9 WebM (4:2:0) for a web page: the codec
    every Chromium build plays, Debian's included, also from file:// (H.264 needs the
    proprietary codecs some builds lack)."""
    _encode(path, frames, fps, "libvpx-vp9", "yuv420p",
            ["-crf", str(int(crf)), "-b:v", "0", "-deadline", "good", "-cpu-used", "5", "-row-mt", "1"])


def _encode(path, frames, fps: float, codec: str, pix_fmt: str, output_params: list[str]) -> None:
    """Frames through imageio-ffmpeg's ``codec``; bitexact, so equal frames give equal bytes."""
    frames = iter(frames)
    first = np.ascontiguousarray(next(frames))
    height, width = first.shape[:2]
    writer = imageio_ffmpeg.write_frames(str(path), (width, height), fps=fps, codec=codec,
                                         pix_fmt_out=pix_fmt, quality=None, macro_block_size=1,
                                         ffmpeg_log_level="error",
                                         output_params=[*output_params, "-fflags", "+bitexact"])
    writer.send(None)
    writer.send(first)
    for frame in frames:
        writer.send(np.ascontiguousarray(frame))
    writer.close()


def read_video(path: str | os.PathLike, frames=None) -> np.ndarray:
    """Decode every frame of ``path``, or only the indices ``frames``, as [T,H,W,3] uint8 RGB.

    decord decodes; for the frame widths where decord 0.6.0 copies a row-padded buffer and fails
    (48 px, for one), ffmpeg decodes the same stream to rgb24 instead (also bit-exact). A few
    ``frames`` of a long video (a figure's) skip decoding the rest where decord decodes.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"video not found: {path}")
    try:
        reader = decord.VideoReader(str(path), ctx=decord.cpu(0))
    except decord.DECORDError as err:
        raise RuntimeError(f"cannot decode video {path}: {err}") from err
    indices = range(len(reader)) if frames is None else list(frames)
    if any(not 0 <= i < len(reader) for i in indices):
        raise IndexError(f"{path} has {len(reader)} frames; asked for frames {list(indices)}")
    try:
        return reader.get_batch(indices).asnumpy()
    except decord.DECORDError:
        return _read_with_ffmpeg(path)[indices]


def read_video_at(path: str | os.PathLike, width: int, height: int, frames=None) -> np.ndarray:
    """Every frame of ``path`` (or only the indices ``frames``) at ``width`` x ``height``: a model
    may write any resolution, and every estimator and score reads its video at the case's
    (reference's) size, so a number never depends on the size the model chose
    (docs/perception.md, "Any resolution"); the human study's pages show every clip at the
    study's size. Shrinking averages areas (OpenCV's INTER_AREA, exact to rounding: an upsampled
    video comes back to its source; Pillow's box filter is off by up to 10 grey levels at 832 x
    480 -> 128 x 96), enlarging is bilinear; the frames are resized in chunks, so a long 1080p
    video never sits decoded whole."""
    if width < 1 or height < 1:
        raise ValueError(f"read_video_at({path}): width and height must be >= 1, got {width} x {height}")
    shape = video_shape(path)
    if shape[1:] == (height, width):
        return read_video(path, frames)
    import cv2  # only where a model wrote another size

    interpolation = cv2.INTER_AREA if shape[1] * shape[2] > height * width else cv2.INTER_LINEAR
    indices = list(range(shape[0]) if frames is None else frames)
    out = np.empty((len(indices), height, width, 3), np.uint8)
    for start in range(0, len(indices), _CHUNK):
        chunk = read_video(path, indices[start:start + _CHUNK])
        for i, frame in enumerate(chunk):
            out[start + i] = cv2.resize(frame, (width, height), interpolation=interpolation)
    return out


_CHUNK = 32  # frames decoded at once by read_video_at


def video_shape(path: str | os.PathLike) -> tuple[int, int, int]:
    """(frames, height, width) of ``path`` without decoding more than its first frame."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"video not found: {path}")
    try:
        reader = decord.VideoReader(str(path), ctx=decord.cpu(0))
        height, width = reader[0].shape[:2]
    except decord.DECORDError as err:
        raise RuntimeError(f"cannot decode video {path}: {err}") from err
    return len(reader), int(height), int(width)


def _read_with_ffmpeg(path: Path) -> np.ndarray:
    frames = imageio_ffmpeg.read_frames(str(path), pix_fmt="rgb24")
    meta = next(frames)
    width, height = meta["size"]
    return np.stack([np.frombuffer(f, np.uint8).reshape(height, width, 3) for f in frames])
