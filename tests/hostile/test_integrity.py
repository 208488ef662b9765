"""Hostile cases around the hook: which box `done` ticks, whose claim stands, which verify
lines may run, where state may go, what reaches a terminal, and what each input may cost."""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agentcfg import claims
from tests.conftest import hook_env
from tests.hostile.harness import SESSION, claim_file, fire_hostile, payload, run_hostile
from tests.hostile.test_inputs import ALIAS_BOMB

PEER = "peer-session"


def env_of(root: Path, **extra: str) -> dict[str, str]:
    return {**hook_env(root), "XDG_STATE_HOME": str(root.parent / "xdg"), **extra}


def person(root: Path, *args: str, expect: int = 0) -> str:
    return run_hostile(root, list(args), expect).stdout


@pytest.fixture
def root(ws: Path) -> Path:
    """The demo workspace: trusted by the person, claimed by SESSION."""
    person(ws, "roadmap", "trust", "demo")
    person(ws, "sessions", "claim", "demo", "--session", SESSION)
    (ws / "transcript.jsonl").write_text(
        json.dumps({"type": "user", "message": {"content": "go"}}) + "\n"
    )
    return ws


def demo(root: Path) -> Path:
    return root / "roadmaps" / "demo.md"


def boxes(path: Path) -> list[bytes]:
    return [line[:5] for line in path.read_bytes().replace(b"\r", b"\n").split(b"\n")]


# -- the right box --------------------------------------------------------------------------


@pytest.mark.parametrize("ending", [b"\r", b"\r\n", b"\n\r"], ids=["cr only", "crlf", "lf then cr"])
@pytest.mark.parametrize("step", ["1.2", "1.3", "2.1"])
def test_done_ticks_its_own_box_whatever_the_line_endings(
    root: Path, ending: bytes, step: str
) -> None:
    text = demo(root).read_bytes().replace(b"\n", ending)
    demo(root).write_bytes(text)
    person(root, "roadmap", "trust", "demo")
    person(root, "roadmap", "done", "demo", step)
    assert demo(root).read_bytes() == text.replace(
        f"- [ ] **{step}**".encode(), f"- [x] **{step}**".encode()
    )


def test_a_cr_only_file_with_one_line_per_step_has_no_index_error(root: Path) -> None:
    text = b"- [ ] **1.1** a <!-- verify: true -->\r- [ ] **1.2** b <!-- verify: false -->"
    demo(root).write_bytes(text)
    person(root, "roadmap", "trust", "demo")
    person(root, "roadmap", "done", "demo", "1.2", expect=1)  # its verify line fails
    assert demo(root).read_bytes() == text
    person(root, "roadmap", "done", "demo", "1.1")
    assert demo(root).read_bytes() == text.replace(b"[ ] **1.1", b"[x] **1.1")


# -- one file, one roadmap ------------------------------------------------------------------


@pytest.mark.slow
def test_twenty_concurrent_done_through_two_slugs_give_twenty_ticks(ws: Path) -> None:
    body = "".join(f"- [ ] **1.{n}** step <!-- verify: sleep 0.1 -->\n" for n in range(1, 21))
    (ws / "roadmaps" / "many.md").write_text("## Phase 1\n" + body)
    (ws / "roadmaps" / "alias.md").symlink_to("many.md")
    person(ws, "roadmap", "trust", "many")

    def done(n: int) -> int:  # each a process of its own, as concurrent commands are
        slug = ("many", "alias", "alias.md", "many.md")[n % 4]
        args = ["roadmap", "done", slug, f"1.{n}"]
        return run_hostile(ws, args, 0, seconds=30, process=True).returncode

    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(done, range(1, 21))) == [0] * 20
    assert (ws / "roadmaps" / "many.md").read_text().count("- [x]") == 20
    assert (ws / "roadmaps" / "alias.md").is_symlink()


