"""Where things live: the workspace root, roadmap paths from slugs, the state folder."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from agentcfg.core.records import Record
from agentcfg.errors import RoadmapError
from agentcfg.paths import CONFIG_NAME, ROADMAPS, STATE, locate_root

ROADMAP_LIMIT = 8 * 1024 * 1024
_SLUG_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


class Workspace(Record):
    root: Path

    @property
    def roadmaps(self) -> Path:
        return self.root / ROADMAPS

    @property
    def state(self) -> Path:
        return self.root / STATE

    @property
    def config(self) -> Path:
        return self.root / CONFIG_NAME

    def roadmap_path(self, slug: str) -> Path:
        """The roadmap file a slug names; RoadmapError unless a regular file inside roadmaps/."""
        return self.roadmaps / f"{self.canonical(slug)}.md"

    def canonical(self, slug: str) -> str:
        """The slug of the file a slug resolves to: a symlink inside roadmaps/ and its target
        are one roadmap, with one lock and one claim. RoadmapError unless that file is a
        regular `<slug>.md` inside roadmaps/."""
        clean = normalise_slug(slug)
        folder = self.roadmaps.resolve()
        try:
            real = (folder / f"{clean}.md").resolve(strict=True)
        except (OSError, RuntimeError):
            from agentcfg.core.suggest import did_you_mean

            raise RoadmapError(
                f"no roadmap `{clean}`: roadmaps/{clean}.md does not exist"
                + did_you_mean(clean, self.slugs())
            ) from None
        stem = real.name.removesuffix(".md")
        if real.parent != folder or not real.is_file() or stem == real.name or not is_slug(stem):
            raise RoadmapError(f"roadmap `{clean}` is not a regular file inside roadmaps/")
        return stem

    def slugs(self) -> list[str]:
        try:
            names = sorted(p.stem for p in self.roadmaps.glob("*.md") if p.is_file())
        except OSError:
            return []
        return [name for name in names if is_slug(name)]


def is_slug(text: str) -> bool:
    """A letter or digit, then letters, digits, '.', '_' and '-' (ASCII)."""
    return text[:1].isalnum() and _SLUG_CHARS.issuperset(text)


def normalise_slug(slug: str) -> str:
    clean = slug.removesuffix(".md")
    if not is_slug(clean):
        raise RoadmapError(
            f"bad roadmap slug {slug!r}: a slug is a file stem of letters, digits, '.', '_' or '-'"
        )
    return clean


def find_root(cwd: str | os.PathLike[str], env: Mapping[str, str]) -> Workspace:
    """The workspace of a folder, by the root rule of `paths.locate_root`."""
    return Workspace(Path(locate_root(os.fspath(cwd), env)))


def decode(data: bytes, path: Path | str, what: str = "roadmap") -> str:
    if len(data) > ROADMAP_LIMIT:
        raise RoadmapError(f"{what} {path} is larger than {ROADMAP_LIMIT // (1024 * 1024)} MiB")
    if b"\0" in data:
        raise RoadmapError(f"{what} {path} is a binary file, not Markdown")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RoadmapError(f"{what} {path} is not UTF-8 (byte {exc.start})") from None
