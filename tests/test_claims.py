"""Claims in process: a session binds a roadmap and starts a fresh run, a peer's live claim is
refused unless forced, a release takes the run with it, a claim whose roadmap is gone is stale,
and a pending claim binds once, to the session whose transcript shows its token."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcfg import claims
from agentcfg.errors import ClaimError
from agentcfg.workspace import Workspace
from tests.helpers import ledger

NOW = 1_800_000_000.0


@pytest.fixture
def wsp(ws: Path) -> Workspace:
    return Workspace(ws)


def test_a_claim_binds_the_session_and_starts_a_fresh_run(wsp: Workspace) -> None:
    made = claims.claim(wsp, "s-1", "demo", now=NOW, max_iterations=7)
    held = claims.read_claim(wsp, made.claim.key)
    assert held == made.claim and held.slug == "demo" and held.max_iterations == 7
    run = claims.read_run(wsp, held)
    assert run is not None and run.iterations == 0 and run.started_at == NOW
    assert [e["event"] for e in ledger(wsp.root, claims=True)] == ["claimed"]


def test_a_peers_live_claim_is_refused_then_forced(wsp: Workspace) -> None:
    first = claims.claim(wsp, "s-1", "demo", now=NOW).claim
    with pytest.raises(ClaimError):
        claims.claim(wsp, "s-2", "demo", now=NOW + 1)
    forced = claims.claim(wsp, "s-2", "demo", now=NOW + 2, force=True)
    assert forced.displaced == (first,)
    assert claims.read_claim(wsp, first.key) is None


def test_a_release_from_a_terminal_takes_the_run_too(wsp: Workspace) -> None:
    held = claims.claim(wsp, "s-1", "demo", now=NOW).claim
    assert claims.release(wsp, "s-1", now=NOW + 1) == held
    assert claims.read_claim(wsp, held.key) is None
    assert not claims.run_path(wsp, held.key, "demo").exists()
    assert claims.release(wsp, "s-1", now=NOW + 2) is None  # nothing left to release


def test_a_claim_whose_roadmap_is_gone_is_stale(wsp: Workspace) -> None:
    held = claims.claim(wsp, "s-1", "demo", now=NOW).claim
    assert not claims.is_stale(wsp, held)
    (wsp.root / "roadmaps" / "demo.md").unlink()
    assert claims.is_stale(wsp, held)


def test_a_pending_claim_binds_once_to_the_session_that_shows_its_token(wsp: Workspace) -> None:
    pending = claims.claim_pending(wsp, "demo", now=NOW)
    shown = f"some output\n{pending.token}\nmore".encode()
    assert claims.shown_tokens(shown) == [pending.token]
    assert claims.adopt(wsp, "s-1", b"no token here", NOW + 1) is None
    bound = claims.adopt(wsp, "s-1", shown, NOW + 1)
    assert bound is not None and bound.slug == "demo" and bound.session_id == "s-1"
    assert claims.adopt(wsp, "s-2", shown, NOW + 2) is None  # spent: no other session takes it
    assert claims.all_pending(wsp, NOW + 2) == []
