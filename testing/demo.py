"""`make demo`: a run played end to end, with real hook processes, by a simulated Claude Code
session over a copy of roadmaps/demo.md."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from testing.simhost import SimulatedHost

_ANSI = {
    "bold": "\033[1m",
    "dim": "\033[2m",
    "red": "\033[31m",
    "green": "\033[32m",
    "off": "\033[0m",
}


def _say(color: str, text: str) -> None:
    tty = sys.stdout.isatty()
    print(f"{_ANSI[color]}{text}{_ANSI['off']}" if tty else text, flush=True)


# a ledger event's fields as the demo shows them, each in a column as wide as its widest
_COLUMNS = (("iteration", "iterations", 11), ("open", "open", 6), ("blocked", "blocked", 9))


def ledger_line(event: dict[str, Any]) -> str:
    """One ledger event in a line: the fields it knows, a blank column for one it leaves
    unknown (a claim counts no steps, a verify line belongs to no iteration)."""
    cells = [f"   {event['event']:<22}"]
    for label, key, width in _COLUMNS:
        value = event.get(key)
        cells.append(f"{'' if value is None else f'{label}={value}':<{width}}")
    if event.get("step") is not None:
        cells.append(f"step={event['step']}")
    tokens = event.get("tokens")
    if isinstance(tokens, dict) and tokens.get("total") is not None:
        cells.append(f"tokens={tokens['total']:,}")
    return " ".join(cells).rstrip()


def _work_until_allowed(host: SimulatedHost, roadmap: Path) -> None:
    """End turns until the hook allows one, doing whatever step each continuation names."""
    for _ in range(20):
        _say("bold", f"\n-- the agent ends its turn: stop hook fires ({host.last_message!r})")
        result = host.fire()
        if not result.blocked:
            _say("green", f"exit {result.exit_code}: the stop is allowed; the agent may rest.")
            return
        _say("red", f"exit 2: the stop is blocked; the agent reads:\n{result.stderr.rstrip()}")
        step = result.next_step
        if step is None:
            return
        host.tool(f"# the work of step {step}")
        closed = host.agentcfg("roadmap", "done", roadmap.stem, step)
        output = "".join(f"\n   {line}" for line in closed.stdout.strip().splitlines())
        _say("dim", f"   $ agentcfg roadmap done {roadmap.stem} {step}{output}")
        host.reply(f"Step {step} is finished and its verify line passed.")


def main() -> int:
    source = Path(__file__).resolve().parent.parent / "roadmaps" / "demo.md"
    with tempfile.TemporaryDirectory(prefix="agentcfg-demo-") as folder:
        root = Path(folder)
        (root / "roadmaps").mkdir()
        shutil.copy(source, root / "roadmaps" / "demo.md")
        # each model message reports the usage a mid-sized turn of a real session might
        usage = {"input_tokens": 1200, "output_tokens": 350, "cache_read_input_tokens": 42_000}
        host = SimulatedHost(root, usage=usage)
        _say("bold", f"A simulated Claude Code session ({host.session_id[:8]}) in {root}")
        host.human("Work through roadmaps/demo.md.")
        trusted = host.trust("demo")
        _say("dim", "$ agentcfg roadmap trust demo   (the person, in their terminal)\n"
             + trusted.stdout.rstrip())  # fmt: skip
        claimed = host.claim("demo")
        _say("dim", "$ agentcfg sessions claim demo\n" + claimed.stdout.rstrip())
        host.reply("Claimed the demo roadmap. Stopping here for now.")
        roadmap = root / "roadmaps" / "demo.md"
        _work_until_allowed(host, roadmap)
        _say("bold", "\n-- a person settles the cache design and unblocks step 2.2")
        roadmap.write_text(roadmap.read_text().replace(" <!-- blocked-by: cache-design -->", ""))
        host.human("The cache design is settled: 2.2 is yours now.")
        host.reply("Understood; 2.2 is unblocked.")
        _work_until_allowed(host, roadmap)
        _say("bold", "\n-- the ledger, state/run-continuation.jsonl:")
        for line in (root / "state" / "run-continuation.jsonl").read_text().splitlines():
            _say("dim", ledger_line(json.loads(line)))
        for command in (("roadmap", "status", "demo"), ("report",)):
            shown = subprocess.run(
                [sys.executable, "-m", "agentcfg", *command],
                capture_output=True,
                text=True,
                cwd=root,
                env=host.env,
                check=False,
            )
            _say("bold", f"\n-- agentcfg {' '.join(command)}:")
            print(shown.stdout.rstrip())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
