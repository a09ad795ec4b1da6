"""A "world model" that replays another model's video through the external-model contract.

It calibrates perception: a reference model's rollout, replayed as an external model, reaches
scoring without truth channels, as any world model's video does, so its score under the
configured estimators can be compared with the oracle's score of the same pixels (the
studies' perception-agreement tables). It reads request.json and writes the source rollout's
video, frame for frame, as the H.264 MP4 external models deliver (4:4:4, crf 0: only the
YUV rounding is lost).

    python -m worldmemory.external.replay --source results/worldmembench/rollouts/omniscient \\
        --key {case}/{trajectory_name} --request {request}

``--key`` names the source rollout's directory under ``--source``; the command template builds it
from the request's placeholders.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from worldmemory.common.video import read_video, write_mp4


def replay(source: Path, key: str, request_path: Path) -> Path:
    """Write the video of rollout ``key`` under ``source`` where the request asks; its path."""
    request = json.loads(Path(request_path).read_text())
    videos = sorted((source / key).glob("video.*"))
    if len(videos) != 1:
        raise FileNotFoundError(f"{source / key}: expected one video.* to replay, found {len(videos)}")
    frames = read_video(videos[0])
    if len(frames) != request["n_frames"]:
        raise ValueError(f"{videos[0]} has {len(frames)} frames, the request asks for {request['n_frames']}: "
                         "replay a rollout of the same trajectory")
    write_mp4(request["video"], frames, request["fps"])
    print(f"{key}: replayed {videos[0]} -> {request['video']}")
    return Path(request["video"])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, type=Path, help="the replayed model's rollout directory")
    parser.add_argument("--key", required=True, help="the rollout's directory under --source")
    parser.add_argument("--request", required=True, type=Path, help="request.json written by the workflow")
    args = parser.parse_args(argv)
    replay(args.source, args.key, args.request)


if __name__ == "__main__":
    main()
