"""Start Snakemake safely: what ``./run.sh`` (and ``./run.sh snakemake ARGS``) runs.

    python -m worldmemory.workflow.launch [SNAKEMAKE ARGS...]

Snakemake leaves its directory lock (``<workdir>/.snakemake/locks/``) behind when it is killed, and
the next run refuses to start until ``--unlock``. The launcher removes that lock only when it is
provably stale, then execs Snakemake with the same arguments, so rerunning the same command
resumes (the profile's rerun-incomplete redoes the unfinished jobs):

1. Every config file given with ``--configfile``/``--configfiles`` is parsed first; a syntax
   error stops with ``FILE:LINE:COLUMN: problem`` (Snakemake itself says only "not valid JSON or
   YAML"). Nothing else is touched when the command is wrong.
2. An exclusive flock on ``<workdir>/.snakemake/run.sh.flock`` is taken and kept across the exec
   into Snakemake (the kernel drops it when Snakemake exits, however it dies): a second launcher
   in the same working directory stops.
3. A live Snakemake in the working directory (one started without run.sh, or a leftover
   ``--mode subprocess``/``remote`` job of one) leaves the locks alone: the launcher stops with its
   pid.
4. Otherwise the processes marked with ``WORLDMEMORY_WORKDIR=<workdir>`` (the rules' shell prefix
   exports it, so every process of a job inherits it) are jobs a killed Snakemake left running:
   they are terminated (SIGTERM, then SIGKILL), so that they cannot race the resumed run.
5. A lock still in ``.snakemake/locks/`` then belongs to no live run and is removed.

The working directory and the config files are read with Snakemake's own argument parser
(profiles included), so every form of ``-d``/``--directory`` is understood.

Processes are found through Linux's ``/proc`` (processes of other users that cannot be read are
skipped); on a system without ``/proc`` no process is found, so only the flock protects the run.
Only processes on this machine are seen: start the runs of one working directory on one machine.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import shutil
import signal
import sys
import time
from pathlib import Path

from worldmemory.workflow.config_files import load_config_file

PREFIX = "[run.sh]"
FLOCK_NAME = "run.sh.flock"
WORKDIR_VARIABLE = "WORLDMEMORY_WORKDIR"
PROC = Path("/proc")


def say(message: str) -> None:
    """One message of the launcher, on stderr, each line with the [run.sh] prefix."""
    for line in message.splitlines() or [""]:
        print(f"{PREFIX} {line}", file=sys.stderr, flush=True)


class LaunchError(Exception):
    """The launcher stops with this message (exit status 1)."""


# -- arguments -----------------------------------------------------------------------------------


def _quiet_call(function, *args):
    """``function(*args)`` with its stdout/stderr swallowed; None when argparse exits (a usage
    error, --help, --version) or the call raises: Snakemake then says it itself."""
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            return function(*args)
    except (SystemExit, Exception):
        return None


def parse_arguments(argv: list[str]) -> tuple[Path, list[Path]] | None:
    """The working directory and the config files Snakemake will use with ``argv`` (relative to
    the current directory, as Snakemake resolves them before changing into its --directory),
    read with Snakemake's own parser, profiles included; None when Snakemake would reject the
    arguments or only print something (--help, --version)."""
    from snakemake import cli

    parsed = _quiet_call(cli.parse_args, list(argv))
    if parsed is None:
        return None
    _parser, args = parsed
    workdir = Path(args.directory) if args.directory is not None else Path.cwd()
    return workdir.absolute(), [Path(f) for f in (args.configfile or [])]


def check_config_files(paths) -> None:
    """Raise LaunchError with the first problem of a config file (see load_config_file). A
    "config file" that is not YAML or JSON is most often a target swallowed by --configfile,
    which takes every word after it: the message says so."""
    for path in paths:
        try:
            load_config_file(path)
        except ValueError as error:
            message = str(error)
            if Path(path).suffix.lower() not in (".yaml", ".yml", ".json"):
                message += (f"\nhint: --configfile takes every word after it as a config file, so "
                            f"{path} may be a target: put the targets before --configfile, or write "
                            "--configfile=FILE")
            raise LaunchError(message) from None


# -- processes -----------------------------------------------------------------------------------


def _read(pid: int, name: str) -> bytes | None:
    try:
        return (PROC / str(pid) / name).read_bytes()
    except OSError:  # gone, or another user's (permission)
        return None


def _cmdline(pid: int) -> list[str]:
    parts = (_read(pid, "cmdline") or b"").split(b"\0")
    if parts and not parts[-1]:  # the terminating NUL
        parts.pop()
    return [part.decode(errors="replace") for part in parts]


def _environ(pid: int) -> dict[str, str]:
    raw = _read(pid, "environ") or b""
    pairs = (entry.partition(b"=") for entry in raw.split(b"\0") if b"=" in entry)
    return {key.decode(errors="replace"): value.decode(errors="replace") for key, _, value in pairs}


def _cwd(pid: int) -> str | None:
    try:
        return os.path.realpath(os.readlink(PROC / str(pid) / "cwd"))
    except OSError:
        return None


def _status(pid: int) -> dict[str, str]:
    raw = _read(pid, "status") or b""
    status = {}
    for line in raw.decode(errors="replace").splitlines():
        key, _, value = line.partition(":")
        status[key] = value.strip()
    return status


def _alive(pid: int) -> bool:
    """The process exists and is not a zombie (a dead process its parent has not reaped)."""
    state = _status(pid).get("State")
    return state is not None and not state.startswith(("Z", "X"))


def _pids() -> list[int]:
    try:
        return sorted(int(entry.name) for entry in PROC.iterdir() if entry.name.isdigit())
    except OSError:
        return []


def _ourselves() -> set[int]:
    """This process and its ancestors: never a live run nor an orphaned job."""
    pids, pid = set(), os.getpid()
    while pid > 0 and pid not in pids:
        pids.add(pid)
        try:
            pid = int(_status(pid).get("PPid", "0"))
        except ValueError:
            break
    return pids


_PYTHON_OPTIONS_WITH_VALUE = {"-W", "-X", "-Q"}


def snakemake_arguments(cmdline: list[str]) -> list[str] | None:
    """The Snakemake arguments of a command line that runs Snakemake (``snakemake ARGS``, a
    ``python .../bin/snakemake ARGS`` as a script's shebang runs it, ``python -m snakemake ARGS``),
    None for any other command."""
    if not cmdline:
        return None
    if os.path.basename(cmdline[0]) == "snakemake":
        return cmdline[1:]
    if not os.path.basename(cmdline[0]).startswith("python"):
        return None
    index = 1
    while index < len(cmdline):
        arg = cmdline[index]
        if arg == "-m":
            return cmdline[index + 2:] if cmdline[index + 1:index + 2] == ["snakemake"] else None
        if arg.startswith("-m"):
            return cmdline[index + 1:] if arg[2:] == "snakemake" else None
        if arg in ("-c", "-") or arg.startswith("-c"):
            return None
        if arg in _PYTHON_OPTIONS_WITH_VALUE:
            index += 2
            continue
        if arg.startswith("-"):
            index += 1
            continue
        return cmdline[index + 1:] if os.path.basename(arg) == "snakemake" else None
    return None


_parser = None


def _directory_argument(args: list[str]) -> str | None:
    """The --directory of another process's Snakemake arguments (None: none or unreadable)."""
    global _parser
    if _parser is None:
        from snakemake import cli

        _parser = _quiet_call(cli.get_argument_parser) or False
    if not _parser:
        return None
    parsed = _quiet_call(_parser.parse_known_args, args)
    directory = getattr(parsed[0], "directory", None) if parsed else None
    return str(directory) if directory is not None else None


def _other_processes():
    """(pid, command line) of every process but this one and its ancestors."""
    ourselves = _ourselves()
    for pid in _pids():
        if pid not in ourselves:
            yield pid, _cmdline(pid)


def live_snakemakes(workdir) -> list[tuple[int, list[str]]]:
    """(pid, command line) of every Snakemake running in ``workdir`` other than this process and
    its ancestors: its current directory is ``workdir`` (Snakemake changes into its --directory),
    or its --directory names it (one that has not changed into it yet)."""
    workdir = os.path.realpath(workdir)
    found = []
    for pid, cmdline in _other_processes():
        args = snakemake_arguments(cmdline)
        cwd = _cwd(pid) if args is not None else None
        if cwd is not None and workdir in _possible_workdirs(cwd, _directory_argument(args)) and _alive(pid):
            found.append((pid, cmdline))
    return found


def _possible_workdirs(cwd: str, directory: str | None) -> set[str]:
    """Where a Snakemake with current directory ``cwd`` and argument --directory ``directory``
    runs: an absolute --directory names it; a relative one is relative to the directory it was
    started in, which is ``cwd`` until Snakemake changes into it (and then ``cwd`` is it)."""
    if directory is None:
        return {cwd}
    target = os.path.realpath(os.path.join(cwd, directory))
    return {target} if os.path.isabs(directory) else {cwd, target}


def _is_job_shell(cmdline: list[str]) -> bool:
    """``bash -c 'set -euo pipefail; export ... WORLDMEMORY_WORKDIR="$PWD"; ...'``: the shell of a
    job (Snakemake runs a rule's shell command so, behind the prefix of rules/common.smk)."""
    return (len(cmdline) >= 3 and os.path.basename(cmdline[0]) in ("bash", "sh")
            and cmdline[1] == "-c" and "export " in cmdline[2]
            and f"{WORKDIR_VARIABLE}=" in cmdline[2])


def orphaned_jobs(workdir) -> list[tuple[int, list[str]]]:
    """(pid, command line) of every process of a job of a run in ``workdir``, other than this
    process and its ancestors: its environment has WORLDMEMORY_WORKDIR naming ``workdir`` (every
    process the job's shell starts), or it is the job's shell itself (its environment predates the
    export, but its command line is the rules' shell prefix and it runs in ``workdir``). Without a
    live Snakemake in ``workdir`` they are the jobs of a killed run."""
    workdir = os.path.realpath(workdir)
    found = []
    for pid, cmdline in _other_processes():
        marked = _environ(pid).get(WORKDIR_VARIABLE)
        if marked:
            job = os.path.realpath(marked) == workdir
        else:
            job = _is_job_shell(cmdline) and _cwd(pid) == workdir
        if job and _alive(pid):
            found.append((pid, cmdline))
    return found


def terminate(pids, grace: float = 5.0) -> list[int]:
    """SIGTERM ``pids``, wait up to ``grace`` seconds for them to end, SIGKILL the rest; the pids
    that had to be killed."""
    pids = list(pids)
    _signal_and_wait(pids, signal.SIGTERM, grace)
    killed = [pid for pid in pids if _alive(pid)]
    _signal_and_wait(killed, signal.SIGKILL, grace)
    return killed


def _signal_and_wait(pids: list[int], signum: int, grace: float) -> None:
    """Send ``signum`` to ``pids``; wait up to ``grace`` seconds until none is alive."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.05)


def _show(cmdline: list[str]) -> str:
    text = " ".join(cmdline) or "?"
    return text if len(text) <= 200 else text[:197] + "..."


# -- the launch ----------------------------------------------------------------------------------


def hold_flock(workdir: Path) -> int:
    """An exclusive flock on ``<workdir>/.snakemake/run.sh.flock``, on a descriptor that survives
    exec (the kernel drops the flock when Snakemake exits); LaunchError when it is held."""
    state = workdir / ".snakemake"
    state.mkdir(parents=True, exist_ok=True)
    fd = os.open(state / FLOCK_NAME, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise LaunchError(f"another ./run.sh is running in {workdir}; wait for it to finish") from None
    os.set_inheritable(fd, True)
    return fd


def make_safe(workdir: Path) -> None:
    """Stop if a Snakemake runs in ``workdir``; otherwise end the jobs a killed run left running
    and remove its stale lock. The caller holds the flock."""
    live = live_snakemakes(workdir)
    if live:
        pids = ", ".join(str(pid) for pid, _ in live)
        raise LaunchError("\n".join([
            f"Snakemake is already running in {workdir} (pid {pids}), not through ./run.sh:",
            *(f"  {pid}: {_show(cmdline)}" for pid, cmdline in live),
            "wait for it to finish, or stop it (kill " + " ".join(str(pid) for pid, _ in live)
            + "), then run the same command again; its lock is left alone",
        ]))
    jobs = orphaned_jobs(workdir)
    if jobs:
        say(f"{len(jobs)} process(es) of jobs of a killed run in {workdir} are still running "
            "and would race the resumed run; stopping them:")
        for pid, cmdline in jobs:
            say(f"  {pid}: {_show(cmdline)}")
        killed = terminate(pid for pid, _ in jobs)
        if killed:
            say("  killed (SIGKILL) after SIGTERM: " + " ".join(map(str, killed)))
    locks = workdir / ".snakemake" / "locks"
    if locks.is_dir() and any(locks.iterdir()):
        say("removing the lock of a run that was killed; resuming")
        for entry in locks.iterdir():
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    entry.unlink()


def snakemake_command(argv: list[str]) -> list[str]:
    """Snakemake of this environment (next to this Python) with ``argv``."""
    script = Path(sys.executable).parent / "snakemake"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script), *argv]
    found = shutil.which("snakemake")
    return [found, *argv] if found else [sys.executable, "-m", "snakemake", *argv]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parsed = parse_arguments(argv)
    if parsed is not None:  # otherwise Snakemake reports the arguments (or prints its help)
        workdir, configfiles = parsed
        try:
            check_config_files(configfiles)
            hold_flock(workdir)
            make_safe(workdir)
        except LaunchError as error:
            say(str(error))
            return 1
    command = snakemake_command(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvp(command[0], command)
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
