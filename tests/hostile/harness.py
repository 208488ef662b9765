"""Feeding the real hook hostile inputs, and what every such fire must still honour."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentcfg import claims
from tests import inprocess
from tests.conftest import hook_env, hook_process

SESSION = "hostile-session"
TIME_LIMIT = 5.0
EXPLAINED = ("run-continuation:", "turn-end-gate:")
GOES = ("runs", "pending")  # a finished run, an adopted or lapsed pending claim


def tree(folder: Path, skip: str = "state") -> dict[str, str]:
    """Every file under `folder` but `skip`, by path, with a digest of its bytes (or link target)."""
    found: dict[str, str] = {}
    for base, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not (Path(base) == folder and d == skip)]
        for name in files + [d for d in dirs if (Path(base) / d).is_symlink()]:
            path = Path(base) / name
            if path.is_symlink():
                found[str(path)] = "link:" + os.readlink(path)
            elif path.is_file():
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                found[str(path)] = "special"
    return found


def stamp(path: Path) -> tuple[int, ...] | None:
    """What tells a file from any write to it: its inode, size, and change and modify times."""
    try:
        found = os.lstat(path)
    except OSError:
        return None
    return (found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


def valid_json(path: Path) -> bool:
    try:
        return (
            path.is_file() and not path.is_symlink() and json.loads(path.read_bytes()) is not None
        )
    except (OSError, ValueError):
        return False


def payload(root: Path, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "session_id": SESSION,
        "transcript_path": str(root / "transcript.jsonl"),
        "cwd": str(root),
        "prompt_id": "p-1",
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": "Working on it.",
        "background_tasks": [],
    }
    data.update(changes)
    return data


def claim_file(root: Path) -> Path:
    return root / "state" / "claims" / f"{claims.session_key(SESSION)}.json"


def fire_hostile(
    root: Path,
    stdin: bytes | dict[str, Any],
    env: dict[str, str] | None = None,
    preexec: Callable[[], None] | None = None,
    adopts: bool = False,
    limit: float = TIME_LIMIT,
    process: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """One fire that must end in time, without a traceback, writing nowhere but state/ and
    the person's own (the key its records are sealed with);
    the session's claim stays as it was unless the fire `adopts` a pending one. It runs the
    hook's `main` in this process unless it is a `process` of its own (always with `preexec`)."""
    data = stdin if isinstance(stdin, bytes) else json.dumps(stdin).encode()
    outside = _outside(root)
    inside = tree(root)
    kept = claim_file(root).read_bytes() if claim_file(root).is_file() else None
    valid_before = {p: stamp(p) for p in (root / "state").rglob("*.json") if valid_json(p)}
    started = time.monotonic()
    env = env or hook_env(root)
    if process or preexec is not None:
        proc = hook_process(root, data, env=env, timeout=30, preexec=preexec)
    else:
        proc = inprocess.hook([], data, env, root)
    elapsed = time.monotonic() - started
    stderr = proc.stderr.decode("utf-8", "replace")
    assert elapsed < limit, f"took {elapsed:.1f}s"
    assert "Traceback" not in stderr and "Error" not in stderr.split("\n", 1)[0], stderr[:500]
    assert proc.returncode in (0, 2), (proc.returncode, stderr[:500])
    if proc.returncode == 2:
        assert stderr.startswith(EXPLAINED), stderr[:500]
    else:  # an allow is silent, or tells the person one line (a halt) in the host's channel
        assert stderr == ""
        told = json.loads(proc.stdout) if proc.stdout else {"systemMessage": "agentcfg:"}
        assert list(told) == ["systemMessage"]
        assert told["systemMessage"].startswith(("agentcfg:", *EXPLAINED)), told
    assert _outside(root) == outside, "wrote outside the workspace"
    assert tree(root) == inside, "wrote outside state/"
    if kept is not None and not adopts:
        assert claim_file(root).read_bytes() == kept, "the claim was changed"
    for path, was in valid_before.items():  # no state lost: what was valid stays valid (a
        if stamp(path) == was:  # finished run may go); a file nothing wrote to is as it was
            continue
        assert valid_json(path) or (not path.exists() and path.parent.name in GOES), path
    return proc


MEMORY_LIMIT = 1 << 30
PERSON_STATE = (  # what a person keeps outside any workspace
    "/agentcfg/trust.json",
    "/agentcfg/trust.json.lock",
    "/agentcfg/error.log",
    "/agentcfg/seal.key",
)


def _outside(root: Path) -> dict[str, str]:
    """What is beside the workspace, less what a person keeps outside any workspace."""
    found = tree(root.parent, skip=root.name)
    return {k: v for k, v in found.items() if not k.endswith(PERSON_STATE)}


def _bounded_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_hostile(
    root: Path,
    args: list[str],
    expect: int | tuple[int, ...],
    env: dict[str, str] | None = None,
    seconds: float = TIME_LIMIT,
    stdin: bytes = b"",
    preexec: Callable[[], None] | None = None,
    process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """One `agentcfg ARGS` that must end with `expect`, in time, with at most one error line,
    no traceback and no write outside the workspace but the person's trust store and error log.
    It runs the console script's entry in this process unless it is a `process` of its own
    (always with `preexec`), which must also stay within MEMORY_LIMIT."""
    env = env or hook_env(root)

    def outside() -> dict[str, str]:
        return _outside(root)

    before = outside()

    def limits() -> None:
        _bounded_memory()
        if preexec is not None:
            preexec()

    started = time.monotonic()
    if process or preexec is not None:
        proc = subprocess.run(
            [sys.executable, "-m", "agentcfg", *args],
            input=stdin,
            capture_output=True,
            env=env,
            cwd=root,
            timeout=60,
            preexec_fn=limits,
            check=False,
        )
        out = subprocess.CompletedProcess(
            proc.args, proc.returncode, proc.stdout.decode("utf-8", "replace"),
            proc.stderr.decode("utf-8", "replace"),
        )  # fmt: skip
    else:
        out = inprocess.cli(args, env, root, stdin)
    elapsed = time.monotonic() - started
    assert elapsed < seconds, f"took {elapsed:.1f}s"
    assert "Traceback" not in out.stderr, out.stderr[-800:]
    assert out.returncode in ((expect,) if isinstance(expect, int) else expect), out
    assert len([line for line in out.stderr.splitlines() if "error" in line]) <= 1, out.stderr
    assert outside() == before, "wrote outside the workspace"
    return out
