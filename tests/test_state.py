"""The state store: atomic writes, odd files read as absent, locks, the ledger, crash safety."""

from __future__ import annotations

import json
import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentcfg import state
from agentcfg.core import times
from agentcfg.errors import StateError


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_write_json_is_private_and_readable(tmp_path: Path) -> None:
    target = tmp_path / "state" / "claims" / "a.json"
    state.write_json(target, {"x": 1})
    assert state.read_json(target) == {"x": 1}
    assert mode_of(target) == 0o600
    assert mode_of(target.parent) == 0o700
    assert [p.name for p in target.parent.iterdir()] == ["a.json"]  # no temp file left


@pytest.mark.parametrize(
    "content",
    [b"", b"not json", b"[1, 2]", b'"text"', b'{"a": 1', b"\xff\xfe", b"{}" + b" " * (2 << 20)],
)
def test_odd_files_read_as_absent(tmp_path: Path, content: bytes) -> None:
    target = tmp_path / "f.json"
    target.write_bytes(content)
    assert state.read_json(target) is None


def test_shape_check_and_symlinks_read_as_absent(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text('{"a": 1}')
    assert state.read_json(real, lambda d: "b" in d) is None
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert state.read_json(link) is None
    os.mkfifo(tmp_path / "fifo.json")
    assert state.read_json(tmp_path / "fifo.json") is None


def test_write_replaces_a_symlink_instead_of_following_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text("{}")
    link = tmp_path / "state" / "x.json"
    link.parent.mkdir()
    link.symlink_to(outside)
    state.write_json(link, {"new": True})
    assert outside.read_text() == "{}"
    assert not link.is_symlink()


def test_lock_times_out_instead_of_waiting_forever(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"""
import sys, time
from pathlib import Path
from agentcfg import state
from agentcfg.core import times
with state.locked(Path({str(lock)!r})):
    print("held", flush=True)
    time.sleep(30)
""",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(StateError, match="held by another process"), state.locked(lock, 0.2):
            pass
    finally:
        holder.kill()
        holder.wait()
    with state.locked(lock, 1):  # free again once the holder is gone
        pass


def test_ledger_appends_whole_lines(tmp_path: Path) -> None:
    for n in range(3):
        assert state.append_ledger(tmp_path / "state", {"event": "engage", "n": n})
    path = tmp_path / "state" / state.LEDGER_NAME
    assert [json.loads(line)["n"] for line in path.read_text().splitlines()] == [0, 1, 2]
    assert mode_of(path) == 0o600


def test_ledger_failure_is_reported_not_raised(tmp_path: Path) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("a file where the folder should be")
    assert state.append_ledger(blocker, {"event": "x"}) is False


def test_iso_round_trip() -> None:
    assert times.iso(0) == "1970-01-01T00:00:00Z"
    assert times.parse_iso("1970-01-01T00:00:10Z") == 10.0
    assert times.parse_iso("yesterday") is None
    assert times.parse_iso(5) is None


WRITER = """
import sys
from pathlib import Path
from agentcfg import state
from agentcfg.core import times
target = Path(sys.argv[1])
n = 0
print("ready", flush=True)
while True:
    n += 1
    state.write_json(target, {"n": n, "pad": "x" * (n % 50000)})
"""


@pytest.mark.slow
def test_sigkill_mid_write_leaves_old_or_new_never_torn(tmp_path: Path) -> None:
    target = tmp_path / "state" / "runs" / "r.json"
    state.write_json(target, {"n": 0, "pad": ""})
    rng = random.Random(7)
    for _ in range(20):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.05))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        data = json.loads(target.read_text())  # raises if torn
        assert set(data) == {"n", "pad"}
        assert len(data["pad"]) == data["n"] % 50000
