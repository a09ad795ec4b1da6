"""Known-answer tests of the container curriculum's clips and batches (Section 3.5 (ii), Appendices C, I)."""

import numpy as np
import pytest
from worldmemory.permanence import curricula as C
from worldmemory.permanence.mask_generators import CONTAINER, GENERIC_KINDS, container_mask
from worldmemory.permanence.render import BALL_COLOURS, _draw_ball

SIZE, FRAMES = 128, 32


def ball_pixels(frames):
    """Pixels of the ball's two checker colours (nothing else in a curriculum clip has them)."""
    return np.logical_or(*[(frames == np.array(c, np.uint8)).all(axis=-1) for c in BALL_COLOURS])


def layouts(seed, n=None):
    """``n`` layouts, or by default as many as it takes to see both box motions each way (mirrored or not)."""
    rng = np.random.default_rng(seed)
    drawn = []
    while len(drawn) < (n or 4) or (n is None and len({(d.box_motion, d.mirrored) for d in drawn}) < 4):
        drawn.append(C.sample_layout(rng, FRAMES, SIZE))
    return rng, drawn


def whole_disk(x, y, r):
    """Ball pixels of the disk drawn alone: what a fully visible ball shows."""
    canvas = np.zeros((SIZE, SIZE, 3), np.uint8)
    _draw_ball(canvas, x, y, r, BALL_COLOURS)
    return ball_pixels(canvas).sum()


def inside(rect, x, y, r):
    top, bottom, left, right = rect
    return left <= x - r and x + r <= right - 1 and top <= y - r and y + r <= bottom - 1


def test_enter_the_box_closes_over_the_ball_and_opens_on_it():
    rng, lays = layouts(0)
    for layout in lays:
        clip = C.render_container_clip(rng, layout, "enter")
        red = ball_pixels(clip.frames).any(axis=(1, 2))
        closed = np.arange(FRAMES) >= clip.close_frame
        closed &= np.arange(FRAMES) < clip.open_frame
        for f in np.flatnonzero(closed):
            assert inside(clip.box[f], clip.ball_x[f], clip.ball_y[f], clip.radius)
            assert np.array_equal(clip.box[f], clip.interior[f])
        assert not red[closed].any() and red[~closed].all()
        assert inside(clip.interior[clip.open_frame], clip.ball_x[clip.open_frame], clip.ball_y[0], clip.radius)


def test_miss_the_ball_passes_by_visible_in_every_frame():
    rng, lays = layouts(1)
    for layout in lays:
        clip = C.render_container_clip(rng, layout, "miss")
        shown = ball_pixels(clip.frames).sum(axis=(1, 2))
        whole = [whole_disk(x, y, clip.radius) for x, y in zip(clip.ball_x, clip.ball_y)]
        assert shown.tolist() == whole and min(whole) > 0
        f = clip.close_frame
        assert not inside(clip.box[f], clip.ball_x[f], clip.ball_y[f], 0)


def test_exit_the_ball_leaves_the_frame_when_the_box_closes():
    rng, lays = layouts(2)
    for layout in lays:
        clip = C.render_container_clip(rng, layout, "exit")
        red = ball_pixels(clip.frames).any(axis=(1, 2))
        assert red[0] and not red[clip.close_frame :].any()
        assert np.isnan(clip.ball_x[clip.close_frame :]).all()


def test_none_draws_no_ball_pixels():
    rng, lays = layouts(3)
    for layout in lays:
        clip = C.render_container_clip(rng, layout, "none")
        assert not ball_pixels(clip.frames).any() and np.isnan(clip.ball_x).all()


def test_scenarios_of_a_layout_share_the_box_and_its_timing():
    rng, (layout,) = layouts(4, 1)
    clips = [C.render_container_clip(rng, layout, s) for s in C.SCENARIOS]
    for clip in clips[1:]:
        assert np.array_equal(clip.box, clips[0].box) and np.array_equal(clip.interior, clips[0].interior)
        assert (clip.close_frame, clip.open_frame) == (clips[0].close_frame, clips[0].open_frame)


def test_nothing_moves_every_frame_is_the_first():
    rng, lays = layouts(5)
    for layout, scenario in zip(lays, C.SCENARIOS):
        clip = C.render_container_clip(rng, layout, scenario, "nothing_moves", n_distractors=4)
        assert (clip.frames == clip.frames[:1]).all()
        assert (clip.box == clip.box[:1]).all() and np.array_equal(clip.ball_x, np.full(FRAMES, clip.ball_x[0]),
                                                                    equal_nan=True)


