"""`agentcfg run --host opencode`: OpenCode served for the whole run.

Plain `opencode run` exits at the session's first idle, before our plugin has continued it. So
the run keeps one `opencode serve` on a free loopback port in the workspace, makes each new
session on it (its id is known before the first prompt, and the claim is made by it), and
sends each start's prompt with `opencode run --attach`. That process returns at the first
idle too, while the plugin goes on continuing the session inside the server: a start is over
only once the server has shown the session idle for QUIET seconds in a row (at once when the
run's state already tells its ending). When the run ends, however it ends, the server's
process group goes with it.

Imported only by `agentcfg run`, never on the stop hook's path.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentcfg.errors import AgentcfgError
from agentcfg.run.runners import Watchdog, end_group, kill_group

START_TIMEOUT = 120.0  # seconds the server has to answer after it is started
QUIET = 10.0  # seconds of idle in a row that end a start: the plugin's hook answers within them,
# the stop chain giving up after 3 s and a loaded machine slow to start the hook included
REQUEST_TIMEOUT = 10.0
ABORT_WAIT = 5.0  # seconds the server has to end its sessions' work when the run ends
POLL = 0.25


def free_port() -> int:
    """A loopback port nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


Args = Callable[[str, "str | None", bool, Sequence[str]], "list[str] | None"]
Reset = Callable[[str, float, str], "float | None"]


