"""`agentcfg doctor`: is everything wired and sound? Each finding carries its fix."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agentcfg import claims, install, loading, state
from agentcfg.config import load_config
from agentcfg.core.ladder import RunState
from agentcfg.core.lint import lint
from agentcfg.core.roadmap import scan
from agentcfg.core.texts import store_reach
from agentcfg.errors import AgentcfgError, ClaimError, RoadmapError
from agentcfg.hosts.base import HOOK_TIMEOUT, Answer, Finding, Plugin
from agentcfg.hosts.registry import HOSTS, adapter, session_env
from agentcfg.paths import user_state
from agentcfg.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from agentcfg.hosts.protocols import Wiring


def examine(
    ws: Workspace, home: Path, env: Mapping[str, str], probe: bool = False
) -> list[Finding]:
    return [
        *_hosts(ws, home, env),
        *_fires(ws),
        *(_probes(ws, home, env) if probe else []),
        *_config(ws, env),
        *_roadmaps(ws),
        *_claim(ws, env),
        *_state(ws),
    ]


def _hosts(ws: Workspace, home: Path, env: Mapping[str, str]) -> list[Finding]:
    found: list[Finding] = []
    wired = False
    for name in HOSTS:
        host = adapter(name)
        host_wired = False
        hooked = []
        for scope in ("project", "user"):
            path = host.config_path(scope, ws.root, home, env)
            subject = f"{name} ({scope})"
            try:
                commands = install.registered(name, path)
            except AgentcfgError as exc:
                found.append(Finding("error", subject, str(exc), f"repair or remove {path}"))
                continue
            if not commands:
                continue
            wired = host_wired = True
            hooked.append(scope)
            found.extend(_wiring(subject, path, commands, f"--host {name} --scope {scope}"))
            found.extend(host.checks(path, ws.root, home, env))
        plugin = host.plugin(ws.root, home, env)
        if plugin is not None:
            wired = host_wired = True
            found.append(_plugin_route(name, plugin, hooked))
        if host_wired:
            found.extend(cap_findings(ws, host, home, env, ws.slugs()))
            found.append(reach_finding(ws, host, home, env))
    if not wired:
        found.append(Finding(
            "warning", "hosts", "the stop hook is not installed for any host",
            "agentcfg hooks install --host claude",
        ))  # fmt: skip
    return found


STORE_SHOWN = "agentcfg's own store"


def reach_finding(ws: Workspace, host: Wiring, home: Path, env: Mapping[str, str]) -> Finding:
    """Whether the host's sandbox keeps the agent from writing the person's own store."""
    store = Path(user_state(env))
    reach = host.store_reach(ws.root, home, env, store, ())
    return Finding(
        "ok" if reach.sealed else "warning",
        f"{host.NAME} (store)",
        store_reach(host.TITLE, reach.sealed, reach.why),
        f"run {host.TITLE} in a sandbox that keeps it out of {STORE_SHOWN} (README: sealed records)",
    )


def cap_findings(
    ws: Workspace, host: Wiring, home: Path, env: Mapping[str, str], slugs: Iterable[str]
) -> list[Finding]:
    """A warning for each autonomous roadmap with more open steps than the host lets one prompt
    continue: such a run stops short, waiting for the person's next prompt."""
    capped = host.block_cap(ws.root, home, env)
    if capped is None:
        return []
    cap, fix = capped
    found = []
    for slug in slugs:
        try:
            roadmap = loading.load(ws, slug)
        except RoadmapError:
            continue  # _roadmaps reports it
        open_steps = scan(roadmap).counts.open
        if roadmap.autonomous and open_steps > cap:
            found.append(Finding(
                "warning", host.NAME,
                f"roadmap `{slug}` has {open_steps} open steps, but {host.TITLE} ends a prompt "
                f"after {cap} continuations: the run will stop short of the roadmap's end",
                fix,
            ))  # fmt: skip
    return found


def _plugin_route(name: str, plugin: Plugin, hooked: list[str]) -> Finding:
    subject = f"{name} (plugin)"
    if not hooked:
        return Finding("ok", subject, f"stop hook wired by the agentcfg plugin ({plugin.record})")
    uninstall = " or ".join(f"`agentcfg hooks uninstall --host {name} --scope {s}`" for s in hooked)
    return Finding(
        "warning",
        subject,
        f"the stop hook is registered twice, by the agentcfg plugin ({plugin.record}) and by"
        f" `hooks install` ({', '.join(hooked)} scope); the plugin's hook steps aside",
        f"keep one route: {uninstall}, or `{plugin.remove}`",
    )


