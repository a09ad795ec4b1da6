"""Calibration predictors: positive controls of known behaviour for the belief probe.

*Tracking Is Not Permanence*, Appendix J ("Decision against trace": "a calibration on a predictor
with a known posterior, where P(present), e and alpha can be compared with the truth, would settle
how each readout maps onto belief"; "a positive control with built-in memory would calibrate the
probe's ceiling"). Each predictor here fulfils the
:class:`~worldmemory.models.masked_predictor.MaskedLatentPredictor` contract, so the real
:class:`~worldmemory.permanence.probe.Prober` reads it on the real scenes and it lists in Table 3
like any model.

Construction: a *pixel-space fill read through a real encoder*. :class:`CalibrationPredictor`
wraps an inner :class:`~worldmemory.models.vjepa2.VJEPA2Backend` (the encoder whose axis is
read). ``encode(x, visible)`` derives the hidden tokens (all tokens minus ``visible``) and their
pixels (a token is ``tubelet_size`` frames x one ``patch_size`` patch, time-major as
masks.TokenGrid), fills the hidden pixels of the un-normalised clip by the predictor's rule
(visible pixels stay the exact model input), and returns
``cat(inner.encode(x, visible)[:, :len(visible)], inner.encode(x_filled)[:, hidden])``: the first
``len(visible)`` rows are the true visible context (so copy_last_view works unchanged), the rest
the filled hidden tokens, in ascending token order. The inner backend may also be VideoMAE's pixel
readout (models.videomae, whose context appends the visible pixels, dropped here): its fills are
then read as per-patch normalised pixel targets, which calibrates that readout.
``predict(context, visible, target)`` gathers ``target`` (which must be hidden) from the hidden
rows. References (``visible=None``) are the inner encoder's.

Rules ("the last visible frame" of a pixel: the latest frame before its hidden span; "red": R -
max(G, B) > RED_THRESHOLD in [0, 1] units, the renderer's ball being the only red thing):

* ``persistence_oracle``: x_filled = x: it reads the hidden pixels, the privileged rule (which
  known_posterior inherits). Its
  prediction equals the encoder's full-world tokens of the clip it is given: P(present) = 1 at
  every slot on the main condition (carry-over to the window's end), 0 on the never-rendered
  control (no ball drawn), and 1 on the never-visible condition too (the ball is in its pixels).
* ``object_freezer``: every hidden pixel takes its value at its last visible frame: the world
  freezes when hidden. For the moving ball that is the ``static`` world (ball where last seen;
  only distractor pixels inside a hidden patch row above the ball differ, as they freeze too):
  present on the stationary ball, absent on the moving ball once it has left its last position,
  nearest world "static".
* ``linear_extrapolation``: the ball (red pixels inside the hidden cells, in the last frame before
  the first hidden frame, t_last) is cut out, its velocity v is the least-squares slope of the
  redness-weighted centroid over the last four frames up to t_last (0 without red in two of
  them; ball_track says why not the last two frames alone), and it is
  pasted at the shift round(v * (t - t_last)) (whole pixels) onto a background estimate in every
  hidden frame t. Background estimate of a hidden pixel: its latest visible non-red value; else
  (a pixel the ball covered in every visible frame) the linear interpolation, in its row at
  t_last, between the nearest non-red visible pixels left and right of it. Present on the moving
  (nearest "moving") and on the stationary ball (v = 0). (A row mean instead of the
  interpolation, over a 2 px ball at 128 px, put the ball-less fill on the present side in 1 of 3
  stationary scenes: the row mean crosses the background's tiles, the interpolation mostly not.)
* ``known_posterior`` with q in [0, 1]: a predictor whose posterior that the ball is still there
  is q by construction. ``mode: mean`` (default): the posterior mean in token space, q *
  E(oracle fill) + (1 - q) * E(absent fill), where the absent fill is linear_extrapolation's
  background estimate without the ball. On the main condition the L1 decision is a step (P = 1
  for q > 0.5, 0 for q < 0.5; near 0.5 the absent fill's error under the ball decides: with the
  embedded model's trained encoder, on 12 scenes, P = 0 at q = 0.25 but for 2 of 42 readouts of
  the R = 32 moving ball, up to 0.33 at q = 0.4, 1 at q = 0.6), alpha is about q and e increases
  with q.
  ``mode: sample``: per scene one deterministic Bernoulli(q) draw
  picks the oracle or the absent fill, so P(present) follows q over scenes. The draw is seeded by
  sha256 of the visible indices and the exact model input of the visible pixels (float32 bytes)
  under a namespace holding q (common.seeds.stable_rng): the same clip and mask give the same draw
  in every process on one device, whatever the batch. Privileged, as it uses the oracle fill.

Never-visible condition (band hidden from slot 0; generally: a pixel without a visible frame
before its hidden frame): nothing was seen to freeze or extrapolate. Such a pixel takes the value
of the nearest visible pixel of its column in the same frame, searched upward first, then
downward (for the probe's band: the row just above it); a column hidden in that frame takes the
mean visible colour of the frame, or of the clip. linear_extrapolation pastes no ball when there
is no frame before the first hidden one, and uses the same fallback for a background pixel
without a visible non-red value when its row has none at t_last either (so known_posterior's
absent fill is the same smear there).

Every rule but the privileged two reads visible pixels only (tests/permanence/test_calibration.py
changes hidden pixels and checks the outputs are bit-identical). The fills run in numpy on the
CPU (float32), so they are the same on every device; the encoder runs where the inner backend
does.
"""