@pytest.mark.parametrize("alias", ["demo.md.md", "same", "same.md"])
def test_an_alias_of_a_claimed_roadmap_is_refused_to_a_peer(root: Path, alias: str) -> None:
    (root / "roadmaps" / "demo.md.md").symlink_to("demo.md")
    (root / "roadmaps" / "same.md").symlink_to("demo.md")
    kept = claim_file(root).read_bytes()
    result = run_hostile(root, ["sessions", "claim", alias, "--session", PEER], 1)
    assert "is claimed by session hostile-session" in result.stderr
    assert claim_file(root).read_bytes() == kept


def test_a_force_claim_that_fails_leaves_the_peer_claim(root: Path) -> None:
    kept = claim_file(root).read_bytes()
    runs = root / "state" / "runs"
    for path in runs.iterdir():
        path.unlink()
    runs.rmdir()
    runs.write_text("not a folder")  # the new run cannot be written
    run_hostile(root, ["sessions", "claim", "demo", "--session", PEER, "--force"], (1, 3))
    assert claim_file(root).read_bytes() == kept
    assert not (root / "state" / "claims" / f"{claims.session_key(PEER)}.json").exists()


@pytest.mark.parametrize(
    ("session", "expect"),
    [("\udc80bad", 1), ("esc\x1b[2Jape", 1), ("s" * 300, 1), ("séance-✓-会話", 0)],
    ids=["lone surrogate", "escape sequence", "300 characters", "non-ascii printable"],
)
def test_session_ids_are_handled_or_refused_before_any_write(
    ws: Path, session: str, expect: int
) -> None:
    run_hostile(ws, ["sessions", "claim", "demo", "--session", session], expect)
    assert (ws / "state").exists() is (expect == 0)


# -- trust ----------------------------------------------------------------------------------


def test_an_untrusted_roadmap_runs_nothing(ws: Path) -> None:
    text = b"- [ ] **1.1** a <!-- verify: touch PWNED -->\n"
    (ws / "roadmaps" / "evil.md").write_bytes(text)
    for args in (["roadmap", "done", "evil", "1.1"], ["roadmap", "verify", "evil"]):
        result = run_hostile(ws, args, 1)
        assert result.stderr == (
            "agentcfg: error: roadmap `evil` has verify lines no person has trusted "
            "(1.1 untrusted); review them with `agentcfg roadmap trust evil`\n"
        )
    assert not (ws / "PWNED").exists()
    assert (ws / "roadmaps" / "evil.md").read_bytes() == text


def test_a_changed_line_needs_new_trust_and_json_says_which(root: Path) -> None:
    demo(root).write_text(demo(root).read_text().replace("print('phases ok')", "1/0"))
    result = run_hostile(root, ["roadmap", "verify", "demo", "1.2", "1.3", "--json"], 1)
    error = json.loads(result.stdout)
    assert error["untrusted"] == [
        {"step": "1.2", "command": 'python -c "1/0"', "reason": "changed"}
    ]
    assert error["exit_code"] == 1 and "roadmap trust demo" in error["error"]
    shown = person(root, "roadmap", "trust", "demo")
    assert '1.2: python -c "1/0"' in shown
    person(root, "roadmap", "done", "demo", "1.3")


def test_the_trust_store_is_private_and_outside_the_repository(root: Path) -> None:
    store = root.parent / "xdg" / "agentcfg" / "trust.json"
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.parent.stat().st_mode) == 0o700
    entry = json.loads(store.read_text())["roadmaps"][str(demo(root).resolve())]
    assert sorted(entry["steps"]) == ["1.1", "1.2", "1.3", "2.1", "2.2"]


def test_without_xdg_the_store_is_under_home(ws: Path) -> None:
    env = hook_env(ws)
    env.pop("XDG_STATE_HOME", None)
    run_hostile(ws, ["roadmap", "trust", "demo"], 0, env={**env, "XDG_STATE_HOME": "relative"})
    assert (Path(env["HOME"]) / ".local" / "state" / "agentcfg" / "trust.json").is_file()


# -- nothing a terminal obeys ---------------------------------------------------------------

ESCAPES = "\x1b[2K\x1b[1A\x1b]0;x\x07\x9b31m\u202e"


