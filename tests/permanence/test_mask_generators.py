"""Known answers of the curricula's mask kinds (Section 3.5, Appendix C) as the pretraining draws them."""

import numpy as np
import pytest
from worldmemory.permanence import mask_generators as M

SIDE, SLOTS = 8, 6
PER_SLOT = SIDE * SIDE


def per_slot(hidden, slots=SLOTS, per=PER_SLOT):
    """Hidden cells of each slot, as sets of within-slot indices."""
    return [set((hidden[hidden // per == s] % per).tolist()) for s in range(slots)]


def well_formed(hidden, n_tokens=SLOTS * PER_SLOT):
    return (np.array_equal(hidden, np.unique(hidden)) and len(hidden) < n_tokens
            and (len(hidden) == 0 or (hidden.min() >= 0 and hidden.max() < n_tokens)))


@pytest.mark.parametrize("kind", M.GENERIC_KINDS)
def test_sample_mask_draws_each_kind_with_its_generator_and_sizes(kind):
    n_blocks, scale, _ = M.MASKS[kind]
    generator = {"short_tube": lambda r, side, slots: M.tube_mask(r, side, slots, n_blocks, scale),
                 "long_tube": lambda r, side, slots: M.tube_mask(r, side, slots, n_blocks, scale),
                 "temporal_block": lambda r, side, slots: M.temporal_block_mask(r, side, slots, n_blocks, scale),
                 "causal": M.causal_mask}[kind]
    for seed in range(40):
        ours, theirs = np.random.default_rng(seed), np.random.default_rng(seed)
        for side, slots in ((SIDE, SLOTS), (4, 2), (16, 8)):
            assert np.array_equal(M.sample_mask(ours, kind, side, slots), generator(theirs, side, slots))
        assert ours.random() == theirs.random()  # the same draws were consumed


def test_tube_masks_hide_the_same_cells_in_every_slot():
    rng = np.random.default_rng(0)
    for n_blocks, scale in ((8, 0.15), (2, 0.70)):
        for _ in range(20):
            hidden = M.tube_mask(rng, SIDE, SLOTS, n_blocks, scale)
            cells = per_slot(hidden)
            assert well_formed(hidden) and all(c == cells[0] for c in cells) and cells[0]


def test_a_tube_that_covers_the_frame_is_redrawn():
    rng = np.random.default_rng(0)
    for _ in range(50):  # V-JEPA's long tube (2 x 70%) covers a 3 x 3 frame in about a quarter of draws
        hidden = M.tube_mask(rng, 3, 2, n_blocks=2, scale=0.7)
        assert 0 < len(per_slot(hidden, 2, 9)[0]) < 9


def test_temporal_block_hides_a_block_from_its_start_slot_to_the_end():
    rng = np.random.default_rng(1)
    starts = set()
    for _ in range(60):
        hidden = M.temporal_block_mask(rng, SIDE, SLOTS)
        cells = per_slot(hidden)
        first = next(s for s in range(SLOTS) if cells[s])
        assert well_formed(hidden) and first >= 1
        assert not any(cells[:first]) and all(c == cells[first] for c in cells[first:])
        assert len(cells[first]) < PER_SLOT
        starts.add(first)
    assert starts == set(range(1, SLOTS))


def test_causal_hides_whole_slots_from_a_random_slot_on():
    rng = np.random.default_rng(2)
    starts = set()
    for _ in range(60):
        hidden = M.causal_mask(rng, SIDE, SLOTS)
        first = int(hidden[0] // PER_SLOT)
        assert np.array_equal(hidden, np.arange(first * PER_SLOT, SLOTS * PER_SLOT))
        starts.add(first)
    assert starts == set(range(1, SLOTS))


def test_container_mask_hides_exactly_the_footprint_after_opening():
    # 64 px clip, 16 px patches (4 x 4 tokens), 8 frames, tubelet 2: slots 0..3
    interior = np.zeros((8, 4), int)
    interior[:] = (8, 40, 20, 36)  # rows 8..39 -> token rows 0..2; cols 20..35 -> token cols 1..2
    interior[2] = (48, 64, 0, 16)  # before the opening (frame 3), though in its slot: hides nothing
    interior[6] = (16, 32, 48, 64)  # rows 16..31 -> row 1; cols 48..63 -> col 3
    interior[7] = (0, 0, 0, 0)  # empty: hides nothing
    hidden = M.container_mask(interior, open_frame=3, side=4, patch_size=16, tubelet=2)
    box = [r * 4 + c for r in range(3) for c in (1, 2)]
    expected = sorted([16 + i for i in box] + [32 + i for i in box] + [48 + 1 * 4 + 3])
    assert hidden.tolist() == expected  # slot 1 from frame 3 on, slot 2, slot 3 from frame 6 only; slot 0 none


def test_container_mask_starts_in_the_opening_slot_and_hides_nothing_before():
    interior = np.tile([10, 50, 10, 50], (16, 1))
    for open_frame in range(2, 16):
        hidden = M.container_mask(interior, open_frame, side=8, patch_size=8, tubelet=2)
        slots = np.unique(hidden // 64)
        assert slots.tolist() == list(range(open_frame // 2, 8)) and well_formed(hidden, 8 * 64)
        assert len(hidden) == len(slots) * 36  # px 10..49 of 8 px patches: rows and cols 1..6


def test_container_mask_refuses_to_hide_everything_and_bad_inputs():
    with pytest.raises(ValueError, match="hides all"):
        M.container_mask(np.tile([0, 64, 0, 64], (4, 1)), 0, side=4, patch_size=16, tubelet=2)
    with pytest.raises(ValueError, match="open_frame"):
        M.container_mask(np.tile([0, 8, 0, 8], (4, 1)), 4, side=4, patch_size=16, tubelet=2)
    with pytest.raises(ValueError, match="tubelet"):
        M.container_mask(np.tile([0, 8, 0, 8], (5, 1)), 1, side=4, patch_size=16, tubelet=2)
    with pytest.raises(ValueError, match="expected one of"):
        M.sample_mask(np.random.default_rng(0), "container", SIDE, SLOTS)
    with pytest.raises(ValueError, match="at least 2 slots"):
        M.causal_mask(np.random.default_rng(0), SIDE, 1)


def test_mixture_draws_kinds_by_weight_and_is_deterministic():
    rng = np.random.default_rng(3)
    kinds = [M.mixture_mask(rng, M.V2_MIXTURE, SIDE, SLOTS)[0] for _ in range(2000)]
    for kind, weight in M.V2_MIXTURE.items():
        share = kinds.count(kind) / len(kinds)
        assert abs(share - weight) < 4 * np.sqrt(weight * (1 - weight) / len(kinds))
    a = [M.mixture_mask(np.random.default_rng(7), {"causal": 1, "long_tube": 3}, SIDE, SLOTS) for _ in range(2)]
    assert a[0][0] == a[1][0] and np.array_equal(a[0][1], a[1][1])
    assert M.mixture_mask(rng, {"causal": 0.0, "short_tube": 1.0}, SIDE, SLOTS)[0] == "short_tube"
    with pytest.raises(ValueError, match="mixture has keys"):
        M.mixture_mask(rng, {"container": 1.0}, SIDE, SLOTS)
    with pytest.raises(ValueError, match="not all zero"):
        M.mixture_mask(rng, {"causal": 0.0}, SIDE, SLOTS)