class Served:
    """The runner of OpenCode: one server for the run, a `run --attach` per start. `headless`
    and `limit_reset` are the host module's (its `run` arguments, and the limit read from the
    session's messages)."""

    def __init__(
        self,
        binary: str,
        root: Path,
        env: Mapping[str, str],
        headless: Args,
        limit_reset: Reset,
        clock: Callable[[], float] = time.monotonic,
        abort_wait: float = ABORT_WAIT,
    ) -> None:
        self.binary, self.root, self.env, self.clock = binary, root, dict(env), clock
        self.abort_wait = abort_wait
        self.headless, self.read_limit = headless, limit_reset
        self.proc: subprocess.Popen[bytes] | None = None
        self.watchdog: Watchdog | None = None
        self.url = ""
        self.quiet_since: float | None = None
        self.rejected: list[str] = []  # the session's asks refused since the driver last read

    def __enter__(self) -> Served:
        try:
            self._serve()
        except BaseException:  # Ctrl-C while it starts: no server is left behind
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        """The server ends, its sessions' work aborted first (`abort_wait` at most); a second
        Ctrl-C meanwhile kills it at once."""
        proc, watchdog, self.proc, self.watchdog = self.proc, self.watchdog, None, None
        if proc is None:
            return
        try:
            self._abort_all()
            end_group(proc)
        finally:
            kill_group(proc)
            if watchdog is not None:
                watchdog.release()

    def _abort_all(self) -> None:
        """Abort whatever the server still works on: OpenCode runs the agent's shell commands
        in process groups of their own, which only its abort ends, not the server's end. All
        of it within `abort_wait`, however slow the server is to answer."""
        deadline = time.monotonic() + self.abort_wait

        def left() -> float:
            return max(0.1, min(REQUEST_TIMEOUT, deadline - time.monotonic()))

        try:
            working = self._request("GET", "/session/status", timeout=left())
        except (OSError, ValueError):
            return
        if not isinstance(working, dict) or not working:
            return
        for session in working:
            with contextlib.suppress(OSError, ValueError):
                self._request("POST", f"/session/{urllib.parse.quote(session)}/abort", {},
                              timeout=left())  # fmt: skip
        while time.monotonic() < deadline:
            try:
                if not self._request("GET", "/session/status", timeout=left()):
                    return
            except (OSError, ValueError):
                return
            time.sleep(POLL)

    def _serve(self) -> None:
        """Start `opencode serve` and wait until it answers; AgentcfgError when it does not."""
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        with tempfile.TemporaryFile() as errors:
            self.proc = subprocess.Popen(
                [self.binary, "serve", "--port", str(port), "--hostname", "127.0.0.1"],
                cwd=self.root, env=self.env, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=errors, start_new_session=True,
            )  # fmt: skip
            self.watchdog = Watchdog(self.proc.pid)  # the server ends with a killed driver
            deadline = self.clock() + START_TIMEOUT
            while True:
                try:
                    self._request("GET", "/session/status")
                    return
                except OSError:
                    pass
                code = self.proc.poll()
                if code is not None or self.clock() > deadline:
                    errors.seek(0)
                    said = errors.read().decode("utf-8", "replace").strip().splitlines()
                    self.__exit__()
                    why = f"it exited with {code}" if code is not None else "it did not answer"
                    raise AgentcfgError(
                        f"OpenCode's server (`opencode serve`) did not start: {why}"
                        + (f": {said[-1]}" if said else "")
                    )
                time.sleep(POLL)

    def _request(
        self, method: str, path: str, body: object = None, timeout: float = REQUEST_TIMEOUT
    ) -> Any:
        raw = self._raw(method, path, body, timeout)
        return json.loads(raw) if raw.strip() else None

    def _raw(
        self, method: str, path: str, body: object = None, timeout: float = REQUEST_TIMEOUT
    ) -> bytes:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"content-type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw: bytes = response.read()
        return raw

    def _alive(self) -> None:
        """A server that died under the run (or never started) is started again."""
        if self.proc is None or self.proc.poll() is not None:
            self.__exit__()
            self._serve()

    def new_session(self) -> str | None:
        self._alive()
        query = urllib.parse.urlencode({"directory": str(self.root)})
        try:
            made = self._request("POST", f"/session?{query}", {})
        except (OSError, ValueError) as exc:
            raise AgentcfgError(f"OpenCode's server did not make a session: {exc}") from None
        session = made.get("id") if isinstance(made, dict) else None
        if not isinstance(session, str) or not session:
            raise AgentcfgError("OpenCode's server did not make a session: no id in its answer")
        return session

    def argv(
        self, prompt: str, session: str | None, resume: bool, extra: Sequence[str]
    ) -> list[str] | None:
        args = self.headless(prompt, session, resume, extra)
        if args is None:
            return None
        self._alive()
        self.quiet_since = None
        verb, rest = args[0], args[1:]
        return [self.binary, verb, "--attach", self.url, "--dir", str(self.root), *rest]

    def _busy(self, session: str | None) -> bool | None:
        """Whether the server works the session now; None when the server does not answer."""
        try:
            status = self._request("GET", "/session/status")
        except (OSError, ValueError):
            return None
        if not isinstance(status, dict):
            return False
        if session is None:
            return bool(status)
        entry = status.get(session)
        return isinstance(entry, dict) and entry.get("type") != "idle"

    def settled(self, session: str | None, ended: bool) -> bool:
        busy = self._busy(session)
        if busy is None:
            return True  # the server is gone: the next start brings it back
        if busy:
            self.quiet_since = None
            self._refuse_asked(session)
            return False
        now = self.clock()
        if self.quiet_since is None:
            self.quiet_since = now
        return ended or now - self.quiet_since >= QUIET

    def _refuse_asked(self, session: str | None) -> None:
        """Refuse what the session asks permission for once no `run --attach` is there to
        answer (attached, that process refuses it itself, `auto-rejecting`): nobody else can,
        and unanswered it keeps the session busy for good."""
        try:
            asked = self._request("GET", "/permission")
        except (OSError, ValueError):
            return
        for request in asked if isinstance(asked, list) else []:
            if not isinstance(request, dict) or not isinstance(request.get("id"), str):
                continue
            if session is None or request.get("sessionID") == session:
                with contextlib.suppress(OSError, ValueError):
                    where = f"/permission/{urllib.parse.quote(request['id'])}/reply"
                    self._request("POST", where, {"reply": "reject"})
                    self.rejected.append(_asked(request))

    def refused(self) -> tuple[str, ...]:
        found, self.rejected = tuple(self.rejected), []
        return found

    def interrupt(self, session: str | None) -> None:
        if session is None:
            return
        with contextlib.suppress(OSError, ValueError):
            self._request("POST", f"/session/{urllib.parse.quote(session)}/abort", {})

    def messages(self, session: str | None) -> str:
        """The session's messages as the server gives them (JSON text); "" when it does not."""
        if session is None:
            return ""
        try:
            raw = self._raw("GET", f"/session/{urllib.parse.quote(session)}/message")
        except OSError:
            return ""
        return raw.decode("utf-8", "replace")

    def limit_reset(
        self, output: str, now: float, session: str | None, code: int | None
    ) -> float | None:
        """From the session's messages as the server keeps them (an attached run exits 0 on a
        limit too): the provider's error on the last reply, never words the model wrote."""
        return self.read_limit(output, now, self.messages(session))

    def hear(self, line: bytes) -> list[Any]:
        return []  # `run --attach` prints nothing read as it comes


def _asked(request: dict[str, Any]) -> str:
    """What one ask of the session's was for: its command (the patterns it named), else the
    tool's name."""
    patterns = request.get("patterns")
    named = [p for p in patterns if isinstance(p, str)] if isinstance(patterns, list) else []
    tool = request.get("permission")
    return " ".join(named) or (tool if isinstance(tool, str) else "a tool call")
