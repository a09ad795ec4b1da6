"""Running an external model's command: one rollout, a time limit, a log that survives.

The command runs under ``bash -c`` in its own session (process group) with stdin from /dev/null,
so that a model's whole process tree (launchers, workers, ffmpeg) can be stopped at once: when
the job's time runs out, on Ctrl-C, or when the job itself is sent SIGTERM. Its output is kept
once, in the log the caller names: the rollout jobs name one outside the rollout's directory
(results/logs/<study>/commands/...), which Snakemake deletes with a failed job's output, and
errors point at it. The output reaches the log through a pipe while the command runs, capped
(BoundedLog): the first LOG_HEAD and the last LOG_TAIL bytes, with a line saying how much was
cut between them, so a model that prints gigabytes never fills the disk.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from pathlib import Path

from worldmemory.common.usage import GroupMonitor, group_pids
from worldmemory.common.video import video_shape
from worldmemory.external.template import check_template, render

VIDEO_NAME = "video.mp4"
KINDS = ("reference", "external")  # a benchmark's model: rendered here, or a command run per rollout
OUTPUT_TAIL = 2000  # characters of the command's output quoted in an error
KILL_GRACE_S = 10.0  # between SIGTERM and SIGKILL of a command's process group
LOG_HEAD = LOG_TAIL = 256 * 1024  # bytes of a command's output its log keeps from its start and its end
FEW_FRAMES = 3  # a video this close to its asked length has a frame loop off by one or a few, not a native length
AFTER_EXIT_S = 0.2  # how long output is still read once bash exits (from processes it left behind)


def run_params(kind: str, command: str | None, placeholders: tuple[str, ...], resolve_reference) -> dict:
    """A run's manifest ``params``: an external model's command template (checked against the
    study's ``placeholders``), or a reference model's resolved parameters (``resolve_reference()``)."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; valid: {', '.join(KINDS)}")
    if kind == "external":
        if not command:
            raise ValueError("--kind external needs --command (a command template)")
        check_template(command, placeholders)
        return {"command": command}
    return resolve_reference()


class TimeLimit:
    """The time budget of one rollout job, shared by all its commands.

    A model's ``runtime`` is minutes per rollout *job* (SLURM's --time), and a job runs one
    command per rollout, so the limit is a deadline for the whole job and each command may use
    whatever is left. A per-command limit equal to runtime would, from the second rollout on,
    fire only after SLURM had killed the job (and Snakemake deleted its log); a fraction of it
    would guess how the time splits between rollouts. Under SLURM the cluster's limit, counted
    from the job's start, may still come a few seconds first: its SIGTERM stops the command the
    same way, and the log is copied all the same. Reference models run in-process, unlimited.
    """

    def __init__(self, minutes: float | None):
        if minutes is not None and not minutes > 0:
            raise ValueError(f"--timeout-minutes must be a positive number of minutes, got "
                             f"{minutes}")
        self.minutes = minutes
        self.end = None if minutes is None else time.monotonic() + 60 * minutes

    def left(self) -> float | None:
        """Seconds left (None: no limit)."""
        return None if self.end is None else max(0.0, self.end - time.monotonic())


