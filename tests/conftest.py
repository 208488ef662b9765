"""Shared fixtures: a workspace in a temp folder, a CLI runner bound to it, hook subprocesses."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import is_hypothesis_test, settings

from agentcfg import agents
from agentcfg.cli import cli
from agentcfg.commands import Clock
from tests import inprocess

# no property test fails for the time an example took on a busy machine: what it checks is
# what it gives
settings.register_profile("untimed", deadline=None)
settings.load_profile("untimed")
# `make test` (`--hypothesis-profile quick`): a quarter of the examples, at least QUICK_FLOOR;
# `make test-all` and CI keep the full counts
QUICK = "quick"
QUICK_FLOOR = 5
settings.register_profile(QUICK, parent=settings.get_profile("untimed"), max_examples=25)

REPO = Path(__file__).resolve().parent.parent
# payloads and a transcript captured from the real Claude Code 2.1.197
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "claude-code-2.1.197"
SESSION = "afb489a7-bf1a-4175-8113-5340b825ddd1"
# the interpreter-private fast paths turned off (agentcfg/_speed.py): kept for every process
SPEED = "AGENTCFG_SPEED"
# a check a test's workspace runs with pytest loads only the plugins it names (`-p`), not every
# one installed here: each start then costs half as much; nor does it take the options this
# run of the suite was given (PYTEST_ADDOPTS)
BARE_PYTEST = ("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
SUITE_OPTIONS = "PYTEST_ADDOPTS"


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: two workers more than there are processors. Much of the suite waits on the
    processes it starts and on clocks it runs out, and a spare worker uses a processor while
    another waits (on two processors, four workers take a sixth off `make test` against three);
    every test that holds a process to a time budget leaves it seconds of margin."""
    return len(os.sched_getaffinity(0)) + 2


def quick_examples(count: int) -> int:
    return max(QUICK_FLOOR, count // 4)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under the quick profile, a property test that names its own `max_examples` in
    `@settings` runs a quarter of them too (a profile only sets what a test leaves unset).
    hypothesis keeps a test's settings on the function it wraps, as
    `_hypothesis_internal_use_settings`, and reads them when the test runs: each is replaced
    once by a copy with the count scaled. A state machine's case keeps them as its class's
    `settings`."""
    if settings.get_current_profile_name() != QUICK:
        return
    scaled: set[int] = set()
    for item in items:
        cls = getattr(item, "cls", None)
        owner: Any = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
        name = "_hypothesis_internal_use_settings"
        if cls is not None and isinstance(cls.__dict__.get("settings"), settings):
            owner, name = cls, "settings"
        elif not is_hypothesis_test(owner):
            continue
        if id(owner) in scaled:
            continue
        scaled.add(id(owner))
        own: settings = getattr(owner, name)
        if own is not settings.default:
            setattr(owner, name, settings(own, max_examples=quick_examples(own.max_examples)))


@pytest.fixture(scope="session", autouse=True)
def python_looked_up_once(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """`python` and `python3`, as verify lines and the checks a test's workspace runs name them,
    are the interpreters PATH finds, looked up once a session. Where PATH finds a version
    manager's shim (a script that starts a dozen processes each time to choose an interpreter),
    a folder ahead on PATH holds a script that starts the interpreter it chose at once: the same
    program, without a tenth of a second of the processor spent choosing it for every line."""
    folder = tmp_path_factory.mktemp("python-on-path")
    for name in ("python", "python3"):
        found = shutil.which(name)
        if found is None:
            continue
        chosen = subprocess.run(
            [found, "-c", "import sys; print(sys.executable)"],
            capture_output=True, text=True, check=False,
        ).stdout.strip()  # fmt: skip
        if not chosen or Path(chosen).resolve() == Path(found).resolve():
            continue  # not a shim: nothing to save
        script = folder / name
        script.write_text(f'#!/bin/sh\nexec {shlex.quote(chosen)} "$@"\n')
        script.chmod(0o755)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', os.defpath)}")
        yield


@pytest.fixture(scope="session")
def person_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("state-home")


@pytest.fixture(autouse=True)
def no_real_home(person_state: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that keeps no home of its own still writes no key or store into the real one."""
    monkeypatch.setenv("XDG_STATE_HOME", str(person_state))


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A workspace with the demo roadmap, as the cwd, with no session variables set."""
    root = tmp_path / "ws"
    (root / "roadmaps").mkdir(parents=True)
    shutil.copy(REPO / "roadmaps" / "demo.md", root / "roadmaps" / "demo.md")
    monkeypatch.chdir(root)
    for name in list(os.environ):
        if name != SPEED and name.startswith(
            ("AGENTCFG_", "CLAUDE_", "CODEX_", "GEMINI_", "QWEN_", "COPILOT_", "OPENCODE_", "XDG_")
        ):
            monkeypatch.delenv(name)
    for name in agents.variables():  # a person's terminal, even where an agent runs the tests
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    # the person's own state (trust store, seal key) as `hook_env` says: a command run here
    # and a hook it fires read the same
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("AGENTCFG_REPLY_WAIT", "0")  # as `hook_env` says
    monkeypatch.setenv(*BARE_PYTEST)  # as `hook_env` says
    monkeypatch.delenv(SUITE_OPTIONS, raising=False)
    yield root


def write_roadmap(root: Path, slug: str, body: str, mode: str | None = "autonomous") -> Path:
    front = f"---\nexecution:\n  mode: {mode}\n---\n" if mode else ""
    path = root / "roadmaps" / f"{slug}.md"
    path.write_text(front + body)
    return path


def run_cli(*args: str, env: dict[str, str] | None = None, at: list[float] | None = None) -> Result:
    """Run a command in process; `at` pins the time it acts at to its last moment (a test
    appends to move it), the system's time otherwise."""
    clock = Clock(now=lambda: at[-1]) if at is not None else None
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False, obj=clock)


