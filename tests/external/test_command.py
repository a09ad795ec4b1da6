"""Running a command (worldmemory.external.command) for real through bash: workflow values arrive
intact, unsafe ones are refused before bash runs, a command past the job's time limit dies with
its whole process group, and its log is kept once, capped, where it outlives the rollout
directory."""

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from worldmemory.external import TimeLimit, command, run_model

REPO = Path(__file__).resolve().parents[2]
PLACEHOLDERS = ("width", "video")


def request(tmp_path, label="case_000/LRLR"):
    return {"width": 256, "video": str(tmp_path / "video.mp4"), "label": label}


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, which nothing here may reap, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
    except (FileNotFoundError, ProcessLookupError):
        return False


def read_pids(path: Path, n: int, timeout: float = 10) -> list[int]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.is_file() and len(path.read_text().split()) >= n:
            return [int(p) for p in path.read_text().split()]
        time.sleep(0.05)
    raise AssertionError(f"{path} never listed {n} pids")


def echo_args(tmp_path) -> str:
    """A model program (a script, not ``python -c`` inline code, which takes no placeholder) that
    writes the repr of its arguments after the first to the file its last argument names."""
    script = tmp_path / "echo_args.py"
    script.write_text('import sys\nopen(sys.argv[-1], "w").write(repr(sys.argv[1:]))\n')
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def test_a_workflow_value_arrives_as_the_exact_word_inside_the_templates_own_quotes(tmp_path):
    out = tmp_path / "v+1.0_a-b"
    out.mkdir()
    template = f'{echo_args(tmp_path)} "--width={{width}}" {{video}}'
    video = run_model(template, request(out), out / "command.log", PLACEHOLDERS)
    assert video.read_text() == repr(["--width=256", str(video)])


@pytest.mark.parametrize("directory", ["a b", "$(touch {marker})", "`touch {marker}`", "x;touch {marker}",
                                       "x'y", "a*b"])
def test_a_path_that_is_not_a_safe_word_is_refused_before_anything_runs(tmp_path, directory, monkeypatch):
    """The workflow's own paths fill the placeholders: a project directory whose name holds shell
    syntax (or a space) stops the command before bash sees it, naming the placeholder."""
    monkeypatch.chdir(tmp_path)  # where a command run by mistake would touch MARKER
    marker = tmp_path / "MARKER"
    out = tmp_path / directory.replace("{marker}", marker.name)
    out.mkdir()
    with pytest.raises(ValueError, match=r"placeholder \{video\} would be .* not a safe word"):
        run_model("touch {video}", request(out), out / "command.log", PLACEHOLDERS)
    assert not marker.exists() and not (out / "command.log").exists() and not (out / "video.mp4").exists()


def test_a_command_past_the_time_limit_dies_with_its_children(tmp_path):
    pids = tmp_path / "pids"
    template = (f"echo $$ > {pids}; sleep 30 & echo $! >> {pids}; sleep 31 & echo $! >> {pids}; "
                f"wait; true {{video}}")
    start = time.monotonic()
    with pytest.raises(RuntimeError) as e:
        run_model(template, request(tmp_path), tmp_path / "logs" / "LRLR.log", PLACEHOLDERS, TimeLimit(0.02))
    assert time.monotonic() - start < 6  # 1.2 s and the kill, not 30 s
    message = str(e.value)
    assert message.startswith("external model on case_000/LRLR: `echo $$")
    assert "time limit of 0.02 min ran out" in message and "raise the model's runtime" in message
    assert str(tmp_path / "logs" / "LRLR.log") in message
    assert "[killed: the time limit ran out after" in (tmp_path / "logs" / "LRLR.log").read_text()
    assert [p for p in read_pids(pids, 3) if alive(p)] == []


def test_a_command_that_ignores_sigterm_is_killed_after_the_grace(tmp_path, monkeypatch):
    monkeypatch.setattr(command, "KILL_GRACE_S", 1.0)
    pids = tmp_path / "pids"
    template = f"trap '' TERM; echo $$ > {pids}; sleep 30 & echo $! >> {pids}; wait; true {{video}}"
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="time limit of 0.02 min ran out"):
        run_model(template, request(tmp_path), tmp_path / "command.log", PLACEHOLDERS,
                  TimeLimit(0.02))
    assert 2.1 < time.monotonic() - start < 7  # 1.2 s, the 1 s grace, then SIGKILL
    assert [p for p in read_pids(pids, 2) if alive(p)] == []