def run_model(template: str, request: dict, log_path: Path, placeholders: tuple[str, ...],
              time_limit: TimeLimit | None = None, output: str = "video", who: str = "external model",
              usage: dict | None = None) -> Path:
    """Run the command for one request; its output goes to ``log_path`` (BoundedLog), written
    however the command ends. Returns the path of what it must write, ``request[output]``: a
    world model's video, an external estimator's file. ``usage``, if given, receives the
    command's wall time and peak memory (common.usage).

    ``request`` holds a value for every placeholder, ``output`` and "label" (the rollout's name in
    messages). Raises RuntimeError naming ``who`` and the rollout, what happened, the log and the end of its output
    when the command fails, writes nothing at ``request[output]`` or outlives ``time_limit``.
    """
    check_template(template, placeholders, ("video", "request") if output == "video" else (output,))
    command = render(template, {key: request[key] for key in placeholders})
    video, where = Path(request[output]), request["label"]
    video.unlink(missing_ok=True)
    start = time.monotonic()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with BoundedLog(log_path, f"$ {command}\n") as log:
        try:
            status = _run(command, log, time_limit.left() if time_limit else None, usage)
        except (_Stopped, KeyboardInterrupt) as e:
            status = e
        ended = ("killed: the time limit ran out" if status is None else
                 f"killed: the job got {status}" if isinstance(status, _Stopped) else
                 "killed: interrupted" if isinstance(status, KeyboardInterrupt) else
                 f"exit status {status}")
        log.footer = f"\n[{ended} after {time.monotonic() - start:.1f} s]\n"
    tail = log_path.read_text(errors="replace")[-OUTPUT_TAIL:]
    if isinstance(status, KeyboardInterrupt):
        raise status
    if isinstance(status, _Stopped):
        raise SystemExit(f"{who} on {where}: the job was stopped ({status}: cancelled, "
                         f"or the cluster's time limit, the model's runtime, ran out) and the "
                         f"command's process group was killed; its output is in {log_path}")
    if status is None:
        raise RuntimeError(
            f"{who} on {where}: `{command}` was still running when the job's time limit "
            f"of {time_limit.minutes:g} min ran out (it ran {time.monotonic() - start:.1f} s) and "
            f"its process group was killed; raise the model's runtime in the config (minutes per "
            f"rollout job, --timeout-minutes) or shorten its rollouts. Its output ({log_path}) ends "
            f"with:\n{tail}")
    if status != 0:
        what = (f"exited with status {status}" if status > 0 else
                f"was killed by signal {-status}" + (" (out of memory? raise the model's mem_mb)"
                                                     if -status == signal.SIGKILL else ""))
        raise RuntimeError(f"{who} on {where}: `{command}` {what}; "
                           f"fix the command or its environment. Its output ({log_path}) "
                           f"ends with:\n{tail}")
    if not video.is_file():
        raise RuntimeError(f"{who} on {where}: `{command}` exited 0 but wrote no {output} at "
                           f"{video}; the command must write it at {{{output}}}"
                           + (" (request.json's 'video')" if output == "video" else "")
                           + f". Its output ({log_path}) ends with:\n{tail}")
    return video


def check_video(video: Path, n_frames: int, where: str, fix: str) -> tuple[int, int]:
    """(height, width) of a model's video; ValueError unless it has exactly ``n_frames``.

    A length far from ``n_frames`` is the model's native length: ``fix`` (formatted with the
    video's ``length``) says how to configure the model for it. A length within FEW_FRAMES is
    most likely a frame loop that drops or adds a frame (the conditioning frame, a range off by
    one): the error says to fix the loop, since asking for ``length`` frames would only move the
    error (a loop one short of 240 writes 239, then 238 of 239); ``fix`` stays the way out for a
    model that can only write lengths of a fixed step."""
    try:
        length, height, width = video_shape(video)
    except RuntimeError as e:
        raise ValueError(f"{where}: {e}") from e
    off = length - n_frames
    if off and abs(off) <= FEW_FRAMES:
        n, lost = abs(off), "drops" if off < 0 else "adds"
        raise ValueError(
            f"{where}: the model wrote {length} frames, {n} {'fewer' if off < 0 else 'more'} than the "
            f"{n_frames} it was asked for (n_frames in request.json): its frame loop most likely {lost} "
            f"{'a frame' if n == 1 else f'{n} frames'} (the conditioning frame, a range off by one). Fix the "
            f"model's frame loop to write exactly n_frames frames; asking for {length} would only move the "
            f"error (it would then write {length + off}). Only if the model cannot write {n_frames} "
            f"frames (a fixed frame step): {fix.format(length=length)}")
    if off:
        raise ValueError(f"{where}: the model wrote {length} frames, the trajectory has "
                         f"{n_frames} (the model's native length?); {fix.format(length=length)}")
    return height, width


class BoundedLog:
    """A command's log, written as the output arrives: ``header``, the output's first
    ``head`` bytes, and its last ``tail`` bytes (held in memory until the end) after a line
    saying how many bytes and lines were cut between them, then ``footer`` (set before the log
    is closed). Whatever the command prints, the log holds at most head + tail bytes of it."""

    def __init__(self, path: Path, header: str, head: int | None = None, tail: int | None = None):
        self.head, self.tail_size = LOG_HEAD if head is None else head, LOG_TAIL if tail is None else tail
        self.file = open(path, "wb")
        self.file.write(header.encode())
        self.file.flush()
        self.kept = self.total = self.newlines = self.kept_newlines = 0
        self.tail = bytearray()
        self.footer = ""

    def write(self, data: bytes) -> None:
        self.total += len(data)
        self.newlines += data.count(b"\n")
        if self.kept < self.head:
            first = data[:self.head - self.kept]
            self.file.write(first)
            self.file.flush()  # the start is on disk even if the job is killed outright
            self.kept += len(first)
            self.kept_newlines += first.count(b"\n")
            data = data[len(first):]
        self.tail += data
        del self.tail[:max(0, len(self.tail) - self.tail_size)]

    def close(self) -> None:
        cut = self.total - self.kept - len(self.tail)
        if cut:
            lines = self.newlines - self.kept_newlines - self.tail.count(b"\n")
            self.file.write(f"\n[... {cut} bytes ({lines} newlines) of output cut here: the log keeps the "
                            f"first {self.head} and the last {self.tail_size} bytes ...]\n".encode())
        self.file.write(bytes(self.tail) + self.footer.encode())
        self.file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Stopped(BaseException):
    """The job was sent SIGTERM while a command ran."""


