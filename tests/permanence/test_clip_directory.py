"""Windows from a directory of the user's video (Section 3.5 (i), (iv)): real files decoded with decord."""

import numpy as np
import pytest
from worldmemory.common.video import write_video
from worldmemory.permanence.clip_directory import ClipDirectory, squash_resize


def counting_video(path, n_frames, side=32):
    """Frame i is uniformly grey level 4 * i: a window's frames name their own indices."""
    write_video(path, np.stack([np.full((side, side, 3), 4 * i, np.uint8) for i in range(n_frames)]), 7.5)


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    root = tmp_path_factory.mktemp("clips")
    counting_video(root / "a.mkv", 20)
    (root / "sub").mkdir()
    counting_video(root / "sub" / "b.mkv", 40, side=48)  # another size and a subdirectory
    counting_video(root / "short.mkv", 6)  # shorter than a window: skipped
    (root / "notes.txt").write_text("not a video")
    return root


def test_a_window_is_every_frame_step_th_frame_from_its_start_resized_to_the_model(clips):
    source = ClipDirectory(clips, n_frames=4, size=16, frame_step=3)
    assert [p.name for p in source.paths] == ["a.mkv", "b.mkv"] and source.lengths == [20, 40]
    window = source.window(1, start=5)
    assert window.shape == (4, 16, 16, 3) and window.dtype == np.uint8
    assert window[:, 8, 8, 0].tolist() == [4 * f for f in (5, 8, 11, 14)]  # lossless grey levels


def test_sampled_windows_fit_their_clips_and_are_seeded(clips):
    source = ClipDirectory(clips, n_frames=4, size=16, frame_step=3)
    a = source.sample(np.random.default_rng(0), 6)
    b = source.sample(np.random.default_rng(0), 6)
    assert a.shape == (6, 4, 16, 16, 3) and (a == b).all()
    starts = a[:, 0, 8, 8, 0] // 4
    assert (np.diff(a[:, :, 8, 8, 0].astype(int) // 4, axis=1) == 3).all()  # frame step 3 throughout
    assert (starts + 9 < 40).all()  # the last frame exists


def test_a_directory_without_long_enough_clips_is_refused_naming_it(clips, tmp_path):
    with pytest.raises(ValueError, match=r"holds 3 video file\(s\), none with the 61 frames"):
        ClipDirectory(clips, n_frames=16, size=16, frame_step=4)
    with pytest.raises(FileNotFoundError, match="is not a directory"):
        ClipDirectory(tmp_path / "missing", n_frames=4, size=16)


def test_squash_resize_averages_areas_and_rounds():
    frames = np.zeros((1, 4, 2, 3), np.uint8)  # 4 rows x 2 columns -> 2 x 2: each output cell two rows
    frames[0, :2, 0] = np.array([[10] * 3, [13] * 3])  # -> 11.5 -> 12 (half to even)
    frames[0, 1, 1] = 1  # 0 and 1 -> 0.5 -> 0
    frames[0, 2:, :] = 255
    out = squash_resize(frames, 2)
    assert out.shape == (1, 2, 2, 3) and out[0, :, :, 0].tolist() == [[12, 0], [255, 255]]
