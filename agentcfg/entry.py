"""The `agentcfg` console script: the stop hook takes its lean path, the rest goes to click."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:2] == ["hook", "stop"]:
        from agentcfg.stop.hook import main as hook_main

        return hook_main(args[2:])
    if args[:2] == ["hook", "session-start"]:
        from agentcfg.stop.session_start import main as session_start

        return session_start(args[2:])
    for stream in (sys.stdout, sys.stderr):  # an encoding without some character never crashes
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    from agentcfg.cli import cli

    return int(cli.main(args=args, prog_name="agentcfg", standalone_mode=True) or 0)
