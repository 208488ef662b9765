"""`notify.command` against a hostile repository: a cloned `agentcfg.yaml` runs nothing a
person did not trust, and no file of the workspace stands in for the notifier's code."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import hook_env
from tests.helpers import ledger
from tests.hostile.conftest import env_of
from tests.hostile.harness import fire_hostile, payload, run_hostile


def configure(root: Path, *words: str) -> None:
    """The repository's own agentcfg.yaml, as a clone brings it."""
    (root / "agentcfg.yaml").write_text("notify:\n  command: " + json.dumps(list(words)) + "\n")


def writes(path: Path) -> list[str]:
    """A notify command that leaves a file behind when it runs."""
    return [sys.executable, "-c", f"open({str(path)!r}, 'w').write('ran')"]


def wait_for_event(root: Path, name: str, seconds: float = 20.0) -> dict[str, object]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = [e for e in ledger(root) if e["event"] == name]
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no {name} event in time")


def wait_for_file(path: Path, seconds: float = 20.0) -> None:
    """Until the notifier has written `path` (created, it may still be empty a moment)."""
    deadline = time.monotonic() + seconds
    while not (path.exists() and path.stat().st_size):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.1)


def test_an_untrusted_notify_command_never_runs(claimed: Path) -> None:
    ran = claimed.parent / "ran"
    configure(claimed, *writes(ran))  # arrived with the branch, after the person's trust
    run_hostile(claimed, ["stop", "demo"], 0)
    fire_hostile(claimed, payload(claimed), env=env_of(claimed))  # the stopped run's ending
    refused = wait_for_event(claimed, "notify-error")
    assert "roadmap trust" in str(refused["error"])
    time.sleep(1.0)
    assert not ran.exists()
    doctor = run_hostile(claimed, ["doctor"], (0, 1), env=env_of(claimed))
    assert "notify.command is not trusted" in doctor.stdout


def test_a_notify_command_runs_once_trusted_and_not_once_changed(claimed: Path) -> None:
    ran = claimed.parent / "ran"
    configure(claimed, *writes(ran))
    shown = run_hostile(claimed, ["roadmap", "trust", "demo"], 0, env=env_of(claimed))
    assert "notify command of agentcfg.yaml" in shown.stdout
    doctor = run_hostile(claimed, ["doctor"], (0, 1), env=env_of(claimed))
    assert "notify.command is trusted" in doctor.stdout
    run_hostile(claimed, ["stop", "demo"], 0)
    fire_hostile(claimed, payload(claimed), env=env_of(claimed))
    wait_for_file(ran)
    changed = claimed.parent / "changed"
    configure(claimed, *writes(changed))
    run_hostile(claimed, ["resume", "demo"], 0)
    run_hostile(claimed, ["stop", "demo"], 0)
    (claimed / "state" / "run-continuation.jsonl").unlink()
    fire_hostile(claimed, payload(claimed, session_id="another-session"), env=env_of(claimed))
    run_hostile(claimed, ["sessions", "claim", "demo", "--session", "s3"], 1)
    assert not changed.exists()


def test_no_workspace_file_stands_in_for_the_notifier(claimed: Path) -> None:
    told, hijacked = claimed.parent / "told", claimed.parent / "hijacked"
    configure(claimed, *writes(told))
    run_hostile(claimed, ["roadmap", "trust", "demo"], 0, env=env_of(claimed))
    run_hostile(claimed, ["stop", "demo"], 0)
    package = claimed / "agentcfg"  # a folder of the repository named like our package
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "notify.py").write_text(f"open({str(hijacked)!r}, 'w').write('ran')\n")
    elsewhere = claimed.parent / "elsewhere"  # the host's own folder: the hook is our code
    elsewhere.mkdir()
    subprocess.run(
        [sys.executable, "-m", "agentcfg", "hook", "stop"],
        input=json.dumps(payload(claimed)).encode(),
        env=env_of(claimed) | hook_env(claimed),
        cwd=elsewhere,
        capture_output=True,
        timeout=30,
        check=True,
    )
    wait_for_file(told)
    time.sleep(0.5)
    assert not hijacked.exists()