from __future__ import annotations

import hashlib

import numpy as np
import torch

from worldmemory.common.seeds import stable_rng
from worldmemory.models import videomae
from worldmemory.models.video_backend import VideoBackend
from worldmemory.models.vjepa2 import backend_from_spec, describe

RULES = ("persistence_oracle", "object_freezer", "linear_extrapolation", "known_posterior")
PRIVILEGED = frozenset({"persistence_oracle", "known_posterior"})  # read hidden pixels
MODES = ("mean", "sample")
RED_THRESHOLD = 0.05  # R - max(G, B), pixel values in [0, 1]; gray and distractors are <= 0
VELOCITY_FRAMES = 4  # frames before the hidden span that the ball's velocity is fitted on
CENTROID_FLOOR = 1e-3  # redness below this is float rounding of gray, not ball
SAMPLE_NAMESPACE = "worldmemory.permanence.calibration.known_posterior.v1"


class CalibrationPredictor:
    """A fill rule read through a real encoder, as a MaskedLatentPredictor (module docstring)."""

    def __init__(self, inner: VideoBackend, predictor: str, q: float | None = None,
                 mode: str | None = None,
                 red_threshold: float = RED_THRESHOLD):
        if predictor not in RULES:
            raise ValueError(f"unknown calibration predictor {predictor!r}; expected one of {', '.join(RULES)}")
        if predictor == "known_posterior":
            if q is None or not 0.0 <= float(q) <= 1.0:
                raise ValueError(f"known_posterior needs q in [0, 1], got {q!r}")
            mode = "mean" if mode is None else mode
            if mode not in MODES:
                raise ValueError(f"unknown known_posterior mode {mode!r}; expected one of {', '.join(MODES)}")
            q = float(q)
        elif q is not None or mode is not None:
            raise ValueError(f"q and mode belong to known_posterior, not to {predictor}")
        self.inner = inner
        self.rule = predictor
        self.q = q
        self.mode = mode
        self.red_threshold = float(red_threshold)
        self.model = inner.model  # the encoder's weights: digest, provenance and cache keys
        if hasattr(inner, "window_frames"):  # a fixed clip length (VideoMAE): the probe reads that many frames
            self.window_frames = inner.window_frames
        self.reads_hidden = predictor in PRIVILEGED  # the Prober keys such contexts on every pixel

    # -- the MaskedLatentPredictor attributes --------------------------------------------------
    @property
    def crop_size(self) -> int:
        return self.inner.crop_size

    @property
    def patch_size(self) -> int:
        return self.inner.patch_size

    @property
    def tubelet_size(self) -> int:
        return self.inner.tubelet_size

    def preprocess(self, clips) -> torch.Tensor:
        return self.inner.preprocess(clips)

    def describe(self) -> dict:
        """The fill's parameters, for provenance beside the inner encoder's identity."""
        return {"predictor": self.rule, "q": self.q, "mode": self.mode, "red_threshold": self.red_threshold,
                "reads_hidden_pixels": self.reads_hidden}

    # -- encode / predict ----------------------------------------------------------------------
    def hidden_tokens(self, x: torch.Tensor, visible) -> tuple[np.ndarray, np.ndarray]:
        """(hidden token indices, hidden pixel mask (T, H, W)) of a clip (B, T, 3, H, W)."""
        _, t, _, h, w = x.shape
        p, tub = self.patch_size, self.tubelet_size
        if t % tub or h % p or w % p:
            raise ValueError(f"clip of {t} frames, {h}x{w} px is not a whole number of {tub}-frame, {p} px tokens")
        slots, rows, cols = t // tub, h // p, w // p
        n = slots * rows * cols
        visible = np.asarray(visible, np.int64).ravel()
        if visible.size and (visible.min() < 0 or visible.max() >= n):
            raise ValueError(f"visible token indices outside 0..{n - 1}")
        if np.unique(visible).size != visible.size:
            raise ValueError("visible token indices repeat")
        hidden = np.setdiff1d(np.arange(n), visible)
        mask = np.zeros(n, bool)
        mask[hidden] = True
        pixels = mask.reshape(slots, rows, cols).repeat(tub, 0).repeat(p, 1).repeat(p, 2)
        return hidden, pixels

    def encode(self, x: torch.Tensor, visible=None) -> torch.Tensor:
        """Visible context followed by the filled hidden tokens (module docstring); the inner
        encoder's tokens of the whole clip when ``visible`` is None (references)."""
        if visible is None:
            return self.inner.encode(x)
        hidden, hid = self.hidden_tokens(x, visible)
        context = self.inner.encode(x, visible)[:, : len(np.asarray(visible).ravel())]
        if hidden.size == 0:
            return context
        return torch.cat([context, self._hidden_features(x, visible, hidden, hid)], dim=1)

    def predict(self, context: torch.Tensor, visible, target) -> torch.Tensor:
        """The filled features of ``target``, a subset of the hidden tokens, from :meth:`encode`'s context."""
        visible = np.asarray(visible, np.int64).ravel()
        target = np.asarray(target, np.int64).ravel()
        hidden = np.setdiff1d(np.arange(context.shape[1]), visible)
        if hidden.size + visible.size != context.shape[1]:
            raise ValueError("the context does not come from this predictor's encode with these visible tokens")
        outside = target[~np.isin(target, hidden)]
        if outside.size:
            raise ValueError(f"target tokens {outside[:8].tolist()}{'...' if outside.size > 8 else ''} are not "
                             "hidden: a calibration predictor fills only the tokens its context did not see")
        rows = visible.size + np.searchsorted(hidden, target)
        return context[:, torch.as_tensor(rows, device=context.device)]

    # -- fills -----------------------------------------------------------------------------------
    def _hidden_features(self, x, visible, hidden, hid) -> torch.Tensor:
        idx = torch.as_tensor(hidden, device=x.device)
        if self.rule == "persistence_oracle":
            return self.inner.encode(x)[:, idx]
        raw = self._raw(x)
        if self.rule == "object_freezer":
            return self.inner.encode(self._filled(x, freeze(raw, hid), hid))[:, idx]
        if self.rule == "linear_extrapolation":
            fill = extrapolate(raw, hid, self.red_threshold)
            return self.inner.encode(self._filled(x, fill, hid))[:, idx]
        # known_posterior: the oracle fill (x itself) and the absent fill (background estimate, no ball)
        def oracle(rows):
            return self.inner.encode(x[torch.as_tensor(rows, device=x.device)])[:, idx]

        def absent(rows):
            clip = self._filled(x[torch.as_tensor(rows, device=x.device)],
                                background(raw[rows], hid, self.red_threshold), hid)
            return self.inner.encode(clip)[:, idx]

        every = np.arange(x.shape[0])
        if self.mode == "mean":
            if self.q == 1.0:
                return oracle(every)
            if self.q == 0.0:
                return absent(every)
            return self.q * oracle(every) + (1.0 - self.q) * absent(every)
        present = self.draws(x, visible)
        out = None
        for rows, fill in ((every[present], oracle), (every[~present], absent)):
            if rows.size:
                features = fill(rows)
                if out is None:
                    out = features.new_empty((x.shape[0], *features.shape[1:]))
                out[torch.as_tensor(rows, device=out.device)] = features
        return out

    def draws(self, x: torch.Tensor, visible) -> np.ndarray:
        """known_posterior sample mode: per clip, whether the oracle fill is drawn (probability q)."""
        _, hid = self.hidden_tokens(x, visible)
        vis = torch.as_tensor(~hid, device=x.device)  # (T, H, W)
        order = np.asarray(visible, np.int64).tobytes()
        out = []
        for clip in x:
            pixels = clip.permute(0, 2, 3, 1)[vis].float().cpu().numpy()  # (n visible px, 3), the model input
            key = hashlib.sha256(order + np.ascontiguousarray(pixels).tobytes()).hexdigest()
            out.append(stable_rng(key, f"{SAMPLE_NAMESPACE}/q={self.q!r}").random() < self.q)
        return np.array(out, bool)

    def _raw(self, x: torch.Tensor) -> np.ndarray:
        """Un-normalised pixels (B, 3, T, H, W) float32 in [0, 1] (channel before time for the fills)."""
        raw = x.float() * self.inner.std + self.inner.mean
        return raw.permute(0, 2, 1, 3, 4).cpu().numpy().astype(np.float32)

    def _filled(self, x: torch.Tensor, fill: np.ndarray, hid: np.ndarray) -> torch.Tensor:
        """x with its hidden pixels replaced by ``fill`` (B, 3, T, H, W), renormalised; visible pixels
        stay the exact model input."""
        fill = torch.from_numpy(np.ascontiguousarray(fill.transpose(0, 2, 1, 3, 4))).to(x.device)
        fill = (fill - self.inner.mean) / self.inner.std
        where = torch.as_tensor(hid, device=x.device)[None, :, None]
        return torch.where(where, fill.to(x.dtype), x)


