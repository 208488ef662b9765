"""`agentcfg run --host opencode`'s runner against a stand-in `opencode` program: `serve` is a
small loopback server that answers the endpoints the runner reads from files the test writes
(the session status, the session's messages), `run` only records its arguments. The real
binary is driven in tests/e2e/test_opencode.py."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import pytest

from agentcfg.errors import AgentcfgError
from agentcfg.hosts import opencode
from agentcfg.hosts.opencode_server import QUIET, Served

FIXTURES = Path(__file__).parents[1] / "fixtures" / "opencode-1.18.33"

STAND_IN = """#!PYTHON
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

args = sys.argv[1:]
if args[0] != "serve":
    sys.exit(0)
if Path("refuse").exists():
    print("Error: the config does not parse", file=sys.stderr)
    sys.exit(3)
Path("served").write_text(json.dumps(args))


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def answer(self, body):
        data = body.encode()
        self.send_response(200)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/session/status":
            self.answer(Path("status.json").read_text() if Path("status.json").exists() else "{}")
        elif self.path == "/permission":
            asked = Path("permissions.json")
            self.answer(asked.read_text() if asked.exists() else "[]")
        elif self.path.endswith("/message"):
            Path("asked").write_text(self.path)
            self.answer(Path("messages.json").read_text())
        else:
            self.send_error(404)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        Path("posted").open("a").write(self.path + "\\n")
        if self.path.startswith("/permission/"):
            Path("replies").open("a").write(self.path + " " + body.decode() + "\\n")
        if self.path.endswith("/abort"):
            if Path("slow").exists():  # a server too busy to answer in time
                import time
                time.sleep(60)
            Path("status.json").unlink(missing_ok=True)
        self.answer(json.dumps({"id": "ses_made1", "directory": "x"}))


