"""What the per-host test modules share: the captured fixtures, files written as a host or a
person would, and the findings `doctor` gives one host."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentcfg.hosts.base import Plugin
from agentcfg.hosts.registry import adapter
from tests.conftest import run_cli

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
NO_WAIT = 0.0  # a transcript that does not grow while it is read: no fire waits for a reply


def captured(folder: Path, name: str, transcript: Path) -> list[dict[str, Any]]:
    """The payloads a host sent, each pointed at `transcript`."""
    payloads: list[dict[str, Any]] = json.loads((folder / name).read_text())
    return [{**p, "transcript_path": str(transcript)} for p in payloads]


def labelled(path: Path, label: str) -> list[dict[str, Any]]:
    """The payloads of one hook event in a capture that labels each fire."""
    return [f["payload"] for f in json.loads(path.read_text()) if f["label"] == label]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def write_lines(path: Path, records: list[dict[str, object]], tail: bytes = b"") -> None:
    """A JSONL transcript of `records`, then `tail` (a line still being written)."""
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records) + tail)


def assistant(ident: str, **usage: int) -> dict[str, object]:
    """A Claude Code transcript line of an assistant message that reports `usage`."""
    return {"type": "assistant", "message": {"id": ident, "content": [], "usage": usage}}


def enable_claude(path: Path, on: bool = True, key: str = "agentcfg@agentcfg") -> Path:
    return write(path, json.dumps({"model": "opus", "enabledPlugins": {key: on}}))


def plugin_of(host: str, ws: Path, env: dict[str, str] | None = None) -> Plugin | None:
    return adapter(host).plugin(ws, ws.parent / "home", env or {})


def findings(host: str) -> list[dict[str, str]]:
    return [f for f in json.loads(run_cli("doctor", "--json").output) if f["subject"] == host]
