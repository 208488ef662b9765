"""Roadmaps of a workspace: read from disk and parsed, through the parse cache."""

from __future__ import annotations

from pathlib import Path

from agentcfg import cache
from agentcfg.core.order import readiness, waits_json
from agentcfg.core.roadmap import DEFAULT_MODE, Phase, Problem, Roadmap, Step, parse_roadmap, scan
from agentcfg.errors import RoadmapError
from agentcfg.workspace import ROADMAP_LIMIT, Workspace, decode

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded at run time: the stop hook pays for every import
    from typing import Any


def load(ws: Workspace, slug: str) -> Roadmap:
    """The parsed roadmap a slug names; RoadmapError if it cannot be read."""
    return load_path(ws, ws.roadmap_path(slug))


def load_path(ws: Workspace, path: Path) -> Roadmap:
    try:
        with path.open("rb") as handle:
            data = handle.read(ROADMAP_LIMIT + 1)
    except OSError as exc:
        raise RoadmapError(
            f"cannot read roadmap {_shown(ws, path)}: {exc.strerror or exc}"
        ) from None
    return parse_bytes(ws, data, path)


def parse_bytes(ws: Workspace, data: bytes, path: Path) -> Roadmap:
    """A roadmap file's bytes parsed, through the cache; RoadmapError if they are not text."""
    text = decode(data, _shown(ws, path))
    try:
        mtime_ns = path.stat().st_mtime_ns
    except OSError:
        mtime_ns = 0
    return cache.through(
        ws,
        "roadmap",
        data,
        (str(path.absolute()), len(data), mtime_ns),
        lambda: parse_roadmap(text),
        _dump,
        _restore,
    )


def _shown(ws: Workspace, path: Path) -> str:
    return f"roadmaps/{path.name}" if path.parent == ws.roadmaps else str(path)


def _dump(roadmap: Roadmap) -> dict[str, Any]:
    """The roadmap as the cache keeps it: each record a list of its fields, in their order
    (a warm stop fire reads it back; lists read three times as fast as objects)."""
    return {
        "mode": roadmap.mode,
        "title": roadmap.title,
        "phases": roadmap.phases,
        "steps": roadmap.steps,
        "problems": roadmap.problems,
        "order": roadmap.order,
    }


def _restore(data: Any) -> Roadmap | None:
    try:
        return Roadmap(
            data["mode"],
            data["title"],
            tuple(map(Phase._make, data["phases"])),
            tuple(map(_step, data["steps"])),
            tuple(map(Problem._make, data["problems"])),
            data["order"],
        )
    except (TypeError, KeyError, ValueError):
        return None


def _step(fields: list[Any]) -> Step:
    *rest, tags, detail, needs = fields  # its last three come back from JSON as lists
    return Step._make((*rest, tuple(tags), tuple(detail), tuple(needs)))


def status(slug: str, roadmap: Roadmap) -> dict[str, Any]:
    """The `roadmap status --json` shape."""
    result = scan(roadmap)
    found = readiness(roadmap)
    return {
        "slug": slug,
        "mode": roadmap.mode or DEFAULT_MODE,
        **result.counts.to_json(),
        "next": result.next.to_json() if result.next else None,
        "order": roadmap.order,
        "ready": [step.id for step in found.ready],
        "waiting": waits_json(found.waiting),
        "phases": [
            {"id": phase.id, "title": phase.title, **counts.to_json()}
            for phase, counts in result.phases
        ],
    }


def summaries(ws: Workspace) -> list[dict[str, Any]]:
    """Every roadmap of the workspace with its mode and progress, or the error that hides them."""
    rows: list[dict[str, Any]] = []
    for slug in ws.slugs():
        try:
            data = status(slug, load(ws, slug))
        except RoadmapError as exc:
            rows.append({"slug": slug, "error": str(exc)})
            continue
        del data["phases"]
        rows.append(data)
    return rows
