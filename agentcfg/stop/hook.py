"""`agentcfg hook stop`: read one host payload, decide, answer; fail open whatever happens.

The import-light preflight answers fires with nothing to do; only a fire that may have
work loads the decision machinery.
"""

from __future__ import annotations

import os
import sys

from agentcfg import _speed, paths
from agentcfg.core import events
from agentcfg.hosts.registry import DEFAULT, HOSTS, adapter, detect
from agentcfg.stop import preflight

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import BinaryIO

    from agentcfg.hosts.base import Answer
    from agentcfg.hosts.protocols import HookDialect, Wiring
    from agentcfg.stop.context import HookContext
    from agentcfg.stop.dispatch import Verdict

USAGE = f"usage: agentcfg hook stop [--host {'|'.join(sorted(HOSTS))}]\n"
HELP = (
    USAGE + "\nRead one stop payload on stdin and answer the host: block the stop with the next\n"
    "step of the claimed roadmap, or allow it. Without --host, the host is recognised from\n"
    "the payload. It never fails a stop: anything unreadable allows.\n"
)


def main(
    argv: list[str], stdin: BinaryIO | None = None, env: Mapping[str, str] | None = None
) -> int:
    """Run the stop hook; returns the process exit code after writing the host's answer."""
    name = command_line(argv, HELP, USAGE)
    if isinstance(name, int):
        return name
    environ = os.environ if env is None else env
    try:
        payload = _read_payload(sys.stdin.buffer if stdin is None else stdin)
    except Exception as exc:  # fail open: an unreadable stdin allows
        _record_failure(exc, environ)
        payload = None
    if payload is None:
        return _finish(adapter(name or DEFAULT), None)
    host = adapter(name) if name else detect(payload)
    try:
        root = paths.locate_root(host.cwd_of(payload), environ)
        idle = preflight.nothing_to_do(root, host.session_of(payload), environ) or _second_route(
            host, root, environ
        )
    except Exception as exc:  # fail open
        _record_failure(exc, environ, host, payload)
        return _finish(host, None)
    return _finish(host, None if idle else _decide(host, payload, root, environ))


def command_line(argv: list[str], help_text: str, usage: str, required: bool = False) -> str | int:
    """A hook's --host value ("" when it is left out and not `required`: recognise it from the
    payload); else the exit code, with help (0) or the usage error (2) written."""
    if argv and argv[0] in ("-h", "--help"):
        _write(1, help_text)
        return 0
    name = None
    if argv == [] and not required:
        name = ""
    elif len(argv) == 2 and argv[0] == "--host" and argv[1] in HOSTS:
        name = argv[1]
    elif len(argv) == 1 and argv[0].startswith("--host=") and argv[0][7:] in HOSTS:
        name = argv[0][7:]
    if name is None:
        _write(2, "agentcfg: error: " + usage)
        return 2
    return name


def _second_route(host: Wiring, root: str, env: Mapping[str, str]) -> bool:
    """A fire through our plugin steps aside when the host's settings run our hook too."""
    from agentcfg.hosts.base import PLUGIN_ENV
    from agentcfg.hosts.defaults import settings_hook

    if not env.get(PLUGIN_ENV):
        return False
    _speed.import_pathlib()
    from pathlib import Path

    home = Path(env.get("HOME") or os.path.expanduser("~"))
    return settings_hook(host, Path(root), home, env) is not None


def _read_payload(stream: BinaryIO) -> dict[str, object] | None:
    data = stream.read(preflight.PAYLOAD_LIMIT + 1)
    if not isinstance(data, bytes) or len(data) > preflight.PAYLOAD_LIMIT:
        return None
    payload = preflight.loads(data.decode("utf-8", "replace"))
    return payload if isinstance(payload, dict) else None


