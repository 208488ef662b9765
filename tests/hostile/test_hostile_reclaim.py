"""The budget the agent cannot reset: claiming again from inside a session keeps its run, and
every other way to start it afresh or widen it from inside (a pending claim, --force, a
second session id, releasing first, the plugin's own command) is closed; a person still can."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from agentcfg import claims
from agentcfg.contract import seal
from agentcfg.core.times import iso
from agentcfg.fleet.leases import Store
from agentcfg.fleet.membership import read_membership
from agentcfg.paths import RUNS
from agentcfg.workspace import Workspace
from testing.simhost import SimulatedHost, as_process
from tests import inprocess
from tests.conftest import FIXTURES, REPO, fire, fixture_payload, hook_env, ledger
from tests.hostile.conftest import agent_env, env_of, say_to
from tests.hostile.harness import SESSION, fire_hostile, payload, run_hostile

STALLED = {"iterations": 7, "halted": None, "history": ["3:aaaa", "3:aaaa"]}


def run_file(root: Path, session: str = SESSION, slug: str = "demo") -> Path:
    return root / "state" / "runs" / f"{claims.session_key(session)}-{slug}.json"


def set_run(root: Path, **fields: object) -> dict[str, object]:
    """The run as a stalled one left it, written (and sealed) as agentcfg writes it."""
    path = run_file(root)
    data = {k: v for k, v in json.loads(path.read_text()).items() if k != seal.FIELD}
    data.update(fields)
    data[seal.FIELD] = seal.sign(RUNS, path.stem, data)
    path.write_text(json.dumps(data))
    return data


def kept(root: Path, before: dict[str, object]) -> bool:
    return bool(json.loads(run_file(root).read_text()) == before)


def hook_processes(
    args: list[str], env: dict[str, str], stdin: str, cwd: Path
) -> subprocess.CompletedProcess[str]:
    """The stop hook as a real process; the agent's other commands in this one."""
    return (as_process if args[:1] == ["hook"] else inprocess.run)(args, env, stdin, cwd)


def test_the_re_claim_loop_halts_within_ten_engagements(ws: Path) -> None:
    """A stalled agent that claims the roadmap again every other turn; each fire is a hook
    process of its own, as the host starts it."""
    host = SimulatedHost(ws, run=hook_processes)
    assert host.trust("demo").returncode == 0
    host.human("Work through the demo roadmap.")
    assert host.claim("demo").returncode == 0
    fires = 0
    for turn in range(40):
        if turn % 2:
            again = host.claim("demo")
            assert again.returncode == 0, again.stderr
            assert "its run goes on as it was" in again.stdout
        host.reply("Still looking into it.")
        fires += 1
        if not host.fire().blocked:
            break
    engaged = [e for e in ledger(ws) if e["event"] == "engage"]
    assert len(engaged) <= 10 and fires <= 11, (len(engaged), fires)
    assert ledger(ws)[-1]["event"] in ("halt-stall", "halt-max-iterations")
    assert [e["event"] for e in ledger(ws, claims=True)].count("claimed") == 1


def test_claiming_again_inside_says_the_run_goes_on(
    claimed: Path, snapshot: SnapshotAssertion
) -> None:
    before = set_run(claimed, **{**STALLED, "halted": "halt-stall"})
    args = ["sessions", "claim", "demo", "--max-iterations", "1000"]
    again = run_hostile(claimed, args, 0, env=agent_env(claimed))
    assert again.stdout == snapshot
    assert kept(claimed, before)
    assert ledger(claimed)[-1]["event"] == "claim-kept"


def age_claim(root: Path, hours: float) -> None:
    path = claims.claim_path(Workspace(root), claims.session_key(SESSION))
    data = json.loads(path.read_text())
    data["claimed_at"] = iso(time.time() - hours * 3600)
    path.write_text(json.dumps(data))


def test_a_pending_claim_made_inside_keeps_the_run(claimed: Path) -> None:
    """Gemini's shell shows no session id: the claim waits for the turn end that adopts it."""
    before = set_run(claimed, **STALLED)
    gemini = env_of(claimed, GEMINI_CLI="1")
    refused = run_hostile(claimed, ["sessions", "claim", "demo"], 1, env=gemini)
    assert "if that is this session, its run goes on as it was" in refused.stderr
    assert "--force" not in refused.stderr
    age_claim(claimed, 5)  # no longer a live claim that holds others off: the claim waits
    made = run_hostile(claimed, ["sessions", "claim", "demo"], 0, env=gemini)
    say_to(claimed, made.stdout)
    fire_hostile(claimed, payload(claimed), adopts=True)
    after = json.loads(run_file(claimed).read_text())
    assert after["started_at"] == before["started_at"]
    assert after["iterations"] >= 7  # the fire may count itself, never start from nothing
    assert [e["event"] for e in ledger(claimed, claims=True)].count("claimed") == 1
    assert any(e["event"] == "claim-kept" and "pending" in e for e in ledger(claimed))