@pytest.mark.parametrize(
    "args",
    [
        ["roadmap", "next", "demo"],
        ["roadmap", "status", "demo"],
        ["roadmap", "trust", "demo"],
        ["roadmap", "verify", "demo", "1.2"],
        ["sessions", "list"],
        ["roadmap", "next", "demo", "--json"],
    ],
)
def test_control_characters_never_reach_the_terminal(root: Path, args: list[str]) -> None:
    text = demo(root).read_text()
    demo(root).write_text(
        text.replace("Scope checkboxes", f"Scope{ESCAPES}boxes").replace(
            "print('phases ok')", f"print('{ESCAPES}')"
        )
    )
    if args[1] != "trust":
        person(root, "roadmap", "trust", "demo")
    result = run_hostile(root, args, 0)
    for char in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert char not in result.stdout + result.stderr
    if args[-1] == "--json":
        assert ESCAPES in json.loads(result.stdout)["text"]  # escaped, and decodes back


def test_ledger_fields_reach_report_escaped(root: Path) -> None:
    with (root / "state" / "run-continuation.jsonl").open("a") as ledger:
        event = {"event": "engage", "at": "2026-01-01T00:00:00Z", "run": "r" + ESCAPES}
        ledger.write(json.dumps({**event, "slug": ESCAPES, "iterations": 1}) + "\n")
    result = run_hostile(root, ["report"], 0)
    assert "\x1b" not in result.stdout and "\x9b" not in result.stdout


# -- state stays in the workspace -----------------------------------------------------------


def _link_out(root: Path, folder: str) -> Path:
    """Replace state/<folder> (or state/ itself) with a symlink to a copy outside."""
    inside = root / "state" / folder if folder else root / "state"
    outside = root.parent / f"outside-{folder or 'state'}"
    os.rename(inside, outside)
    inside.symlink_to(outside)
    return outside


@pytest.mark.parametrize("folder", ["", "claims", "runs", "cache", "refusals"])
def test_a_symlinked_state_folder_is_never_followed(root: Path, folder: str) -> None:
    fire_hostile(root, payload(root, last_assistant_message="warm up"))
    (root / "state" / "refusals").mkdir(exist_ok=True)
    _link_out(root, folder)
    result = fire_hostile(root, payload(root))  # asserts nothing was written outside
    if folder in ("", "claims", "runs"):
        assert result.returncode == 0  # the claim or its run is out of reach: allow
    run_hostile(root, ["sessions", "claim", "demo", "--session", SESSION], (0, 1))
    run_hostile(root, ["roadmap", "done", "demo", "1.2"], (0, 1))


def test_new_state_folders_are_private_whatever_the_umask(ws: Path) -> None:
    run_hostile(
        ws, ["sessions", "claim", "demo", "--session", SESSION], 0, preexec=lambda: os.umask(0)
    )
    folders = [ws / "state", *(p for p in (ws / "state").rglob("*") if p.is_dir())]
    assert {stat.S_IMODE(p.stat().st_mode) for p in folders} == {0o700}
    assert (ws / "state" / ".gitignore").read_text() == "*\n"


@pytest.mark.parametrize("where", ["roadmaps", "state/claims"])
def test_stale_temp_files_of_a_killed_writer_are_cleaned(root: Path, where: str) -> None:
    target = "demo.md" if where == "roadmaps" else f"{claims.session_key(SESSION)}.json"
    stale = root / where / f".{target}.0123456789ab.tmp"
    fresh = root / where / f".{target}.ba9876543210.tmp"
    foreign = root / where / ".someone-else.tmp"
    for path in (stale, fresh, foreign):
        path.write_text("half")
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    if where == "roadmaps":
        person(root, "roadmap", "done", "demo", "1.2")
    else:
        person(root, "sessions", "claim", "demo", "--session", SESSION)
    assert not stale.exists() and fresh.exists() and foreign.exists()


# -- hooks install --------------------------------------------------------------------------


