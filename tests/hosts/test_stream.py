"""Claude Code's stream-json read as typed values: refused and failed tool calls, tokens, usage
windows, the final reply; anything else on a line is skipped, never an error."""

from __future__ import annotations

import json
from pathlib import Path

from agentcfg.hosts import claude, stream

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude-code-2.1.328"
DENIED = (FIXTURES / "permission-denied.jsonl").read_text()
LIMITED = (FIXTURES / "usage-limit-subscription.jsonl").read_text()


def test_a_refused_command_is_read_from_the_real_hosts_output() -> None:
    found = stream.outcome(stream.parse(DENIED))
    assert found.denied == ("agentcfg sessions claim e2e",)
    assert found.failed == ()  # refused is not failed: each call counts once
    events = stream.parse(DENIED)
    assert [type(e).__name__ for e in events] == [
        "ToolCall", "Tokens", "Refusal", "ToolResult", "Tokens", "Result",
    ]  # fmt: skip
    assert stream.reply(DENIED) == "Done with that step."


def test_refusals_count_from_the_live_lines_when_the_result_never_came() -> None:
    cut = "\n".join(line for line in DENIED.splitlines() if '"result"' not in line[:40])
    cut = "\n".join(line for line in cut.splitlines() if "permission_denials" not in line)
    assert stream.outcome(stream.parse(cut)).denied == ("agentcfg sessions claim e2e",)


def _call(n: int, command: str) -> str:
    content = [{"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": {"command": command}}]
    return json.dumps({"type": "assistant", "message": {"id": f"m{n}", "content": content}})


def _answer(n: int, error: bool, text: str) -> str:
    block = {"type": "tool_result", "tool_use_id": f"t{n}", "is_error": error, "content": text}
    return json.dumps({"type": "user", "message": {"content": [block]}})


def test_the_last_three_failed_commands_are_kept_oldest_first() -> None:
    lines = []
    for n in range(5):
        lines += [_call(n, f"make test-{n}"), _answer(n, n != 2, "exit 1")]
    found = stream.outcome(stream.parse("\n".join(lines)))
    assert found.failed == ("make test-1", "make test-3", "make test-4")
    assert found.denied == ()


def test_a_refusal_told_only_in_the_tool_result_counts_as_refused() -> None:
    text = "\n".join([_call(1, "rm -rf build"), _answer(1, True, "This command requires approval")])
    assert stream.outcome(stream.parse(text)) == stream.Outcome(denied=("rm -rf build",))


def test_usage_windows_are_typed_values() -> None:
    line = {
        "type": "rate_limit_event",
        "rate_limit_info": {
            "status": "allowed", "resetsAt": 1800000000, "rateLimitType": "five_hour",
            "unifiedWindows": {
                "five_hour": {"utilization": 0.85, "resetsAt": 1800000000, "status": "allowed"},
                "seven_day": {"utilization": "odd", "resetsAt": -1, "status": "allowed"},
            },
        },
    }  # fmt: skip
    (event,) = stream.parse_line(json.dumps(line))
    assert event == stream.RateLimit(
        "allowed",
        "five_hour",
        1800000000.0,
        (
            stream.Window("five_hour", 0.85, 1800000000.0, "allowed"),
            stream.Window("seven_day", None, None, "allowed"),  # odd values read as unknown
        ),
    )
    (rejected,) = [e for e in stream.parse(LIMITED) if isinstance(e, stream.RateLimit)][:1]
    assert (rejected.status, rejected.kind, rejected.resets_at) == (
        "rejected", "five_hour", 1796117507.0,
    )  # fmt: skip


def test_tokens_of_each_reply() -> None:
    tokens = [e for e in stream.parse(DENIED) if isinstance(e, stream.Tokens)]
    assert [(t.message, t.input, t.output, t.cache_read, t.cache_write) for t in tokens] == [
        ("msg_1", 101, 1, 31, 11),
        ("msg_2", 102, 1, 32, 12),
    ]


def test_lines_that_are_not_the_hosts_records_are_skipped() -> None:
    odd = ["", "not json", "[1, 2]", '{"type": "assistant", "message": 3}', '{"type": "user"}']
    assert stream.parse("\n".join(odd)) == []
    assert stream.reply("plain words the model wrote") == "plain words the model wrote"


def test_claude_refusals_read_its_output_and_its_ignored_allowlist() -> None:
    stderr = (
        "Ignoring 2 permissions.allow entries from .claude/settings.json: this workspace has "
        "not been trusted. Run Claude Code interactively here once and accept the trust dialog, "
        'or set projects["/home/dev/project"].hasTrustDialogAccepted: true in /home/dev/.claude.json.\n'
    )
    found = claude.refusals(DENIED, stderr)
    assert found.denied == ("agentcfg sessions claim e2e",)
    assert found.ignored == (
        "Ignoring 2 permissions.allow entries from .claude/settings.json: this workspace has "
        "not been trusted",
    )
