"""The simulated fleet `make bench` times: member processes that lease, work and integrate every
step once, each telling its host's work apart from the fleet's own time."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from testing import simfleet


@pytest.mark.slow  # member processes and their git, a minute on a busy machine
def test_two_member_processes_integrate_every_step_once_and_tell_their_work(
    tmp_path: Path,
) -> None:
    env = dict(os.environ)
    root = tmp_path / "project"
    coordinate = simfleet.make_project(root, 3, env, remote=True)
    assert coordinate == simfleet.REMOTE
    outcome = simfleet.run(root, 2, 0.0, env, coordinate)
    assert (outcome.integrated, outcome.open_left) == (3, 0)
    assert [m.code for m in outcome.members] == [0, 0]
    worked = sorted(step for m in outcome.members for step, _, _ in m.work)
    assert worked == ["1.1", "1.2", "1.3"]
    for member in outcome.members:
        assert member.began <= member.ended
        assert all(
            member.began <= start <= until <= member.ended for _, start, until in member.work
        )
    assert outcome.own_per_step is not None
    pushed = simfleet.git(root, "ls-remote", coordinate, "refs/heads/main").split()[0]
    assert pushed == simfleet.git(root, "rev-parse", "HEAD")  # the fleet's branch on the remote