def test_install_writes_through_a_symlinked_settings_file(ws: Path) -> None:
    real = ws / "shared-settings.json"
    real.write_text('{"theme": "dark"}\n')
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").symlink_to(real)
    run_hostile(ws, ["hooks", "install", "--host", "claude"], 0)
    assert (ws / ".claude" / "settings.json").is_symlink()
    data = json.loads(real.read_text())
    assert data["theme"] == "dark" and "Stop" in data["hooks"]


@pytest.mark.parametrize("host", ["claude", "codex", "gemini", "cursor"])
def test_install_refuses_a_host_folder_linked_out_of_the_project(ws: Path, host: str) -> None:
    outside = ws.parent / f"outside-{host}"
    outside.mkdir()
    (ws / f".{host}").symlink_to(outside)
    env = env_of(ws, CODEX_HOME="")
    result = run_hostile(ws, ["hooks", "install", "--host", host], 1, env=env)
    assert "outside the project" in result.stderr
    assert list(outside.iterdir()) == []


# -- bounds ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args", [["roadmap", "lint"], ["roadmap", "status", "demo"], ["doctor"], ["roadmap", "list"]]
)
@pytest.mark.parametrize("where", ["frontmatter", "agentcfg.yaml"])
def test_a_yaml_alias_bomb_is_bounded(root: Path, args: list[str], where: str) -> None:
    if where == "frontmatter":
        demo(root).write_text(ALIAS_BOMB)
    else:
        (root / "agentcfg.yaml").write_text(ALIAS_BOMB.split("---\n")[1])
    result = run_hostile(root, args, (0, 1), seconds=4, process=True)  # bounded in memory too
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("always", [False, True])
def test_a_one_mib_config_costs_no_time_per_fire(root: Path, always: bool) -> None:
    head = "turn_end_gate: {scope: always}\n" if always else ""
    (root / "agentcfg.yaml").write_text(head + "# padding padding padding\n" * 40_000)
    for n in range(3):
        started = time.monotonic()
        fire_hostile(root, payload(root, last_assistant_message=f"Working {n}."))
        assert time.monotonic() - started < 2.0


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _device(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _long_line(path: Path) -> None:
    with path.open("wb") as handle:
        handle.write(b'{"event": "engage"}\n')
        handle.truncate(300 << 20)  # a sparse 300 MB line of NULs


@pytest.mark.parametrize("kind", [_fifo, _device, _long_line], ids=["fifo", "device", "300 MB"])
def test_report_reads_only_a_regular_ledger_line_by_bounded_line(
    root: Path, kind: Callable[[Path], None]
) -> None:
    ledger = root / "state" / "run-continuation.jsonl"
    ledger.unlink()
    kind(ledger)
    out = run_hostile(root, ["report", "--json"], 0, seconds=15, process=True)
    assert json.loads(out.stdout)["matched"] == 0  # nothing read from a FIFO, device or NULs


def _no_constant(name: str) -> None:
    raise AssertionError(f"{name} in JSON output")


NUMBERS = ["²", "1e309", "NaN", "Infinity", "9" * 400, "-1", "٣"]


@pytest.mark.parametrize("value", NUMBERS)
def test_odd_numbers_in_env_and_config_never_crash(root: Path, value: str) -> None:
    env = env_of(root, AGENTCFG_MAX_ITERATIONS=value, AGENTCFG_WALL_CLOCK=value)
    fire_hostile(root, payload(root), env=env)
    (root / "agentcfg.yaml").write_text(
        f"ladder: {{max_iterations: {value}, wall_clock: {value}}}\n"
    )
    result = run_hostile(root, ["doctor", "--json"], (0, 1), env=env)
    findings = json.loads(result.stdout, parse_constant=_no_constant)  # no Infinity, no NaN
    assert isinstance(findings, list) and findings


@pytest.mark.parametrize("value", NUMBERS)
def test_odd_numbers_in_claim_flags_are_usage_errors(root: Path, value: str) -> None:
    kept = claim_file(root).read_bytes()
    for flag in ("--max-iterations", "--wall-clock"):
        run_hostile(root, ["sessions", "claim", "demo", "--session", SESSION, flag, value], 2)
    assert claim_file(root).read_bytes() == kept


@pytest.mark.parametrize("value", ["1e309", "NaN", "Infinity", "-Infinity", "9" * 400])
def test_odd_numbers_in_state_files_never_reach_json(root: Path, value: str) -> None:
    data = json.loads(claim_file(root).read_text())
    claim_file(root).write_text(
        json.dumps(data)[:-1] + f', "wall_clock": {value}, "max_iterations": {value}}}'
    )
    fire_hostile(root, payload(root))
    for args in (["sessions", "list", "--json"], ["sessions", "show", "--json"]):
        out = run_hostile(root, args, 0, env=env_of(root, AGENTCFG_SESSION_ID=SESSION))
        shown = json.loads(out.stdout, parse_constant=_no_constant)  # no Infinity, no NaN
        assert isinstance(shown, (list, dict, type(None)))  # the claims, or none: never a number


# -- failing loudly, and nothing else -------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["roadmap", "status", "missing", "--json"],
        ["roadmap", "next", "../x", "--json"],
        ["roadmap", "verify", "demo", "9.9", "--json"],
        ["sessions", "list", "--json"],
    ],
)
def test_json_error_paths_print_a_json_error(root: Path, args: list[str]) -> None:
    if args[:2] == ["sessions", "list"]:
        (root / "state" / "claims").chmod(0o000)  # unreadable: an empty list, not an error
        result = run_hostile(root, args, 0)
        (root / "state" / "claims").chmod(0o700)
        assert isinstance(json.loads(result.stdout), list)
        return
    result = run_hostile(root, args, 1)
    error = json.loads(result.stdout)
    assert error["exit_code"] == 1 and error["error"] in result.stderr


