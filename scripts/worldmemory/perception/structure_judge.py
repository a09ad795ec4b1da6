"""A same-entity judge without learned weights: PersistBench's judge question answered by matching
the target's colour structure (OpenCV and numpy only).

PersistBench (Method 2) asks a VLM whether the tracked crop of a generated frame shows the same
entity as the reference camera's crop of the target, "ignoring position and lighting". Without a
VLM, :class:`StructureMatchJudge` answers the same question (``ask`` takes the user turn of
judge.same_entity_prompt and replies "yes" or "no") by comparing the two crops' structure:

* Lighting: each crop is reduced to two maps that a gain and an offset of the colours only scale
  (the correlation below then cancels the scale): the colour gradient magnitude (edges and
  texture) and each pixel's colour distance from the crop's mean colour (the layout of colour
  contrast, the silhouette). Both are Euclidean norms in RGB, so a rotation of the colours about
  the grey axis (a hue shift: the ``recoloured`` reference model, which the oracle counts as the
  same entity and App penalises) leaves them unchanged; colour is App's business, not Perm's.
* Position and scale: the generated crop is scaled to the reference crop's area (both are the
  mask's box with the same margin, judge.mask_crop; one factor for both axes, since a tracker's
  box may have another shape than the reference's) and by SCALES around it, and the reference's
  box without the margin (the target itself) is searched over it (``cv2.matchTemplate``,
  zero-mean normalised cross-correlation, the best shift and scale win).
* Degradations: both crops are first smoothed by a Gaussian of ``SMOOTH_SIGMA`` = 1.5 px, the
  blur of the issue's degraded outside model, so that a generator's blur up to that size changes
  the maps little (sigma 1.5 on top of 1.5 is 2.1).

The decision is fixed by a principle, not fitted to any model's scores: the same entity when the
correlation is at least ``THRESHOLD`` = 1/sqrt(2), i.e. the reference target's structure explains
at least half of the variance of the matched structure (r^2 >= 1/2: more target than anything
else). A crop whose colours vary by less than ``BLANK_CONTRAST`` = 1 grey level (a black or
uniform view, where a model had nothing to draw) shows no entity: "no" (its correlation is
undefined).

Known limits (measured on the main job's 96 x 96 sequences): a target that fades into its
background keeps its structure, scaled down, so a target faded below the oracle's 0.5 opacity
still matched on 38% of such frames (a patch of wall beside the target on 12%); a crop split
between black and content (a target drawn in part at the edge of what the model shows)
correlates through the black edge either way (yes on warp-only's black-edged places, no on
half-drawn targets: 8% of its drawn frames); H.264 at crf 40 (the degraded replay) keeps 78% of
the omniscient's crops above the threshold (blur sigma 1.5 + noise 8 and resize 2x: 100%); a
target only ~6 px wide is below what the smoothing resolves.

This judge answers only the same-entity question: WorldMemBench's event checklist (a different
question, about what happens over a whole rollout) needs a VLM, and ``ask`` refuses it.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from worldmemory.perception.judge import CROP_MARGIN, NO, SAME_ENTITY, SAME_ENTITY_PROMPT, YES

SMOOTH_SIGMA = 1.5  # px: the blur a generator may add that the structure should survive
THRESHOLD = 1 / np.sqrt(2)  # correlation: r^2 >= 1/2
BLANK_CONTRAST = 1.0  # grey levels: a crop with less colour variation than this is blank
SCALES = (2 ** -0.25, 1.0, 2 ** 0.25)  # around the area match: a tracker's box off by up to ~20% in size


def structure(crop: np.ndarray) -> np.ndarray:
    """(H, W, 2) float32: colour gradient magnitude and colour distance from the crop's mean, of
    the smoothed crop, each scaled to unit standard deviation (lighting-free, hue-free)."""
    x = cv2.GaussianBlur(crop.astype(np.float32), (0, 0), SMOOTH_SIGMA, borderType=cv2.BORDER_REFLECT)
    gx = cv2.Sobel(x, cv2.CV_32F, 1, 0, ksize=3, borderType=cv2.BORDER_REFLECT)
    gy = cv2.Sobel(x, cv2.CV_32F, 0, 1, ksize=3, borderType=cv2.BORDER_REFLECT)
    maps = [np.sqrt((gx ** 2 + gy ** 2).sum(-1)), np.sqrt(((x - x.reshape(-1, 3).mean(0)) ** 2).sum(-1))]
    return np.dstack([m / max(float(m.std()), 1e-6) for m in maps]).astype(np.float32)


def is_blank(crop: np.ndarray) -> bool:
    """Whether the crop's colours vary by less than BLANK_CONTRAST grey levels (nothing shown)."""
    return float(crop.reshape(-1, 3).astype(np.float32).std(0).max()) < BLANK_CONTRAST


def similarity(reference_crop: np.ndarray, generated_crop: np.ndarray) -> float:
    """The best normalised cross-correlation of the reference target's structure (its crop less
    mask_crop's margin) over the generated crop, scaled to the reference crop's area (one factor
    for both axes, so that a tracker's box of another shape does not distort the target) times
    each of SCALES, and padded by half the target's size (it may stick out of a tight box); NaN
    when the generated crop is blank."""
    if is_blank(generated_crop):
        return float("nan")
    h, w = reference_crop.shape[:2]
    inner = 1 / (1 + 2 * CROP_MARGIN)
    th, tw = max(3, round(h * inner)), max(3, round(w * inner))
    y0, x0 = (h - th) // 2, (w - tw) // 2
    target = np.ascontiguousarray(structure(reference_crop)[y0:y0 + th, x0:x0 + tw])
    gh, gw = generated_crop.shape[:2]
    best = float("nan")
    for scale in SCALES:
        factor = scale * np.sqrt(h * w / (gh * gw))
        size = (max(1, round(gw * factor)), max(1, round(gh * factor)))
        generated = cv2.resize(generated_crop, size, interpolation=cv2.INTER_AREA if factor < 1 else cv2.INTER_LINEAR)
        padded = cv2.copyMakeBorder(structure(generated), th // 2, th // 2, tw // 2, tw // 2, cv2.BORDER_REPLICATE)
        scores = cv2.matchTemplate(padded, target, cv2.TM_CCOEFF_NORMED)
        if np.isfinite(scores).any():
            best = np.nanmax([best, float(np.nanmax(scores))])
    return float(best)


class StructureMatchJudge:
    """PersistBench's same-entity judge without weights (module doc); same ``ask`` as the VLMs."""

    name = "structure-match"
    questions = (SAME_ENTITY,)

    def same_entity(self, reference_crop: np.ndarray, generated_crop: np.ndarray) -> bool:
        return bool(similarity(reference_crop, generated_crop) >= THRESHOLD)  # NaN: False

    def ask(self, content: Sequence) -> str:
        """"yes" or "no" to judge.same_entity_prompt's user turn; ValueError for any other question."""
        if (len(content) != 3 or not isinstance(content[2], str) or content[2] != SAME_ENTITY_PROMPT
                or any(isinstance(c, str) for c in content[:2])):
            raise ValueError(f"the {self.name} judge answers only PersistBench's same-entity question "
                             "(judge.same_entity_prompt: two crops and its prompt); an event checklist "
                             "needs a vision-language model")
        reference, generated = (np.asarray(c) for c in content[:2])
        return YES if self.same_entity(reference, generated) else NO
