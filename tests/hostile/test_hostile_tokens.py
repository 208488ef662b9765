"""Token reading against hostile transcripts and ledgers: absurd counts are clamped, odd message
ids and deep nesting are passed over, and nothing reaches a concern or a report as an error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentcfg import state
from agentcfg.hosts.registry import HOSTS, adapter
from agentcfg.transcript import COUNT_LIMIT
from tests.conftest import run_cli
from tests.helpers import ledger
from tests.hostile.commands import cli
from tests.hostile.harness import SESSION, fire_hostile, payload

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def root(ws: Path) -> Path:
    assert run_cli("sessions", "claim", "demo", "--session", SESSION).exit_code == 0
    return ws


def lines(path: Path, *records: dict[str, Any] | str) -> None:
    with path.open("a") as handle:
        for record in records:
            handle.write((record if isinstance(record, str) else json.dumps(record)) + "\n")


def reply(ident: object, tokens: int) -> dict[str, Any]:
    usage = {"input_tokens": tokens, "output_tokens": tokens}
    return {"type": "assistant", "message": {"id": ident, "role": "assistant", "usage": usage,
            "content": [{"type": "text", "text": "on it"}], "stop_reason": "end_turn"}}  # fmt: skip


def test_an_absurd_usage_count_is_clamped_and_the_run_goes_on(root: Path) -> None:
    transcript = root / "transcript.jsonl"
    lines(transcript, {"type": "user", "message": {"content": "go"}}, reply("m1", 10**30))
    assert fire_hostile(root, payload(root)).returncode == 2
    lines(transcript, reply("m2", 10**400))
    assert fire_hostile(root, payload(root, prompt_id="p-2")).returncode == 2
    engaged = [e for e in ledger(root) if e["event"] == "engage"]
    assert len(engaged) == 2, ledger(root)  # not halted as "state unreadable"
    assert all(0 < e["tokens"]["total"] <= 4 * COUNT_LIMIT for e in engaged)


@pytest.mark.parametrize("digits", [30, 400])
def test_a_huge_count_in_the_ledger_leaves_every_report_whole(root: Path, digits: int) -> None:
    huge = "9" * digits
    with (root / "state" / state.LEDGER_NAME).open("a") as handle:
        for n, kind in enumerate(("engage", "engage", "complete")):
            handle.write(
                f'{{"event": "{kind}", "at": "2026-09-21T14:13:3{n}Z", "run": "r", "slug": "demo", '
                f'"open": {huge if n == 0 else n}, "tokens": {{"total": {huge}}}}}\n'
            )
    for args in (
        ["report"],
        ["report", "--json"],
        ["report", "--html", "page.html"],
        ["watch", "--once"],
    ):
        assert "Traceback" not in cli(root, args, 0).stderr


ODD_IDS: list[object] = [[1, 2], {"id": "m"}, [[["deep"]]], None, 7]


def hostile_transcript(path: Path) -> None:
    lines(path, {"type": "user", "message": {"content": "go"}})
    for ident in ODD_IDS:
        lines(path, reply(ident, 5), {"type": "gemini", "id": ident, "tokens": {"input": 5}})
    lines(
        path,
        DEEP,
        '{"type": "assistant", "message": ' + DEEP + "}",
        '{"type": "user", "message": ' + DEEP + "}",
        '{"type": "user.message", "data": ' + DEEP + "}",
        '{"type": "gemini", "id": ' + DEEP + "}",
        '{"type": "event_msg", "payload": {"type": "token_count", "info": ' + DEEP + "}}",
    )


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_odd_message_ids_and_deep_nesting_are_passed_over(tmp_path: Path, host: str) -> None:
    """Every host's reading of its transcript: the event, and the tokens spent."""
    path = tmp_path / "t.jsonl"
    hostile_transcript(path)
    spec = adapter(host)
    fields = {"transcript_path": str(path), "transcriptPath": str(path), "session_id": "s"}
    spec.to_event({**spec.probe(str(tmp_path)).payload, **fields})
    spent = spec.usage_since(str(path), None, 0.0)
    assert spent.end in (None, path.stat().st_size)


def test_a_hostile_transcript_never_breaks_a_concern(root: Path) -> None:
    hostile_transcript(root / "transcript.jsonl")
    assert fire_hostile(root, payload(root)).returncode == 2
    assert [e["event"] for e in ledger(root)] == ["engage"]
