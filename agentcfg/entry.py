"""The `agentcfg` console script: the stop hook takes its lean path, the rest goes to click."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """The console script's function; `argv` (the arguments after the program's name) is given
    when it runs inside a longer-lived process."""
    args = sys.argv[1:] if argv is None else argv
    if args[:2] in (["hook", "stop"], ["hook", "session-start"]):
        return _fire(args[1], args[2:]) if argv is not None else _alone(args[1], args[2:])
    for stream in (sys.stdout, sys.stderr):  # an encoding without some character never crashes
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    from agentcfg.cli import cli, quiet_stdout

    try:
        try:
            return int(cli.main(args=args, prog_name="agentcfg", standalone_mode=True) or 0)
        finally:  # the last of stdout now, while a closed pipe can still be told apart
            sys.stdout.flush()
    except BrokenPipeError:  # the reader left (`agentcfg report | head -1`): end quietly
        return quiet_stdout()


def _fire(event: str, argv: list[str]) -> int:
    if event == "stop":
        from agentcfg.stop.hook import main as hook_main

        return hook_main(argv)
    from agentcfg.stop.session_start import main as session_start

    return session_start(argv)


def _alone(event: str, argv: list[str]) -> int:
    """A fire in a process of its own, which ends with it.

    The cyclic garbage collector stays off, and once the answer is out the process ends
    without tearing the interpreter down, unless something waits to run at exit (a coverage
    tracer does). Both would only free what the end of the process frees: collecting and
    freeing the thousands of objects a fire's imports make was an eighth of a warm fire.
    """
    import gc
    import os

    gc.disable()
    code = _fire(event, argv)
    from agentcfg import _speed  # loaded by the fire already

    if _speed.exit_waits():
        return code
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:  # None: the process started without it
                stream.flush()
    except (OSError, ValueError):
        return code  # the interpreter's own exit deals with a stream it cannot flush
    os._exit(code)