def test_the_time_limit_is_the_jobs_not_each_commands(tmp_path):
    """Two commands share 3 s: the second gets the 1 s the first left, not 3 s of its own."""
    limit = TimeLimit(0.05)
    start = time.monotonic()
    run_model("sleep 2; touch {video}", request(tmp_path), tmp_path / "1.log", PLACEHOLDERS, limit)
    with pytest.raises(RuntimeError, match="time limit of 0.05 min ran out"):
        run_model("sleep 30; true {video}", request(tmp_path), tmp_path / "2.log", PLACEHOLDERS,
                  limit)
    assert time.monotonic() - start < 4.3


@pytest.mark.parametrize("minutes", [0, -1.0])
def test_a_time_limit_must_be_positive(minutes):
    with pytest.raises(ValueError, match="--timeout-minutes must be a positive number"):
        TimeLimit(minutes)


@pytest.mark.parametrize("template, message", [
    ("echo loading weights; exit 3; true {video}", "exited with status 3; fix the command"),
    ("echo loading weights; true {video}", "exited 0 but wrote no video at .*video.mp4"),
])
def test_the_log_is_kept_once_where_it_outlives_the_job_and_named_when_the_command_fails(tmp_path, template,
                                                                                          message):
    log = tmp_path / "logs" / "case_000" / "LRLR.log"  # its folder made on the way
    with pytest.raises(RuntimeError, match=message) as e:
        run_model(template, request(tmp_path), log, PLACEHOLDERS)
    assert f"Its output ({log}) ends with:\n$ echo loading weights" in str(e.value)
    assert "loading weights\n" in log.read_text()
    assert sorted(p.name for p in tmp_path.rglob("*.log")) == ["LRLR.log"]  # no second copy


def test_the_log_is_kept_when_the_command_succeeds_too(tmp_path):
    log = tmp_path / "logs" / "LRLR.log"
    run_model("echo drawing; touch {video}", request(tmp_path), log, PLACEHOLDERS)
    assert log.read_text().startswith("$ echo drawing; touch ") and "drawing\n" in log.read_text()
    assert "[exit status 0 after" in log.read_text()
    assert sorted(p.name for p in tmp_path.rglob("*.log")) == ["LRLR.log"]


def _printer(tmp_path, lines: int, then: str = "touch {video}") -> str:
    """A command printing ``lines`` numbered lines of 100 bytes (line i: 'line i' padded), then ``then``."""
    script = tmp_path / "printer.py"
    script.write_text("import sys\nfor i in range(int(sys.argv[1])):\n    sys.stdout.write(f'line {i}'.ljust(99) + "
                      "'\\n')\nsys.stdout.flush()\n")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} {lines}; {then}"


def test_a_command_printing_megabytes_keeps_its_first_and_last_bytes_and_says_what_was_cut(tmp_path):
    """3 MB of output (30,000 lines of 100 bytes) leave a log of the first and the last
    LOG_HEAD = LOG_TAIL = 256 KiB (2621.44 lines each), a line saying 2,475,712 bytes (24,757
    newlines: the tail holds 2622) were cut, and the real end of the output; the error quotes
    that end."""
    log = tmp_path / "logs" / "LRLR.log"
    with pytest.raises(RuntimeError, match="exited with status 3") as e:
        run_model(_printer(tmp_path, 30_000, "exit 3; true {video}"), request(tmp_path), log, PLACEHOLDERS)
    text = log.read_text()
    cap = command.LOG_HEAD + command.LOG_TAIL
    assert cap == 512 * 1024 and cap < log.stat().st_size < cap + 2000  # the header, the cut line, the footer
    cut = 3_000_000 - cap
    assert f"[... {cut} bytes ({30_000 - 2621 - 2622} newlines) of output cut here: the log keeps the first 262144 " \
           "and the last 262144 bytes ...]" in text
    head, tail = text.split("of output cut here")
    assert "\nline 0 " in head and "line 2621 " in head and "line 2622 " not in head  # 262144 bytes: 2621.44 lines
    assert "line 27379 " in tail and "line 27378 " not in tail  # the tail's first full line
    footer = text.splitlines()[-1]
    assert footer.startswith("[exit status 3 after") and text.endswith("line 29999".ljust(99) + f"\n\n{footer}\n")
    assert str(e.value).endswith("line 29999".ljust(99) + f"\n\n{footer}\n")


def test_a_short_output_is_kept_whole_without_a_cut_line(tmp_path):
    log = tmp_path / "LRLR.log"
    run_model(_printer(tmp_path, 5_000), request(tmp_path), log, PLACEHOLDERS)  # 500,000 bytes < 512 KiB
    text = log.read_text()
    assert "cut here" not in text and all(f"line {i} " in text for i in (0, 2621, 2622, 4999))


