"""`agentcfg hook stop`: read one host payload, decide, answer; fail open whatever happens.

The import-light preflight answers fires with nothing to do; only a fire that may have
work loads the decision machinery.
"""

from __future__ import annotations

import os
import sys

from agentcfg import preflight
from agentcfg.hosts import ALLOW_STDOUT, HOSTS, cwd_of, detect, session_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

USAGE = "agentcfg: error: usage: agentcfg hook stop [--host claude|codex|gemini|cursor]\n"


def main(argv: list[str], stdin: object = None, env: Mapping[str, str] | None = None) -> int:
    """Run the stop hook; returns the process exit code after writing the host's answer."""
    host = _host_option(argv)
    if host is None:
        os.write(2, USAGE.encode())
        return 2
    environ = os.environ if env is None else env
    try:
        payload = _read_payload(sys.stdin.buffer if stdin is None else stdin)
    except Exception:
        payload = None
    if payload is None:
        return _finish(host or "claude", None)
    if host == "":
        host = detect(payload)
    try:
        root = preflight.locate_root(cwd_of(payload), environ)
        idle = preflight.nothing_to_do(root, session_of(payload))
    except Exception:  # fail open
        return _finish(host, None)
    return _finish(host, None if idle else _decide(host, payload, root, environ))


def _host_option(argv: list[str]) -> str | None:
    """The --host value, "" for "recognise it from the payload", None for a bad command line."""
    if argv == []:
        return ""
    if len(argv) == 2 and argv[0] == "--host" and argv[1] in HOSTS:
        return argv[1]
    if len(argv) == 1 and argv[0].startswith("--host=") and argv[0][7:] in HOSTS:
        return argv[0][7:]
    return None


def _read_payload(stream: object) -> dict[str, object] | None:
    data = stream.read(preflight.PAYLOAD_LIMIT + 1)  # type: ignore[attr-defined]
    if not isinstance(data, bytes) or len(data) > preflight.PAYLOAD_LIMIT:
        return None
    payload = preflight.loads(data.decode("utf-8", "replace"))
    return payload if isinstance(payload, dict) else None


def _decide(host: str, payload: dict[str, object], root: str, env: Mapping[str, str]) -> object:
    """The full decision, with anything it prints to stderr held back from the host."""
    import io
    import time

    held, sys.stderr = sys.stderr, io.StringIO()
    try:
        from pathlib import Path

        from agentcfg import stop
        from agentcfg.config import load_config
        from agentcfg.workspace import Workspace

        ws = Workspace(Path(root))
        event = stop.to_event(host, payload)
        ctx = stop.HookContext(event, ws, load_config(ws, env), env, time.time())
        verdict = stop.decide(ctx)
        return stop.answer(host, verdict)
    except BaseException:  # fail open: the host never sees a traceback
        return None
    finally:
        sys.stderr = held


def _finish(host: str, answer: object) -> int:
    """Write the host's answer (None means allow); a block nobody can read becomes an allow."""
    if answer is None:
        out, err, code = ALLOW_STDOUT.get(host, ""), "", 0
    else:
        out, err, code = answer.stdout, answer.stderr, answer.exit_code  # type: ignore[attr-defined]
    written = _write(1, out) and _write(2, err)
    return int(code) if written else 0


def _write(fd: int, text: str) -> bool:
    data = text.encode("utf-8", "replace")
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        return False
    return True
