"""The hook's context only reads: its properties, read in any order, write nothing, start no
process and see the same values; a pending claim binds and a lease renews only as the hook's
own steps, which hand on what they found."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentcfg.config import load_config
from agentcfg.fleet.membership import read_membership, remember
from agentcfg.hosts.registry import adapter
from agentcfg.stop import steps
from agentcfg.stop.context import HookContext
from agentcfg.stop.handed import NOTHING, Handed
from agentcfg.workspace import Workspace
from tests.conftest import FIXTURES, SESSION, fixture_payload, run_cli
from tests.helpers import ledger

# every fact the context offers; `log` and the hook's steps are the writers, not facts
FACTS = (
    "held_claim",
    "claim",
    "stop",
    "recorded_member",
    "member",
    "loaded",
    "roadmap",
    "problem",
    "scan",
    "contract",
    "receipts",
    "judgement",
    "tampered",
    "autonomous",
    "transcript",
    "turn",
    "final_message",
    "prompt",
    "person",
    "paused",
    "reply_key",
    "caps",
)


def tree(folder: Path) -> dict[str, bytes | None]:
    """Every file and folder under `folder`, with its bytes (None for a folder)."""
    return {
        str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes()
        for p in sorted(folder.rglob("*"))
    }


def pending_claim(root: Path, slug: str) -> str:
    """`sessions claim` from a shell that shows no session id: the token it prints, shown in
    the session's transcript as a tool's output."""
    made = run_cli("sessions", "claim", slug)
    found = re.search(r"agentcfg-claim-[0-9a-f]{16}", made.output)
    assert found is not None, made.output
    line = {"type": "user", "message": {"content": [{"type": "tool_result", "content": found[0]}]}}
    with (root / "transcript.jsonl").open("a") as handle:
        handle.write(json.dumps(line) + "\n")
    return found[0]


@pytest.fixture
def busy(ws: Path) -> Path:
    """A fleet member's workspace whose lease is due for renewal, with a pending claim on
    another roadmap that this session's transcript shows."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(ws)], check=True)
    shutil.copy(FIXTURES / "transcript.jsonl", ws / "transcript.jsonl")
    shutil.copy(ws / "roadmaps" / "demo.md", ws / "roadmaps" / "other.md")
    assert run_cli("roadmap", "trust", "demo").exit_code == 0
    claimed = run_cli(
        "sessions", "claim", "demo", "--session", SESSION, "--step", "2.1", "--lease-ttl", "20s"
    )
    assert claimed.exit_code == 0, claimed.output
    found = read_membership(Workspace(ws), "demo")
    assert found is not None
    remember(Workspace(ws), found._replace(expires=time.time() + 5))  # half its time is gone
    pending_claim(ws, "other")
    return ws


def context(root: Path) -> HookContext:
    ws = Workspace(root)
    event = adapter("claude").to_event(fixture_payload(1, root))
    # the captured transcript ends where the host ran the hook: no wait for a late reply
    config = load_config(ws, {"AGENTCFG_REPLY_WAIT": "0"})
    return HookContext(event, ws, config, {}, time.time())


def read(ctx: HookContext, names: list[str] | tuple[str, ...]) -> dict[str, str]:
    return {name: repr(getattr(ctx, name)) for name in names}


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(order=st.permutations(FACTS))
def test_reading_the_facts_in_any_order_writes_nothing_and_sees_the_same(
    busy: Path, order: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = read(context(busy), FACTS)  # the roadmap's parse cache is written here, once
    before = tree(busy / "state")

    def no_process(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a fact started a process: {args}")

    with monkeypatch.context() as patched:
        patched.setattr(subprocess.Popen, "__init__", no_process)
        ctx = context(busy)
        seen = read(ctx, order)
        ctx.spent_since(None)
    assert tree(busy / "state") == before
    assert seen == first
    assert "other" not in first["held_claim"]  # the pending claim is not bound by reading


def test_the_facts_write_nothing_in_a_state_folder_that_cannot_be_written(busy: Path) -> None:
    read(context(busy), FACTS)
    folders = [busy / "state", *(p for p in (busy / "state").rglob("*") if p.is_dir())]
    for folder in folders:
        folder.chmod(0o500)
    try:
        before = tree(busy / "state")
        seen = read(context(busy), FACTS)
    finally:
        for folder in folders:
            folder.chmod(0o700)
    assert tree(busy / "state") == before
    assert "'demo'" in seen["held_claim"] and "'2.1'" in seen["member"]


def test_the_hooks_steps_bind_the_pending_claim_then_renew_the_lease(busy: Path) -> None:
    due = read_membership(Workspace(busy), "demo")
    assert due is not None
    handed = steps.run_steps(context(busy), steps.BEFORE)
    assert handed == Handed(adopted="other")  # bound, so no lease of `demo` is renewed
    assert context(busy).claim is not None and context(busy).claim.slug == "other"  # type: ignore[union-attr]
    after = read_membership(Workspace(busy), "demo")
    assert after == due


def test_the_lease_step_renews_a_due_lease_and_hands_on_nothing_new(busy: Path) -> None:
    shutil.rmtree(busy / "state" / "pending")
    due = read_membership(Workspace(busy), "demo")
    assert due is not None
    handed = steps.run_steps(context(busy), steps.BEFORE)
    assert handed == NOTHING
    after = read_membership(Workspace(busy), "demo")
    assert after is not None and after.expires >= due.expires + 10


def test_a_failing_step_is_recorded_and_the_next_one_still_runs(busy: Path) -> None:
    ran: list[str] = []

    def broken(ctx: HookContext, handed: Handed) -> Handed:
        raise OSError("disk gone")

    def after(ctx: HookContext, handed: Handed) -> Handed:
        ran.append("after")
        return handed._replace(lost="told")

    handed = steps.run_steps(context(busy), (broken, after))
    assert ran == ["after"] and handed.lost == "told"
    errors = [e["reason"] for e in ledger(busy) if e["event"] == "error"]
    assert errors == ["hook step broken: OSError: disk gone"]
