"""A coordinate that reaches git from a file is held to a remote's name, as the command line's is:
a repository that commits `state/fleet/<slug>.json` with an option for git in it runs nothing
through the stop hook, nor through `sessions release`."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcfg.errors import LeaseError
from agentcfg.fleet.leases import Store
from agentcfg.fleet.membership import read_membership
from agentcfg.paths import remote_name_ok
from agentcfg.workspace import Workspace
from tests.conftest import FIXTURES, SESSION, fire, fixture_payload, run_cli


def _committed_membership(ws: Path, coordinate: str, proof: Path) -> None:
    """A cloned repository whose state/ holds a lease long due for renewal."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(ws)], check=True)
    shutil.copy(FIXTURES / "transcript.jsonl", ws / "transcript.jsonl")
    (ws / "state" / "fleet").mkdir(parents=True, exist_ok=True)
    record = {
        "slug": "demo", "holder": "x", "step": "1.1", "fence": 1, "ttl": 60,
        "expires": "2000-01-01T00:00:00Z", "coordinate": coordinate.format(proof=proof),
    }  # fmt: skip
    (ws / "state" / "fleet" / "demo.json").write_text(json.dumps(record))


@pytest.mark.parametrize(
    "coordinate",
    [
        "--upload-pack=touch {proof};",
        "--upload-pack=touch {proof}",
        "-u touch {proof}",
        "ext::sh -c touch% {proof}",
        "origin --upload-pack=touch {proof}",
    ],
)
def test_a_committed_coordinate_runs_nothing_at_a_turn_end(
    ws: Path, tmp_path: Path, coordinate: str
) -> None:
    proof = tmp_path / "PWNED"
    _committed_membership(ws, coordinate, proof)
    assert run_cli("sessions", "claim", "demo", "--session", SESSION).exit_code == 0
    result = fire(ws, fixture_payload(1, ws))
    assert result.returncode in (0, 2)  # decided as a plain run: the membership is not one
    assert not proof.exists()
    assert read_membership(Workspace(ws), "demo") is None
    released = run_cli("sessions", "release", "--session", SESSION)
    assert released.exit_code == 0, released.output
    assert not proof.exists()


def test_a_store_refuses_a_coordinate_no_remote_can_have(tmp_path: Path) -> None:
    with pytest.raises(LeaseError, match="cannot name a git remote"):
        Store(tmp_path, "--upload-pack=touch /tmp/x")
    with pytest.raises(LeaseError, match="cannot name a git remote"):
        Store.open(tmp_path, "-oProxyCommand=x")


def test_the_command_lines_coordinate_is_held_to_the_same_rule(ws: Path, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(ws)], check=True)
    proof = tmp_path / "PWNED"
    result = run_cli(
        "sessions", "claim", "demo", "--session", SESSION, "--step", "auto",
        "--coordinate", f"--upload-pack=touch {proof}",
    )  # fmt: skip
    assert result.exit_code == 1
    assert "cannot name a git remote" in result.output
    assert not proof.exists()


@given(st.text(max_size=120))
def test_a_remote_name_never_reads_as_an_option_or_leaves_its_folder(name: str) -> None:
    if remote_name_ok(name):
        assert not name.startswith(("-", ".", "/"))
        assert ".." not in name and len(name) <= 100
        assert all(c.isascii() and (c.isalnum() or c in "._-/") for c in name)


@pytest.mark.parametrize("name", ["origin", "upstream", "team/fleet", "my-remote_2.x"])
def test_ordinary_remote_names_are_kept(name: str) -> None:
    assert remote_name_ok(name)
