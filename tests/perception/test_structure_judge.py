"""The weight-free same-entity judge: known answers on a textured box over a striped wall (the same
box moved, scaled, relit, recoloured, blurred; another box; the wall; a blank view), its answers
through the VLM interface, and its refusal of WorldMemBench's event checklist."""

import cv2
import numpy as np
import pytest
from worldmemory.perception import registry
from worldmemory.perception import structure_judge as sj
from worldmemory.perception.judge import EVENT_CHECKLIST, SAME_ENTITY, event_prompt, mask_crop, same_entity_prompt
from worldmemory.workflow.config_checks import check_config
from worldmemory.worldmembench.perceive import VlmEventJudge

SIZE = 96


def texture(seed: int, scale: float = 3.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = cv2.GaussianBlur(rng.normal(0, 1, (SIZE, SIZE, 3)).astype(np.float32), (0, 0), scale)
    return 128 + 50 * (x - x.mean()) / x.std()


def scene(seed=1, top=30, left=36, h=22, w=18, ellipse=False):
    """(frame, mask): a box (or ellipse) with texture ``seed``, pinned to the box, on a striped wall."""
    yy, xx = np.mgrid[:SIZE, :SIZE]
    frame = np.dstack([90 + 30 * np.sin(xx / 2.0), 110 + 30 * np.sin(xx / 2.0 + 1), 70 + 0 * xx])
    if ellipse:
        mask = ((yy - top - h / 2) / (h / 2)) ** 2 + ((xx - left - w / 2) / (w / 2)) ** 2 <= 1
    else:
        mask = np.zeros((SIZE, SIZE), bool)
        mask[top:top + h, left:left + w] = True
    frame[mask] = np.roll(texture(seed), (top, left), (0, 1))[mask]
    return np.clip(frame, 0, 255).astype(np.uint8), mask


def crop(frame_and_mask) -> np.ndarray:
    return mask_crop(*frame_and_mask)


REFERENCE = crop(scene())


def blur_noise(image, seed=0, sigma=1.5, noise_std=8.0):
    blurred = cv2.GaussianBlur(image, (0, 0), sigma, borderType=cv2.BORDER_REFLECT)
    noise = np.random.default_rng(seed).normal(0, noise_std, image.shape)
    return np.clip(np.rint(blurred + noise), 0, 255).astype(np.uint8)


def scaled(factor: int) -> np.ndarray:
    frame, mask = scene()
    size = (SIZE * factor, SIZE * factor)
    return mask_crop(cv2.resize(frame, size, interpolation=cv2.INTER_LINEAR),
                     cv2.resize(mask.astype(np.uint8), size, interpolation=cv2.INTER_NEAREST) > 0)


SAME = {
    "identical": REFERENCE,
    "moved over the wall": crop(scene(top=40, left=20)),
    "twice the size": scaled(2),
    "brighter": np.clip(REFERENCE * 1.3 + 20, 0, 255).astype(np.uint8),
    "darker": (REFERENCE * 0.5).astype(np.uint8),
    "hue turned 120 degrees": REFERENCE[..., [2, 0, 1]],
    "blurred (sigma 1.5) and noisy": blur_noise(REFERENCE),
}
DIFFERENT = {
    "another texture, same box": crop(scene(seed=7)),
    "another object": crop(scene(seed=7, ellipse=True)),
    "the wall beside it": crop((scene()[0], np.roll(scene()[1], 40, 1))),
    "black": np.zeros_like(REFERENCE),
    "uniform": np.full_like(REFERENCE, (120, 80, 60)),
}


@pytest.mark.parametrize("name", SAME)
def test_the_same_box_moved_scaled_relit_recoloured_or_blurred_is_the_same_entity(name):
    judge = sj.StructureMatchJudge()
    assert judge.same_entity(REFERENCE, SAME[name])
    assert judge.ask(same_entity_prompt(REFERENCE, SAME[name])) == "yes"


def test_a_hue_turn_that_erases_the_grey_contrast_keeps_the_entity():
    """A texture of two colours apart mostly in green, as the main job's static_000 target, chosen
    so that its grey (Rec. 601) contrast vanishes once the hue turns 120 degrees (channels cycled:
    0.299 x -50 + 0.587 x 25.5 = 0): only the colour norms still see it."""
    frame, mask = scene()
    mix = (texture(3)[..., :1] - 78) / 100  # about 0..1
    colours = (1 - mix) * np.array([150, 90, 80]) + mix * np.array([150, 40, 105.5])
    frame[mask] = np.clip(colours, 0, 255).astype(np.uint8)[mask]
    reference = mask_crop(frame, mask)
    assert sj.StructureMatchJudge().same_entity(reference, reference[..., [1, 2, 0]])


def test_an_identical_crop_correlates_perfectly():
    assert sj.similarity(REFERENCE, REFERENCE) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("name", DIFFERENT)
def test_another_object_the_background_or_a_blank_view_is_not(name):
    judge = sj.StructureMatchJudge()
    assert not judge.same_entity(REFERENCE, DIFFERENT[name])
    assert judge.ask(same_entity_prompt(REFERENCE, DIFFERENT[name])) == "no"


def test_a_blank_crop_has_no_correlation():
    assert np.isnan(sj.similarity(REFERENCE, np.zeros_like(REFERENCE)))
    assert sj.is_blank(np.full((9, 9, 3), 200, np.uint8)) and not sj.is_blank(REFERENCE)


def test_only_the_same_entity_question_is_answered():
    judge = registry.create("judge", "structure-match")
    with pytest.raises(ValueError, match="answers only PersistBench's same-entity question"):
        judge.ask(event_prompt([REFERENCE], [0], [{"name": "V", "start": 0, "end": 8, "label": "hold"}],
                               "a box", "it slides", [("q1", "Does it slide?")]))
    assert registry.judges_of(SAME_ENTITY) == ["transformers-vlm", "openai-compatible", "structure-match"]
    assert "structure-match" not in registry.judges_of(EVENT_CHECKLIST)


def test_worldmembench_refuses_it_for_the_event_checklist_naming_the_key_and_the_choices():
    expected = (r"worldmembench.perception.judge = 'structure-match'.*event checklist.*"
                r"expected one of transformers-vlm, openai-compatible, none")
    with pytest.raises(ValueError, match=expected):
        VlmEventJudge(sj.StructureMatchJudge())
    with pytest.raises(ValueError, match=expected):
        check_config({"worldmembench": {"perception": {"judge": "structure-match"}}})
    check_config({"persistbench": {"perception": {"judge": "structure-match"}}})  # PersistBench's question
