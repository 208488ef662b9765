"""The person's trust store against concurrent writers, odd contents and odd files, and
the commands it shows against characters a terminal would hide."""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agentcfg.core.visible import visible
from tests.conftest import cli_process
from tests.hostile.conftest import env_of
from tests.hostile.harness import run_hostile

HIDDEN = {
    "arabic letter mark": "\u061c",
    "zero-width space": "\u200b",
    "zero-width joiner": "\u200d",
    "word joiner": "\u2060",
    "byte order mark": "\ufeff",
    "soft hyphen": "\u00ad",
    "tag letter": "\U000e0041",
    "cancel tag": "\U000e007f",
    "mongolian vowel separator": "\u180e",
    "interlinear annotation": "\ufff9",
}


def store(root: Path) -> Path:
    return root.parent / "xdg" / "agentcfg" / "trust.json"


@pytest.mark.slow  # a scale test: twenty processes at once
def test_twenty_concurrent_trusts_keep_every_entry(ws: Path) -> None:
    slugs = [f"copy{n}" for n in range(20)]
    for slug in slugs:
        shutil.copy(ws / "roadmaps" / "demo.md", ws / "roadmaps" / f"{slug}.md")
    xdg = str(ws.parent / "xdg")

    def trust(slug: str) -> int:  # each a process of its own, as concurrent commands are
        return cli_process(ws, "roadmap", "trust", slug, timeout=60, XDG_STATE_HOME=xdg).returncode

    with ThreadPoolExecutor(20) as pool:
        assert list(pool.map(trust, slugs)) == [0] * 20
    kept = json.loads(store(ws).read_text())["roadmaps"]
    assert sorted(Path(k).stem for k in kept) == sorted(slugs)


@pytest.mark.parametrize(
    "bad",
    [{"steps": {"1.2": 10**30}}, {"steps": {"1.2": float("nan")}}, 7, {"steps": "x"}],
    ids=["30-digit number", "nan", "not an object", "steps not an object"],
)
def test_one_bad_value_drops_its_entry_not_the_store(ws: Path, bad: object) -> None:
    run_hostile(ws, ["roadmap", "trust", "demo"], 0)
    data = json.loads(store(ws).read_text())
    data["roadmaps"]["/elsewhere/roadmaps/odd.md"] = bad
    store(ws).write_text(json.dumps(data))
    run_hostile(ws, ["roadmap", "done", "demo", "1.2"], 0)  # demo's own trust still holds
    shutil.copy(ws / "roadmaps" / "demo.md", ws / "roadmaps" / "other.md")
    run_hostile(ws, ["roadmap", "trust", "other"], 0)
    kept = json.loads(store(ws).read_text())["roadmaps"]
    assert sorted(Path(k).stem for k in kept) == ["demo", "other"]


@pytest.mark.parametrize("odd", ["fifo", "symlink"])
def test_an_odd_store_is_refused_with_one_clear_line(ws: Path, odd: str) -> None:
    store(ws).parent.mkdir(parents=True)
    target = ws.parent / "elsewhere.json"
    if odd == "fifo":
        os.mkfifo(store(ws))
    else:
        target.write_text(json.dumps({"version": 1, "roadmaps": {}}))
        store(ws).symlink_to(target)
    before = target.read_bytes() if target.exists() else None
    for args in (["roadmap", "trust", "demo"], ["roadmap", "done", "demo", "1.2"]):
        failed = run_hostile(ws, args, 1)
        assert failed.stderr.startswith("agentcfg: error: the trust store "), failed.stderr
        assert odd in failed.stderr and len(failed.stderr.splitlines()) == 1
    assert (target.read_bytes() if target.exists() else None) == before
    assert "[ ] **1.2**" in (ws / "roadmaps" / "demo.md").read_text()


@pytest.mark.parametrize("char", list(HIDDEN.values()), ids=list(HIDDEN))
def test_every_hidden_character_of_a_command_is_shown(ws: Path, char: str) -> None:
    roadmap = ws / "roadmaps" / "demo.md"
    line = f"echo safe{char}; rm -rf ~/x"
    roadmap.write_text(roadmap.read_text().replace("print('phases ok')", line))
    shown = run_hostile(ws, ["roadmap", "trust", "demo"], 0, env=env_of(ws)).stdout
    assert char not in shown
    escape = shown.split("safe", 1)[1].split(";", 1)[0]
    assert escape.startswith("\\u") and json.loads(f'"{escape}"') == char
    assert visible(char) != char