def test_what_a_command_prints_while_it_is_stopped_is_kept(tmp_path):
    """The time limit's SIGTERM reaches the command's trap, whose last words are still in the pipe
    when the group has ended: the log reads them after the kill."""
    log = tmp_path / "LRLR.log"
    template = "trap 'echo stopped by TERM; exit 1' TERM; sleep 30 & wait; true {video}"
    with pytest.raises(RuntimeError, match="time limit of 0.02 min ran out") as e:
        run_model(template, request(tmp_path), log, PLACEHOLDERS, TimeLimit(0.02))
    assert "\nstopped by TERM\n\n[killed: the time limit ran out after" in log.read_text()
    assert "stopped by TERM" in str(e.value)


def test_a_background_process_left_running_does_not_hold_the_job(tmp_path):
    """bash has exited; a process it started in the background still holds the output pipe open:
    the job reads what is there and returns, as it did when the output went to a file."""
    log = tmp_path / "LRLR.log"
    start = time.monotonic()
    run_model("(sleep 5; echo late) & echo done; touch {video}", request(tmp_path), log, PLACEHOLDERS)
    assert time.monotonic() - start < 2
    assert "\ndone\n\n[exit status 0 after" in log.read_text()


def test_a_killed_commands_log_is_kept_capped_with_its_last_output(tmp_path):
    """A command past the time limit, printing without end: its log is capped while it runs,
    kept, and ends with what it printed last before the kill."""
    log = tmp_path / "logs" / "LRLR.log"
    template = "yes 0123456789 & yes abcdefghij; true {video}"
    with pytest.raises(RuntimeError, match="time limit of 0.02 min ran out") as e:
        run_model(template, request(tmp_path), log, PLACEHOLDERS, TimeLimit(0.02))
    size = log.stat().st_size
    assert command.LOG_HEAD + command.LOG_TAIL < size < command.LOG_HEAD + command.LOG_TAIL + 2000
    text = log.read_text()
    assert "bytes (" in text and "of output cut here" in text
    assert text.splitlines()[-1].startswith("[killed: the time limit ran out after")
    assert str(log) in str(e.value) and text.splitlines()[-1] in str(e.value)


# the job's memory monitor made slow to start: the signal arrives while the job still starts it
SLOW_MONITOR = ("import time; from worldmemory.external import command; "
                "Monitor = command.GroupMonitor; "
                "command.GroupMonitor = lambda pgid: (time.sleep(3), Monitor(pgid))[1]; ")


# Popen made slow to return: the signal arrives after the fork, before the job holds the process
SLOW_START = ("import subprocess, time; Popen = subprocess.Popen; "
              "subprocess.Popen = lambda *a, **k: (lambda p: (time.sleep(3), p)[1])(Popen(*a, **k)); ")


@pytest.mark.parametrize("sig, said, prologue", [(signal.SIGTERM, "the job was stopped (SIGTERM: cancelled", ""),
                                                 (signal.SIGINT, "KeyboardInterrupt", ""),
                                                 (signal.SIGTERM, "the job was stopped (SIGTERM: cancelled",
                                                  SLOW_MONITOR),
                                                 (signal.SIGTERM, "the job was stopped (SIGTERM: cancelled",
                                                  SLOW_START),
                                                 (signal.SIGINT, "KeyboardInterrupt", SLOW_START)])
def test_stopping_the_job_stops_the_commands_group(tmp_path, sig, said, prologue):
    """SIGTERM (Snakemake, SLURM) or Ctrl-C reach the job but not the command's own session:
    the job kills that session's process group before it exits, also when the signal comes while
    the job is still starting the group's memory monitor, or while Popen has forked the command
    but not yet returned (a signal raised there left the session running: a flaky CI run)."""
    pids = tmp_path / "pids"
    template = f"echo $$ > {pids}; sleep 30 & echo $! >> {pids}; wait; true {{video}}"
    # Ctrl-C raises KeyboardInterrupt only where SIGINT was not ignored when Python started (a
    # background job of a non-interactive shell, e.g. under nohup, inherits it ignored)
    script = (f"import signal; signal.signal(signal.SIGINT, signal.default_int_handler); {prologue}"
              f"from pathlib import Path; from worldmemory.external import run_model; "
              f"run_model({template!r}, {request(tmp_path)!r}, Path({str(tmp_path / 'copy.log')!r}), "
              f"('width', 'video'), None)")
    job = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "PYTHONPATH": str(REPO / "scripts")})
    running = read_pids(pids, 2)
    job.send_signal(sig)
    _, stderr = job.communicate(timeout=20)
    assert job.returncode != 0 and said in stderr
    assert [p for p in running if alive(p)] == []
    assert "[killed: " in (tmp_path / "copy.log").read_text()
