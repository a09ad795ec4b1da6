"""A still-frame "world model": the conditioning frame held for the whole trajectory.

It ignores the camera path, so it is the trivial baseline of camera following (its drawn camera
never moves) and a worked example of the external-model contract (external.py): it reads
request.json and writes an H.264 MP4 (4:4:4, crf 0: only YUV rounding is lost) with n_frames
frames at the request's fps.

    python -m worldmemory.worldmembench.still_model --request {request}
"""

from __future__ import annotations

import argparse
import itertools
import json

import numpy as np
from PIL import Image

from worldmemory.common.video import write_mp4


def still_video(request_path) -> None:
    """Write the request's video: its conditioning frame, n_frames times."""
    with open(request_path) as f:
        request = json.load(f)
    frame = np.asarray(Image.open(request["conditioning"]).convert("RGB"))
    height, width = frame.shape[:2]
    write_mp4(request["video"], itertools.repeat(frame, request["n_frames"]), request["fps"])
    print(f"{request['case']}/{request['trajectory_name']}: {request['n_frames']} still frames "
          f"{width}x{height} -> {request['video']}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--request", required=True, help="request.json written by the workflow")
    still_video(parser.parse_args(argv).request)


if __name__ == "__main__":
    main()
