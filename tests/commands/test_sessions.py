"""Claims and `agentcfg sessions`: binding, peers, staleness, env precedence, modes, races."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg import claims
from agentcfg.workspace import Workspace
from tests.conftest import cli_process, run_cli, write_roadmap

T0 = 1_790_000_000.0  # a fixed "now" for texts that show ages


@pytest.fixture
def clock() -> list[float]:
    """The moments the commands act at (`run_cli(..., at=clock)`); append to move it."""
    return [T0]


def claim_file(root: Path, session: str) -> Path:
    return root / "state" / "claims" / f"{claims.session_key(session)}.json"


def test_claim_writes_the_claim_and_a_fresh_run(ws: Path, clock: list[float]) -> None:
    result = run_cli("sessions", "claim", "demo", "--session", "s1", at=clock)
    assert result.exit_code == 0, result.output
    data = json.loads(claim_file(ws, "s1").read_text())
    assert data == {"slug": "demo", "session_id": "s1", "claimed_at": "2026-09-21T14:13:20Z"}
    run = ws / "state" / "runs" / f"{claims.session_key('s1')}-demo.json"
    assert json.loads(run.read_text())["iterations"] == 0


def test_claim_output(ws: Path, clock: list[float], snapshot: SnapshotAssertion) -> None:
    write_roadmap(ws, "manual", "## Phase 1\n- [ ] a\n", mode="interactive")
    first = run_cli(
        "sessions",
        "claim",
        "demo",
        "--session",
        "s1",
        "--max-iterations",
        "5",
        "--wall-clock",
        "90m",
        "--max-tokens",
        "2000000",
        at=clock,
    )
    again = run_cli("sessions", "claim", "manual", "--session", "s1", at=clock)
    assert (first.output, again.output) == snapshot


def test_reclaim_resets_the_run(ws: Path, clock: list[float]) -> None:
    run_cli("sessions", "claim", "demo", "--session", "s1", at=clock)
    run = ws / "state" / "runs" / f"{claims.session_key('s1')}-demo.json"
    data = json.loads(run.read_text())
    data.update(iterations=7, halted="halt-stall")
    run.write_text(json.dumps(data))
    run_cli("sessions", "claim", "demo", "--session", "s1", at=clock)
    assert json.loads(run.read_text())["iterations"] == 0
    assert json.loads(run.read_text())["halted"] is None


def test_peer_claim_is_refused_then_forced(ws: Path, clock: list[float]) -> None:
    assert run_cli("sessions", "claim", "demo", "--session", "peer", at=clock).exit_code == 0
    clock.append(T0 + 3600)
    refused = run_cli("sessions", "claim", "demo", "--session", "me", at=clock)
    assert refused.exit_code == 1
    assert refused.output == (
        "agentcfg: error: roadmap `demo` is claimed by session peer (1h ago); "
        "pass --force to take it over\n"
    )
    assert not claim_file(ws, "me").exists()
    forced = run_cli("sessions", "claim", "demo", "--session", "me", "--force", at=clock)
    assert forced.exit_code == 0
    assert "took roadmap `demo` over from session peer" in forced.output
    assert not claim_file(ws, "peer").exists()


def test_old_peer_claim_does_not_block(ws: Path, clock: list[float]) -> None:
    run_cli("sessions", "claim", "demo", "--session", "peer", at=clock)
    clock.append(T0 + 4 * 3600)
    assert run_cli("sessions", "claim", "demo", "--session", "me", at=clock).exit_code == 0


def test_release(ws: Path, clock: list[float]) -> None:
    run_cli("sessions", "claim", "demo", "--session", "s1", at=clock)
    result = run_cli("sessions", "release", "--session", "s1", at=clock)
    assert result.output == "released roadmap `demo` for session s1\n"
    assert not claim_file(ws, "s1").exists()
    assert not list((ws / "state" / "runs").glob("*.json"))
    assert (
        run_cli("sessions", "release", "--session", "s1", at=clock).output
        == "session s1 holds no claim\n"
    )


def test_list_and_show(ws: Path, clock: list[float], snapshot: SnapshotAssertion) -> None:
    write_roadmap(ws, "doomed", "## Phase 1\n- [ ] a\n")
    run_cli("sessions", "claim", "demo", "--session", "s1", at=clock)
    run_cli("sessions", "claim", "doomed", "--session", "s2", at=clock)
    (ws / "roadmaps" / "doomed.md").unlink()
    clock.append(T0 + 125)
    listing = run_cli("sessions", "list", at=clock)
    show = run_cli("sessions", "show", "--session", "s1", at=clock)
    assert (listing.output, show.output) == snapshot
    rows = json.loads(run_cli("sessions", "list", "--json", at=clock).output)
    assert [(r["slug"], r["stale"]) for r in rows] == [("demo", False), ("doomed", True)]
    shown = json.loads(run_cli("sessions", "show", "--session", "s1", "--json", at=clock).output)
    assert shown["progress"]["open"] == 3
    assert shown["run"]["iterations"] == 0


def test_a_claim_on_an_unreadable_roadmap_is_listed_without_a_mode(
    ws: Path, clock: list[float], snapshot: SnapshotAssertion
) -> None:
    run_cli("sessions", "claim", "demo", "--session", "s1", at=clock)
    (ws / "roadmaps" / "demo.md").write_bytes(b"\xff\xfe not text")
    shown = (
        run_cli("sessions", "list", at=clock).output
        + run_cli("sessions", "show", "--session", "s1", at=clock).output
    )
    assert "None" not in shown
    assert shown == snapshot


def test_list_and_show_when_empty(ws: Path) -> None:
    assert run_cli("sessions", "list").output == "no claims\n"
    assert run_cli("sessions", "show", "--session", "x").output == "session x holds no claim\n"
    assert run_cli("sessions", "show", "--session", "x", "--json").output == "null\n"


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"AGENTCFG_SESSION_ID": "a", "CLAUDE_CODE_SESSION_ID": "b", "CODEX_SESSION_ID": "c"}, "b"),
        ({"AGENTCFG_SESSION_ID": "a", "CODEX_SESSION_ID": "c"}, "c"),  # a stray one loses
        ({"AGENTCFG_SESSION_ID": "a"}, "a"),
        ({"CLAUDE_CODE_SESSION_ID": "b", "CODEX_SESSION_ID": "c"}, "b"),
        ({"CODEX_SESSION_ID": "c", "GEMINI_SESSION_ID": "d"}, "c"),
        ({"GEMINI_SESSION_ID": "d"}, "d"),
    ],
)
def test_session_id_precedence(ws: Path, env: dict[str, str], expected: str) -> None:
    assert run_cli("sessions", "claim", "demo", env=env).exit_code == 0
    assert claim_file(ws, expected).exists()
    inside = run_cli("sessions", "claim", "demo", "--session", "z", "--force", env=env)
    assert inside.exit_code == 1  # a second session id takes nothing over from inside
    assert inside.output == f"agentcfg: error: {claims.FORCE_INSIDE}\n"
    assert not claim_file(ws, "z").exists() and claim_file(ws, expected).exists()
    person = run_cli("sessions", "claim", "demo", "--session", "z", "--force", env={})
    assert person.exit_code == 0
    assert claim_file(ws, "z").exists()


def test_without_a_session_id_the_claim_waits_with_a_token(
    ws: Path, clock: list[float], snapshot: SnapshotAssertion
) -> None:
    result = run_cli("sessions", "claim", "demo", "--max-iterations", "4", at=clock)
    assert result.exit_code == 0, result.output
    token = re.search(r"agentcfg-claim-[0-9a-f]{16}", result.output)
    assert token is not None
    assert result.output.replace(token.group(0), "<token>") == snapshot
    pending_file = ws / "state" / "pending" / claims.pending_name(token.group(0))
    pending = json.loads(pending_file.read_text())
    assert (pending["slug"], pending["max_iterations"]) == ("demo", 4)
    assert not (ws / "state" / "claims").exists()  # bound to no session yet
    assert run_cli("sessions", "list", at=clock).output == "no claims\n"


def test_a_pending_claim_keeps_its_token_budget_when_adopted(ws: Path, clock: list[float]) -> None:
    result = run_cli("sessions", "claim", "demo", "--max-tokens", "5000", at=clock)
    assert result.exit_code == 0 and "budget: 5,000 tokens" in result.output
    made = claims.adopt(Workspace(ws), "gemini-session", result.output.encode(), clock[0])
    assert made is not None and made.max_tokens == 5000
    assert claims.read_claim(Workspace(ws), made.key) == made


def test_a_pending_claim_respects_a_peer(ws: Path, clock: list[float]) -> None:
    assert run_cli("sessions", "claim", "demo", "--session", "peer", at=clock).exit_code == 0
    refused = run_cli("sessions", "claim", "demo", at=clock)
    assert refused.exit_code == 1
    assert "claimed by session peer" in refused.output
    assert not (ws / "state" / "pending").exists()
    assert run_cli("sessions", "claim", "demo", "--force", at=clock).exit_code == 0


def test_no_session_id_is_one_clear_line(ws: Path) -> None:
    for command in ("release", "show"):
        result = run_cli("sessions", command)
        assert result.exit_code == 1
        assert result.output.startswith("agentcfg: error: no session id: pass --session")
    assert not (ws / "state").exists()


@pytest.mark.parametrize("slug", ["../demo", "roadmaps/demo", "missing", "..", "/etc/passwd"])
def test_bad_slugs_touch_no_state(ws: Path, clock: list[float], slug: str) -> None:
    run_cli("sessions", "claim", "demo", "--session", "s1", at=clock)
    before = {p: p.read_bytes() for p in (ws / "state").rglob("*.json")}
    result = run_cli("sessions", "claim", slug, "--session", "s1", at=clock)
    assert result.exit_code == 1
    assert len(result.output.splitlines()) == 1
    assert {p: p.read_bytes() for p in (ws / "state").rglob("*.json")} == before


def test_symlink_escape_and_non_roadmap_are_refused(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text("- [ ] a\n")
    (ws / "roadmaps" / "escape.md").symlink_to(outside)
    (ws / "roadmaps" / "folder.md").mkdir()
    for slug in ("escape", "folder"):
        result = run_cli("sessions", "claim", slug, "--session", "s1")
        assert result.exit_code == 1
        assert "not a regular file inside roadmaps/" in result.output


def test_bad_budget_is_a_usage_error(ws: Path) -> None:
    for option in (["--wall-clock", "soon"], ["--max-iterations", "0"], ["--max-tokens", "0"]):
        result = run_cli("sessions", "claim", "demo", "--session", "s1", *option)
        assert result.exit_code == 2
    assert not (ws / "state" / "claims").exists()


def test_state_modes(ws: Path) -> None:
    run_cli("sessions", "claim", "demo", "--session", "s1")
    for path in (ws / "state").rglob("*"):
        expected = 0o700 if path.is_dir() else 0o600
        assert stat.S_IMODE(path.stat().st_mode) == expected, path


def agentcfg(root: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return cli_process(root, *args, timeout=60, **env)


def test_claim_and_release_as_real_processes(ws: Path) -> None:
    made = agentcfg(ws, "sessions", "claim", "demo", CLAUDE_CODE_SESSION_ID="proc")
    assert made.returncode == 0, made.stderr
    assert claim_file(ws, "proc").exists()
    listed = agentcfg(ws, "sessions", "list", "--json")
    assert json.loads(listed.stdout)[0]["session"] == "proc"
    bad = agentcfg(ws, "sessions", "claim", "../etc")
    assert bad.returncode == 1
    assert bad.stderr.count("\n") == 1
    assert "Traceback" not in bad.stderr
    gone = agentcfg(ws, "sessions", "release", CLAUDE_CODE_SESSION_ID="proc")
    assert gone.returncode == 0
    assert not claim_file(ws, "proc").exists()


@pytest.mark.slow  # a scale test: sixteen processes at once
def test_sixteen_processes_claiming_and_releasing(ws: Path) -> None:
    for n in range(16):
        write_roadmap(ws, f"r{n}", "## Phase 1\n- [ ] a\n")

    def work(n: int) -> int:
        session = f"s{n}"
        code = agentcfg(ws, "sessions", "claim", f"r{n}", "--session", session).returncode
        if n % 2:  # odd sessions release again
            code |= agentcfg(ws, "sessions", "release", "--session", session).returncode
        return code

    with ThreadPoolExecutor(16) as pool:
        assert list(pool.map(work, range(16))) == [0] * 16
    left = sorted(
        json.loads(p.read_text())["session_id"] for p in (ws / "state" / "claims").glob("*.json")
    )
    assert left == sorted(f"s{n}" for n in range(0, 16, 2))
    runs = sorted(p.name for p in (ws / "state" / "runs").glob("*.json"))
    assert runs == sorted(f"{claims.session_key(f's{n}')}-r{n}.json" for n in range(0, 16, 2))
    assert not [p for p in (ws / "state").rglob("*.tmp")]


def test_stale_claim_is_ignored(ws: Path) -> None:
    run_cli("sessions", "claim", "demo", "--session", "s1")
    (ws / "roadmaps" / "demo.md").unlink()
    found = claims.read_claim(Workspace(ws), claims.session_key("s1"))
    assert found is not None
    assert claims.is_stale(Workspace(ws), found)
    assert os.path.exists(claim_file(ws, "s1"))


def test_claim_starts_a_run_in_the_ledger(ws: Path, clock: list[float]) -> None:
    from tests.helpers import ledger

    run_cli("sessions", "claim", "demo", "--session", "s1", "--max-iterations", "3", at=clock)
    events = ledger(ws, claims=True)
    assert [(e["event"], e["slug"], e["max_iterations"]) for e in events] == [
        ("claimed", "demo", 3)
    ]
    assert events[0]["run"] == claims.session_key("s1")


def test_list_and_show_tell_the_run_as_the_report_does(
    ws: Path, clock: list[float], snapshot: SnapshotAssertion
) -> None:
    from agentcfg import controls, state

    run_cli("sessions", "claim", "demo", "--session", "s1", at=clock)
    key = claims.session_key("s1")
    state.append_ledger(ws / "state", state.event("engage", T0 + 30, key, "demo", open=3))
    controls.stop(Workspace(ws), ["demo"], "terminal", T0 + 60)
    state.append_ledger(
        ws / "state", state.event("stopped", T0 + 61, key, "demo", starts=1, restarts=0,
                                  by="terminal")
    )  # fmt: skip
    controls.resume(Workspace(ws), "demo", "terminal", T0 + 90)
    clock.append(T0 + 120)
    listing = run_cli("sessions", "list", at=clock).output
    assert "stopped by a person (terminal)" in listing and "running" not in listing
    shown = json.loads(run_cli("sessions", "show", "--session", "s1", "--json", at=clock).output)
    assert shown["state"]["outcome"] == "stopped"
    assert listing == snapshot