@pytest.mark.parametrize(
    "args", [["roadmap", "next", "demo"], ["roadmap", "status", "demo"], ["sessions", "list"]]
)
def test_an_output_encoding_without_the_characters_never_crashes(
    root: Path, args: list[str]
) -> None:
    demo(root).write_text(demo(root).read_text().replace("Scope", "Scope 🧭 ✓ 会話"))
    env = env_of(root, PYTHONIOENCODING="latin-1")  # read as the interpreter starts
    result = run_hostile(root, args, 0, env=env, process=True)
    assert result.returncode == 0


def test_a_lone_surrogate_in_the_message_keeps_the_refusal(root: Path) -> None:
    message = "I'll now run the tests and report back \ud83d"
    data = json.dumps(payload(root, last_assistant_message=message)).encode()
    result = fire_hostile(root, data)
    assert result.returncode == 2 and result.stderr.startswith(b"turn-end-gate:")
    refused = [
        json.loads(line)
        for line in (root / "state" / "run-continuation.jsonl").read_text().splitlines()
        if '"refused"' in line
    ]
    assert refused and "\ud83d" not in refused[-1]["quote"]


def test_a_typo_in_the_chain_keeps_the_default_chain(root: Path) -> None:
    (root / "agentcfg.yaml").write_text("chain: {stop: [turn-end-gate, run-continuaton]}\n")
    assert fire_hostile(root, payload(root)).returncode == 2  # still continued
    result = run_hostile(root, ["doctor"], (0, 1))
    assert "unknown concern 'run-continuaton'; using the default chain" in result.stdout


@pytest.mark.parametrize("how", ["excerpt", "hash"])
def test_the_ledger_keeps_no_verbatim_assistant_text(root: Path, how: str) -> None:
    (root / "agentcfg.yaml").write_text(f"ledger: {{quotes: {how}}}\n")
    secret = "ghp_0123456789abcdefghijABCDEFGHIJ"
    message = (
        f"I'll now push with token {secret} and then {'carefully ' * 8}deploy it all to production."
    )
    assert fire_hostile(root, payload(root, last_assistant_message=message)).returncode == 2
    ledger = (root / "state" / "run-continuation.jsonl").read_text()
    assert secret not in ledger and "deploy it all to production" not in ledger
    quote = [json.loads(x) for x in ledger.splitlines() if '"refused"' in x][-1]["quote"]
    assert quote.startswith("sha256:") if how == "hash" else "***" in quote
