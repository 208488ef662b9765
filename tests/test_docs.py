"""The documents keep up with the code: every command is in the README, and every document
the code cites is in the repository, down to the section it names."""

from __future__ import annotations

import re
from collections.abc import Iterator

import click
import pytest

from agentcfg.cli import cli
from tests.conftest import REPO
from tests.helpers import subcommands

README = (REPO / "README.md").read_text()
# a citation in the code: `docs/<name>.md` with an optional ", section N"
CITATION = re.compile(r"\b(docs/[\w.-]+\.md)(?:,\s+section\s+(\d+))?")


def commands(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[str]:
    """Every command a person can type, as `agentcfg <group> <command>`, groups walked down."""
    for name, command in subcommands(group):
        if command.hidden:
            continue
        path = (*prefix, name)
        if isinstance(command, click.Group):
            yield from commands(command, path)
        else:
            yield " ".join(("agentcfg", *path))


@pytest.mark.parametrize("command", list(commands(cli)))
def test_every_command_appears_in_the_readme(command: str) -> None:
    assert re.search(re.escape(command) + r"(?![\w-])", README), (
        f"`{command}` is not in README.md: give it a line where its group is described"
    )


def test_the_top_group_names_every_command_the_command_modules_define() -> None:
    """A command no group holds is one `agentcfg` should offer: cli.COMMANDS names it."""
    import importlib
    import pkgutil

    import agentcfg.commands

    defined: list[click.Command] = []
    for info in pkgutil.iter_modules(agentcfg.commands.__path__):
        module = importlib.import_module(f"agentcfg.commands.{info.name}")
        defined += [v for v in vars(module).values() if isinstance(v, click.Command)]
    held = {id(c) for g in defined if isinstance(g, click.Group) for c in g.commands.values()}
    top = {c.name: c for c in defined if id(c) not in held}
    assert top == dict(subcommands(cli))


def test_the_walk_reaches_nested_commands() -> None:
    found = list(commands(cli))
    assert {"agentcfg roadmap status", "agentcfg hooks install", "agentcfg watch"} <= set(found)
    assert "agentcfg roadmap" not in found  # a group is covered by its commands


def cited() -> list[tuple[str, str, str | None]]:
    """(file, document, section) for each citation in the package's source."""
    found = []
    for path in sorted((REPO / "agentcfg").rglob("*.py")):
        for document, section in CITATION.findall(path.read_text()):
            found.append((str(path.relative_to(REPO)), document, section or None))
    return found


def test_the_code_cites_documents_that_exist_down_to_the_section() -> None:
    citations = cited()
    assert citations, "the package cites its architecture document"
    for source, document, section in citations:
        target = REPO / document
        assert target.is_file(), f"{source} cites {document}, which is not in the repository"
        if section is not None:
            headings = re.findall(r"^## (\d+)\. ", target.read_text(), re.M)
            assert section in headings, f"{source} cites section {section} of {document}"


def test_the_code_cites_no_design_document_outside_the_repository() -> None:
    stray = [
        str(path.relative_to(REPO))
        for path in sorted((REPO / "agentcfg").rglob("*.py"))
        if re.search(r"\bDESIGN\b", path.read_text())
    ]
    assert stray == []


def test_the_documents_the_readme_and_contributing_name_exist() -> None:
    named = {
        document
        for text in (README, (REPO / "CONTRIBUTING.md").read_text())
        for document in re.findall(r"`(docs/[\w.-]+\.md|[A-Z]+\.md)`", text)
    }
    assert {"docs/architecture.md", "CONTRIBUTING.md"} <= named
    assert [d for d in sorted(named) if not (REPO / d).is_file()] == []


def test_every_install_in_the_readme_installs_this_project() -> None:
    """The name `agentcfg` on the package index is another project's: no example installs it."""
    code = "\n".join(re.findall(r"^```\w*\n(.*?)^```", README, re.MULTILINE | re.DOTALL))
    lines = [line for line in code.splitlines() if re.search(r"\bpipx? install\b", line)]
    assert len(lines) >= 3  # the install section's two, the CI job's
    for line in lines:
        for target in re.findall(r"\bpipx? install\s+(?:-\S+\s+)*(\S+)", line):
            assert target.strip("\"'`:,").startswith(("git+", "./", ".")), line


def test_the_readme_explains_each_execution_mode() -> None:
    from agentcfg.core.roadmap import MODES

    for mode in MODES:
        assert re.search(rf"^- `{mode}`", README, re.MULTILINE), f"mode `{mode}` is not explained"


def every_command(group: click.Group) -> Iterator[tuple[str, click.Command]]:
    for name, command in subcommands(group):
        if command.hidden:
            continue
        if isinstance(command, click.Group):
            yield from ((f"{name} {sub}", c) for sub, c in every_command(command))
        else:
            yield name, command


@pytest.mark.parametrize(("name", "command"), list(every_command(cli)))
def test_every_option_says_what_it_does(name: str, command: click.Command) -> None:
    """`--help` is the reference a person reads first: no option is left unexplained."""
    assert (command.help or "").strip(), f"`agentcfg {name}` has no help text"
    bare = [
        param.opts[0]
        for param in command.params
        if isinstance(param, click.Option) and not param.hidden and not (param.help or "").strip()
    ]
    assert bare == [], f"`agentcfg {name}`: options with no help: {bare}"


def reference_blocks() -> dict[str, str]:
    """docs/cli.md's `## agentcfg ...` sections, each its block of help text."""
    text = (REPO / "docs" / "cli.md").read_text()
    return dict(re.findall(r"^## (agentcfg[\w -]*)\n\n```\n(.*?)\n```$", text, re.M | re.S))


def test_the_command_reference_names_every_command() -> None:
    assert set(commands(cli)) <= set(reference_blocks()), "run `make cli-docs`"


@pytest.mark.parametrize("command", sorted(reference_blocks()))
def test_the_command_reference_is_what_help_prints(command: str) -> None:
    from click.testing import CliRunner

    from testing.clidocs import WIDTH

    args = [*command.split()[1:], "--help"]
    result = CliRunner().invoke(
        cli, args, prog_name="agentcfg", terminal_width=WIDTH, max_content_width=WIDTH
    )
    assert result.exit_code == 0, result.output
    assert reference_blocks()[command] == result.output.rstrip(), (
        f"docs/cli.md differs from `{command} --help`: run `make cli-docs`"
    )