def _sum(a: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """Sum over ``axes`` in a fixed sequential order (float64): numpy's pairwise SIMD sums can round
    differently with the arrays' memory alignment, which would make a fill depend on more than the
    values it reads (the no-leak test compares outputs bit for bit)."""
    axes = tuple(ax % a.ndim for ax in axes)
    kept = [ax for ax in range(a.ndim) if ax not in axes]
    flat = np.transpose(a, kept + list(axes)).reshape([a.shape[ax] for ax in kept] + [-1])
    if flat.shape[-1] == 0:
        return np.zeros(flat.shape[:-1])
    return np.cumsum(flat, axis=-1, dtype=np.float64)[..., -1]


def _latest_before(valid: np.ndarray) -> np.ndarray:
    """Per pixel of (..., T, H, W), the latest frame <= t where ``valid`` holds, -1 if none."""
    t = valid.shape[-3]
    frames = np.arange(t).reshape(t, 1, 1)
    return np.maximum.accumulate(np.where(valid, frames, -1), axis=-3)


def _from_column(raw: np.ndarray, vis: np.ndarray) -> np.ndarray:
    """Every pixel's nearest visible pixel in its column and frame (upward first, then downward);
    a column hidden in the frame takes the frame's mean visible colour, else the clip's, else 0.5."""
    h = vis.shape[1]
    rows = np.arange(h).reshape(1, h, 1)
    up = np.maximum.accumulate(np.where(vis, rows, -1), axis=1)
    down = np.flip(np.minimum.accumulate(np.flip(np.where(vis, rows, h), axis=1), axis=1), axis=1)
    source = np.where(up >= 0, up, down)  # h where the column has no visible pixel in the frame
    out = np.take_along_axis(raw, np.minimum(source, h - 1)[None, None], axis=3)
    found = source < h
    if not found.all():
        seen = np.where(vis, raw, 0.0)
        n_frame = vis.sum(axis=(1, 2))
        frame_mean = _sum(seen, (3, 4)) / np.maximum(n_frame, 1)  # (B, 3, T)
        clip_mean = _sum(seen, (2, 3, 4)) / max(int(vis.sum()), 1)  # (B, 3)
        if not vis.any():
            clip_mean = np.full_like(clip_mean, 0.5)
        frame_mean = np.where(n_frame > 0, frame_mean, clip_mean[..., None])
        out = np.where(found, out, frame_mean[..., None, None].astype(np.float32))
    return out


def freeze(raw: np.ndarray, hid: np.ndarray) -> np.ndarray:
    """object_freezer: each hidden pixel at its last visible frame (raw (B, 3, T, H, W), hid (T, H, W))."""
    vis = ~hid
    last = _latest_before(vis)
    out = np.take_along_axis(raw, np.maximum(last, 0)[None, None], axis=2)
    never = hid & (last < 0)
    if never.any():
        out = np.where(never, _from_column(raw, vis), out)
    return out


def _redness(raw: np.ndarray) -> np.ndarray:
    """R - max(G, B) per pixel, (B, T, H, W): > 0 only on the ball (gray is 0, distractors <= 0)."""
    return raw[:, 0] - np.maximum(raw[:, 1], raw[:, 2])


def _red(raw: np.ndarray, threshold: float) -> np.ndarray:
    """(B, T, H, W): the renderer's ball is the only thing with red above the other channels."""
    return _redness(raw) > threshold


def _centroid(weight: np.ndarray) -> np.ndarray:
    """(row, col) centroid of a weight map (H, W)."""
    rows, cols = np.indices(weight.shape)
    return np.array([_sum(weight * rows, (0, 1)), _sum(weight * cols, (0, 1))]) / _sum(weight, (0, 1))


def _last_context_frame(hid: np.ndarray) -> int:
    """t_last: the frame before the first frame with a hidden pixel (-1 if hidden from frame 0)."""
    return int(np.flatnonzero(hid.any(axis=(1, 2)))[0]) - 1


def _along_row(frame: np.ndarray, ok: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per pixel of ``frame`` (B, 3, H, W), the linear interpolation between the nearest ``ok``
    pixels (B, H, W) left and right of it in its row (the one side's value where only one exists),
    and whether any exists."""
    w = ok.shape[-1]
    cols = np.arange(w)
    left = np.maximum.accumulate(np.where(ok, cols, -1), axis=-1)
    right = np.flip(np.minimum.accumulate(np.flip(np.where(ok, cols, w), axis=-1), axis=-1), axis=-1)
    has_left, has_right = left >= 0, right < w
    value_left = np.take_along_axis(frame, np.clip(left, 0, w - 1)[:, None], axis=-1)
    value_right = np.take_along_axis(frame, np.clip(right, 0, w - 1)[:, None], axis=-1)
    span = np.where(has_left & has_right & (right > left), right - left, 1).astype(np.float32)
    share = np.where(has_left & has_right, (cols - left) / span, np.where(has_right, 1.0, 0.0))
    share = share.astype(np.float32)[:, None]  # weight of the right neighbour
    return (1 - share) * value_left + share * value_right, has_left | has_right


def background(raw: np.ndarray, hid: np.ndarray, threshold: float = RED_THRESHOLD) -> np.ndarray:
    """The scene without the ball at every pixel: latest visible non-red value; else, in its row at
    t_last, the linear interpolation between the nearest non-red visible pixels left and right of
    it; else the column fallback (module docstring)."""
    vis = ~hid
    red = _red(raw, threshold)
    valid = vis[None] & ~red  # (B, T, H, W)
    last = _latest_before(valid)
    out = np.take_along_axis(raw, np.maximum(last, 0)[:, None], axis=2)
    missing = last < 0
    t_last = _last_context_frame(hid)
    if t_last >= 0:
        across, found = _along_row(raw[:, :, t_last], valid[:, t_last])  # (B, 3, H, W), (B, H, W)
        out = np.where((missing & found[:, None])[:, None], across[:, :, None], out)
        missing = missing & ~found[:, None]
    if missing.any():
        out = np.where(missing[:, None], _from_column(raw, vis), out)
    return out


def ball_track(raw: np.ndarray, hid: np.ndarray, threshold: float = RED_THRESHOLD):
    """Per clip, the ball cut out at t_last: (rows, cols, colours (3, n), velocity (dy, dx) per
    frame), or None where no red pixel of the hidden cells is visible at t_last.

    The cut-out is the red pixels (redness > ``threshold``). The velocity is the least-squares
    slope of the redness-weighted centroid (weights R - max(G, B) where above CENTROID_FLOOR) over
    the last VELOCITY_FRAMES frames before the first hidden one that show red (the probe's main
    mask leaves four), 0 with fewer than two. Measured on the rendered moving ball (5 seeds, true
    speed 0.8 / 1.6 px per frame at 64 / 128 px): the two-frame difference is off by up to 0.06
    px/frame (0.05 along the path at 64 px, R = 4; 0.06 across it at 128 px), which after 28
    hidden frames puts a 2 px ball 2 px off its path; the slope over four frames is off by at most
    0.011. Weighting by redness follows sub-pixel motion; the unweighted centroid of the
    thresholded pixels read 0.95 px/frame for a true 0.80.
    """
    t_last = _last_context_frame(hid)
    if t_last < 0:
        return [None] * raw.shape[0]
    band = hid.any(axis=0)
    first = max(t_last + 1 - VELOCITY_FRAMES, 0)
    frames = np.arange(first, t_last + 1)
    redness = _redness(raw[:, :, first : t_last + 1]) * band  # frames before any hidden one: all visible
    weight = np.where(redness > CENTROID_FLOOR, redness, 0.0)
    tracks = []
    for b in range(raw.shape[0]):
        now = redness[b, -1] > threshold
        if not now.any():
            tracks.append(None)
            continue
        ys, xs = np.nonzero(now)
        seen = [i for i in range(len(frames)) if weight[b, i].any()]
        velocity = np.zeros(2)
        if len(seen) >= 2:
            t = frames[seen] - frames[seen].mean()
            centroids = np.array([_centroid(weight[b, i]) for i in seen])
            velocity = (t @ (centroids - centroids.mean(axis=0))) / float(t @ t)
        tracks.append((ys, xs, raw[b, :, t_last][:, ys, xs], velocity))
    return tracks


def extrapolate(raw: np.ndarray, hid: np.ndarray, threshold: float = RED_THRESHOLD) -> np.ndarray:
    """linear_extrapolation: the ball pasted at its extrapolated position on the background estimate."""
    out = background(raw, hid, threshold)
    t_last = _last_context_frame(hid)
    h, w = hid.shape[1:]
    hidden_frames = np.flatnonzero(hid.any(axis=(1, 2)))
    for b, track in enumerate(ball_track(raw, hid, threshold)):
        if track is None:
            continue
        ys, xs, colours, velocity = track
        for t in hidden_frames:
            dy, dx = np.rint(velocity * (t - t_last)).astype(int)
            ty, tx = ys + dy, xs + dx
            inside = (ty >= 0) & (ty < h) & (tx >= 0) & (tx < w)
            out[b, :, t][:, ty[inside], tx[inside]] = colours[:, inside]
    return out


def probe_backend(spec: dict, weights: str | None = None, device: str = "cpu"):
    """The backend of a permanence model spec: a calibration predictor around its encoder's backend
    (``spec['encoder_spec']``, added by the workflow from the model ``spec['encoder']`` names),
    VideoMAE's pixel readout for ``family: videomae`` (models.videomae), or
    models.vjepa2.backend_from_spec for every other source. ``weights`` is the encoder's."""
    if spec.get("source") != "calibration":
        if spec.get("family") == "videomae":
            return videomae.videomae_backend_from_spec(spec, weights, device)
        return backend_from_spec(spec, weights, device)
    encoder = spec.get("encoder_spec")
    if not isinstance(encoder, dict):
        raise ValueError(f"calibration model (encoder {spec.get('encoder')!r}) needs 'encoder_spec', the spec of "
                         "the model its 'encoder' names (rules/common.smk probe_spec adds it)")
    if encoder.get("source") == "calibration":
        raise ValueError(f"the encoder of a calibration model must be a model, not calibration "
                         f"({spec.get('encoder')!r})")
    inner = probe_backend(encoder, weights, device)
    return CalibrationPredictor(inner, spec["predictor"], spec.get("q"), spec.get("mode"))


def probe_identity(backend, spec: dict, digest: str | None = None) -> dict:
    """The provenance identity of a probe_backend: its model's (a calibration predictor's encoder's,
    with the fill rule under ``calibration``)."""
    model_spec = spec.get("encoder_spec", spec) if spec.get("source") == "calibration" else spec
    describe_model = videomae.describe if model_spec.get("family") == "videomae" else describe
    identity = describe_model(backend.model, spec, digest)
    if isinstance(backend, CalibrationPredictor):
        identity["calibration"] = backend.describe()
    return identity
