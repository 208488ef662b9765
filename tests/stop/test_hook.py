"""The stop hook as a real subprocess: captured Claude Code payloads, scenarios, races, fail-open."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from tests.conftest import fire, fixture_payload, hook_env, run_cli
from tests.helpers import events, ledger, run_file, started


def test_captured_payload_engages_with_exit_2_and_text_on_stderr(
    claimed: Path, snapshot: SnapshotAssertion
) -> None:
    result = fire(claimed, fixture_payload(1, claimed))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == snapshot
    assert events(claimed) == ["engage"]
    assert ledger(claimed)[0]["turn"] == "5707e005-e6dc-41c3-bbbe-699f84918742"


def test_a_fire_reads_the_transcript_once(claimed: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its turn, its closing words and the tokens its segment spent all come from one read of
    the transcript's tail."""
    opened: list[str] = []
    real = os.open

    def counted(path: str, flags: int, mode: int = 0o777, **kw: int | None) -> int:
        opened.append(os.fspath(path))
        return real(path, flags, mode, **kw)

    monkeypatch.setattr(os, "open", counted)
    payload = fixture_payload(1, claimed)
    del payload["prompt_id"]  # the turn too is read from the transcript
    assert fire(claimed, payload).returncode == 2
    assert opened.count(str(claimed / "transcript.jsonl")) == 1


def test_captured_payloads_of_one_turn_then_a_new_turn(claimed: Path) -> None:
    codes = [fire(claimed, fixture_payload(n, claimed)).returncode for n in (1, 2, 3, 4)]
    assert codes == [2, 2, 2, 2]
    entries = ledger(claimed)
    assert [(e["event"], e["iterations"]) for e in entries] == [
        ("engage", 1), ("engage", 2), ("engage", 3),
        ("cut-short", 3),  # the new prompt came while the third block still held the turn
        ("engage", 4),
    ]  # fmt: skip
    assert {e["turn"] for e in entries[:3]} == {"5707e005-e6dc-41c3-bbbe-699f84918742"}
    assert entries[3]["turn"] == entries[4]["turn"] != entries[0]["turn"]


def test_without_a_claim_the_hook_allows_silently(ws: Path) -> None:
    for n in (1, 2, 3, 4):
        result = fire(ws, fixture_payload(n, ws))
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert not (ws / "state").exists()


def test_the_console_script_answers_the_same(claimed: Path) -> None:
    script = Path(sys.executable).parent / "agentcfg"
    proc = subprocess.run(
        [str(script), "hook", "stop", "--host", "claude"],
        input=json.dumps(fixture_payload(1, claimed)),
        capture_output=True,
        text=True,
        env=hook_env(claimed),
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("run-continuation: roadmap `demo` has 3 open steps")


@pytest.mark.slow  # a scale test: sixteen hook processes at once
def test_sixteen_simultaneous_fires_of_one_reply(ws: Path) -> None:
    host = started(ws)
    host.reply("Working on it.")
    payload = host.payload()
    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda _: fire(ws, payload, env=host.env, process=True), range(16)))
    assert all(r.returncode in (0, 2) and "Traceback" not in r.stderr for r in results)
    run = json.loads(run_file(ws, host.session_id).read_text())
    engages = events(ws).count("engage")
    assert run["iterations"] == engages >= 1
    blocks = sum(r.returncode == 2 for r in results)
    assert blocks <= 3 * engages
    assert all(r.stderr.startswith("run-continuation:") for r in results if r.returncode == 2)


def garbage_inputs(root: Path) -> list[bytes]:
    good = fixture_payload(1, root)
    return [
        b"",
        b"not json at all",
        b"[1, 2, 3]",
        b"\xff\xfe\xfd",
        b'{"session_id": 5, "cwd": [], "prompt_id": null}',
        json.dumps({k: v for k, v in good.items() if k != "session_id"}).encode(),
        json.dumps({k: v for k, v in good.items() if k != "transcript_path"}).encode(),
        json.dumps({**good, "last_assistant_message": None, "background_tasks": "many"}).encode(),
        b"{" * 100000,
    ]


def test_fail_open_on_garbage_stdin(claimed: Path) -> None:
    for data in garbage_inputs(claimed):
        result = fire(claimed, data)
        assert result.returncode in (0, 2), data[:40]
        assert "Traceback" not in result.stderr
        if result.returncode == 2:  # only a payload naming the claimed session can engage
            assert result.stderr.startswith("run-continuation:")


def test_fail_open_when_state_cannot_be_written(claimed: Path) -> None:
    # CI runs as root, which file modes do not stop; a file where a folder belongs does.
    runs = claimed / "state" / "runs"
    shutil.rmtree(runs)
    runs.write_text("a file where the runs folder should be")
    result = fire(claimed, fixture_payload(1, claimed))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_bad_command_line_is_a_usage_error(ws: Path) -> None:
    result = fire(ws, fixture_payload(1, ws), "--host", "vim")
    assert result.returncode == 2
    assert result.stderr.startswith("agentcfg: error: usage: agentcfg hook stop")


def test_hook_stop_help_prints_usage_and_exits_zero(ws: Path) -> None:
    for args in (("--help",), ("-h",)):
        result = fire(ws, b"", *args)
        assert result.returncode == 0
        assert result.stdout.startswith("usage: agentcfg hook stop [--host ")
        assert result.stderr == ""
    bad = fire(ws, b"", "--host", "nope")
    assert bad.returncode == 2 and bad.stderr.startswith("agentcfg: error: usage: ")


def test_read_only_commands_create_nothing(ws: Path) -> None:
    for args in (
        ("roadmap", "list"),
        ("roadmap", "status", "demo"),
        ("roadmap", "next", "demo"),
        ("roadmap", "lint"),
        ("sessions", "list"),
        ("report",),
        ("doctor",),
    ):
        run_cli(*args)
        assert sorted(p.name for p in ws.iterdir()) == ["roadmaps"], args


def test_the_click_route_to_the_hook_answers_like_the_lean_one(ws: Path) -> None:
    from click.testing import CliRunner

    from agentcfg.cli import cli

    result = CliRunner().invoke(cli, ["hook", "stop", "--host", "codex"], input=b"not json")
    assert (result.exit_code, result.output) == (0, "")
    assert "Read one stop payload" in run_cli("hook", "stop", "--help").output