def _wiring(subject: str, path: Path, commands: list[str], options: str) -> list[Finding]:
    reinstall = f"agentcfg hooks install {options}"
    found = []
    if len(commands) > 1:
        found.append(Finding(
            "error", subject, f"the stop hook is registered {len(commands)} times in {path}",
            reinstall,
        ))  # fmt: skip
    program = _program(commands[0])
    if program is None or shutil.which(program) is None:
        found.append(
            Finding("error", subject, f"the hook command does not run: {commands[0]}", reinstall)
        )
    else:
        found.append(Finding("ok", subject, f"stop hook wired in {path}"))
    return found


def _program(command: str) -> str | None:
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    return words[0] if words else None


def _config(ws: Workspace, env: Mapping[str, str]) -> list[Finding]:
    config = load_config(ws, env)
    notify = _notify(ws, config.notify, env) if config.notify else []
    if not config.problems:
        return [
            Finding(
                "ok",
                "config",
                "agentcfg.yaml is valid" if ws.config.exists() else "no agentcfg.yaml: defaults",
            ),
            *notify,
        ]
    return notify + [
        Finding(
            "error",
            "config",
            problem,
            "correct it in agentcfg.yaml (the hook uses the default meanwhile)",
        )
        for problem in config.problems
    ]


def _notify(ws: Workspace, command: tuple[str, ...], env: Mapping[str, str]) -> list[Finding]:
    """A repository's notify command runs only once a person trusted it as it reads."""
    from agentcfg.contract import trust

    try:
        trusted = trust.notify_trusted(ws, command, env)
    except AgentcfgError as exc:
        return [Finding("error", "config", str(exc), "remove it; `roadmap trust` makes a new one")]
    if trusted:
        return [Finding("ok", "config", "notify.command is trusted")]
    return [
        Finding(
            "warning",
            "config",
            "notify.command is not trusted (new or changed): it does not run",
            "review it with `agentcfg roadmap trust <slug>`",
        )
    ]


def _roadmaps(ws: Workspace) -> list[Finding]:
    found: list[Finding] = []
    for slug in ws.slugs():
        subject = f"roadmaps/{slug}.md"
        try:
            problems = lint(loading.load(ws, slug))
        except RoadmapError as exc:
            found.append(Finding("error", subject, str(exc), "make it a UTF-8 Markdown file"))
            continue
        for problem in problems:
            fix = (
                "see `agentcfg roadmap lint`"
                if problem.level == "warning"
                else f"edit line {problem.line}"
            )
            found.append(Finding(problem.level, f"{subject}:{problem.line}", problem.message, fix))
        if not problems:
            found.append(Finding("ok", subject, "lint clean"))
    return found


def _claim(ws: Workspace, env: Mapping[str, str]) -> list[Finding]:
    try:
        session = claims.resolve_session(None, env, session_env())
    except ClaimError:
        return [Finding("ok", "claim", "no session id in the environment: no claim to check")]
    found = claims.read_claim(ws, claims.session_key(session))
    if found is None:
        return [Finding("ok", "claim", f"session {session} holds no claim")]
    if claims.is_stale(ws, found):
        return [Finding(
            "error", "claim", f"session {session} claims `{found.slug}`, whose roadmap is gone",
            "agentcfg sessions release, or claim another roadmap",
        )]  # fmt: skip
    mode = loading.load(ws, found.slug).mode
    if mode != "autonomous":
        return [Finding(
            "warning", "claim", f"`{found.slug}` is in mode {mode or 'interactive'}: the hook will not continue it",
            "set `execution: {mode: autonomous}` in its frontmatter",
        )]  # fmt: skip
    run = state.read_json(claims.run_path(ws, found.key, found.slug))
    if run is not None and RunState.from_json(run) is None:
        return [
            Finding(
                "error",
                "claim",
                "the run state is unreadable",
                f"agentcfg sessions claim {found.slug}",
            )
        ]
    return [Finding("ok", "claim", f"session {session} works `{found.slug}`")]