def _run(command: str, log: BoundedLog, timeout: float | None, usage: dict | None = None) -> int | None:
    """The command's exit status, or None if it outlived ``timeout`` seconds (then its process
    group is killed); on any exception (Ctrl-C, SIGTERM) the group is killed too. Its output
    goes to ``log`` as it comes (_pump), what is left in the pipe after a kill too. ``usage``
    receives what the group used while it ran."""
    monitor = None
    with _stop_signals() as started:
        proc = subprocess.Popen(["bash", "-c", command], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            started()  # a signal that came while Popen started the session is raised here
            # started inside the try: a SIGTERM while its thread starts still kills the group
            monitor = GroupMonitor(proc.pid)
            return _pump(proc, log, timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            _drain(proc, log, 1.0)
            return None
        except BaseException:
            _kill_group(proc)
            _drain(proc, log, 1.0)
            raise
        finally:
            proc.stdout.close()
            if monitor is not None:
                measured = monitor.stop()
                if usage is not None:
                    usage.update(measured.to_json())


def _pump(proc: subprocess.Popen, log: BoundedLog, timeout: float | None) -> int:
    """Copy the command's output into ``log`` until bash exits (then what is left in the pipe,
    and what background processes it left print within AFTER_EXIT_S: they may hold the pipe
    open, and are not waited for); its exit status. TimeoutExpired after ``timeout``
    seconds."""
    end = None if timeout is None else time.monotonic() + timeout
    fd = proc.stdout.fileno()
    while proc.poll() is None:
        wait = 0.1 if end is None else min(0.1, end - time.monotonic())
        if wait <= 0:
            raise subprocess.TimeoutExpired(proc.args, timeout)
        if select.select([fd], [], [], wait)[0]:
            chunk = os.read(fd, 65536)
            if not chunk:  # every writer closed the pipe: only bash's exit is left
                return proc.wait(timeout=None if end is None else max(0.0, end - time.monotonic()))
            log.write(chunk)
    _drain(proc, log, AFTER_EXIT_S)
    return proc.returncode


def _drain(proc: subprocess.Popen, log: BoundedLog, seconds: float) -> None:
    """Copy into ``log`` what the pipe holds and what arrives within ``seconds``, stopping
    early once every writer has closed it."""
    fd, end = proc.stdout.fileno(), time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0 and select.select([fd], [], [], left)[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            return
        log.write(chunk)


@contextlib.contextmanager
def _stop_signals():
    """While a command runs, SIGTERM (Snakemake or SLURM stopping the job) raises _Stopped and
    Ctrl-C KeyboardInterrupt, so that the command's own session, which the signal does not reach,
    is killed too. One that comes before the caller calls the yielded ``started()`` waits for it:
    raised inside Popen, after the fork, it would leave the new session running with nothing to
    kill it. SIGINT is left alone where it is not Python's default (ignored under nohup)."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    state = {"starting": True, "pending": None}

    def stop(signum, frame):
        if state["starting"]:
            state["pending"] = state["pending"] or signum
            return
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one is enough: let the kill finish
        raise _Stopped(signal.Signals(signum).name)

    def started():
        state["starting"] = False
        if state["pending"]:
            stop(state["pending"], None)

    handled = [signal.SIGTERM] + [signal.SIGINT] * (signal.getsignal(signal.SIGINT) is signal.default_int_handler)
    previous = {sig: signal.signal(sig, stop) for sig in handled}
    try:
        yield started
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGTERM the command's process group, SIGKILL whatever is left after KILL_GRACE_S."""
    for sig, grace in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        if _group_ends(proc, grace):
            break
    proc.wait()


def _group_ends(proc: subprocess.Popen, seconds: float) -> bool:
    """Wait up to ``seconds`` for the command's process group to end; whether it did."""
    end = time.monotonic() + seconds
    while True:
        proc.poll()  # reap the group leader, bash
        if not group_alive(proc.pid):
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.05)


def group_alive(pgid: int) -> bool:
    """Whether a process of group ``pgid`` still runs. Zombies do not count: an orphan's zombie
    waits for PID 1, which in a container may never reap it."""
    if not Path("/proc/self/stat").is_file():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    return bool(group_pids(pgid))
