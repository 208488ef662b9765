"""The check is part of the contract: an agent that weakens the person's test instead of doing
the work (rewrites it, skips it, turns failures into passes with a `conftest.py` or a new
`pytest.ini`) never gets its step closed; `roadmap done` names the file, the next turn end halts
the run `halt-check-changed`, and the person's way back is `roadmap trust`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from tests.hostile.conftest import PROMPT, REPLY, agent_env, env_of
from tests.hostile.harness import SESSION, fire_hostile, payload, run_hostile

CHECK = f"{sys.executable} -m pytest -q -p no:cacheprovider -p no:randomly tests/test_slug.py"
ROADMAP = f"""---
execution:
  mode: autonomous
---
# Slugs

## Phase 1
- [ ] **1.1** Write `slug()` <!-- verify: {CHECK} -->
- [ ] **1.2** Document it <!-- verify: true -->
"""
TEST = 'from slug import slug\n\n\ndef test_slug():\n    assert slug("A b") == "a-b"\n'
STUB = "def slug(text):\n    raise NotImplementedError\n"
WORK = 'def slug(text):\n    return "-".join(text.lower().split())\n'
HOOK = (  # a hook that turns every failure into a pass
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
)
# what each trick writes, and the file `roadmap done` must name
TRICKS = {
    "rewrite": (
        {"tests/test_slug.py": "def test_slug():\n    assert True\n"},
        "tests/test_slug.py (changed)",
    ),
    "skip": (
        {"tests/test_slug.py": "import pytest\n\n\n@pytest.mark.skip\n" + TEST.split("\n\n\n")[1]},
        "tests/test_slug.py (changed)",
    ),
    "hook": ({"conftest.py": HOOK}, "conftest.py (created)"),
    "config": (
        {
            "agent_helpers.py": HOOK,
            "pytest.ini": "[pytest]\naddopts = -p agent_helpers\npythonpath = .\n",
        },
        "pytest.ini (created)",
    ),
}


@pytest.fixture
def project(ws: Path) -> Path:
    """A project whose test the person wrote first, its check trusted, claimed by SESSION."""
    (ws / "roadmaps" / "slugs.md").write_text(ROADMAP)
    (ws / "tests").mkdir()
    (ws / "tests" / "test_slug.py").write_text(TEST)
    (ws / "slug.py").write_text(STUB)
    (ws / "pyproject.toml").write_text('[project]\nname = "slugs"\ndependencies = []\n')
    run_hostile(ws, ["roadmap", "trust", "slugs"], 0, env=env_of(ws))
    run_hostile(ws, ["sessions", "claim", "slugs", "--session", SESSION], 0, env=env_of(ws))
    (ws / "transcript.jsonl").write_text(json.dumps(PROMPT) + "\n" + json.dumps(REPLY) + "\n")
    return ws


def done(root: Path, expect: int) -> str:
    out = run_hostile(root, ["roadmap", "done", "slugs", "1.1"], expect, env=agent_env(root),
                      seconds=30)  # fmt: skip
    return out.stderr


def told(root: Path) -> str:
    proc = fire_hostile(root, payload(root, session_id=SESSION))
    return str(json.loads(proc.stdout)["systemMessage"]) if proc.stdout else ""


def box(root: Path) -> str:
    return (root / "roadmaps" / "slugs.md").read_text().split("**1.1**")[0][-4:-1]


@pytest.mark.parametrize("trick", TRICKS)
def test_a_weakened_check_never_closes_its_step_and_halts_the_run(
    project: Path, trick: str
) -> None:
    files, named = TRICKS[trick]
    for path, text in files.items():
        (project / path).write_text(text)
    error = done(project, 1)
    assert named in error and "agentcfg roadmap trust slugs" in error
    assert box(project) == "[ ]"
    line = told(project)
    assert "check of a step changed" in line and f"step 1.1: {named}" in line
    ledger = (project / "state" / "run-continuation.jsonl").read_text()
    assert '"event":"check-changed"' in ledger.replace(" ", "")
    assert '"event":"halt-check-changed"' in ledger.replace(" ", "")


def test_the_honest_agent_closes_its_step(project: Path) -> None:
    (project / "slug.py").write_text(WORK)
    done(project, 0)
    assert box(project) == "[x]"
    assert not (project / "state" / "checks" / "slugs.json").exists()


def test_the_person_reviews_and_re_trusts_a_changed_check(project: Path) -> None:
    (project / "conftest.py").write_text("# fixtures the person wants\n")
    done(project, 1)
    shown = run_hostile(project, ["roadmap", "trust", "slugs"], 0, env=env_of(project)).stdout
    assert "1.1: conftest.py (created)" in shown
    assert not (project / "state" / "checks" / "slugs.json").exists()
    (project / "slug.py").write_text(WORK)
    done(project, 0)


def test_an_undone_change_lets_the_step_close_and_clears_its_refusal(project: Path) -> None:
    (project / "tests" / "test_slug.py").write_text("def test_slug():\n    pass\n")
    done(project, 1)
    assert (project / "state" / "checks" / "slugs.json").exists()
    (project / "tests" / "test_slug.py").write_text(TEST)
    (project / "slug.py").write_text(WORK)
    done(project, 0)
    assert not (project / "state" / "checks" / "slugs.json").exists()


def test_a_dependency_added_to_pyproject_is_not_a_change_but_a_pytest_table_is(
    project: Path,
) -> None:
    (project / "pyproject.toml").write_text('[project]\nname = "slugs"\ndependencies = ["x"]\n')
    (project / "slug.py").write_text(WORK)
    done(project, 0)
    run_hostile(project, ["roadmap", "trust", "slugs"], 0, env=env_of(project))
    text = (project / "roadmaps" / "slugs.md").read_text().replace("[x] **1.1", "[ ] **1.1")
    (project / "roadmaps" / "slugs.md").write_text(text)
    with (project / "pyproject.toml").open("a") as handle:
        handle.write('\n[tool.pytest.ini_options]\naddopts = "-p agent_helpers"\n')
    assert "pyproject.toml (created)" in done(project, 1)


def test_a_person_guards_more_files_with_contract_guard(project: Path) -> None:
    text = ROADMAP.replace(
        "  mode: autonomous\n", "  mode: autonomous\ncontract:\n  guard: [data/**]\n"
    )
    (project / "roadmaps" / "slugs.md").write_text(text)
    (project / "data").mkdir()
    (project / "data" / "cases.txt").write_text("A b\n")
    run_hostile(project, ["roadmap", "trust", "slugs"], 0, env=env_of(project))
    (project / "data" / "cases.txt").write_text("\n")
    (project / "slug.py").write_text(WORK)
    assert "data/cases.txt (changed)" in done(project, 1)


def test_a_check_trusted_before_its_files_were_recorded_asks_for_trust_again(
    project: Path,
) -> None:
    xdg = project.parent / "xdg" / "agentcfg" / "trust.json"
    store = json.loads(xdg.read_text())
    for entry in store["roadmaps"].values():
        entry.pop("guards")
    xdg.write_text(json.dumps(store))
    (project / "slug.py").write_text(WORK)
    assert "trusted before agentcfg recorded them" in done(project, 1)


def test_what_the_agent_and_the_person_read(project: Path, snapshot: SnapshotAssertion) -> None:
    (project / "conftest.py").write_text("# the agent's\n")
    (project / "tests" / "test_slug.py").write_text(TEST + "\n")
    refusal = done(project, 1)
    halt = told(project)
    trusted = run_hostile(project, ["roadmap", "trust", "slugs"], 0, env=env_of(project)).stdout
    shown = trusted.replace(sys.executable, "python3").replace(str(project.parent), "/tmp")
    assert {"refusal": refusal, "halt": halt, "trust": shown} == snapshot


# -- evidence: what each proof shows about the work -----------------------------------------

VACUOUS = ROADMAP.replace("<!-- verify: true -->", f"<!-- verify: {CHECK} -->")


def audit_json(root: Path) -> dict[str, object]:
    out = run_hostile(root, ["roadmap", "audit", "slugs", "--json"], (0, 1), env=env_of(root))
    return dict(json.loads(out.stdout))


def evidence_of(root: Path) -> dict[str, object]:
    rows = audit_json(root)["steps"]
    assert isinstance(rows, list)
    return {row["step"]: row["evidence"] for row in rows}


def baseline(root: Path) -> str:
    args = ["roadmap", "verify", "slugs", "--baseline"]
    return run_hostile(root, args, 0, env=env_of(root), seconds=30).stdout


def test_a_check_that_failed_before_the_work_is_red_green_one_that_passed_is_vacuous(
    project: Path,
) -> None:
    (project / "roadmaps" / "slugs.md").write_text(VACUOUS)  # 1.2 runs the test 1.1 makes pass
    run_hostile(project, ["roadmap", "trust", "slugs"], 0, env=env_of(project))
    shown = baseline(project)
    assert "baseline 1.1: fails" in shown and "2 checks" in shown
    (project / "slug.py").write_text(WORK)
    assert (
        "evidence: red-green"
        in run_hostile(
            project, ["roadmap", "done", "slugs", "1.1"], 0, env=agent_env(project), seconds=30
        ).stdout
    )
    done_12 = ["roadmap", "done", "slugs", "1.2"]
    run_hostile(project, done_12, 0, env=agent_env(project), seconds=30)
    # 1.2's check failed at the baseline too: red-green; a baseline after 1.1 makes it vacuous
    assert evidence_of(project) == {"1.1": "red-green", "1.2": "red-green"}


def test_a_step_whose_check_passed_before_any_work_is_vacuous_and_named(project: Path) -> None:
    (project / "slug.py").write_text(WORK)  # the work was there before the run
    baseline(project)
    done(project, 0)
    assert evidence_of(project) == {"1.1": "vacuous", "1.2": None}
    assert (
        "1 vacuous (1.1)"
        in run_hostile(project, ["roadmap", "audit", "slugs"], (0, 1), env=env_of(project)).stdout
    )


def test_without_a_baseline_the_evidence_is_unknown(project: Path) -> None:
    (project / "slug.py").write_text(WORK)
    done(project, 0)
    assert evidence_of(project)["1.1"] == "unknown"


def test_a_check_that_runs_a_file_the_agent_wrote_is_an_agent_check(ws: Path) -> None:
    (ws / "roadmaps" / "own.md").write_text(
        ROADMAP.replace("tests/test_slug.py", "tests/test_own.py").replace("# Slugs", "# Own")
    )
    (ws / "tests").mkdir()
    run_hostile(ws, ["roadmap", "trust", "own"], 0, env=env_of(ws))
    (ws / "tests" / "test_own.py").write_text("def test_own():\n    assert True\n")
    out = run_hostile(ws, ["roadmap", "done", "own", "1.1"], 0, env=env_of(ws), seconds=30)
    assert "evidence: agent-check" in out.stdout


def test_contract_require_red_green_refuses_weaker_evidence(project: Path) -> None:
    (project / "agentcfg.yaml").write_text("contract:\n  require: red-green\n")
    (project / "slug.py").write_text(WORK)
    baseline(project)
    error = done(project, 1)
    assert "its evidence is vacuous" in error and "contract.require asks red-green" in error
    assert box(project) == "[ ]"
    assert evidence_of(project)["1.1"] is None  # no receipt: nothing proven


def test_a_receipt_from_another_branch_is_stale_here(project: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("-c", "user.name=p", "-c", "user.email=p@x", "commit", "-q", "--allow-empty", "-m", "a")
    git("checkout", "-q", "-b", "side")
    git("-c", "user.name=p", "-c", "user.email=p@x", "commit", "-q", "--allow-empty", "-m", "b")
    (project / "slug.py").write_text(WORK)
    done(project, 0)
    assert audit_json(project)["counts"] == {"proven": 1, "unproven": 0, "stale": 0, "open": 1}
    git("checkout", "-q", "main")
    found = audit_json(project)
    assert found["counts"] == {"proven": 0, "unproven": 0, "stale": 1, "open": 1}
    assert found["ok"] is False


def test_a_check_that_reads_the_roadmaps_is_not_changed_by_their_ticks(ws: Path) -> None:
    """The roadmaps are agentcfg's to tick (and the run's contract holds them): no check's guard
    covers them, or closing one step would change the check of the next."""
    check = "test -d roadmaps && grep -q Two roadmaps/two.md"
    (ws / "roadmaps" / "two.md").write_text(
        "---\nexecution:\n  mode: autonomous\n---\n# Two\n## Phase 1\n"
        f"- [ ] **1.1** One <!-- verify: {check} -->\n- [ ] **1.2** Two <!-- verify: {check} -->\n"
    )
    run_hostile(ws, ["roadmap", "trust", "two"], 0, env=env_of(ws))
    for step in ("1.1", "1.2"):
        out = run_hostile(ws, ["roadmap", "done", "two", step], 0, env=env_of(ws))
        assert out.stdout.startswith(f"PASS {step} (exit 0") and out.stderr == ""
    assert (ws / "roadmaps" / "two.md").read_text().count("- [x]") == 2
    assert not (ws / "state" / "checks" / "two.json").exists()  # no check counted as changed


def test_the_hooks_complete_tells_what_the_proofs_show(project: Path) -> None:
    baseline(project)  # 1.1's test fails before the work; 1.2's `true` passes already
    (project / "slug.py").write_text(WORK)
    done(project, 0)
    run_hostile(project, ["roadmap", "done", "slugs", "1.2"], 0, env=agent_env(project),
                seconds=30)  # fmt: skip
    line = told(project)
    assert line == "agentcfg: roadmap `slugs` complete: 2 steps, 1 red-green, 1 vacuous (1.2)."
    ended = [e for e in map(json.loads, (project / "state" / "run-continuation.jsonl").open())
             if e["event"] == "complete"]  # fmt: skip
    assert [e["evidence"] for e in ended] == ["2 steps, 1 red-green, 1 vacuous (1.2)"]


def test_report_and_watch_say_what_the_proofs_of_a_complete_run_show(project: Path) -> None:
    baseline(project)
    (project / "slug.py").write_text(WORK)
    done(project, 0)
    run_hostile(project, ["roadmap", "done", "slugs", "1.2"], 0, env=agent_env(project),
                seconds=30)  # fmt: skip
    told(project)
    words = "2 steps, 1 red-green, 1 vacuous (1.2)"
    report = run_hostile(project, ["report", "--json"], 0, env=env_of(project)).stdout
    assert [row["evidence"] for row in json.loads(report)["rows"]] == [words]
    env = {**env_of(project), "COLUMNS": "200"}
    watched = run_hostile(project, ["watch", "--once"], 0, env=env).stdout
    assert f"complete: {words}" in " ".join(watched.split())


def test_a_baseline_the_agent_rewrote_grades_nothing(project: Path) -> None:
    """An agent that makes its step's check look red before the work (the baseline rewritten
    with a failing exit code) gets no red-green: a baseline whose seal fails is no baseline."""
    (project / "slug.py").write_text(WORK)  # the check passes before any work: vacuous
    baseline(project)
    path = project / "state" / "baselines" / "slugs.json"
    data = json.loads(path.read_text())
    data["steps"]["1.1"]["exit_code"] = 1
    path.write_text(json.dumps(data))
    done(project, 0)
    assert evidence_of(project)["1.1"] == "unknown"