def _decide(
    host: HookDialect, payload: dict[str, object], root: str, env: Mapping[str, str]
) -> Answer | None:
    """The full decision, with anything it prints to stderr held back from the host.

    Once the decision's code is loaded, everything the fire reads (the host's event, which
    for some hosts means their session file, and the config) spends the chain's one time
    budget: a fire out of time allows.
    """
    import io
    import time

    held, sys.stderr = sys.stderr, io.StringIO()
    try:
        _speed.import_pathlib()
        from pathlib import Path

        from agentcfg.config import load_config
        from agentcfg.core.times import wall_clock
        from agentcfg.stop.concerns import REGISTRY  # noqa: F401  # loaded before the clock
        from agentcfg.stop.context import HookContext
        from agentcfg.stop.dispatch import CHAIN_BUDGET, time_limit
        from agentcfg.transcript import read_once
        from agentcfg.workspace import Workspace

        started = time.monotonic()
        ws = Workspace(Path(root))
        with read_once():  # the fire's readers of the transcript share one read of its tail
            with time_limit(CHAIN_BUDGET):
                event, config = host.to_event(payload), load_config(ws, env)
            ctx = HookContext(event, ws, config, env, wall_clock())
            verdict = decide(ctx, CHAIN_BUDGET - (time.monotonic() - started))
        return host.block(verdict.message) if verdict.blocks else host.allow(verdict.message)
    except BaseException as exc:  # fail open: the host never sees a traceback
        _record_failure(exc, env, host, payload, root)
        return None
    finally:
        sys.stderr = held


def decide(ctx: HookContext, budget: float | None = None) -> Verdict:
    """Run the hook's steps, then the configured stop chain, for one fire, all within the
    chain's time; record what went wrong in them."""
    import time

    from agentcfg.stop import steps
    from agentcfg.stop.concerns import REGISTRY
    from agentcfg.stop.dispatch import CHAIN_BUDGET, ConcernTimeout, run_chain, time_limit
    from agentcfg.stop.handed import NOTHING

    budget = CHAIN_BUDGET if budget is None else budget
    started = time.monotonic()
    handed = NOTHING
    try:
        with time_limit(budget):
            handed = steps.run_steps(ctx, steps.BEFORE, handed)
    except ConcernTimeout:  # the steps spent the fire's time: the chain allows, out of time
        ctx.log(events.ERROR, reason="the hook's steps ran out of time")
    left = budget - (time.monotonic() - started)
    verdict, outcomes = run_chain(ctx, ctx.config.chain, REGISTRY, left, handed)
    if ctx.problem is not None:
        ctx.log(events.ERROR, reason=ctx.problem)
    for outcome in outcomes:
        if outcome.error is not None:
            ctx.log(events.CONCERN_ERROR, concern=outcome.entry.name, error=outcome.error)
    return verdict


def _record_failure(
    exc: BaseException,
    env: Mapping[str, str],
    host: HookDialect | None = None,
    payload: dict[str, object] | None = None,
    root: str | None = None,
) -> None:
    """Name the exception a fire failed open on in the ledger's `error` event, in a workspace
    that already keeps state (none is started for it); a failure here changes no answer."""
    try:
        from pathlib import Path

        from agentcfg import state
        from agentcfg.core.times import wall_clock

        if root is None:
            cwd = host.cwd_of(payload) if host is not None and payload is not None else ""
            root = paths.locate_root(cwd or os.getcwd(), env)
        folder = Path(root) / paths.STATE
        if not folder.is_dir():
            return
        session = host.session_of(payload) if host is not None and payload is not None else ""
        key = paths.session_key(session) if session else None
        record = state.event(
            events.ERROR,
            wall_clock(),
            key,
            None,
            host=host.NAME if host is not None else None,
            reason="the stop hook failed open",
            error=type(exc).__name__,
        )
        state.append_ledger(folder, record)
    except BaseException:  # the answer is settled already: allow, whatever happens here
        pass


def _finish(host: HookDialect, answer: Answer | None) -> int:
    """Write the host's answer (None: allow, silently); a block nobody can read becomes an allow."""
    if answer is None:
        out, err, code = host.IDLE, "", 0
    else:
        out, err, code = answer.stdout, answer.stderr, answer.exit_code
    written = _write(1, out) and _write(2, err)
    return code if written else 0


def _write(fd: int, text: str) -> bool:
    data = text.encode("utf-8", "replace")
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        return False
    return True
