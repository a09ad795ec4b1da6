"""Token indexing and probe geometry (Section 3.2): time-major tokens, band, readout regions."""

import numpy as np
import pytest
from worldmemory.permanence.masks import ProbeGeometry, TokenGrid, seconds_since_visible, slot_ball_x
from worldmemory.permanence.render import EVENT_FRAME, WINDOW_START, approach_timing, expected_ball_x

GRID = TokenGrid(crop_size=128, patch_size=16)  # 8 x 8 patches of 32 scene px, 16 slots


def test_token_index_is_time_major():
    assert GRID.n_tokens == 16 * 64
    assert GRID.index(0, 0, 0) == 0
    assert GRID.index(0, 0, 1) == 1
    assert GRID.index(0, 1, 0) == 8
    assert GRID.index(1, 0, 0) == 64
    assert GRID.index(1, 2, 3) == 64 + 16 + 3


def test_cells_in_box_counts_shared_pixels():
    rows, cols = GRID.cells_in_box(0, 31, 0, 31)
    assert rows.tolist() == [0] and cols.tolist() == [0]
    _, cols = GRID.cells_in_box(31.5, 32.5, 0, 0)
    assert cols.tolist() == [1]  # only pixel 32 lies inside
    _, cols = GRID.cells_in_box(30, 33, 0, 0)
    assert cols.tolist() == [0, 1]
    rows, _ = GRID.cells_in_box(0, 0, 250, 400)  # clipped at the frame border
    assert rows.tolist() == [7]


def test_band_and_visible_sets_for_radius_8():
    geom = ProbeGeometry(GRID, radius=8)
    rows, cols = geom.band_cells()
    # y in [190 - 16, 190 + 16] -> patch rows 5, 6; x in [12, 244] -> every column.
    assert sorted(set(rows.tolist())) == [5, 6] and sorted(set(cols.tolist())) == list(range(8))
    hidden = geom.hidden(2)
    assert len(hidden) == 14 * 16
    assert hidden.min() == GRID.index(2, 5, 0) and hidden.max() == GRID.index(15, 6, 7)
    visible = geom.visible(hidden)
    assert len(visible) + len(hidden) == GRID.n_tokens and not np.intersect1d(visible, hidden).size
    assert len(geom.hidden(0)) == 16 * 16  # never-visible control: band hidden in every slot


def test_readout_region_at_the_event():
    geom = ProbeGeometry(GRID, radius=8)
    x = 28 + 3.2 * 32.5  # mean x of the event slot's frames 32, 33
    region = geom.region(2, x)
    # x box [116, 148] -> columns 3, 4; rows 5, 6.
    expected = sorted(GRID.index(2, r, c) for r in (5, 6) for c in (3, 4))
    assert region.tolist() == expected


# V-JEPA 2's lattice (256 px crop, 16 px patches: 16 x 16 cells, index = slot * 256 + row * 16 + col)
# at R = 16, where the 8 px margin reaches one more patch on each side than the bare disk.
# Ball x per slot (Appendix B, 3.2 px per frame from x = 28): slot 2 (frames 32, 33) 132.0, slot 9
# (frames 46, 47) 176.8. Rows: y in [190 - 24, 190 + 24] = [166, 214] -> rows 10..13 (without the
# margin [174, 206] -> 10..12). Slot 2: x in [108, 156] -> columns 6..9 (without: [116, 148] ->
# 7..9). Slot 9: x in [152.8, 200.8], pixels 153..200 -> columns 9..12 (without: 161..192 -> 10..12).
READOUT_KNOWN_ANSWERS = {
    2: [678, 679, 680, 681, 694, 695, 696, 697, 710, 711, 712, 713, 726, 727, 728, 729],
    9: [2473, 2474, 2475, 2476, 2489, 2490, 2491, 2492, 2505, 2506, 2507, 2508, 2521, 2522, 2523, 2524],
}


@pytest.mark.parametrize("slot", sorted(READOUT_KNOWN_ANSWERS))
def test_readout_region_reaches_r_plus_8_px_around_the_ball(slot):
    """Known answer of Section 3.2's readout box (R + 8 px): at these positions the box without
    the margin has 9 tokens, not 16, and a ball 8 px further right starts one column later."""
    geom = ProbeGeometry(TokenGrid(256, 16), radius=16)
    xs = slot_ball_x([expected_ball_x("moving", f) for f in range(WINDOW_START, WINDOW_START + 32)])
    assert xs[[2, 9]].tolist() == pytest.approx([132.0, 176.8])
    assert geom.region(slot, xs[slot]).tolist() == READOUT_KNOWN_ANSWERS[slot]
    assert geom.region(slot, xs[slot] + 8).tolist() == [t + 1 for t in READOUT_KNOWN_ANSWERS[slot]]


@pytest.mark.parametrize("radius", [4, 8, 16, 32])
@pytest.mark.parametrize("grid", [GRID, TokenGrid(256, 16), TokenGrid(64, 16)])
def test_readout_region_lies_inside_the_hidden_band(radius, grid):
    geom = ProbeGeometry(grid, radius)
    hidden = geom.hidden(geom.event_slot)
    xs = slot_ball_x([expected_ball_x("moving", f) for f in range(WINDOW_START, WINDOW_START + 32)])
    for slot in geom.readout_slots():
        region = geom.region(slot, xs[slot])
        assert len(region) > 0 and np.isin(region, hidden).all()
        assert np.isin(region, geom.band(slot)).all()


def test_slots_and_time_points():
    assert ProbeGeometry(GRID, 8).event_slot == (EVENT_FRAME - WINDOW_START) // 2
    assert list(ProbeGeometry(GRID, 8).readout_slots()) == list(range(2, 16))
    assert seconds_since_visible(2) == 0.0
    assert seconds_since_visible(3) == pytest.approx(0.2667, abs=1e-4)
    assert seconds_since_visible(15) == pytest.approx(3.4667, abs=1e-4)
    assert slot_ball_x([0, 2, 4, 8]).tolist() == [1.0, 6.0]


def test_grid_rejects_inconsistent_sizes():
    with pytest.raises(ValueError):
        TokenGrid(crop_size=100, patch_size=16)


@pytest.mark.parametrize("radius", [8, 32])
def test_the_tube_block_holds_every_readout_region_from_the_entry_and_the_approach_the_rest(radius):
    clip = approach_timing(8)
    geom = ProbeGeometry(GRID, radius, event_slot=(clip.event_frame - clip.window_start) // 2)
    xs = slot_ball_x([expected_ball_x("moving", f, clip) for f in clip.frames()])
    entry_x = expected_ball_x("moving", clip.event_frame, clip)
    block, approach = geom.block(entry_x), geom.approach(entry_x)
    for slot in geom.readout_slots():
        assert np.isin(geom.region(slot, xs[slot]), block).all()
    band = geom.hidden(0)
    assert np.intersect1d(block, approach).size == 0 and np.array_equal(np.union1d(block, approach), band)
    assert approach.size > 0
    # the same block in every slot: a tube
    per_slot = block.reshape(GRID.slots, -1) - (np.arange(GRID.slots) * GRID.side**2)[:, None]
    assert (per_slot == per_slot[0]).all()
