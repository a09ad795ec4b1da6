"""A stand-in world model for the case-grain tests: it records which device it was given and when
it ran, takes a second per rollout, and runs out of memory on one rollout until told it is fixed.

    python flaky_model.py --request {request}

Environment: RECORD (a JSON-lines file: device, case, trajectory, start, end), FAIL_ON
(<case>/<trajectory>), FIXED (a file; while it is missing, FAIL_ON fails), SLEEP (seconds).
Otherwise the still-frame model's video (worldmemory.worldmembench.still_model).
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

from worldmemory.worldmembench.still_model import still_video

parser = argparse.ArgumentParser()
parser.add_argument("--request", required=True)
request_path = parser.parse_args().request
request = json.loads(Path(request_path).read_text())
rollout = f"{request['case']}/{request['trajectory_name']}"
start = time.time()
time.sleep(float(os.environ.get("SLEEP", "1")))
failed = rollout == os.environ.get("FAIL_ON") and not Path(os.environ["FIXED"]).exists()
with open(os.environ["RECORD"], "a") as record:
    record.write(json.dumps({"device": os.environ.get("CUDA_VISIBLE_DEVICES"), "rollout": rollout,
                             "start": start, "end": time.time(), "failed": failed}) + "\n")
if failed:
    print("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB", file=sys.stderr)
    sys.exit(1)
still_video(request_path)