def test_nothing_persists_objects_jump_every_frame_over_a_fixed_background():
    rng, lays = layouts(6, 3)
    for layout in lays:
        clip = C.render_container_clip(rng, layout, "miss", "nothing_persists", n_distractors=0)
        assert (np.diff(clip.ball_x) != 0).all() and (np.diff(clip.ball_y) != 0).all()
        assert (np.abs(np.diff(clip.box, axis=0)).sum(axis=1) > 0).all()
        free = np.ones((FRAMES, SIZE, SIZE), bool)  # pixels no object covers in that frame
        for f, (top, bottom, left, right) in enumerate(clip.box):
            free[f, top:bottom, left:right] = False
            x, y, r = clip.ball_x[f], clip.ball_y[f], clip.radius
            free[f, max(int(y - r) - 1, 0) : int(y + r) + 2, max(int(x - r) - 1, 0) : int(x + r) + 2] = False
        both = free[:-1] & free[1:]
        assert (clip.frames[:-1][both] == clip.frames[1:][both]).all()
        assert both.mean() > 0.5


def test_nothing_persists_keeps_the_scenario_s_ball_schedule():
    rng, (layout,) = layouts(7, 1)
    clip = C.render_container_clip(rng, layout, "exit", "nothing_persists")
    assert np.isfinite(clip.ball_x[: clip.close_frame]).all() and np.isnan(clip.ball_x[clip.close_frame :]).all()


def test_clips_are_deterministic_per_seed_and_differ_across_seeds():
    def clip(seed):
        return C.sample_container_clip(np.random.default_rng(seed), FRAMES, SIZE, scenario="enter").frames

    assert np.array_equal(clip(11), clip(11)) and not np.array_equal(clip(11), clip(12))


def test_a_container_batch_hides_its_shared_interior_after_opening():
    rng = np.random.default_rng(8)
    clips, hidden, kind = C.sample_curriculum_batch(rng, 3, FRAMES, SIZE, 16, 2, container_fraction=1.0)
    assert kind == CONTAINER and clips.shape == (3, FRAMES, SIZE, SIZE, 3) and clips.dtype == np.uint8
    # the same rng state again, to recover the batch's layout and first clip
    rng = np.random.default_rng(8)
    rng.random()
    layout = C.sample_layout(rng, FRAMES, SIZE)
    scenario = C.weighted_key(rng, C.SCENARIO_WEIGHTS, C.SCENARIOS, "scenario_weights")
    first = C.render_container_clip(rng, layout, scenario)
    assert np.array_equal(first.frames, clips[0])
    assert np.array_equal(hidden, container_mask(first.interior, layout.open_frame, SIZE // 16, 16, 2))
    assert hidden.min() // 64 == layout.open_frame // 2


def test_batches_are_deterministic_and_generic_batches_use_the_mixture():
    def batch(seed, fraction):
        return C.sample_curriculum_batch(np.random.default_rng(seed), 2, 8, 64, 16, 2, container_fraction=fraction)

    a, b = batch(9, 0.0), batch(9, 0.0)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1]) and a[2] == b[2] in GENERIC_KINDS
    assert a[0].shape == (2, 8, 64, 64, 3)


def test_the_container_fraction_holds_over_many_batches():
    rng = np.random.default_rng(10)
    n = 300
    for fraction in (0.7, 0.0, 1.0):
        kinds = [C.sample_curriculum_batch(rng, 1, 8, 64, 16, 2, container_fraction=fraction)[2] for _ in range(n)]
        hits = kinds.count(CONTAINER)
        assert abs(hits - n * fraction) <= 4 * np.sqrt(n * fraction * (1 - fraction))


def test_refusals_name_the_problem():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="container_fraction must be 0"):
        C.sample_curriculum_batch(rng, 2, 8, 64, 16, 2, variant="nothing_persists")
    with pytest.raises(ValueError, match="container_fraction must lie"):
        C.sample_curriculum_batch(rng, 2, 8, 64, 16, 2, container_fraction=1.5)
    with pytest.raises(ValueError, match="unknown scenario"):
        C.render_container_clip(rng, C.sample_layout(rng, 8, 64), "bounce")
    with pytest.raises(ValueError, match="n_frames must be"):
        C.sample_layout(rng, 4, 64)
