"""Pending claims, against an agent that reads state/ and a workspace that fills it: the
token stays the claiming session's own, lapsed claims go, a lost claim is told, and no
number of files in state/pending/ (nor a big host session file) holds a fire past its
time budget."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hostile.conftest import PROMPT, REPLY, env_of, say_to
from tests.hostile.harness import SESSION, fire_hostile, payload, run_hostile

BUDGET = 3.5  # the fire's 3 s and its answer, beyond what starting the hook costs
PEER = "peer-session"


def pending_claim(root: Path, slug: str = "demo") -> str:
    """`sessions claim` from a shell that shows no session id; the token it prints."""
    made = run_hostile(root, ["sessions", "claim", slug], 0, env=env_of(root))
    found = re.search(r"agentcfg-claim-[0-9a-f]{16}", made.stdout)
    assert found is not None, made.stdout
    return found.group(0)


def pending_files(root: Path) -> list[Path]:
    return sorted((root / "state" / "pending").glob("*.json"))


def claim_of(root: Path) -> dict[str, object]:
    from agentcfg import claims

    path = root / "state" / "claims" / f"{claims.session_key(SESSION)}.json"
    return json.loads(path.read_text()) if path.exists() else {}


LOADED = "import agentcfg.config, agentcfg.stop.concerns, agentcfg.stop.context, agentcfg.stop.hook"


def startup(root: Path) -> float:
    """What starting the hook and loading its decision cost on this machine now: the fire's
    budget counts from there."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", LOADED], cwd=root, check=True, timeout=60)
    return time.monotonic() - started


def fire_timed(root: Path, data: dict[str, object], adopts: bool = False) -> tuple[int, str]:
    """One fire within the budget, beyond the hook's start: its exit code and its stderr."""
    proc = fire_hostile(root, data, adopts=adopts, limit=startup(root) + BUDGET)
    return proc.returncode, proc.stderr.decode()


def started_workspace(ws: Path) -> Path:
    run_hostile(ws, ["roadmap", "trust", "demo"], 0, env=env_of(ws))
    (ws / "transcript.jsonl").write_text(json.dumps(PROMPT) + "\n" + json.dumps(REPLY) + "\n")
    return ws


def test_the_token_cannot_be_read_from_state(ws: Path) -> None:
    root = started_workspace(ws)
    token = pending_claim(root)
    stored = [p for p in (root / "state").rglob("*") if p.is_file()]
    assert stored and not any(token.encode() in p.read_bytes() for p in stored)
    assert not any(token in str(p) for p in stored)
    say_to(root, f"claimed roadmap `demo` for the session that shows {token}")
    code, _ = fire_timed(root, payload(root))
    assert code == 2 and claim_of(root)["slug"] == "demo"  # it still binds its session
    stored = [p for p in (root / "state").rglob("*") if p.is_file()]
    assert not any(token.encode() in p.read_bytes() for p in stored)  # nor after: the ledger


def test_lapsed_pending_claims_are_cleaned(ws: Path) -> None:
    root = started_workspace(ws)
    old = pending_claim(root)
    lapsed = time.time() - 2 * 3600
    for path in pending_files(root):
        data = json.loads(path.read_text())
        path.write_text(json.dumps({**data, "claimed_at": "2020-01-01T00:00:00Z"}))
        os.utime(path, (lapsed, lapsed))
    lock = root / "state" / "pending" / ".lock"  # another process may hold it: it stays
    lock.touch()
    os.utime(lock, (lapsed, lapsed))
    pending_claim(root)
    assert len(pending_files(root)) == 1  # the lapsed one went when the next was made
    assert lock.exists()
    say_to(root, old)
    assert fire_timed(root, payload(root))[0] == 0  # and it binds nothing
    assert claim_of(root) == {}


def test_a_pending_claim_that_loses_is_told_to_its_agent(ws: Path) -> None:
    root = started_workspace(ws)
    token = pending_claim(root)
    run_hostile(root, ["sessions", "claim", "demo", "--session", PEER], 0, env=env_of(root))
    say_to(root, token)
    code, told = fire_timed(root, payload(root))
    assert code == 2, told
    assert "did not bind" in told and "claimed by session peer-session" in told
    assert claim_of(root) == {}
    assert fire_timed(root, payload(root))[0] == 0  # told once: the next turn end is its own


def test_a_second_pending_claim_of_the_same_session_binds(ws: Path) -> None:
    root = started_workspace(ws)
    say_to(root, pending_claim(root))
    assert fire_timed(root, payload(root))[0] == 2
    assert claim_of(root)["slug"] == "demo"
    shutil.copy(root / "roadmaps" / "demo.md", root / "roadmaps" / "other.md")
    say_to(root, pending_claim(root, "other"))
    assert fire_timed(root, payload(root), adopts=True)[0] == 2
    assert claim_of(root)["slug"] == "other"


def junk(root: Path, count: int) -> None:
    """`count` files in state/pending/, each a pending claim as the old store wrote it."""
    folder = root / "state" / "pending"
    folder.mkdir(parents=True, exist_ok=True)
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for n in range(count):
        token = f"agentcfg-claim-{n:016x}"
        record = {"token": token, "slug": "demo", "claimed_at": at, "force": False}
        (folder / f"{token}.json").write_text(json.dumps(record))


@pytest.mark.slow
def test_fifty_thousand_pending_files_keep_every_fire_in_budget(ws: Path) -> None:
    root = started_workspace(ws)
    junk(root, 50_000)
    assert fire_timed(root, payload(root, session_id="someone-unclaimed"))[0] == 0
    run_hostile(root, ["sessions", "claim", "demo", "--session", SESSION], 0, env=env_of(root))
    assert fire_timed(root, payload(root))[0] == 2


def gemini_payload(root: Path, transcript: Path) -> dict[str, object]:
    return {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": str(root),
        "hook_event_name": "AfterAgent",
        "prompt": "Work through the demo roadmap.",
        "prompt_response": "That step is done.",
        "stop_hook_active": False,
    }


@pytest.mark.slow
def test_an_eight_mib_gemini_session_of_tiny_lines_stays_in_budget(ws: Path) -> None:
    root = started_workspace(ws)
    run_hostile(root, ["sessions", "claim", "demo", "--session", SESSION], 0, env=env_of(root))
    for line in (b"{}\n", b'{"type":"user","content":"x"}\n'):
        session = root.parent / "session.jsonl"
        session.write_bytes(line * (8 * 1024 * 1024 // len(line)))
        assert fire_timed(root, gemini_payload(root, session))[0] in (0, 2)
