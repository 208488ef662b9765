"""The stop hook's common path stays lean: no click, ruamel.yaml, markdown-it, typing,
dataclasses, datetime, hashlib, importlib, signal or urllib.parse (which pathlib loads
up to Python 3.12) is loaded; a fire with nothing to do loads not even json, re or pathlib
(listed in brackets)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentcfg._speed import fast
from tests.conftest import SPEED, fixture_payload, hook_env, python_prints, run_cli, write_roadmap

PROBE = """
import io, sys
sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()))
from agentcfg.entry import main
code = main(["hook", "stop"])
heavy = sorted(m for m in ("click", "ruamel", "ruamel.yaml", "markdown_it", "typing", "hashlib",
                           "subprocess", "dataclasses", "datetime", "inspect", "importlib",
                           "signal", "urllib.parse", "ipaddress")
               if m in sys.modules)
heavy += sorted(f"({m})" for m in ("json", "re", "pathlib") if m in sys.modules)
import json
print(json.dumps({"code": code, "heavy": heavy}), file=sys.stderr)
"""


def probe(root: Path, payload: dict[str, object], **env: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(payload)],
        capture_output=True,
        text=True,
        env=hook_env(root, **{SPEED: "", **env}),  # the fast forms, which these tests are about
        cwd=root,
        check=False,
    )
    result: dict[str, object] = json.loads(proc.stderr.strip().splitlines()[-1])
    return result


def test_no_claim_path_imports_nothing_heavy(ws: Path) -> None:
    (ws / "agentcfg.yaml").write_text("mode: enforce\n")
    result = probe(ws, fixture_payload(1, ws))
    assert result == {"code": 0, "heavy": []}


def test_engage_with_a_warm_cache_loads_no_parser(ws: Path) -> None:
    run_cli("sessions", "claim", "demo", "--session", str(fixture_payload(1, ws)["session_id"]))
    run_cli("roadmap", "status", "demo")  # warms the parse cache
    for n in (1, 2):  # the second fire also compares the boxes with the first's
        result = probe(ws, fixture_payload(n, ws))
        assert result["code"] == 2
        assert result["heavy"] == ["(json)", "(pathlib)", "(re)"]


def test_engage_through_the_plugin_stays_lean(ws: Path) -> None:
    """The plugin's fire also looks for a settings hook of ours (there is none here)."""
    run_cli("sessions", "claim", "demo", "--session", str(fixture_payload(1, ws)["session_id"]))
    run_cli("roadmap", "status", "demo")
    result = probe(ws, fixture_payload(1, ws), AGENTCFG_PLUGIN="1")
    assert result == {"code": 2, "heavy": ["(json)", "(pathlib)", "(re)"]}


def test_a_full_parse_of_a_plain_frontmatter_loads_no_yaml_library(ws: Path) -> None:
    """`execution:` / `mode:` lines are read without ruamel.yaml; only the markdown parser."""
    run_cli("sessions", "claim", "demo", "--session", str(fixture_payload(1, ws)["session_id"]))
    (ws / "agentcfg.yaml").write_text("mode: enforce\n")
    for cached in (ws / "state" / "cache").glob("roadmap-*"):
        cached.unlink()
    result = probe(ws, fixture_payload(1, ws))
    assert result["code"] == 2
    assert "ruamel" not in result["heavy"] and "markdown_it" in result["heavy"]


def test_a_full_parse_of_one_line_items_under_headings_loads_no_markdown_parser(ws: Path) -> None:
    """A roadmap of one-line items, headings at the margin and prose is read without
    markdown-it (and still fully: the fire names its next step)."""
    body = "# Plain\n\nSome prose.\n\n## Phase 1\n\n" + "".join(
        f"- [{'x' if n < 3 else ' '}] **1.{n + 1}** Step {n} <!-- verify: true -->\n"
        for n in range(6)
    )
    write_roadmap(ws, "plain", body)
    run_cli("sessions", "claim", "plain", "--session", str(fixture_payload(1, ws)["session_id"]))
    (ws / "agentcfg.yaml").write_text("mode: enforce\n")
    for cached in (ws / "state" / "cache").glob("roadmap-*"):
        cached.unlink()
    result = probe(ws, fixture_payload(1, ws))
    assert result == {"code": 2, "heavy": ["(json)", "(pathlib)", "(re)"]}


def test_pathlib_as_the_hook_loads_it_still_makes_uris() -> None:
    probe = (
        "import sys\n"
        "from agentcfg._speed import import_pathlib\n"
        "import_pathlib()\n"
        "from pathlib import Path\n"
        "print('urllib.parse' in sys.modules, Path('/a b/c').as_uri())\n"
        "from urllib.parse import quote_from_bytes, urlsplit\n"
        "print(quote_from_bytes(b'a b'), urlsplit('http://[::1]/x').hostname)\n"
    )
    stood_in = fast("pathlib") or sys.version_info >= (3, 13)  # else pathlib loads it itself
    shown = f"{not stood_in} file:///a%20b/c"
    assert python_prints(probe).split("\n") == [shown, "a%20b ::1", ""]


ALONE = """
import atexit, gc, io, json, os, sys
sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()))
from agentcfg.entry import main
passes = []
gc.callbacks.append(lambda phase, info: passes.append(phase) if phase == "start" else None)
def seen(how, code):
    print(json.dumps({"code": code, "passes": len(passes), "gc": gc.isenabled(), "end": how}))
real_exit = os._exit
os._exit = lambda code: seen("without teardown", code) or real_exit(code)
how = sys.argv[2]
if how == "at exit":
    atexit.register(lambda: print("at exit"))
if how == "in process":
    seen("returned", main(["hook", "stop"]))
else:
    sys.argv[1:] = ["hook", "stop"]
    code = main()
    seen("returned", code)
    sys.exit(code)
"""


@pytest.mark.parametrize(
    ("how", "end", "after"),
    [("alone", "without teardown", []), ("at exit", "returned", ["at exit"])],
)
def test_a_fire_of_its_own_process_skips_what_only_frees_memory(
    ws: Path, how: str, end: str, after: list[str]
) -> None:
    """The console script's fire runs without the cyclic garbage collector, and ends its
    process without tearing the interpreter down, unless something waits to run at exit."""
    run_cli("sessions", "claim", "demo", "--session", str(fixture_payload(1, ws)["session_id"]))
    run_cli("roadmap", "status", "demo")
    proc = alone(ws, how)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 2 and "Next step" in proc.stderr
    assert json.loads(lines[0]) == {"code": 2, "passes": 0, "gc": False, "end": end}
    assert lines[1:] == after


def test_a_fire_in_a_longer_lived_process_leaves_the_garbage_collector_on(ws: Path) -> None:
    run_cli("sessions", "claim", "demo", "--session", str(fixture_payload(1, ws)["session_id"]))
    run_cli("roadmap", "status", "demo")
    found = json.loads(alone(ws, "in process").stdout.splitlines()[0])
    assert found["code"] == 2 and found["gc"] is True and found["end"] == "returned"
    assert found["passes"] > 0  # it collects as usual, which the first test would have seen


def alone(root: Path, how: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", ALONE, json.dumps(fixture_payload(1, root)), how],
        capture_output=True,
        text=True,
        env=hook_env(root, **{SPEED: ""}),  # the fast forms, which these tests are about
        cwd=root,
        check=False,
    )
