"""The degradation recipes of the degraded replays: each does what its name says, seeded."""

import numpy as np
import pytest
from worldmemory.common.degrade import (
    RECIPES,
    blur_noise,
    degrade,
    h264_roundtrip,
    resize_down_up,
    seen_by_view,
)
from worldmemory.common.geometry import intrinsics, pose, rot_y


def textured(T=4, H=32, W=48, seed=0):
    """Frames with fine texture (what blur, compression and resizing destroy)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (T, H, W, 3), dtype=np.uint8)


def test_blur_noise_is_seeded_and_degrades():
    frames = textured()
    a, b, c = blur_noise(frames, 1), blur_noise(frames, 1), blur_noise(frames, 2)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    # the noise alone on a flat image has the recipe's std (8 grey levels)
    flat = np.full((2, 64, 64, 3), 128, np.uint8)
    assert abs(blur_noise(flat, 0).astype(float).std() - 8.0) < 0.3
    # the blur alone removes most of white noise's variance
    assert blur_noise(frames, 0, noise_std=0.0).astype(float).std() < 0.3 * frames.astype(float).std()


def test_h264_compression_loses_detail_but_keeps_the_picture():
    smooth = np.repeat(np.linspace(0, 255, 48, dtype=np.uint8)[None, None, :, None], 32, 1)
    smooth = np.repeat(np.repeat(smooth, 3, 3), 4, 0)
    noisy = textured()
    assert np.abs(h264_roundtrip(smooth).astype(int) - smooth).mean() < 3  # a gradient survives
    assert np.abs(h264_roundtrip(noisy).astype(int) - noisy).mean() > 20  # texture does not


def test_resize_down_up_keeps_smooth_frames_and_averages_texture():
    frames = textured()
    out = resize_down_up(frames)
    assert out.shape == frames.shape
    flat = np.full((1, 32, 48, 3), 77, np.uint8)
    assert np.array_equal(resize_down_up(flat), flat)
    assert out.astype(float).std() < 0.7 * frames.astype(float).std()


def test_seen_by_view_keeps_the_conditioning_view_and_loses_what_it_never_showed():
    W, H = 40, 30
    K = intrinsics(W, H, 60.0)
    poses = np.stack([pose(rot_y(np.radians(a)), np.zeros(3)) for a in (0.0, 30.0, 90.0, 0.0)])
    seen = seen_by_view(poses, K, poses[0], W, H)  # directions at infinity
    assert seen[0].all() and seen[3].all()  # the conditioning view, and a return to it
    assert not seen[2].any()  # turned 90 degrees with a 60-degree field of view: nothing seen
    # turned 30 degrees right (rot_y positive: the view moves to +x), half the field of view: the
    # left half was seen (up to the corners, which leave frame 0's vertical field), the right not
    assert seen[1][:, : W // 3].all() and not seen[1][:, W // 2 + 1:].any()


def test_seen_by_view_uses_depth_under_translation():
    W, H = 40, 30
    K = intrinsics(W, H, 60.0)
    poses = np.stack([pose(np.eye(3), np.zeros(3)), pose(np.eye(3), np.array([10.0, 0.0, 0.0]))])
    near, far = np.full((2, H, W), 1.0), np.full((2, H, W), np.inf)
    assert not seen_by_view(poses, K, poses[0], W, H, near)[1].any()  # a wall 1 m away, moved 10 m
    assert seen_by_view(poses, K, poses[0], W, H, far)[1].all()  # the sky moves with the camera


@pytest.mark.parametrize("recipe", ["black", "uniform"])
def test_geometric_recipes_fill_only_the_unseen(recipe):
    frames = textured()
    seen = np.ones(frames.shape[:3], bool)
    seen[2, :, 10:] = False
    out = degrade(frames, recipe, 0, 8.0, seen)
    assert np.array_equal(out[seen], frames[seen])
    colour = [0, 0, 0] if recipe == "black" else np.rint(frames[0].reshape(-1, 3).mean(0))
    assert (out[~seen] == colour).all()
    with pytest.raises(ValueError, match="needs the conditioning view"):
        degrade(frames, recipe, 0, 8.0)


def test_unknown_recipe_names_the_valid_ones():
    with pytest.raises(ValueError, match="; valid: " + ", ".join(RECIPES)):
        degrade(textured(), "sepia", 0, 8.0)


def test_sliver_shows_returning_content_first_as_a_strip_along_its_edge():
    """Frame 1 is black; frames 2-9 see the 10 left columns: the first SLIVER_FRAMES (6) of them
    show only the 2 columns next to the black, frame 8 on the whole seen view again."""
    T, H, W = 10, 8, 20
    frames = textured(T, H, W)
    seen = np.ones((T, H, W), bool)
    seen[1] = False
    seen[2:, :, 10:] = False
    out = degrade(frames, "sliver", 0, 8.0, seen)
    strip = np.zeros((H, W), bool)
    strip[:, 8:10] = True
    for t in range(2, 8):
        assert np.array_equal(out[t].any(axis=2), strip & (frames[t].any(axis=2))), t
        assert np.array_equal(out[t][strip], frames[t][strip])
    assert np.array_equal(out[0], frames[0])  # content never black before: untouched
    assert not out[1].any()
    np.testing.assert_array_equal(out[8:], degrade(frames, "black", 0, 8.0, seen)[8:])