HTTPServer(("127.0.0.1", int(args[args.index("--port") + 1])), Handler).serve_forever()
"""


class Clock:
    def __init__(self) -> None:
        self.at = 1000.0

    def __call__(self) -> float:
        return self.at


@pytest.fixture
def binary(tmp_path: Path) -> Path:
    program = tmp_path / "bin" / "opencode"
    program.parent.mkdir()
    program.write_text(STAND_IN.replace("PYTHON", sys.executable, 1))
    program.chmod(0o755)
    return program


def served(binary: Path, root: Path, clock: Clock | None = None) -> Served:
    runner = opencode.runner(str(binary), root, dict(os.environ))
    assert isinstance(runner, Served)  # the host module gives the driver this runner
    runner.clock = clock or Clock()
    return runner


def test_one_server_for_the_run_and_each_start_attached_to_it(binary: Path, tmp_path: Path) -> None:
    root = tmp_path
    with served(binary, root) as runner:
        assert json.loads((root / "served").read_text())[1:] == [
            "--port", runner.url.rsplit(":", 1)[1], "--hostname", "127.0.0.1"
        ]  # fmt: skip
        assert runner.new_session() == "ses_made1"  # the claim is made by the server's id
        assert (root / "posted").read_text() == (
            "/session?" + "directory=" + str(root).replace("/", "%2F") + "\n"
        )
        assert runner.argv("go on", "ses_made1", True, ("--model", "fake/m")) == [
            str(binary), "run", "--attach", runner.url, "--dir", str(root),
            "--session", "ses_made1", "--model", "fake/m", "go on",
        ]  # fmt: skip
        server = runner.proc
        assert server is not None and server.poll() is None
    assert server.poll() is not None  # the server went with the run, and its group too
    with pytest.raises(ProcessLookupError):
        os.killpg(server.pid, 0)


def test_a_start_is_over_only_once_the_session_stays_idle(binary: Path, tmp_path: Path) -> None:
    clock = Clock()
    status = tmp_path / "status.json"
    with served(binary, tmp_path, clock) as runner:
        status.write_text(json.dumps({"ses_made1": {"type": "busy"}}))
        assert not runner.settled("ses_made1", ended=False)
        status.write_text("{}")  # idle: the plugin may be about to continue it
        assert not runner.settled("ses_made1", ended=False)
        clock.at += QUIET - 0.5
        assert not runner.settled("ses_made1", ended=False)
        status.write_text(json.dumps({"ses_made1": {"type": "retry", "attempt": 1}}))
        clock.at += 1.0
        assert not runner.settled("ses_made1", ended=False)  # busy again: the count restarts
        status.write_text(json.dumps({"ses_other": {"type": "busy"}}))
        clock.at += 1.0
        assert not runner.settled("ses_made1", ended=False)
        assert runner.settled("ses_made1", ended=True)  # the run's state told its ending
        clock.at += QUIET
        assert runner.settled("ses_made1", ended=False)
        runner.argv("again", "ses_made1", True, ())  # a new start counts afresh
        assert not runner.settled("ses_made1", ended=False)


def test_what_a_session_asks_approval_for_with_no_run_attached_is_refused(
    binary: Path, tmp_path: Path
) -> None:
    """`"bash": "ask"`: the attached `opencode run` refuses the first ask and exits; what the
    session asks later nobody else answers, and unanswered it would stay busy for good."""
    asked = [
        {"id": "per_1", "sessionID": "ses_made1", "permission": "bash", "patterns": ["make"]},
        {"id": "per_2", "sessionID": "ses_other", "permission": "bash", "patterns": ["ls"]},
    ]
    (tmp_path / "permissions.json").write_text(json.dumps(asked))
    (tmp_path / "status.json").write_text(json.dumps({"ses_made1": {"type": "busy"}}))
    with served(binary, tmp_path) as runner:
        assert not runner.settled("ses_made1", ended=False)
        # only the run's own session's ask, refused once per look
        assert (tmp_path / "replies").read_text() == '/permission/per_1/reply {"reply": "reject"}\n'
        assert runner.refused() == ("make",)  # told to the driver once: the ending counts it
        assert runner.refused() == ()
        (tmp_path / "status.json").write_text("{}")
        (tmp_path / "replies").unlink()
        runner.settled("ses_made1", ended=False)
        assert not (tmp_path / "replies").exists()  # idle: nothing asked of anyone
        assert runner.refused() == ()


def test_a_server_gone_mid_run_ends_the_start_and_the_next_start_brings_it_back(
    binary: Path, tmp_path: Path
) -> None:
    with served(binary, tmp_path) as runner:
        first = runner.proc
        assert first is not None
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        assert runner.settled("ses_made1", ended=False)
        argv = runner.argv("go on", "ses_made1", True, ())
        assert argv is not None and runner.proc is not first and runner.proc is not None
        assert argv[3] == runner.url and runner.settled("ses_made1", ended=True)


def test_the_limit_is_read_from_the_sessions_messages(binary: Path, tmp_path: Path) -> None:
    capture = FIXTURES / "session-messages-rate-limit.json"
    (tmp_path / "messages.json").write_text(capture.read_text())
    with served(binary, tmp_path) as runner:
        reset = runner.limit_reset("", 1_796_117_000.0, "ses_made1", 0)
        assert (tmp_path / "asked").read_text() == "/session/ses_made1/message"
        # retry-after 1 s after the reply that gave up (1796116969.658)
        assert reset == pytest.approx(1_796_116_970.658)
        assert reset == opencode.limit_reset("", 1_796_117_000.0, capture.read_text())
        (tmp_path / "messages.json").write_text("[]")
        assert runner.limit_reset("", 1_796_117_000.0, "ses_made1", 0) is None


def test_a_server_that_does_not_start_is_one_line(binary: Path, tmp_path: Path) -> None:
    (tmp_path / "refuse").touch()
    with pytest.raises(AgentcfgError) as refused:
        served(binary, tmp_path).__enter__()
    assert str(refused.value) == (
        "OpenCode's server (`opencode serve`) did not start: it exited with 3: "
        "Error: the config does not parse"
    )


def test_the_end_of_the_run_aborts_what_the_server_still_works_on(
    binary: Path, tmp_path: Path
) -> None:
    """OpenCode runs the agent's shell commands in process groups of their own: only an abort
    ends them, so the run aborts every busy session before it ends the server."""
    with served(binary, tmp_path) as runner:
        (tmp_path / "status.json").write_text(json.dumps({"ses_made1": {"type": "busy"}}))
    assert (tmp_path / "posted").read_text() == "/session/ses_made1/abort\n"
    assert not (tmp_path / "status.json").exists()
    (tmp_path / "posted").unlink()
    with served(binary, tmp_path) as runner:  # nothing busy: nothing aborted
        pass
    assert not (tmp_path / "posted").exists() and runner.proc is None


def test_the_end_of_the_run_waits_on_a_slow_server_a_bounded_time(
    binary: Path, tmp_path: Path
) -> None:
    """A server that does not answer the abort: the run still ends within the abort's wait
    (here a second rather than the run's five) and the server's graces (here it ends at its
    first signal), 3 s of margin for a loaded machine; its work is ended with it."""
    import time

    runner = served(binary, tmp_path)
    runner.abort_wait = 1.0
    with runner:
        (tmp_path / "status.json").write_text(json.dumps({"ses_made1": {"type": "busy"}}))
        (tmp_path / "slow").touch()
        server = runner.proc
        assert server is not None
        started = time.monotonic()
    assert time.monotonic() - started < runner.abort_wait + 3
    with pytest.raises(ProcessLookupError):
        os.killpg(server.pid, 0)
