"""The files a check depends on: which runner a command starts, which files its guard covers,
and the property that every change to a guarded file (changed, deleted or created) is named,
and nothing else is."""

from __future__ import annotations

import fnmatch
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcfg.contract import guard_model as model
from agentcfg.contract.guard import Tree
from agentcfg.contract.guard_model import (
    Guard,
    changes,
    matches,
    named_paths,
    patterns,
    relevant,
    runners,
)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("python3 -m pytest -q tests/test_slug.py", ("pytest",)),
        (".venv/bin/pytest tests", ("pytest",)),
        ("make check", ("make",)),
        ("npm test", ("npm",)),
        ("npx jest src", ("jest",)),
        ("pnpm exec vitest run", ("npm", "vitest")),
        ("python3 check.py && ./run.sh", ()),
        ("pytest 'unclosed", ("pytest",)),  # a line shlex cannot split is split on spaces
    ],
)
def test_the_runners_a_command_starts(command: str, expected: tuple[str, ...]) -> None:
    assert runners(command) == expected


def test_named_paths_are_relative_and_inside_the_workspace() -> None:
    command = "pytest tests/test_a.py::test_x ./b.py /etc/passwd ../up.py -k x $HOME/c.py d=e.py"
    assert named_paths(command) == ("pytest", "tests/test_a.py", "b.py", "x")


@pytest.mark.parametrize(
    ("command", "path", "ran"),
    [
        ("python3 -m pytest tests/test_new.py", "tests/test_new.py", True),
        ("./check.sh", "check.sh", True),
        ("bin/check --all", "bin/check", True),
        ("test -f out.txt", "out.txt", False),
        ("grep -q done notes.md", "notes.md", False),
    ],
)
def test_a_named_path_counts_as_run_when_it_is_code(command: str, path: str, ran: bool) -> None:
    assert model.runs(command, path) is ran


def test_a_pyproject_counts_by_its_pytest_tables_only() -> None:
    base = b'[project]\nname = "x"\n'
    table = b"[tool.pytest.ini_options]\naddopts = '-p helpers'\n"
    assert relevant("toml:tool.pytest", base) is None
    assert relevant("toml:tool.pytest", base + b'dependencies = ["y"]\n') is None
    assert relevant("toml:tool.pytest", base + table) == table.rstrip(b"\n")
    assert relevant("ini:pytest", b"[tox]\nenv = py\n[pytest]\naddopts = -x\n") == (
        b"[pytest]\naddopts = -x"
    )
    assert relevant("json:scripts", b'{"name": "x", "scripts": {"test": "jest"}}') == (
        b'{"test": "jest"}'
    )


NAMES = st.sampled_from(["conftest.py", "pytest.ini", "test_a.py", "helpers.py", "Makefile"])
FOLDERS = st.sampled_from(["", "tests/", "tests/unit/", "src/", "node_modules/", ".hidden/"])
PATHS = st.builds(lambda folder, name: folder + name, FOLDERS, NAMES)


@given(pattern=st.sampled_from(["conftest.py", "tests/**", "**/helpers.py", "src/*.py"]),
       path=PATHS)  # fmt: skip
def test_a_pattern_matches_as_a_person_reads_it(pattern: str, path: str) -> None:
    name = path.rsplit("/", 1)[-1]
    if pattern == "conftest.py":
        expected = name == "conftest.py"
    elif pattern == "tests/**":
        expected = path.startswith("tests/")
    elif pattern == "**/helpers.py":
        expected = name == "helpers.py"
    else:
        expected = fnmatch.fnmatchcase(path, "src/*.py")
    assert matches(pattern, path) == expected


@given(
    before=st.dictionaries(PATHS, st.sampled_from(["a", "b"]), max_size=6),
    after=st.dictionaries(PATHS, st.sampled_from(["a", "b"]), max_size=6),
)
def test_changes_name_exactly_the_differences(
    before: dict[str, str], after: dict[str, str]
) -> None:
    found = changes(before, after)
    expected = {f"{p} (changed)" for p in before if p in after and after[p] != before[p]}
    expected |= {f"{p} (deleted)" for p in before if p not in after}
    expected |= {f"{p} (created)" for p in after if p not in before}
    assert set(found) == expected and list(found) == sorted(found)
    assert (found == ()) == (before == after)


def _write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)


COMMAND = "python3 -m pytest tests/test_a.py"
GLOBS = ("src/**",)


def _guarded(path: str) -> bool:
    """What a pytest check of tests/test_a.py with `contract.guard: src/**` depends on."""
    skipped = any(part in model.SKIPPED or part.startswith(".") for part in path.split("/")[:-1])
    name = path.rsplit("/", 1)[-1]
    return not skipped and (
        name in ("conftest.py", "pytest.ini")
        or path.startswith("src/")
        or path == "tests/test_a.py"
    )


@settings(max_examples=60, deadline=None)
@given(
    before=st.dictionaries(PATHS, st.sampled_from(["one", "two"]), max_size=8),
    after=st.dictionaries(PATHS, st.sampled_from(["one", "two"]), max_size=8),
)
def test_every_change_to_a_guarded_file_is_named_and_nothing_else(
    before: dict[str, str], after: dict[str, str]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        _write(root, before)
        taken = Tree(root).take(COMMAND, GLOBS)
        for path in before:
            (root / path).unlink()
        _write(root, after)
        found = set(Tree(root).changed(taken))
    # a named file missing at trust is the agent's to write (weaker evidence, not a change)
    named = "tests/test_a.py" in before
    guarded_before = {p: t for p, t in before.items() if _guarded(p)}
    guarded_after = {
        p: t for p, t in after.items() if _guarded(p) and (named or p != "tests/test_a.py")
    }
    assert found == {
        *(f"{p} (changed)" for p in guarded_before if p in guarded_after
          and guarded_after[p] != guarded_before[p]),
        *(f"{p} (deleted)" for p in guarded_before if p not in guarded_after),
        *(f"{p} (created)" for p in guarded_after if p not in guarded_before),
    }  # fmt: skip


def test_a_guard_survives_its_json_and_refuses_odd_shapes() -> None:
    taken = Guard({"conftest.py": "file"}, {"conftest.py": "0" * 64}, ("new.py",))
    assert Guard.from_json(taken.to_json()) == taken
    for odd in (None, [], {"patterns": []}, {"patterns": {}, "files": {"a": 1}}):
        assert Guard.from_json(odd) is None
    assert patterns("make") == {"Makefile": "file", "makefile": "file", "GNUmakefile": "file"}
