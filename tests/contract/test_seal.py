"""Seals: an HMAC-SHA256 with the person's own key over a record's canonical JSON, bound to the
record's kind and name; the key is made once, private, by the first write, never by a read."""

from __future__ import annotations

import hashlib
import hmac
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcfg.contract import seal
from agentcfg.core.digest import hmac_sha256_hex
from agentcfg.errors import StateError

BODY = {"step": "1.1", "text": "ab" * 32, "exit_code": 0, "at": "2026-01-01T00:00:00Z"}


def env_of(tmp_path: Path) -> dict[str, str]:
    return {"XDG_STATE_HOME": str(tmp_path / "xdg"), "HOME": str(tmp_path / "home")}


@given(st.binary(max_size=200), st.binary(max_size=300))
def test_the_hmac_is_the_standard_librarys(key: bytes, data: bytes) -> None:
    assert hmac_sha256_hex(key, data) == hmac.new(key, data, hashlib.sha256).hexdigest()


def test_a_seal_holds_for_its_record_and_no_other(tmp_path: Path) -> None:
    env = env_of(tmp_path)
    mark = seal.sign("receipts", "demo", BODY, env)
    assert seal.check("receipts", "demo", BODY, mark, env)
    assert seal.check("receipts", "demo", dict(reversed(BODY.items())), mark, env)  # any order
    assert not seal.check("receipts", "other", BODY, mark, env)  # another roadmap's
    assert not seal.check("contracts", "demo", BODY, mark, env)  # another kind of record
    assert not seal.check("receipts", "demo", {**BODY, "exit_code": 1}, mark, env)
    assert not seal.check("receipts", "demo", BODY, None, env)  # unsealed is refused
    assert not seal.check("receipts", "demo", BODY, mark.upper(), env)


def test_the_key_is_the_persons_own_private_and_made_once(tmp_path: Path) -> None:
    env = env_of(tmp_path)
    path = Path(seal.key_path(env))
    assert path == tmp_path / "xdg" / "agentcfg" / "seal.key"
    assert (
        not seal.check("runs", "r", BODY, "0" * 64, env) and not path.exists()
    )  # a read makes none
    first = seal.sign("runs", "r", BODY, env)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and len(path.read_bytes()) == 32
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    made = path.read_bytes()
    assert seal.sign("runs", "r", BODY, env) == first and path.read_bytes() == made
    assert [p.name for p in path.parent.iterdir()] == ["seal.key"]  # no temp file left


def test_another_persons_key_breaks_every_seal(tmp_path: Path) -> None:
    mark = seal.sign("runs", "r", BODY, env_of(tmp_path / "one"))
    other = env_of(tmp_path / "two")
    seal.sign("runs", "r", BODY, other)  # this person has a key of their own
    assert not seal.check("runs", "r", BODY, mark, other)


@pytest.mark.parametrize("bad", [b"short", b"x" * 33])
def test_a_key_agentcfg_did_not_make_seals_nothing(tmp_path: Path, bad: bytes) -> None:
    env = env_of(tmp_path)
    path = Path(seal.key_path(env))
    path.parent.mkdir(parents=True)
    path.write_bytes(bad)
    assert not seal.check("runs", "r", BODY, "0" * 64, env)
    with pytest.raises(StateError, match="is not one agentcfg made; remove it"):
        seal.sign("runs", "r", BODY, env)


def test_a_symlinked_key_is_never_followed(tmp_path: Path) -> None:
    env = env_of(tmp_path)
    path = Path(seal.key_path(env))
    path.parent.mkdir(parents=True)
    (tmp_path / "elsewhere").write_bytes(b"k" * 32)
    path.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(StateError, match="cannot be read"):
        seal.sign("runs", "r", BODY, env)
    assert not seal.check("runs", "r", BODY, "0" * 64, env)
