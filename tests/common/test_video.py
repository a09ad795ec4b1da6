import re

import numpy as np
import pytest
from worldmemory.common.video import read_video, read_video_at, write_video, write_webm


def test_round_trip_is_bit_exact(tmp_path):
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, size=(5, 48, 34, 3), dtype=np.uint8)
    path = tmp_path / "sub" / "clip.mkv"
    write_video(path, frames, fps=7.5)
    assert np.array_equal(read_video(path), frames)
    assert [p.name for p in path.parent.iterdir()] == ["clip.mkv"]  # no temp left


def test_wrong_dtype_raises(tmp_path):
    with pytest.raises(ValueError, match="uint8"):
        write_video(tmp_path / "x.mkv", np.zeros((2, 8, 8, 3), np.float32), fps=7.5)


def test_wrong_shape_raises(tmp_path):
    with pytest.raises(ValueError, match="shape"):
        write_video(tmp_path / "x.mkv", np.zeros((2, 8, 8), np.uint8), fps=7.5)


def test_missing_file_names_path(tmp_path):
    missing = tmp_path / "nope.mkv"
    with pytest.raises(FileNotFoundError, match=re.escape(str(missing))):
        read_video(missing)


def test_unreadable_file_names_path(tmp_path):
    bad = tmp_path / "bad.mkv"
    bad.write_bytes(b"not a video")
    with pytest.raises(RuntimeError, match=re.escape(str(bad))):
        read_video(bad)


def test_same_frames_give_the_same_bytes(tmp_path):
    frames = np.random.default_rng(1).integers(0, 256, (4, 16, 16, 3), dtype=np.uint8)
    write_video(tmp_path / "a.mkv", frames, fps=7.5)
    write_video(tmp_path / "b.mkv", frames, fps=7.5)
    assert (tmp_path / "a.mkv").read_bytes() == (tmp_path / "b.mkv").read_bytes()


def test_widths_decord_cannot_copy_are_still_read_bit_exactly(tmp_path):
    """decord 0.6.0 fails on 48 px wide frames (a row-padding bug); read_video falls back."""
    frames = np.random.default_rng(0).integers(0, 256, (3, 32, 48, 3), dtype=np.uint8)
    write_video(tmp_path / "narrow.mkv", frames, 8)
    np.testing.assert_array_equal(read_video(tmp_path / "narrow.mkv"), frames)


@pytest.mark.parametrize("width", [32, 48])  # decord decodes 32 px; 48 px falls back to ffmpeg
def test_chosen_frames_are_decoded_in_the_order_asked(tmp_path, width):
    frames = np.random.default_rng(2).integers(0, 256, (5, 16, width, 3), dtype=np.uint8)
    write_video(tmp_path / "v.mkv", frames, 8)
    np.testing.assert_array_equal(read_video(tmp_path / "v.mkv", [4, 0, 4]), frames[[4, 0, 4]])
    with pytest.raises(IndexError, match="has 5 frames"):
        read_video(tmp_path / "v.mkv", [5])


def test_a_webm_for_the_annotation_pages_decodes_to_its_frames(tmp_path):
    frames = np.repeat(np.linspace(0, 255, 5, dtype=np.uint8)[:, None, None, None], 3, axis=3) * np.ones(
        (1, 16, 24, 1), np.uint8)
    write_webm(tmp_path / "clip.webm", frames, fps=8)
    decoded = read_video(tmp_path / "clip.webm")
    assert decoded.shape == frames.shape and np.abs(decoded.astype(int) - frames).max() <= 8


def test_read_video_at_brings_any_size_to_the_case_size(tmp_path):
    """A model's video at 2x (above 32,767 pixels), or at half the size, comes back at the size
    asked for: shrinking averages areas, so a 2x nearest-neighbour upscale returns its source
    exactly; at the same size the frames are the decoded bytes."""
    rng = np.random.default_rng(1)
    frames = rng.integers(0, 256, size=(40, 96, 128, 3), dtype=np.uint8)
    write_video(tmp_path / "same.mkv", frames, fps=8)
    assert np.array_equal(read_video_at(tmp_path / "same.mkv", 128, 96), frames)
    big = frames.repeat(2, axis=1).repeat(2, axis=2)  # 256 x 192 = 49,152 pixels
    write_video(tmp_path / "big.mkv", big, fps=8)
    assert np.array_equal(read_video_at(tmp_path / "big.mkv", 128, 96), frames)  # over two chunks of frames
    small = read_video_at(tmp_path / "same.mkv", 64, 48)
    assert small.shape == (40, 48, 64, 3) and small.dtype == np.uint8
    assert read_video_at(tmp_path / "same.mkv", 256, 192).shape == (40, 192, 256, 3)
    # only some frames (a human-study page's clip or reference frames), resized or not
    assert np.array_equal(read_video_at(tmp_path / "big.mkv", 128, 96, frames=[3, 35, 4]), frames[[3, 35, 4]])
    assert np.array_equal(read_video_at(tmp_path / "same.mkv", 128, 96, frames=range(33, 36)), frames[33:36])


def test_a_video_above_32767_pixels_is_read_at_the_case_size(tmp_path):
    """832 x 480 (the papers' models' size, 399,360 pixels; OpenCV's remap stops at 32,767 a
    side) read at 128 x 96, another aspect: each output pixel the mean of the input pixels it
    covers (6.5 x 5 of them), as cv2.INTER_AREA computes it."""
    import cv2

    frames = np.random.default_rng(2).integers(0, 256, size=(2, 480, 832, 3), dtype=np.uint8)
    write_video(tmp_path / "wide.mkv", frames, fps=8.0)
    read = read_video_at(tmp_path / "wide.mkv", 128, 96)
    assert read.shape == (2, 96, 128, 3)
    assert np.array_equal(read, np.stack([cv2.resize(f, (128, 96), interpolation=cv2.INTER_AREA) for f in frames]))
    block = frames[0, 10:15].astype(float)  # rows 10-14 are output row 2; columns 0-6.5 are output column 0
    expected = (block[:, :6].sum((0, 1)) + 0.5 * block[:, 6].sum(0)) / (5 * 6.5)
    assert np.abs(read[0, 2, 0] - expected).max() <= 1


def test_a_video_read_at_no_size_names_the_file(tmp_path):
    write_video(tmp_path / "v.mkv", np.zeros((1, 8, 8, 3), np.uint8), fps=8.0)
    with pytest.raises(ValueError, match="v.mkv"):
        read_video_at(tmp_path / "v.mkv", 0, 8)
