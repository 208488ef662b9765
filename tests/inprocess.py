"""agentcfg run inside the test's own process, as a shell would start it: the console script's
entry or the stop hook's `main`, with exactly the given environment, working folder and stdin,
read back as a process's exit code, stdout and stderr (an escaping exception as the traceback
Python would print, exit 1). Only the interpreter's start is saved; the process boundary
itself (start-up, the lean import path, fds, signals, concurrent processes) is tested with
real subprocesses where a test is about it."""

from __future__ import annotations

import contextlib
import gc
import io
import os
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path

from click.testing import CliRunner


@contextlib.contextmanager
def as_process(cwd: Path, env: Mapping[str, str]) -> Iterator[None]:
    """`os.environ` exactly `env`, the working folder `cwd`, and no garbage collector callbacks
    (a test library's, left from an earlier test, would swallow the hook's time-limit signal
    if it came while one ran, as it never can in a fresh process); all restored after."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("an in-process run owns the process: run concurrent ones as processes")
    saved_env, saved_cwd, saved_callbacks = dict(os.environ), os.getcwd(), gc.callbacks[:]
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    gc.callbacks.clear()
    try:
        yield
    finally:
        gc.callbacks[:] = saved_callbacks
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None or isinstance(exc.code, int):
        return exc.code or 0
    print(exc.code, file=sys.stderr)  # as the interpreter does with a message
    return 1


def cli(
    args: list[str], env: Mapping[str, str], cwd: Path, stdin: bytes | str = b""
) -> subprocess.CompletedProcess[str]:
    """`agentcfg ARGS` through `agentcfg.entry.main`, the console script's function."""
    from agentcfg.entry import main

    with as_process(cwd, env), CliRunner().isolation(input=stdin) as (out, err, _):
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = _exit_code(exc)
        except Exception:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        stdout = out.getvalue().decode("utf-8", "replace")
        stderr = err.getvalue().decode("utf-8", "replace")
    return subprocess.CompletedProcess(["agentcfg", *args], code, stdout, stderr)


@contextlib.contextmanager
def _captured_fds() -> Iterator[list[bytes]]:
    """Bytes written to fds 1 and 2 (and through sys.stdout, sys.stderr), kept once it ends."""
    kept: list[bytes] = []
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        streams = sys.stdout, sys.stderr
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        try:
            yield kept
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            sys.stdout, sys.stderr = streams
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            for handle in (out, err):
                handle.seek(0)
                kept.append(handle.read())


def hook(
    argv: list[str], stdin: bytes, env: Mapping[str, str], cwd: Path
) -> subprocess.CompletedProcess[bytes]:
    """`agentcfg hook stop ARGV` through the hook's own `main`, fed `stdin`."""
    from agentcfg.stop.hook import main

    with as_process(cwd, env), _captured_fds() as kept:
        try:
            code = main(list(argv), stdin=io.BytesIO(stdin), env=dict(env))
        except SystemExit as exc:
            code = _exit_code(exc)
        except Exception:
            traceback.print_exc()
            code = 1
    return subprocess.CompletedProcess(["agentcfg", "hook", "stop", *argv], code, *kept)


def run(
    args: list[str], env: dict[str, str], stdin: str, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """A simulated host's way to run agentcfg (testing.simhost.Runner), in this process."""
    if args[:2] != ["hook", "stop"]:
        return cli(args, env, cwd, stdin)
    proc = hook(args[2:], stdin.encode(), env, cwd)
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode()
    )
