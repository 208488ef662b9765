"""The files a verify line's check depends on, and how they changed since a person trusted it.

A check is its command and what the command reads: the files it names, and the configuration
of the test runner it starts (a new `conftest.py` can turn every failure into a pass without
touching the test). Pure: a command, the workspace's file names and their contents in; the
guarded files and their changes out. README, "What `complete` proves", shows the same table.
"""

from __future__ import annotations

import fnmatch
import json
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# How each runner is recognised in a command, and the files whose content decides what it
# runs: (runner, the words that start it, {pattern: the part of the file that counts}).
# "file" counts the whole file; "ini:NAME" one section of an INI file; "toml:PREFIX" the
# tables of a TOML file under PREFIX (`[tool.pytest.ini_options]`); "json:KEY" one key of a
# JSON object. A pattern without a slash matches the name in any folder.
_JS_CONFIG = {
    "jest.config.*": "file",
    "vitest.config.*": "file",
    "vitest.workspace.*": "file",
    "vite.config.*": "file",
}
RUNNERS: tuple[tuple[str, frozenset[str], Mapping[str, str]], ...] = (
    (
        "pytest",
        frozenset({"pytest", "py.test"}),
        {
            "conftest.py": "file",
            "pytest.ini": "file",
            ".pytest.ini": "file",
            "pytest.toml": "file",
            "tox.ini": "ini:pytest",
            "setup.cfg": "ini:tool:pytest",
            "pyproject.toml": "toml:tool.pytest",
        },
    ),
    (
        "make",
        frozenset({"make", "gmake"}),
        dict.fromkeys(("Makefile", "makefile", "GNUmakefile"), "file"),
    ),
    ("npm", frozenset({"npm", "yarn", "pnpm"}), {"package.json": "json:scripts", **_JS_CONFIG}),
    ("jest", frozenset({"jest"}), {"package.json": "json:jest", **_JS_CONFIG}),
    ("vitest", frozenset({"vitest"}), dict(_JS_CONFIG)),
)
# Folders no runner collects from (pytest's own default `norecursedirs`, and agentcfg's state)
SKIPPED = frozenset({"node_modules", "venv", "build", "dist", "_darcs", "CVS", "{arch}", "state"})


def runners(command: str) -> tuple[str, ...]:
    """The runners a command starts, by its words (`python3 -m pytest`, `npx jest`, `make`)."""
    names = {word.rsplit("/", 1)[-1] for word in words(command)}
    return tuple(name for name, starts, _ in RUNNERS if names & starts)


def patterns(command: str, globs: Iterable[str] = ()) -> dict[str, str]:
    """Pattern -> the part of a matching file that counts: the runners' configuration, and
    the person's `contract.guard` globs (whole files)."""
    found: dict[str, str] = {}
    chosen = set(runners(command))
    for name, _, files in RUNNERS:
        if name in chosen:
            found.update(files)
    for glob in globs:
        found.setdefault(glob, "file")
    return found


def words(command: str) -> list[str]:
    """The command's words as a shell would split them; on a line shlex cannot split, its
    whitespace-separated words."""
    try:
        return shlex.split(command, comments=True)
    except ValueError:
        return command.split()


def named_paths(command: str) -> tuple[str, ...]:
    """Every word of the command that could be a path in the workspace: relative, inside it,
    with a pytest node id's `::test` part cut off; the caller keeps those that exist."""
    found: dict[str, None] = {}
    for word in words(command):
        path = word.split("::", 1)[0].removeprefix("./").rstrip("/")
        if not path or path.startswith(("-", "/", "~")) or "=" in path:
            continue
        parts = path.split("/")
        if ".." in parts or any(c in path for c in "$`*?[{<>|;&"):
            continue
        found.setdefault(path, None)
    return tuple(found)


# what a check runs, rather than reads or looks for: code, by its file's extension
CODE = frozenset({
    "py", "sh", "bash", "zsh", "js", "mjs", "cjs", "ts", "mts", "cts", "jsx", "tsx", "rb", "pl",
    "php", "lua", "go", "rs", "java", "kt", "swift", "mk", "bats",
})  # fmt: skip


