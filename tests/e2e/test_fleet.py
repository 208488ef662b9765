"""`agentcfg run --agents 3` with the real Claude Code binary against a scripted model: six steps,
each making a file, all done once on the fleet's branch and proven there, no step leased by two
members at once; a member killed mid-step leaves its lease to run out, and another finishes it;
on a roadmap in order, each step is taken only once the one before it is integrated."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.e2e.harness import AGENTCFG, SLUG, TIMEOUT, agentcfg
from tests.e2e.test_run import RunScript, claude_setup, model, with_url

STEPS = 6
# independent steps: any open step may run beside the others
ROADMAP = (
    "---\nexecution: {mode: autonomous, fleet: {order: free}}\n---\n## Phase 1 — Files\n"
    + "".join(
        f"- [ ] **1.{n}** Make file {n} <!-- verify: test -f out/1.{n}.txt -->\n"
        for n in range(1, STEPS + 1)
    )
)
SLOW_MARK = "agentcfg-e2e-slow-step"


class FleetScript(RunScript):
    """Each member's agent makes its step's file, then closes the step; with `stall`, the first
    time it is given that step it runs a long command instead (to be killed there)."""

    def __init__(self, stall: str | None = None) -> None:
        super().__init__()
        self.stall = stall
        self.stalled = threading.Event()

    def reply(self, text: str, after_tool: bool) -> tuple[str, str]:
        kind, value = super().reply(text, after_tool)
        if kind != "tool" or " roadmap done " not in value:
            return kind, value
        step = value.rsplit(" ", 1)[-1]
        if step == self.stall and not self.stalled.is_set():
            self.stalled.set()
            # not a bare `sleep`, which Claude Code refuses to run
            return "tool", f"python3 -c 'import time; time.sleep(600)' # {SLOW_MARK}"
        return "tool", f"mkdir -p out && echo {step} > out/{step}.txt && {value}"


# two phases of three steps in the default order, each step's check needing the file of the
# step before it as well as its own: a step started before the one before it is integrated
# fails its check
ORDERED_STEPS = [f"{phase}.{n}" for phase in (1, 2) for n in (1, 2, 3)]
ORDERED = "---\nexecution: {mode: autonomous}\n---\n" + "".join(
    (f"## Phase {step[0]}\n" if step.endswith(".1") else "")
    + f"- [ ] **{step}** Make file {step} <!-- verify: "
    + (f"test -f out/{ORDERED_STEPS[n - 1]}.txt && " if n else "")
    + f"test -f out/{step}.txt -->\n"
    for n, step in enumerate(ORDERED_STEPS)
)


def fleet_project(tmp_path: Path, roadmap: str = ROADMAP) -> tuple[Path, dict[str, str]]:
    root, _, env = claude_setup(tmp_path)
    (root / "roadmaps" / f"{SLUG}.md").write_text(roadmap)
    agentcfg(root, env, "roadmap", "trust", SLUG)
    (root / ".gitignore").write_text("state/\n")
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "roadmap"]):
        subprocess.run(
            ["git", "-c", "user.name=p", "-c", "user.email=p@example.invalid", *args],
            cwd=root, check=True, capture_output=True,
        )  # fmt: skip
    return root, env


def ledger(root: Path) -> list[dict[str, Any]]:
    path = root / "state" / "run-continuation.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def start(root: Path, env: dict[str, str], url: str, ttl: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [AGENTCFG, "run", SLUG, "--host", "claude", "--agents", "3", "--lease-ttl", ttl,
         "--", "--allowedTools", "Bash"],
        cwd=root, env=with_url(env, url), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def assert_fleet_done(root: Path, output: str) -> list[dict[str, Any]]:
    roadmap = (root / "roadmaps" / f"{SLUG}.md").read_text()
    assert roadmap.count("- [x]") == STEPS and "- [ ]" not in roadmap, output
    for n in range(1, STEPS + 1):  # every verify line passes on the fleet's branch
        assert (root / "out" / f"1.{n}.txt").read_text().strip() == f"1.{n}", output
    assert subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True,
                          text=True).stdout == ""  # fmt: skip
    events = ledger(root)
    integrated = [e["step"] for e in events if e["event"] == "integrated"]
    assert sorted(integrated) == [f"1.{n}" for n in range(1, STEPS + 1)], output
    held: dict[str, Any] = {}  # no step held by two members at once
    for e in events:
        if e["event"] == "leased":
            live = held.get(e["step"])
            assert live is None or live["expired"], (e, output)
            held[e["step"]] = {"member": e["member"], "expired": False}
        elif e["event"] == "lease-expired":
            held[e["step"]]["expired"] = True
        elif e["event"] in ("integrated", "reopened"):
            held.pop(e["step"], None)
    return events


def test_three_claude_code_members_do_six_steps_once_each(tmp_path: Path) -> None:
    root, env = fleet_project(tmp_path)
    with model("claude", FleetScript()) as url:
        proc = start(root, env, url, "5m")
        output, _ = proc.communicate(timeout=TIMEOUT * 3)
    assert proc.returncode == 0, output
    events = assert_fleet_done(root, output)
    assert len({e["member"] for e in events if e["event"] == "integrated"}) >= 2, output
    assert "fleet on `e2e`: complete; 6 steps integrated, 0 reopened" in output


def processes_in(folder: Path) -> list[int]:
    """Every process whose working folder is `folder` or below it."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cwd = os.readlink(entry / "cwd")
            except OSError:
                continue
            if cwd == str(folder) or cwd.startswith(f"{folder}/"):
                found.append(int(entry.name))
    return found


