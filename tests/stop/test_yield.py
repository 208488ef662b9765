"""`agentcfg run` asks a run to let its next turn end through (a usage window reached the
person's reserve): the stop hook, as a real process, allows that stop with a `yielded` event,
whatever the run's open work or the gate would say, and only while the ask stands."""

from __future__ import annotations

from pathlib import Path

from agentcfg import controls
from agentcfg.claims import session_key
from agentcfg.workspace import Workspace
from testing.simhost import SimulatedHost
from tests.conftest import write_roadmap
from tests.helpers import ledger

STEPS = "- [ ] **1.1** First <!-- verify: true -->\n- [ ] **1.2** Second <!-- verify: true -->\n"


def claimed(ws: Path) -> SimulatedHost:
    write_roadmap(ws, "demo", STEPS)
    host = SimulatedHost(ws)
    assert host.trust("demo").returncode == 0
    host.human("Work through the demo roadmap.")
    assert host.claim("demo").returncode == 0
    return host


def test_an_asked_yield_lets_the_turn_end_through_and_only_while_asked(ws: Path) -> None:
    host = claimed(ws)
    host.reply("Looking at the first step.")
    assert host.fire().blocked  # open work: the run goes on
    key = session_key(host.session_id)
    controls.ask_yield(Workspace(ws), key, "reserve", 1_790_024_000.0)
    host.reply("I'll finish the next step afterwards.")  # the gate would refuse this promise
    allowed = host.fire()
    assert (allowed.exit_code, allowed.stderr) == (0, "")
    yielded = [e for e in ledger(ws) if e["event"] == "yielded"]
    assert [(e["run"], e["reason"]) for e in yielded] == [(key, "reserve")]
    controls.drop_yield(Workspace(ws), key)
    host.reply("Looking at the first step again.")
    assert host.fire().blocked
    assert [e["event"] for e in ledger(ws)].count("yielded") == 1


def test_a_yield_asked_for_another_run_holds_nothing_back(ws: Path) -> None:
    host = claimed(ws)
    controls.ask_yield(Workspace(ws), session_key("another-session"), "reserve", 0.0)
    host.reply("Looking at the first step.")
    assert host.fire().blocked
    assert "yielded" not in [e["event"] for e in ledger(ws)]


def test_whatever_stands_at_the_asks_path_reads_as_an_ask(ws: Path) -> None:
    key = session_key("s-1")
    path = controls.yield_path(Workspace(ws), key)
    path.parent.mkdir(parents=True)
    path.write_text("not json")
    assert controls.read_yield(Workspace(ws), key) == "?"
    controls.drop_yield(Workspace(ws), key)
    assert controls.read_yield(Workspace(ws), key) is None
    controls.drop_yield(Workspace(ws), key)  # dropping what is gone is fine
