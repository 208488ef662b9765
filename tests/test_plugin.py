"""The plugin folder and the repository's marketplace files: versions in step with the package,
hooks that run through the plugin root, the same commands in every host, and the `bin/agentcfg`
shim's search for the CLI (run as a subprocess with a PATH made for each test).
"""

from __future__ import annotations

import json
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

import agentcfg
from tests.conftest import REPO

PLUGIN = REPO / "plugin"
SHIM = PLUGIN / "bin" / "agentcfg"
MANIFESTS = [
    PLUGIN / ".claude-plugin" / "plugin.json",
    PLUGIN / ".codex-plugin" / "plugin.json",
    REPO / "gemini-extension.json",
]


def load(path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads(path.read_text())
    return data


def test_every_manifest_carries_the_package_version() -> None:
    version = agentcfg.__version__
    assert f'\nversion = "{version}"\n' in (REPO / "pyproject.toml").read_text()
    listed = load(REPO / ".claude-plugin" / "marketplace.json")["plugins"]
    assert isinstance(listed, list)
    versions = {str(path.relative_to(REPO)): load(path)["version"] for path in MANIFESTS}
    versions["marketplace entry"] = listed[0]["version"]
    assert versions == dict.fromkeys(versions, version)


def test_every_manifest_names_the_plugin_agentcfg() -> None:
    assert {load(path)["name"] for path in MANIFESTS} == {"agentcfg"}


@pytest.mark.parametrize(
    "marketplace",
    [REPO / ".claude-plugin" / "marketplace.json", REPO / ".agents/plugins/marketplace.json"],
)
def test_the_marketplaces_offer_the_plugin_folder(marketplace: Path) -> None:
    (entry,) = load(marketplace)["plugins"]  # type: ignore[misc]
    source = entry["source"]
    path = source if isinstance(source, str) else source["path"]
    assert (entry["name"], (REPO / path).resolve()) == ("agentcfg", PLUGIN)


@pytest.mark.parametrize(
    ("hooks", "event", "root", "host"),
    [
        (PLUGIN / "hooks" / "claude-hooks.json", "Stop", "${CLAUDE_PLUGIN_ROOT}", "claude"),
        (PLUGIN / "hooks" / "codex-hooks.json", "Stop", "${CLAUDE_PLUGIN_ROOT}", "codex"),
        (REPO / "hooks" / "hooks.json", "AfterAgent", "${extensionPath}/plugin", "gemini"),
    ],
)
def test_each_host_runs_the_shim_through_its_plugin_root(
    hooks: Path, event: str, root: str, host: str
) -> None:
    data = load(hooks)["hooks"]
    assert isinstance(data, dict) and next(iter(data)) == event  # then SessionStart
    (group,) = data[event]
    (hook,) = group["hooks"]
    assert hook["command"] == f'"{root}/bin/agentcfg" hook stop --host {host}'


@pytest.mark.parametrize("host", ["claude", "codex"])
def test_claude_and_codex_plugins_re_inject_the_step_after_a_compaction(host: str) -> None:
    (group,) = load(PLUGIN / "hooks" / f"{host}-hooks.json")["hooks"]["SessionStart"]
    (hook,) = group["hooks"]
    assert group["matcher"] == "compact"
    assert hook["command"] == (
        f'"${{CLAUDE_PLUGIN_ROOT}}/bin/agentcfg" hook session-start --host {host}'
    )


def test_the_manifests_point_at_their_hooks() -> None:
    assert load(MANIFESTS[0])["hooks"] == "./hooks/claude-hooks.json"
    assert load(MANIFESTS[1])["hooks"] == "./hooks/codex-hooks.json"
    # Claude Code validates hooks/hooks.json whatever the manifest says, and rejects an
    # AfterAgent key: Gemini's hooks live in the extension at the repository root instead
    assert not (PLUGIN / "hooks" / "hooks.json").exists()


COMMANDS = sorted(path.stem for path in (PLUGIN / "commands").glob("*.md"))


def test_claude_and_gemini_have_the_same_commands() -> None:
    assert COMMANDS == ["release", "run", "status"]  # a person's `stop` is the CLI's alone
    assert sorted(path.stem for path in (REPO / "commands" / "agentcfg").glob("*")) == COMMANDS


@pytest.mark.parametrize("name", COMMANDS)
def test_claude_and_gemini_commands_say_the_same(name: str) -> None:
    markdown = (PLUGIN / "commands" / f"{name}.md").read_text()
    _, front, body = markdown.split("---\n", 2)
    toml = (REPO / "commands" / "agentcfg" / f"{name}.toml").read_text()
    assert toml == (
        f'description = "{re.search("^description: (.+)$", front, re.M).group(1)}"\n'  # type: ignore[union-attr]
        f'prompt = """\n{body.replace("$ARGUMENTS", "{{args}}")}"""\n'
    )


def test_the_run_command_names_the_roadmap_commands() -> None:
    body = (PLUGIN / "commands" / "run.md").read_text()
    for command in ("sessions claim $ARGUMENTS", "roadmap next $ARGUMENTS", "roadmap done"):
        assert f"agentcfg {command}" in body
    assert "roadmap trust" not in body  # a person's decision, never allowed to the agent


def test_the_skill_has_its_frontmatter() -> None:
    text = (PLUGIN / "skills" / "agentcfg" / "SKILL.md").read_text()
    front = re.match(r"---\nname: agentcfg\ndescription: (.+)\n---\n", text)
    assert front is not None and "roadmap done" in text
    assert load(REPO / "gemini-extension.json")["contextFileName"] == (
        "plugin/skills/agentcfg/SKILL.md"
    )


# The shim


def fake_cli(folder: Path, name: str = "agentcfg") -> Path:
    """An executable that prints how it was called, the plugin marker and its stdin."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(f'#!/bin/sh\necho "{folder.name}: $* plugin=$AGENTCFG_PLUGIN"\ncat\n')
    path.chmod(0o755)
    return path


def shim(
    tmp_path: Path, *args: str, path: list[Path], stdin: str = "{}", **env: str
) -> subprocess.CompletedProcess[str]:
    tools = tmp_path / "tools"  # the few commands the shim needs, and nothing named agentcfg
    if not tools.exists():
        tools.mkdir()
        for tool in ("dirname", "dd", "grep", "cat"):
            found = shutil.which(tool)
            assert found is not None
            (tools / tool).symlink_to(found)
    return subprocess.run(
        ["/bin/sh", str(SHIM), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={"PATH": ":".join(map(str, [*path, tools])), "HOME": str(tmp_path), **env},
        timeout=30,
        check=False,
    )


def test_the_shim_is_executable() -> None:
    assert SHIM.stat().st_mode & stat.S_IXUSR
    assert SHIM.read_text().splitlines()[1].startswith("# agentcfg-plugin-shim")


def test_the_shim_runs_the_cli_on_path_with_stdin_and_the_plugin_marker(tmp_path: Path) -> None:
    fake_cli(tmp_path / "first")
    fake_cli(tmp_path / "second")
    proc = shim(
        tmp_path, "hook", "stop", "--host", "claude", path=[tmp_path / "first", tmp_path / "second"]
    )
    assert (proc.returncode, proc.stdout) == (0, "first: hook stop --host claude plugin=1\n{}")


def test_agentcfg_bin_wins_over_path(tmp_path: Path) -> None:
    chosen = fake_cli(tmp_path / "chosen", "my-agentcfg")
    fake_cli(tmp_path / "onpath")
    proc = shim(tmp_path, "roadmap", "list", path=[tmp_path / "onpath"], AGENTCFG_BIN=str(chosen))
    assert proc.stdout.startswith("chosen: roadmap list")


def test_the_shim_skips_itself_and_its_copies_on_path(tmp_path: Path) -> None:
    copy = tmp_path / "other-plugin" / "bin"
    copy.mkdir(parents=True)
    shutil.copy2(SHIM, copy / "agentcfg")
    fake_cli(tmp_path / "real")
    proc = shim(tmp_path, "sessions", "show", path=[SHIM.parent, copy, tmp_path / "real"])
    assert proc.stdout.startswith("real: sessions show")


def test_the_shim_skips_what_cannot_run(tmp_path: Path) -> None:
    (tmp_path / "folder" / "agentcfg").mkdir(parents=True)  # a folder of that name
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "agentcfg").write_text("not executable")
    fake_cli(tmp_path / "real")
    proc = shim(tmp_path, "doctor", path=[tmp_path / "folder", plain, tmp_path / "real"])
    assert proc.stdout.startswith("real: doctor")


def test_with_no_cli_a_stop_is_allowed_with_one_hint(tmp_path: Path) -> None:
    proc = shim(tmp_path, "hook", "stop", "--host", "gemini", path=[], stdin='{"x": 1}')
    assert (proc.returncode, proc.stdout) == (0, "")
    assert len(proc.stderr.splitlines()) == 1
    assert "not installed" in proc.stderr and "AGENTCFG_BIN" in proc.stderr


def test_with_no_cli_another_command_fails_with_one_line(tmp_path: Path) -> None:
    proc = shim(tmp_path, "sessions", "claim", "demo", path=[])
    assert (proc.returncode, proc.stdout) == (1, "")
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("agentcfg: ")


@pytest.mark.parametrize("runner", ["uvx", "pipx"])
def test_with_no_cli_a_checkout_runs_through_uvx_or_pipx(tmp_path: Path, runner: str) -> None:
    tools = tmp_path / "runners"
    tools.mkdir()
    (tools / runner).write_text(f'#!/bin/sh\necho "{runner} $*"\n')
    (tools / runner).chmod(0o755)
    proc = shim(tmp_path, "roadmap", "list", path=[tools])
    expected = {
        "uvx": f"uvx --quiet --from {REPO} agentcfg roadmap list",
        "pipx": f"pipx run --spec {REPO} agentcfg roadmap list",
    }
    assert proc.stdout.strip() == expected[runner]


def test_a_plugin_copy_outside_a_checkout_never_runs_an_index_package(tmp_path: Path) -> None:
    copy = tmp_path / "cache" / "agentcfg" / "0.1.0"
    shutil.copytree(PLUGIN, copy)
    uvx = fake_cli(tmp_path / "runners", "uvx")
    proc = subprocess.run(
        ["/bin/sh", str(copy / "bin" / "agentcfg"), "roadmap", "list"],
        capture_output=True,
        text=True,
        env={"PATH": f"{uvx.parent}:/usr/bin:/bin", "HOME": str(tmp_path)},
        timeout=30,
        check=False,
    )
    assert (proc.returncode, proc.stdout) == (1, "")  # uvx was there, and not run
    assert "not installed" in proc.stderr
