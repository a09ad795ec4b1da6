"""Upper and lower bounds on video lengths and frame rates a config, a case or a video.json may ask for.

Without them a value such as ``n_frames: 1000000000`` passes validation and exhausts memory inside
a job, and ``fps: 1e300`` or ``1e-9`` dies inside ffmpeg with a BrokenPipeError naming no key. The
bounds are generous for the papers: WorldMemBench's trajectories have 481-551 frames (Appendix C),
PersistBench's 360-degree videos last some seconds, and the papers' videos run at 2-30 frames per
second. docs/configuration.md ("Bounds") says the same; the config
schema states them as numbers (tests/workflow/test_config_checks.py checks they agree).
"""

from __future__ import annotations

MAX_FRAMES = 10_000  # 18 times the papers' longest trajectory; about 7 minutes at 24 fps
MIN_FPS, MAX_FPS = 1, 240  # a slide show to a high-speed camera


def frames_problem(n_frames: int) -> str | None:
    """None if a video of ``n_frames`` frames is within MAX_FRAMES; otherwise what was expected."""
    return None if n_frames <= MAX_FRAMES else f"at most {MAX_FRAMES} frames (common/limits.py)"


def fps_problem(fps: float) -> str | None:
    """None if ``fps`` is within [MIN_FPS, MAX_FPS]; otherwise what was expected."""
    return None if MIN_FPS <= fps <= MAX_FPS else f"a frame rate in [{MIN_FPS}, {MAX_FPS}] (common/limits.py)"