def _state(ws: Workspace) -> list[Finding]:
    if not ws.state.exists():
        return [Finding("ok", "state", "no state/ yet")]
    loose = []
    for base, dirs, files in os.walk(ws.state):
        for name, limit in [
            *((d, 0o700) for d in dirs),
            *((f, 0o600) for f in files),
            (".", 0o700),
        ]:
            path = Path(base) / name
            if path.is_symlink():
                continue
            mode = stat.S_IMODE(path.stat().st_mode)
            if mode & ~limit & 0o077:
                loose.append(str(path.relative_to(ws.root)))
    if loose:
        shown = ", ".join(sorted(set(loose))[:5]) + (" ..." if len(loose) > 5 else "")
        return [Finding(
            "error", "state", f"readable by others: {shown}",
            f"chmod -R go-rwx {ws.state}",
        )]  # fmt: skip
    return [Finding("ok", "state", "private (folders 0700, files 0600)")]


def _fires(ws: Workspace) -> list[Finding]:
    """Per host, the last fire the ledger recorded here and what it decided."""
    last: dict[str, dict[str, Any]] = {}
    for line in state.ledger_lines(ws.state):
        if b'"host"' not in line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("host") in HOSTS:
            last[event["host"]] = event
    return [
        Finding(
            "ok",
            f"{name} fires",
            f"last recorded fire {event.get('at')}: {event.get('event')}"
            + (f" on `{event['slug']}`" if event.get("slug") else ""),
        )
        for name, event in sorted(last.items())
    ]


def _probes(ws: Workspace, home: Path, env: Mapping[str, str]) -> list[Finding]:
    """Run each registered hook command as its host would, on a payload of the host's shape:
    only our own, the very line (and file) `hooks install` writes; any other is named, not run."""
    found: list[Finding] = []
    for name in HOSTS:
        host = adapter(name)
        for scope in ("project", "user"):
            path = host.config_path(scope, ws.root, home, env)
            try:
                commands = install.registered(name, path)
                ours = install.hook_command(name)
                as_written = (
                    commands and install.apply(path, name, ours, True).action == "unchanged"
                )
            except AgentcfgError:
                continue  # reported by _hosts
            for command in commands:
                if command == ours and as_written:
                    found.append(_probe(host, scope, command, ws.root, env))
                else:
                    found.append(_foreign(host, scope, command))
    return found


def _foreign(host: Wiring, scope: str, command: str) -> Finding:
    return Finding(
        "warning",
        f"{host.NAME} ({scope}) probe",
        f"`{command}` is not ours, not run: only the hook `hooks install` writes here is probed",
        f"agentcfg hooks install --host {host.NAME} --scope {scope}",
    )


def _probe(host: Wiring, scope: str, command: str, root: Path, env: Mapping[str, str]) -> Finding:
    import subprocess
    import tempfile

    subject = f"{host.NAME} ({scope}) probe"
    repair = (
        "reinstall it from the environment agentcfg runs in: "
        f"agentcfg hooks install --host {host.NAME} --scope {scope}"
    )

    with tempfile.TemporaryDirectory() as empty:
        # a workspace of its own, so that nothing the probe does touches this one's state
        probe = host.probe(empty)
        try:
            done = subprocess.run(
                ["/bin/sh", "-c", command],
                input=json.dumps(probe.payload).encode(),
                capture_output=True,
                cwd=root,
                env={**env, "AGENTCFG_ROOT": empty},
                timeout=HOOK_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return Finding(
                "error", subject, f"`{command}` did not answer within {HOOK_TIMEOUT}s", repair
            )
    out, err = (stream.decode(errors="replace") for stream in (done.stdout, done.stderr))
    got = Answer(done.returncode, out, err)
    if got == probe.expected:
        return Finding("ok", subject, f"`{command}` answers as {host.TITLE} expects")
    said = (got.stderr or got.stdout).strip().splitlines()
    return Finding(
        "error",
        subject,
        f"`{command}` answered exit {got.exit_code}"
        + (f" ({said[-1][:200]})" if said else "")
        + f"; {host.TITLE} expects exit {probe.expected.exit_code}"
        + (f" and {probe.expected.stdout.strip()} on stdout" if probe.expected.stdout else "")
        + " and nothing else",
        repair,
    )
