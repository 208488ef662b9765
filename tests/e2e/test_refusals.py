"""`agentcfg run` on the real Claude Code, headless, against a scripted model, where the run
cannot progress for a reason the person can fix: no permission to run commands, an allowlist
the host ignores in a folder nobody trusted, verify lines nobody trusted. Each is told, with
the fix; and after a halt the person's next run takes the roadmap back without --force.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.e2e.harness import AGENTCFG, SLUG, TIMEOUT
from tests.e2e.test_run import Driven, RunScript, claude_setup, model, with_url


def run(root: Path, home: Path, env: dict[str, str], script: RunScript, *extra: str) -> Driven:
    """`agentcfg run` with the person's own arguments after `--` (none: no permissions)."""
    with model("claude", script) as url:
        proc = subprocess.run(
            [AGENTCFG, "run", SLUG, "--host", "claude", "--json", "--", *extra],
            cwd=root, env=with_url(env, url), capture_output=True, text=True,
            timeout=TIMEOUT * 2, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    return Driven(root, home, script, proc)


def test_a_run_with_no_permission_arguments_ends_naming_permissions_and_the_fix(
    tmp_path: Path,
) -> None:
    root, home, env = claude_setup(tmp_path)
    refused = run(root, home, env, RunScript())
    assert refused.proc.returncode == 12, refused.failure()  # halt-stall: nothing progressed
    err = refused.proc.stderr
    # before the start, one line says why the agent's commands will not run
    assert (
        "agentcfg run: warning: Claude Code headless asks approval for each command the agent "
        "runs and nobody is there to give it: pass `-- --allowedTools Bash` to `agentcfg run`, "
        "or allow Bash in .claude/settings.json\n"
    ) in err
    assert err.index("agentcfg run: warning:") < err.index("agentcfg run: claude on roadmap")
    # the ending names permissions, the count, one refused command and the fix
    told = refused.ending()["permissions"]
    assert told["refused"] >= 3 and told["example"].endswith(f"roadmap done {SLUG} 1.1")
    assert told["allow"].startswith("pass `-- --allowedTools Bash`")
    line = next(x for x in err.splitlines() if x.startswith("  permissions: "))
    assert line == (
        f"  permissions: Claude Code refused {told['refused']} tool calls of the agent for lack "
        f"of permission (e.g. `{told['example']}`); to allow them, pass `-- --allowedTools "
        "Bash` to `agentcfg run`, or allow Bash in .claude/settings.json"
    )
    assert refused.ending()["next"] == (
        f"allow the agent's commands, then: agentcfg run {SLUG} --host claude -- --allowedTools Bash"
    )
    # the person's next run, allowed, takes the roadmap back from the halted one: no --force
    again = run(root, home, env, RunScript(), "--allowedTools", "Bash")
    assert again.proc.returncode == 0, again.failure()
    assert again.ending()["ending"] == "complete" and again.ending()["permissions"] is None
    assert "agentcfg run: taking back roadmap `e2e` from session " in again.proc.stderr
    assert "agentcfg run: warning:" not in again.proc.stderr


def test_an_allowlist_in_a_folder_nobody_trusted_is_told_before_and_after(tmp_path: Path) -> None:
    root, home, env = claude_setup(tmp_path)
    settings = root / ".claude" / "settings.json"
    document = json.loads(settings.read_text())
    document["permissions"] = {"allow": ["Bash"]}
    settings.write_text(json.dumps(document))
    ignored = run(root, home, env, RunScript())
    assert ignored.proc.returncode == 12, ignored.failure()
    err = ignored.proc.stderr
    assert (
        "agentcfg run: warning: Claude Code will ignore the allowlist in .claude/settings.json: "
        "this folder is not trusted (a new clone never is); trust it headless with "
        f'projects["{root}"].hasTrustDialogAccepted: true in {home / ".claude.json"}, or pass '
        "`-- --allowedTools Bash`\n"
    ) in err
    # what the host itself said, in the ending
    assert ignored.ending()["ignored_settings"] == [
        "Ignoring 1 permissions.allow entry from .claude/settings.json: this workspace has not "
        "been trusted"
    ]
    assert (
        "  Claude Code said: Ignoring 1 permissions.allow entry from .claude/settings.json: "
        "this workspace has not been trusted\n"
    ) in err
    # trusted the way the line says, the same allowlist lets the run complete
    (home / ".claude.json").write_text(
        json.dumps({"projects": {str(root): {"hasTrustDialogAccepted": True}}})
    )
    trusted = run(root, home, env, RunScript())
    assert trusted.proc.returncode == 0, trusted.failure()
    assert "agentcfg run: warning:" not in trusted.proc.stderr


def test_a_run_on_verify_lines_nobody_trusted_is_refused_before_the_host_starts(
    tmp_path: Path,
) -> None:
    root, home, env = claude_setup(tmp_path)
    roadmap = root / "roadmaps" / f"{SLUG}.md"
    roadmap.write_text(roadmap.read_text().replace("echo second-step-ok", "echo changed"))
    script = RunScript()
    refused = run(root, home, env, script, "--allowedTools", "Bash")
    assert refused.proc.returncode == 1
    assert refused.proc.stderr.splitlines() == [
        f"agentcfg: error: roadmap `{SLUG}` has 1 verify line nobody trusted (step 1.2): no "
        f"agent can close that step; review and trust them first: agentcfg roadmap trust {SLUG}"
    ]
    assert script.prompts == []  # no request reached the model: the host never started
    assert "run-start" not in refused.events()