def running(folder: Path, mark: str) -> bool:
    """A process under `folder` runs a command line holding `mark` (waited for)."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        for pid in processes_in(folder):
            with contextlib.suppress(OSError):
                if mark.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    return True
        time.sleep(0.1)
    return False


def test_a_member_killed_mid_step_leaves_its_step_to_another(tmp_path: Path) -> None:
    root, env = fleet_project(tmp_path)
    script = FleetScript(stall="1.1")
    with model("claude", script) as url:
        proc = start(root, env, url, "40s")
        assert script.stalled.wait(timeout=TIMEOUT), "no member started step 1.1"
        victim = next(e for e in ledger(root) if e["event"] == "leased" and e["step"] == "1.1")
        started = next(
            e for e in ledger(root)
            if e["event"] == "member-started" and e["member"] == victim["member"]
        )  # fmt: skip
        slow = running(Path(started["worktree"]), SLOW_MARK)
        assert slow, "the slow command never ran under that member's host"
        os.killpg(started["pid"], signal.SIGKILL)  # the member and its driver
        for pid in processes_in(Path(started["worktree"])):  # and its host, wherever it runs
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.5)
        assert processes_in(Path(started["worktree"])) == []  # the member is gone, host and all
        output, _ = proc.communicate(timeout=TIMEOUT * 3)
    events = assert_fleet_done(root, output)
    assert [e["step"] for e in events if e["event"] == "lease-expired"] == ["1.1"], output
    finisher = next(e for e in events if e["event"] == "integrated" and e["step"] == "1.1")
    assert finisher["member"] != victim["member"]


def test_a_fleet_on_an_ordered_roadmap_takes_each_step_after_the_one_before(
    tmp_path: Path,
) -> None:
    root, env = fleet_project(tmp_path, ORDERED)
    with model("claude", FleetScript()) as url:
        proc = start(root, env, url, "5m")
        output, _ = proc.communicate(timeout=TIMEOUT * 4)
    assert proc.returncode == 0, output
    assert "leaves nothing to run side by side" in output  # told before the fleet starts
    roadmap = (root / "roadmaps" / f"{SLUG}.md").read_text()
    assert roadmap.count("- [x]") == 6 and "- [ ]" not in roadmap, output
    events = ledger(root)
    assert [e for e in events if e["event"] == "reopened"] == [], output
    integrated = [e["step"] for e in events if e["event"] == "integrated"]
    assert integrated == ORDERED_STEPS, output
    for e in events:  # a step is leased only once the step before it is integrated
        if e["event"] == "leased" and e["step"] != ORDERED_STEPS[0]:
            before = ORDERED_STEPS[ORDERED_STEPS.index(e["step"]) - 1]
            assert before in integrated[: integrated.index(e["step"])], (e, output)
            assert events.index(e) > next(
                i for i, x in enumerate(events) if x["event"] == "integrated"
                and x["step"] == before
            ), (e, output)  # fmt: skip
    waits = [e for e in events if e["event"] == "waiting"]
    assert any(e["waits"] for e in waits), output  # the others waited, and said on what
    assert "waiting: " in output and " waits for " in output, output
    assert "fleet on `e2e`: complete; 6 steps integrated, 0 reopened" in output
