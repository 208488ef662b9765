"""`agentcfg report --html` read back by a real browser: headless Chromium renders the page of
a recorded ledger (a run re-claimed, waiting out a usage limit and completing, another stopped
by the person; and a fleet of three members), its DOM is checked (one row per run, the outcomes
in words, the time axis labelled, a lane per member) and a screenshot is kept beside the test's
files. Then a real `agentcfg run` with Claude Code whose agent claims the roadmap again on its
first turn: one complete row everywhere. Without Chromium the test fails and says how to
install it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conftest import hook_env
from tests.e2e.harness import AGENTCFG, SLUG, TIMEOUT, agentcfg
from tests.e2e.test_run import RunScript, claude_setup, command, model, with_url

LEDGERS = Path(__file__).parent.parent / "fixtures" / "ledgers"
BROWSER_TIMEOUT = 120
INSTALL = "apt-get install -y chromium"


class Dom(HTMLParser):
    """What the checks read from the rendered DOM: the summary's rows, each run section's
    outcome, the time axes' labels, the fleet's lanes, and the page's text."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[str] = []  # the run id of each summary row
        self.outcomes: list[str] = []  # data-outcome of each run section
        self.ticks: list[str] = []
        self.lanes: list[str] = []
        self.text: list[str] = []
        self._in: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        classes = (found.get("class") or "").split()
        if tag == "section" and "run" in classes:
            self.outcomes.append(found.get("data-outcome") or "")
        self._in.append(
            "tick" if "tick" in classes else "lane" if "lane" in classes else
            "row" if tag == "a" and (found.get("href") or "").startswith("#run-") else tag
        )  # fmt: skip

    def handle_endtag(self, tag: str) -> None:
        if self._in:
            self._in.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        where = self._in[-1] if self._in else ""
        if where == "tick":
            self.ticks.append(data)
        elif where == "lane":
            self.lanes.append(data)
        elif where == "row":
            self.rows.append(data)


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail(f"Chromium is needed to check the report page in a browser: {INSTALL}")
    return found


def browse(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={profile}", *args, page.as_uri()],
        capture_output=True, text=True, timeout=BROWSER_TIMEOUT, check=False,
    )  # fmt: skip


def rendered(tmp_path: Path, ledger: str) -> tuple[Dom, Path]:
    """The page of a recorded ledger as the browser built it, and its screenshot."""
    ws = tmp_path / "my-project"
    (ws / "state").mkdir(parents=True)
    (ws / "roadmaps").mkdir()
    shutil.copy(LEDGERS / f"{ledger}.jsonl", ws / "state" / "run-continuation.jsonl")
    page = tmp_path / f"{ledger}.html"
    made = subprocess.run(
        [sys.executable, "-m", "agentcfg", "report", "--html", str(page)],
        capture_output=True, text=True, env=hook_env(ws), cwd=ws, timeout=60, check=False,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    shown = browse(page, tmp_path / "profile", "--dump-dom")
    assert shown.returncode == 0 and "</html>" in shown.stdout, shown.stderr[-2000:]
    dom = Dom()
    dom.feed(shown.stdout)
    shot = tmp_path / f"{ledger}.png"
    taken = browse(page, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1100,2400")
    assert taken.returncode == 0 and shot.stat().st_size > 10_000, taken.stderr[-2000:]
    print(f"screenshot: {shot}")
    return dom, shot


def test_the_page_of_a_run_in_a_browser(tmp_path: Path) -> None:
    dom, _shot = rendered(tmp_path, "run")
    text = " ".join(dom.text)
    assert "agentcfg report — my-project" in text
    assert dom.rows == ["3f9c2a7d", "8b21d04e"]  # the re-claim is no second row
    assert dom.outcomes == ["complete", "stopped"]
    assert "stopped by a person (terminal) at 2026-11-18 10:56" in text
    assert "waiting for the usage limit to reset" in text  # the wait's shaded span
    assert {"10:00", "10:10", "10:20", "10:30"} <= set(dom.ticks)  # the time axis
    assert "time (UTC)" in text and "open" in text
    assert "host restarted" in text
    assert "4 red-green" in text  # the complete run's evidence in the summary strip


def test_the_page_of_a_fleet_in_a_browser(tmp_path: Path) -> None:
    dom, _shot = rendered(tmp_path, "fleet")
    assert dom.rows == ["a1a1a1a1", "b2b2b2b2", "c3c3c3c3"]
    assert dom.outcomes == ["complete", "complete", "halt-stall"]
    assert dom.lanes == ["member 1", "member 2", "member 3"]
    assert {"10:05", "10:10", "10:15", "10:20"} <= set(dom.ticks)
    text = " ".join(dom.text)
    assert "4 steps integrated, 1 reopened" in text


class Reclaiming(RunScript):
    """The agent under `agentcfg run` that first claims the roadmap again, as the plugin's skill
    teaches, then closes each step its continuation names."""

    def __init__(self) -> None:
        super().__init__()
        self.reclaimed = False

    def reply(self, text: str, after_tool: bool) -> tuple[str, str]:
        if not self.reclaimed and not after_tool:
            self.reclaimed = True
            return "tool", f"{AGENTCFG} sessions claim {SLUG}"
        return super().reply(text, after_tool)


def test_a_run_whose_agent_reclaimed_is_one_complete_row_everywhere(tmp_path: Path) -> None:
    root, _home, env = claude_setup(tmp_path)
    script = Reclaiming()
    with model("claude", script) as url:
        proc = subprocess.run(
            command("claude", url), cwd=root, env=with_url(env, url), capture_output=True,
            text=True, timeout=TIMEOUT * 2, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert script.reclaimed
    ending = json.loads(proc.stdout)
    assert ending["ending"] == "complete"
    data = json.loads(agentcfg(root, env, "report", "--json"))
    (row,) = data["rows"]  # the claim the agent made again is no second row
    assert row["outcome"] == "complete"
    assert row["closed"] == ending["steps_closed"] == 2
    assert row["burndown"][-1] == 0
    assert sum(data["evidence"].values()) == 2  # a word for each step the driver's run proved
    frame = agentcfg(root, {**env, "COLUMNS": "120"}, "watch", "--once")
    assert "complete" in frame and "running" not in frame, frame
    listing = agentcfg(root, env, "sessions", "list")
    assert "complete at" in listing and "running" not in listing, listing
    page = tmp_path / "page.html"
    agentcfg(root, env, "report", "--html", str(page))
    shown = browse(page, tmp_path / "profile", "--dump-dom")
    dom = Dom()
    dom.feed(shown.stdout)
    assert (len(dom.rows), dom.outcomes) == (1, ["complete"])