def cli_process(
    root: Path, *args: str, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[str]:
    """Run an agentcfg command as a person's shell does, in the workspace, with `hook_env`'s
    environment and `env` besides."""
    return subprocess.run(
        [sys.executable, "-m", "agentcfg", *args],
        capture_output=True,
        text=True,
        env=hook_env(root, **env),
        cwd=root,
        timeout=timeout,
        check=False,
    )


def python_prints(code: str) -> str:
    """What `code` prints, run by a fresh interpreter (with nothing imported before it)."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout


def hook_env(root: Path, **extra: str) -> dict[str, str]:
    hosts = agents.variables()
    env = {
        k: v
        for k, v in os.environ.items()
        if k == SPEED
        or (
            not k.startswith(("AGENTCFG_", "CLAUDE_", "XDG_"))
            and k not in hosts
            and k != SUITE_OPTIONS
        )
    }
    env.update({"AGENTCFG_ROOT": str(root), "HOME": str(root.parent / "home")})
    env["XDG_STATE_HOME"] = str(root.parent / "xdg")
    # a captured transcript ends where the host ran the hook: it never writes the reply after
    env["AGENTCFG_REPLY_WAIT"] = "0"
    env.update([BARE_PYTEST])
    env.update(extra)
    return env


def fixture_payload(n: int, root: Path, **changes: Any) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads((FIXTURES / f"stop-payload-{n}.json").read_text())
    payload["cwd"] = str(root)
    payload["transcript_path"] = str(root / "transcript.jsonl")
    payload.update(changes)
    return payload


def fire(
    root: Path,
    payload: dict[str, Any] | bytes,
    *args: str,
    env: dict[str, str] | None = None,
    process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run the stop hook on one payload: through its `main` in this process, or as a real
    subprocess, as a host does, when the test is about the `process` boundary."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    env = env or hook_env(root)
    proc = (
        hook_process(root, data, *args, env=env)
        if process
        else inprocess.hook(list(args), data, env, root)
    )
    return subprocess.CompletedProcess(
        proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode()
    )


def hook_process(
    root: Path,
    data: bytes,
    *args: str,
    env: dict[str, str],
    timeout: float = 60,
    preexec: Callable[[], None] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """`agentcfg hook stop ARGS` as a process of its own in the workspace, fed `data`."""
    return subprocess.run(
        [sys.executable, "-m", "agentcfg", "hook", "stop", *args],
        input=data,
        capture_output=True,
        env=env,
        cwd=root,
        timeout=timeout,
        preexec_fn=preexec,
        check=False,
    )
