"""The host Protocols and the registry's check of them: each Protocol's members are the names
the registry checks every host module for, and a module that lacks one is refused."""

from __future__ import annotations

import sys
import types

import pytest

from agentcfg.hosts import protocols, registry
from agentcfg.hosts.registry import HOSTS, ROLES, HostModuleError, adapter, check

PROTOCOLS = {"HookDialect": protocols.HookDialect, "Wiring": protocols.Wiring,
             "Launcher": protocols.Launcher}  # fmt: skip


def members(protocol: type) -> set[str]:
    """The names a Protocol class declares, its bases' included."""
    found: set[str] = set()
    for cls in protocol.__mro__:
        if cls.__module__ == protocols.__name__:
            found |= {name for name in vars(cls) if not name.startswith("_")}
            found |= set(getattr(cls, "__annotations__", {}))
    return found


@pytest.mark.parametrize("role", sorted(PROTOCOLS))
def test_each_protocols_members_are_what_the_registry_checks(role: str) -> None:
    assert members(PROTOCOLS[role]) == set(ROLES[role])
    assert len(ROLES[role]) == len(set(ROLES[role]))


def test_host_is_the_three_roles_and_nothing_more() -> None:
    assert set(ROLES) == set(PROTOCOLS)
    assert members(protocols.Host) == set().union(*map(set, ROLES.values()))


@pytest.mark.parametrize("host", HOSTS)
def test_every_registered_host_plays_every_role(host: str) -> None:
    module = adapter(host)
    for role, names in ROLES.items():
        assert [name for name in names if not hasattr(module, name)] == [], role


def lacking(name: str, member: str) -> types.ModuleType:
    """A copy of a host module without one member."""
    copy = types.ModuleType(f"agentcfg.hosts.{name}")
    copy.__dict__.update({k: v for k, v in vars(adapter(name)).items() if k != member})
    copy.__name__ = f"agentcfg.hosts.{name}"
    return copy


@pytest.mark.parametrize(("role", "member"), [("HookDialect", "to_event"), ("Wiring", "trust"),
                                              ("Launcher", "refusals"), ("Wiring", "NAME")])  # fmt: skip
def test_a_module_missing_a_member_is_refused(role: str, member: str) -> None:
    copy = lacking("claude", member)
    with pytest.raises(
        HostModuleError, match=rf"agentcfg\.hosts\.claude lacks .*{role} .*{member}"
    ):
        check(copy)
    check(adapter("claude"))  # the real module passes


def test_adapter_refuses_a_registered_module_that_lacks_a_member(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Through the registry itself: a host listed in HOSTS whose module lacks `hear`."""
    import agentcfg.hosts as package

    fake = lacking("qwen", "hear")
    fake.__name__ = "agentcfg.hosts.fake"
    monkeypatch.setitem(sys.modules, "agentcfg.hosts.fake", fake)
    monkeypatch.setattr(package, "fake", fake, raising=False)
    monkeypatch.setattr(registry, "HOSTS", (*HOSTS, "fake"))
    with pytest.raises(HostModuleError, match=r"agentcfg\.hosts\.fake lacks Launcher hear$"):
        adapter("fake")
    assert "fake" not in registry._CHECKED
