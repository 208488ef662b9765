"""A corpus of hostile inputs fed to the real stop hook: payloads, transcripts, roadmaps, state."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentcfg import claims
from tests.conftest import run_cli
from tests.hostile.harness import SESSION, claim_file, fire_hostile, payload

DEMO = Path(__file__).resolve().parents[2] / "roadmaps" / "demo.md"


@pytest.fixture
def root(ws: Path) -> Path:
    """A workspace where SESSION holds a claim on the autonomous demo roadmap."""
    assert run_cli("sessions", "claim", "demo", "--session", SESSION).exit_code == 0
    (ws / "transcript.jsonl").write_text(
        json.dumps({"type": "user", "message": {"content": "go"}}) + "\n"
    )
    return ws


def run_path(root: Path) -> Path:
    return root / "state" / "runs" / f"{claims.session_key(SESSION)}-demo.json"


# -- payloads -------------------------------------------------------------------------------

STDIN_CASES: dict[str, Callable[[Path], bytes]] = {
    "empty": lambda r: b"",
    "whitespace": lambda r: b"  \n\t ",
    "not json": lambda r: b"stop please",
    "json array": lambda r: b"[1, 2, 3]",
    "json string": lambda r: b'"Stop"',
    "json null": lambda r: b"null",
    "truncated json": lambda r: json.dumps(payload(r)).encode()[:-7],
    "trailing garbage": lambda r: json.dumps(payload(r)).encode() + b" }{",
    "invalid utf-8": lambda r: json.dumps(payload(r)).encode().replace(b"Working", b"\xff\xfe\xfd"),
    "50 MiB": lambda r: b'{"session_id": "' + b"x" * (50 << 20) + b'"}',
    "deep nesting": lambda r: b"[" * 200_000 + b"]" * 200_000,
    "NaN and Infinity": lambda r: json.dumps(
        {**payload(r), "stop_hook_active": float("nan")}
    ).encode(),
    "duplicate keys": lambda r: b'{"session_id": "a", "session_id": "' + SESSION.encode() + b'"}',
}

FIELD_CASES: dict[str, dict[str, Any]] = {
    "session id number": {"session_id": 42},
    "session id null": {"session_id": None},
    "session id with slash": {"session_id": "../../etc/passwd"},
    "session id dot dot": {"session_id": ".."},
    "session id with NUL": {"session_id": "abc\u0000def"},
    "session id 10 MB": {"session_id": "s" * 10_000_000},
    "cwd a list": {"cwd": ["/"]},
    "cwd missing folder": {"cwd": "/nonexistent/place"},
    "cwd with NUL": {"cwd": "/tmp\u0000/x"},
    "prompt id object": {"prompt_id": {"a": 1}},
    "message a list": {"last_assistant_message": ["Would you like me to continue?"]},
    "message 20 MB": {"last_assistant_message": "Shall I proceed? " * 1_200_000},
    "background tasks string": {"background_tasks": "lots"},
    "background tasks nested": {"background_tasks": [[[[]]]]},
    "stop_hook_active string": {"stop_hook_active": "yes"},
    "hook event unknown": {"hook_event_name": "Explode"},
    "every field null": dict.fromkeys(
        ("session_id", "transcript_path", "cwd", "prompt_id", "last_assistant_message"), None
    ),
}


@pytest.mark.parametrize("case", sorted(STDIN_CASES))
def test_hostile_stdin(root: Path, case: str) -> None:
    result = fire_hostile(root, STDIN_CASES[case](root))
    # only a payload that still names the claimed session may engage
    readable = {"duplicate keys", "invalid utf-8", "NaN and Infinity"}
    assert result.returncode == 0 or case in readable


@pytest.mark.parametrize("case", sorted(FIELD_CASES))
def test_hostile_fields(root: Path, case: str) -> None:
    result = fire_hostile(root, payload(root, **FIELD_CASES[case]))
    if "session id" in case or case == "every field null":
        assert result.returncode == 0  # no claim for that session


# -- transcripts ----------------------------------------------------------------------------


def _fifo(r: Path) -> str:
    os.mkfifo(r / "t.fifo")
    return str(r / "t.fifo")


def _loop(r: Path) -> str:
    (r / "loop.jsonl").symlink_to(r / "loop.jsonl")
    return str(r / "loop.jsonl")


def _one_line(r: Path) -> str:
    (r / "one.jsonl").write_bytes(
        b'{"type": "user", "message": {"content": "' + b"y" * (20 << 20) + b'"}}'
    )
    return str(r / "one.jsonl")


def _binary(r: Path) -> str:
    (r / "bin.jsonl").write_bytes(os.urandom(1 << 20))
    return str(r / "bin.jsonl")


def _odd_usage(r: Path) -> str:
    odd: list[object] = [-5, "12", 1.5, True, None, [1], {"n": 1}, 10**40]
    parts = (
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    )
    lines = [{"type": "user", "message": {"content": "go"}}] + [
        {"type": "assistant", "message": {"id": f"m{n}", "usage": dict.fromkeys(parts, value)}}
        for n, value in enumerate(odd)
    ]
    (r / "odd.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(r / "odd.jsonl")


def _many_messages(r: Path) -> str:
    """A human turn of 8 MiB of short replies, each with its usage: a fire adds them all up."""
    words = [{"type": "text", "text": "x" * 300}]
    with (r / "many.jsonl").open("w") as handle:
        handle.write(json.dumps({"type": "user", "message": {"content": "go"}}) + "\n")
        for n in range(18_000):  # just under the tail's 8 MiB
            handle.write(json.dumps({"type": "assistant", "message": {"id": f"m{n}", "content": words,
                         "usage": {"input_tokens": 1, "output_tokens": 1}}}) + "\n")  # fmt: skip
    return str(r / "many.jsonl")


TRANSCRIPTS: dict[str, Callable[[Path], str]] = {
    "odd usage values": _odd_usage,
    "8 MiB of usage lines": _many_messages,
    "fifo": _fifo,
    "dev zero": lambda r: "/dev/zero",
    "a directory": lambda r: str(r),
    "symlink loop": _loop,
    "missing file": lambda r: str(r / "gone.jsonl"),
    "one 20 MiB line": _one_line,
    "random bytes": _binary,
}


@pytest.mark.parametrize("case", sorted(TRANSCRIPTS))
@pytest.mark.parametrize("with_turn_id", [True, False])
def test_hostile_transcripts(root: Path, case: str, with_turn_id: bool) -> None:
    path = TRANSCRIPTS[case](root)
    changes: dict[str, Any] = {"transcript_path": path, "last_assistant_message": None}
    if not with_turn_id:
        changes["prompt_id"] = None
    result = fire_hostile(root, payload(root, **changes))
    assert result.returncode == 2  # the claim is sound: an odd transcript only loses detail


# -- roadmaps -------------------------------------------------------------------------------

ALIAS_BOMB = (
    "---\na: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{chr(98 + n)}: &{chr(98 + n)} [" + ", ".join([f"*{chr(97 + n)}"] * 9) + "]\n"
        for n in range(9)
    )
    + "execution: {mode: autonomous}\n---\n## Phase 1\n- [ ] a\n"
)

ROADMAPS: dict[str, bytes] = {
    "binary": b"\x00\x01\x02" * 1000,
    "empty": b"",
    "not utf-8": b"## Phase 1\n- [ ] caf\xe9\n",
    "a million nested bullets": b"---\nexecution: {mode: autonomous}\n---\n## Phase 1\n"
    + b"- " * 1_000_000
    + b"[ ] deep\n",
    "200,000 steps": b"---\nexecution: {mode: autonomous}\n---\n## Phase 1\n"
    + b"- [ ] x\n" * 200_000,
    "yaml alias bomb": ALIAS_BOMB.encode(),
    "yaml python tag": b"---\nexecution: !!python/object/apply:os.system ['touch pwned']\n---\n- [ ] a\n",
    "over the size limit": b"- [ ] a\n" * (1_300_000),
    "unterminated frontmatter": b"---\nexecution: {mode: autonomous}\n- [ ] a\n",
    "a verify line that must never run": b"---\nexecution: {mode: autonomous}\n---\n"
    b"- [ ] a <!-- verify: touch PWNED -->\n",
}


AT_SCALE = ("a million nested bullets", "200,000 steps")  # seconds each: `make test-all` has them


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=pytest.mark.slow) if c in AT_SCALE else c for c in sorted(ROADMAPS)],
)
def test_hostile_roadmaps(root: Path, case: str) -> None:
    (root / "roadmaps" / "demo.md").write_bytes(ROADMAPS[case])
    fire_hostile(root, payload(root))
    fire_hostile(root, payload(root, last_assistant_message="Second reply."))
    assert not (root / "PWNED").exists() and not (root / "pwned").exists()


def test_roadmap_swapped_for_a_symlink_out(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_bytes(DEMO.read_bytes())
    (root / "roadmaps" / "demo.md").unlink()
    (root / "roadmaps" / "demo.md").symlink_to(outside)
    result = fire_hostile(root, payload(root))
    assert result.returncode == 0  # the claim is stale: the roadmap is no longer inside roadmaps/


# -- state files ----------------------------------------------------------------------------


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.exists():
        path.unlink()
    path.write_bytes(data)


def _run_symlinked_out(r: Path, t: Path) -> None:
    (t / "elsewhere.json").write_text('{"precious": true}')
    run_path(r).unlink()
    run_path(r).symlink_to(t / "elsewhere.json")


def _claim_symlinked_out(r: Path, t: Path) -> None:
    (t / "claim-elsewhere.json").write_bytes(claim_file(r).read_bytes())
    claim_file(r).unlink()
    claim_file(r).symlink_to(t / "claim-elsewhere.json")


def _poison_cache(r: Path, t: Path) -> None:
    for path in (r / "state" / "cache").glob("*.json"):
        _write(path, b'{"version": 1, "value": {"steps": "oops"}}')


def _ledger_folder(r: Path, t: Path) -> None:
    ledger = r / "state" / "run-continuation.jsonl"
    if ledger.exists():
        ledger.unlink()
    ledger.mkdir()


def _claim_json(slug: str, session: str) -> bytes:
    return json.dumps(
        {"slug": slug, "session_id": session, "claimed_at": "2026-01-01T00:00:00Z"}
    ).encode()


STATE_CASES: dict[str, Callable[[Path, Path], None]] = {
    "claim truncated": lambda r, t: _write(claim_file(r), claim_file(r).read_bytes()[:20]),
    "claim wrong shape": lambda r, t: _write(claim_file(r), b'{"slug": 5, "session_id": []}'),
    "claim huge": lambda r, t: _write(claim_file(r), b'{"pad": "' + b"z" * (3 << 20) + b'"}'),
    "claim of another session": lambda r, t: _write(claim_file(r), _claim_json("demo", "other")),
    "claim names a traversal slug": lambda r, t: _write(
        claim_file(r), _claim_json("../../etc/passwd", SESSION)
    ),
    "run state truncated": lambda r, t: _write(run_path(r), b'{"started_at": 1, "iter'),
    "run state wrong shape": lambda r, t: _write(run_path(r), b'{"iterations": "many"}'),
    "run state huge": lambda r, t: _write(
        run_path(r), b'{"history": [' + b"1," * (2 << 20) + b"1]}"
    ),
    "run state symlinked elsewhere": _run_symlinked_out,
    "claim symlinked elsewhere": _claim_symlinked_out,
    "refusal marker garbage": lambda r, t: _write(
        r / "state" / "refusals" / f"{claims.session_key(SESSION)}.json", b"\xff"
    ),
    "parse cache poisoned": _poison_cache,
    "ledger is a directory": _ledger_folder,
    "config garbage": lambda r, t: (r / "agentcfg.yaml").write_bytes(b"\x00\xff: [\n"),
}


@pytest.mark.parametrize("case", sorted(STATE_CASES))
def test_hostile_state(root: Path, tmp_path: Path, case: str) -> None:
    fire_hostile(root, payload(root, last_assistant_message="warm the cache"))
    STATE_CASES[case](root, tmp_path)
    fire_hostile(root, payload(root))
    if (tmp_path / "elsewhere.json").exists():
        assert (tmp_path / "elsewhere.json").read_text() == '{"precious": true}'


def test_read_only_state_folder(root: Path) -> None:
    """A state folder nothing can be written to: a read-only bind mount (root ignores modes)."""
    state = root / "state"
    before = run_path(root).read_bytes()
    if os.geteuid() == 0:
        subprocess.run(["mount", "--bind", str(state), str(state)], check=True)
        subprocess.run(["mount", "-o", "remount,ro,bind", str(state)], check=True)
    else:  # pragma: no cover - run as an ordinary user
        for path in [state, *(p for p in state.rglob("*") if p.is_dir())]:
            path.chmod(0o500)
    try:
        with pytest.raises(OSError):
            (state / "probe").write_text("x")
        result = fire_hostile(root, payload(root))
        assert result.returncode == 0  # a counter that cannot persist must not drive a loop
    finally:
        if os.geteuid() == 0:
            subprocess.run(["umount", str(state)], check=True)
        else:  # pragma: no cover
            for path in [state, *(p for p in state.rglob("*") if p.is_dir())]:
                path.chmod(0o700)
    assert run_path(root).read_bytes() == before


def _no_room() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def test_full_state_folder(root: Path) -> None:
    """No byte can be written (as on a full disk): allow, and nothing torn."""
    before = run_path(root).read_bytes()
    result = fire_hostile(root, payload(root), preexec=_no_room)
    assert result.returncode == 0
    assert run_path(root).read_bytes() == before
    assert not list((root / "state").rglob("*.tmp"))