def test_a_pending_claim_a_person_made_still_starts_afresh(claimed: Path) -> None:
    set_run(claimed, **{**STALLED, "halted": "halt-stall"})
    made = run_hostile(claimed, ["sessions", "claim", "demo", "--force"], 0, env=env_of(claimed))
    say_to(claimed, made.stdout)
    fire_hostile(claimed, payload(claimed), adopts=True)
    after = json.loads(run_file(claimed).read_text())
    assert after["halted"] is None and after["iterations"] <= 1


@pytest.mark.parametrize(
    "env",
    [{"CLAUDE_CODE_SESSION_ID": "intruder"}, {"GEMINI_CLI": "1"}],
    ids=["own session id", "pending"],
)
def test_force_from_inside_takes_nothing_over(claimed: Path, env: dict[str, str]) -> None:
    before = set_run(claimed, **STALLED)
    claim = claims.claim_path(Workspace(claimed), claims.session_key(SESSION)).read_bytes()
    args = ["sessions", "claim", "demo", "--force"]
    refused = run_hostile(claimed, args, 1, env=env_of(claimed, **env))
    assert refused.stderr == f"agentcfg: error: {claims.FORCE_INSIDE}\n"
    assert kept(claimed, before)
    assert claims.claim_path(Workspace(claimed), claims.session_key(SESSION)).read_bytes() == claim
    assert not list((claimed / "state").glob("pending/*.json"))


def test_a_second_session_id_cannot_reset_the_run(claimed: Path) -> None:
    before = set_run(claimed, **STALLED)
    agent = agent_env(claimed)
    for extra in ([], ["--force"]):
        args = ["sessions", "claim", "demo", "--session", "second", *extra]
        run_hostile(claimed, args, 1, env=agent)
    cleared = env_of(claimed, CLAUDE_CODE_SESSION_ID="", CLAUDECODE="1")
    own = run_hostile(claimed, ["sessions", "claim", "demo", "--session", SESSION], 0, env=cleared)
    assert "its run goes on as it was" in own.stdout  # clearing the variable changes nothing
    assert kept(claimed, before)
    assert not claims.claim_path(Workspace(claimed), claims.session_key("second")).exists()


def test_releasing_first_inside_cannot_start_the_run_afresh(claimed: Path) -> None:
    before = set_run(claimed, **STALLED)
    cleared = env_of(claimed, CLAUDE_CODE_SESSION_ID="", CLAUDECODE="1")
    released = run_hostile(claimed, ["sessions", "release", "--session", SESSION], 0, env=cleared)
    assert "its run stays as it was" in released.stdout
    assert kept(claimed, before)
    refused = run_hostile(claimed, ["sessions", "claim", "demo"], 1, env=agent_env(claimed))
    assert "only a person starts a fresh run" in refused.stderr
    made = run_hostile(
        claimed, ["sessions", "claim", "demo"], 0, env=env_of(claimed, GEMINI_CLI="1")
    )
    say_to(claimed, made.stdout)  # a pending claim made inside binds no better at the turn end
    lost = fire_hostile(claimed, payload(claimed), adopts=True)
    assert b"only a person starts a fresh run" in lost.stderr
    assert kept(claimed, before)
    # the person, from their own terminal, ends the run; a claim from inside then starts afresh
    run_hostile(claimed, ["sessions", "release", "--session", SESSION], 0, env=env_of(claimed))
    assert not run_file(claimed).exists()
    run_hostile(claimed, ["sessions", "claim", "demo"], 0, env=agent_env(claimed))
    assert json.loads(run_file(claimed).read_text())["iterations"] == 0


def test_a_copy_of_the_roadmap_is_no_fresh_run(claimed: Path) -> None:
    before = set_run(claimed, **STALLED)
    copy = claimed / "roadmaps" / "copy.md"
    copy.write_text((claimed / "roadmaps" / "demo.md").read_text())
    refused = run_hostile(claimed, ["sessions", "claim", "copy"], 1, env=agent_env(claimed))
    assert "this session's run on `demo` is not over (7 iterations)" in refused.stderr
    assert kept(claimed, before)
    set_run(claimed, ended="complete")  # once its work is done, the session may go on
    run_hostile(claimed, ["sessions", "claim", "copy"], 0, env=agent_env(claimed))
    assert json.loads(run_file(claimed, slug="copy").read_text())["iterations"] == 0


