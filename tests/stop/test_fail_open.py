"""A fire that fails open names the exception in the ledger's `error` event, and still allows."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from agentcfg.hosts.base import PLUGIN_ENV
from agentcfg.stop.hook import main
from tests.conftest import FIXTURES, fixture_payload, run_cli
from tests.helpers import ledger


class FaultyEnv(dict[str, str]):
    """An environment whose read of one name fails: a fault from outside the decision."""

    def __init__(self, root: Path, failing: str) -> None:
        super().__init__(AGENTCFG_ROOT=str(root), HOME=str(root.parent / "home"))
        self.failing = failing

    def get(self, key: str, default: object = None) -> object:  # type: ignore[override]
        if key == self.failing:
            raise LookupError(f"{key} cannot be read")
        return super().get(key, default)


class UnreadableStdin(io.BytesIO):
    def read(self, size: int | None = -1) -> bytes:
        raise OSError("stdin went away")


@pytest.fixture
def claimed(ws: Path) -> dict[str, object]:
    """A claimed roadmap and the payload of a fire of that session."""
    payload = fixture_payload(1, ws)
    (ws / "transcript.jsonl").write_bytes((FIXTURES / "transcript.jsonl").read_bytes())
    assert (
        run_cli("sessions", "claim", "demo", "--session", str(payload["session_id"])).exit_code == 0
    )
    return payload


def fire(payload: dict[str, object], env: dict[str, str]) -> int:
    return main(["--host", "claude"], stdin=io.BytesIO(json.dumps(payload).encode()), env=env)


@pytest.mark.parametrize("failing", ["AGENTCFG_MODE", PLUGIN_ENV])  # in the decision; before it
def test_a_failure_is_recorded_and_the_fire_allows(
    ws: Path, claimed: dict[str, object], failing: str, capfd: pytest.CaptureFixture[str]
) -> None:
    assert fire(claimed, FaultyEnv(ws, failing)) == 0
    assert capfd.readouterr().err == ""  # nothing reaches the host but the allow
    last = ledger(ws)[-1]
    assert (last["event"], last["error"], last["host"]) == ("error", "LookupError", "claude")
    assert last["reason"] == "the stop hook failed open"
    assert last["run"] is not None  # the session's key, to find its run by


def test_an_unreadable_stdin_is_recorded(ws: Path, claimed: dict[str, object]) -> None:
    env = {"AGENTCFG_ROOT": str(ws)}
    assert main(["--host", "claude"], stdin=UnreadableStdin(), env=env) == 0
    last = ledger(ws)[-1]
    assert (last["event"], last["error"], last["run"]) == ("error", "OSError", None)


def test_no_state_folder_is_started_for_a_failure(ws: Path) -> None:
    env = {"AGENTCFG_ROOT": str(ws)}
    assert main(["--host", "claude"], stdin=UnreadableStdin(), env=env) == 0
    assert not (ws / "state").exists()