def runs(command: str, path: str) -> bool:
    """Whether the check runs this named path as code (`tests/test_new.py`, `./check.sh`), not
    just looks at it (`test -f out.txt`): the agent writing it writes the check."""
    name = path.rsplit("/", 1)[-1]
    suffix = name.rsplit(".", 1)[-1] if "." in name.strip(".") else ""
    first = words(command)[:1]
    return suffix in CODE or first == [path] or first == [f"./{path}"]


def matches(pattern: str, path: str) -> bool:
    """Whether a workspace path (with `/`) matches a guard pattern: a name without a slash
    matches in any folder; `**` spans folders."""
    if "/" not in pattern:
        return fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], pattern)
    if fnmatch.fnmatchcase(path, pattern):
        return True
    if pattern.startswith("**/"):  # `**/x` matches `x` at the root too
        return matches(pattern[3:], path) if "/" in pattern[3:] else path == pattern[3:]
    return "/**/" in pattern and fnmatch.fnmatchcase(path, pattern.replace("/**/", "/", 1))


def relevant(part: str, data: bytes) -> bytes | None:
    """The part of a file's content that counts for its runner; None when the file holds none
    of it (a pyproject.toml without a pytest table counts as absent)."""
    if part == "file":
        return data
    text = data.decode("utf-8", "replace")
    kind, _, name = part.partition(":")
    if kind == "ini":
        return _section(text, lambda header: header == name)
    if kind == "toml":
        return _section(text, lambda header: header == name or header.startswith(name + "."))
    if kind == "json":
        try:
            value = json.loads(text)
        except ValueError:
            return data  # unreadable: the whole file counts
        if not isinstance(value, dict) or name not in value:
            return None
        return json.dumps(value[name], sort_keys=True).encode()
    raise ValueError(f"unknown part {part!r}")


def _section(text: str, wanted: object) -> bytes | None:
    """The lines of the sections whose header `wanted` accepts (INI `[name]`, TOML `[a.b]`,
    `[[a.b]]`), headers included; None when there is none."""
    kept: list[str] = []
    inside = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("[") and "]" in stripped:
            header = stripped.strip("[]").split("]", 1)[0].strip().strip('"')
            inside = bool(wanted(header))  # type: ignore[operator]
        if inside:
            kept.append(line.rstrip())
    return "\n".join(kept).encode() if kept else None


@dataclass(frozen=True)
class Guard:
    """What a person trusted along with a verify line: the patterns whose matches count (a new
    match is a change), the named files and their digests, and the named paths that did not
    exist then and that it runs as code (a check that runs them runs what the agent wrote)."""

    patterns: Mapping[str, str]  # pattern -> part
    files: Mapping[str, str]  # path -> sha256 of its part that counts
    absent: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"patterns": dict(self.patterns), "files": dict(self.files),
                "absent": list(self.absent)}  # fmt: skip

    @classmethod
    def from_json(cls, data: object) -> Guard | None:
        if not isinstance(data, dict):
            return None
        found, files, absent = data.get("patterns"), data.get("files"), data.get("absent", [])
        if not (isinstance(found, dict) and isinstance(files, dict) and isinstance(absent, list)):
            return None
        pairs = [*found.items(), *files.items()]
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in pairs):
            return None
        if not all(isinstance(a, str) for a in absent):
            return None
        return cls(dict(found), dict(files), tuple(absent))


def changes(trusted: Mapping[str, str], now: Mapping[str, str]) -> tuple[str, ...]:
    """Each guarded file that changed, was deleted or was created, as `path (how)`, sorted."""
    found = [f"{p} (changed)" for p in trusted if p in now and now[p] != trusted[p]]
    found += [f"{p} (deleted)" for p in trusted if p not in now]
    found += [f"{p} (created)" for p in now if p not in trusted]
    return tuple(sorted(found))