def test_the_plugin_s_run_command_keeps_the_run(claimed: Path) -> None:
    """`/agentcfg:run <slug>` has the agent run the claim it names: run twice, nothing resets."""
    before = set_run(claimed, **STALLED)
    for text in (
        (REPO / "plugin" / "commands" / "run.md").read_text().replace("$ARGUMENTS", "demo"),
        (REPO / "commands" / "agentcfg" / "run.toml").read_text().replace("{{args}}", "demo"),
    ):
        line = re.search(r"`agentcfg (sessions claim [^`]*)`", text)
        assert line is not None
        for _ in range(2):
            again = run_hostile(claimed, line.group(1).split(), 0, env=agent_env(claimed))
            assert "its run goes on as it was" in again.stdout
    assert kept(claimed, before)


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(cwd), *args],
        check=True,
        capture_output=True,
    )


def test_fleet_members_claiming_again_keep_each_its_own_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three members, each claimed by the fleet on one step; each member's agent then claims
    the roadmap again, with --step auto, with --force, and with another member's step."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))  # the person's, as hook_env's
    main = tmp_path / "fleet"
    (main / "roadmaps").mkdir(parents=True)
    shutil.copy(REPO / "roadmaps" / "demo.md", main / "roadmaps" / "demo.md")
    git(main, "init", "-q", "-b", "main")
    git(main, "add", "roadmaps")
    git(main, "commit", "-q", "-m", "roadmap")
    trees = {n: tmp_path / f"member-{n}" for n in (1, 2, 3)}
    for n, tree in trees.items():
        git(main, "worktree", "add", "-q", "-b", f"member-{n}", str(tree))
        shutil.copy(FIXTURES / "transcript.jsonl", tree / "transcript.jsonl")
        args = ["sessions", "claim", "demo", "--session", f"m{n}", "--step", "auto"]
        assert inprocess.cli(args, hook_env(tree), tree).returncode == 0  # the fleet's own
    members = {n: read_membership(Workspace(tree), "demo") for n, tree in trees.items()}
    steps = {n: m.step for n, m in members.items() if m is not None}
    assert len(set(steps.values())) == 3
    runs = {n: run_file(tree, f"m{n}").read_bytes() for n, tree in trees.items()}
    for n, tree in trees.items():
        agent = hook_env(tree, CLAUDE_CODE_SESSION_ID=f"m{n}")
        for extra in ([], ["--step", "auto"], ["--force"]):
            again = inprocess.cli(["sessions", "claim", "demo", *extra], agent, tree)
            assert again.returncode == 0, again.stderr
            assert "its run goes on as it was" in again.stdout
        other = ["sessions", "claim", "demo", "--step", steps[n % 3 + 1]]
        refused = inprocess.cli(other, agent, tree)
        assert refused.returncode == 1
        assert refused.stderr.startswith(f"agentcfg: error: this workspace leases step {steps[n]}")
    leases = {x.step: x for x in Store.open(main).all("demo") if x.live(time.time())}
    for n, tree in trees.items():
        now = read_membership(Workspace(tree), "demo")
        was = members[n]
        assert now is not None and was is not None
        assert (now.step, now.holder, now.fence) == (was.step, was.holder, was.fence)
        assert leases[steps[n]].holder == was.holder  # no member gave up or lost its lease
        assert run_file(tree, f"m{n}").read_bytes() == runs[n]
        result = fire(tree, fixture_payload(1, tree, session_id=f"m{n}"))
        assert result.returncode == 2
        named = re.findall(r"\*\*(\d\.\d)\*\*", result.stderr)
        assert set(named) == {steps[n]}, result.stderr  # its own step, never the roadmap


@pytest.mark.parametrize("extra", [[], ["--agents", "2"]], ids=["one host", "a fleet"])
def test_a_new_unattended_run_is_refused_inside_a_session(ws: Path, extra: list[str]) -> None:
    """`agentcfg run` starts a run with a fresh budget in a new session: a person's command."""
    args = ["run", "demo", "--host", "claude", *extra]
    refused = run_hostile(ws, args, 1, env=env_of(ws, CLAUDECODE="1"))
    assert refused.stderr == (
        "agentcfg: error: `agentcfg run` is for a person, and this runs inside an agent's "
        "session: Claude Code ($CLAUDECODE is set); run it from your own terminal\n"
    )
    assert not (ws / "state" / "claims").exists()
