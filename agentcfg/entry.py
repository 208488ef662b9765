"""The `agentcfg` console script: the stop hook takes its lean path, the rest goes to click."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """The console script's function; `argv` (the arguments after the program's name) is given
    when it runs inside a longer-lived process."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["hook"] and args[1:2] in (["stop"], ["session-start"]):
        if argv is None:
            # The process lives for this one fire: the cyclic garbage collector's passes over
            # the thousands of objects its imports make would cost it a twentieth of its time
            # for nothing, as what it leaves the process's end frees.
            import gc

            gc.disable()
        if args[1] == "stop":
            from agentcfg.stop.hook import main as hook_main

            return hook_main(args[2:])
        from agentcfg.stop.session_start import main as session_start

        return session_start(args[2:])
    for stream in (sys.stdout, sys.stderr):  # an encoding without some character never crashes
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    from agentcfg.cli import cli

    return int(cli.main(args=args, prog_name="agentcfg", standalone_mode=True) or 0)
