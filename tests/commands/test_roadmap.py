"""`agentcfg roadmap` commands through click, with their texts pinned by snapshots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from tests.conftest import run_cli, write_roadmap


def test_status_text(ws: Path, snapshot: SnapshotAssertion) -> None:
    result = run_cli("roadmap", "status", "demo")
    assert result.exit_code == 0
    assert result.output == snapshot


def test_status_json_shape(ws: Path) -> None:
    data = json.loads(run_cli("roadmap", "status", "demo.md", "--json").output)
    assert set(data) == {
        "slug", "mode", "open", "blocked", "done", "deferred", "cancelled", "next", "phases",
        "order", "ready", "waiting",
    }  # fmt: skip
    assert (data["order"], data["ready"]) == ("steps", ["1.2"])
    assert data["waiting"] == {"1.3": ["1.2"], "2.1": ["1.3"]}  # 2.2 blocked is passed over
    assert (data["slug"], data["mode"], data["open"], data["blocked"]) == (
        "demo",
        "autonomous",
        3,
        1,
    )
    assert data["next"]["id"] == "1.2"
    assert set(data["next"]) == {"id", "label", "text", "verify", "line", "in_progress"}
    assert data["next"]["label"] == "1.2"
    assert [p["id"] for p in data["phases"]] == ["1", "2"]


ORDERED = (
    "---\nexecution:\n  mode: autonomous\n  fleet: {order: steps}\n---\n## Phase 1\n"
    "- [x] **1.1** a <!-- verify: true -->\n- [ ] **1.2** b <!-- verify: true -->\n"
    "- [ ] **1.3** [P] c <!-- verify: true -->\n- [ ] **1.4** d <!-- verify: true -->\n"
    "- [ ] **1.5** e <!-- verify: true -->\n  - needs: 1.1, 1.9\n"
    "- [ ] **1.6** f <!-- verify: true --> <!-- needs: 1.7 -->\n"
    "- [ ] **1.7** g <!-- verify: true --> <!-- needs: 1.6 -->\n"
)


def test_status_and_lint_tell_the_steps_ready_and_what_the_others_wait_for(
    ws: Path, snapshot: SnapshotAssertion
) -> None:
    write_roadmap(ws, "ordered", ORDERED, mode=None)
    status = run_cli("roadmap", "status", "ordered")
    assert status.exit_code == 0
    assert "  ready: 1.2, 1.3, 1.5 (order: steps)\n" in status.output
    lint = run_cli("roadmap", "lint", "ordered")
    assert lint.exit_code == 1
    assert [status.output, lint.output] == snapshot


def test_next_text(ws: Path, snapshot: SnapshotAssertion) -> None:
    assert run_cli("roadmap", "next", "demo").output == snapshot


def test_next_when_complete_and_when_only_blocked(ws: Path, snapshot: SnapshotAssertion) -> None:
    write_roadmap(ws, "done", "## Phase 1\n- [x] a\n")
    write_roadmap(ws, "stuck", "## Phase 1\n- [ ] a <!-- blocked-by: x -->\n")
    assert run_cli("roadmap", "next", "done").output == snapshot
    assert run_cli("roadmap", "next", "stuck").output == snapshot
    assert json.loads(run_cli("roadmap", "next", "done", "--json").output) is None


def test_next_names_a_step_by_its_label(ws: Path) -> None:
    write_roadmap(ws, "tasks", "## Phase 1: Setup\n- [x] T001 a\n- [/] T002 [P] b\n", mode=None)
    data = json.loads(run_cli("roadmap", "next", "tasks", "--json").output)
    assert data == {
        "id": "1.2", "label": "T002", "text": "b", "verify": None, "line": 3, "in_progress": True
    }  # fmt: skip
    assert run_cli("roadmap", "next", "tasks").output.startswith(
        "Next step of `tasks` (line 3): **T002** b\n"
    )


def test_list_text_and_json(ws: Path, snapshot: SnapshotAssertion) -> None:
    write_roadmap(ws, "plain", "- [ ] a\n- [x] b\n", mode=None)
    (ws / "roadmaps" / "binary.md").write_bytes(b"\x00\x01")
    result = run_cli("roadmap", "list")
    assert result.exit_code == 0
    assert result.output.replace(str(ws), "<ws>") == snapshot
    rows = json.loads(run_cli("roadmap", "list", "--json").output)
    assert [row["slug"] for row in rows] == ["binary", "demo", "plain"]
    assert rows[2]["mode"] == "interactive"


def test_the_demo_roadmap_lints_clean(ws: Path) -> None:
    result = run_cli("roadmap", "lint", "demo")
    assert (result.exit_code, result.output) == (0, "0 warnings, 0 errors\n")


def test_lint_warnings_and_notes_exit_zero(ws: Path, snapshot: SnapshotAssertion) -> None:
    write_roadmap(
        ws, "loose",
        "- [ ] before the phases\n## Phase 1\n- [?] **1.1** odd mark <!-- verify: true -->\n"
        "- [ ] **1.1** again\n## Risks\n- [ ] r1\n- [ ] r2\n## Acceptance criteria\n- [ ] a\n",
    )  # fmt: skip
    result = run_cli("roadmap", "lint", "loose")
    assert result.exit_code == 0
    assert result.output == snapshot
    rows = json.loads(run_cli("roadmap", "lint", "loose", "--json").output)
    assert [row["level"] for row in rows] == ["note", "warning", "warning", "warning", "note"]


def test_lint_errors_exit_one(ws: Path, snapshot: SnapshotAssertion) -> None:
    (ws / "roadmaps" / "bad.md").write_text(
        "---\nexecution: {mode: turbo}\n---\n## Phase 1\n- [ ] **1.1** a\n- [ ] **1.1** b "
        "<!-- verify: x -->\n- [ ] c <!-- blocked-by: -->\n- [ ] d <!-- verify: y -->\n"
    )
    result = run_cli("roadmap", "lint", "bad", "missing")
    assert result.exit_code == 1
    assert result.output == snapshot
    rows = json.loads(run_cli("roadmap", "lint", "bad", "--json").output)
    assert {row["level"] for row in rows} == {"error", "warning"}


@pytest.mark.parametrize("slug", ["../x", "a/b", "missing", ".hidden", "/etc/passwd"])
def test_bad_slugs_give_one_line_and_exit_one(ws: Path, slug: str) -> None:
    result = run_cli("roadmap", "status", slug)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("agentcfg: error: ")


def test_symlink_out_of_roadmaps_is_refused(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("- [ ] a\n")
    (ws / "roadmaps" / "escape.md").symlink_to(outside)
    result = run_cli("roadmap", "status", "escape")
    assert result.exit_code == 1
    assert "not a regular file inside" in result.output


@pytest.mark.parametrize(
    ("data", "words"),
    [(b"\x00binary", "binary file"), (b"\xff\xfe bad", "not UTF-8")],
)
def test_binary_and_non_utf8_roadmaps(ws: Path, data: bytes, words: str) -> None:
    (ws / "roadmaps" / "odd.md").write_bytes(data)
    result = run_cli("roadmap", "status", "odd")
    assert result.exit_code == 1
    assert words in result.output
    assert "Traceback" not in result.output


def test_a_mistyped_slug_or_step_is_told_the_close_names(
    ws: Path, snapshot: SnapshotAssertion
) -> None:
    write_roadmap(ws, "wordy", "## Phase 1\n- [ ] **1.1** a <!-- verify: true -->\n")
    seen = [
        run_cli("roadmap", "status", "wordz"),
        run_cli("roadmap", "next", "Demo"),
        run_cli("sessions", "claim", "wordys", "--session", "s1"),
        run_cli("roadmap", "done", "demo", "1.9"),
        run_cli("roadmap", "verify", "demo", "2.9"),
        run_cli("roadmap", "status", "zzz"),
    ]
    assert [r.exit_code for r in seen] == [1] * 6
    assert all(len(r.output.splitlines()) == 1 for r in seen)
    assert [r.output for r in seen] == snapshot


def test_lint_flags_a_mode_outside_execution_and_tells_what_checkpoints_do(
    ws: Path, snapshot: SnapshotAssertion
) -> None:
    body = "## Phase 1\n- [ ] **1.1** a <!-- verify: true -->\n"
    (ws / "roadmaps" / "flat.md").write_text("---\nmode: autonomous\n---\n" + body)
    write_roadmap(ws, "staged", body, mode="phase-checkpoints")
    result = run_cli("roadmap", "lint", "flat", "staged")
    assert result.exit_code == 1
    assert result.output == snapshot
