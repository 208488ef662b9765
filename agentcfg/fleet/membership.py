"""A fleet member's workspace: the step it leases, kept in state/fleet/<slug>.json.

Read on every turn end of a fleet member, so the standard library and state only: the git
work of leases loads when a lease is taken, renewed or checked. The record is sealed
(contract/seal.py): one whose seal fails is no membership, and `tampered` says so.
"""

from __future__ import annotations

from agentcfg import state
from agentcfg.contract import seal
from agentcfg.core.records import Record
from agentcfg.core.times import iso, parse_iso
from agentcfg.paths import FLEET, STATE
from agentcfg.paths import remote_name_ok as _remote_ok
from agentcfg.workspace import Workspace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any


class Membership(Record):
    """This workspace's place in a fleet on one roadmap: who it is, and the step it leases."""

    slug: str
    holder: str  # the member's own id, kept across the host sessions it starts
    step: str
    fence: int
    ttl: float
    expires: float  # as last taken or renewed: a turn end renews it once half the time is gone
    coordinate: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "slug": self.slug,
            "holder": self.holder,
            "step": self.step,
            "fence": self.fence,
            "ttl": self.ttl,
            "expires": iso(self.expires),
            "coordinate": self.coordinate,
        }

    @property
    def renewal_due(self) -> float:
        """When a turn end renews the lease: once half its time is gone."""
        return self.expires - self.ttl / 2


def membership_path(ws: Workspace, slug: str) -> Path:
    return ws.state / FLEET / f"{slug}.json"


def shown(slug: str) -> str:
    """The record's path as the person reads it."""
    return f"{STATE}/{FLEET}/{slug}.json"


def read_membership(ws: Workspace, slug: str) -> Membership | None:
    """This workspace's membership on the roadmap, or None (none, not of a valid shape, or
    its seal fails)."""
    data = state.read_json(membership_path(ws, slug))
    if not isinstance(data, dict) or not _sealed(slug, data):
        return None
    return _membership(data)


def tampered(ws: Workspace, slug: str) -> bool:
    """A membership record is there, of a valid shape, and its seal is missing or wrong."""
    data = state.read_json(membership_path(ws, slug))
    return data is not None and _membership(data) is not None and not _sealed(slug, data)


def _sealed(slug: str, data: dict[str, Any]) -> bool:
    body = {k: v for k, v in data.items() if k != seal.FIELD}
    return seal.check(FLEET, slug, body, data.get(seal.FIELD))


def _membership(data: dict[str, Any]) -> Membership | None:
    slug_, holder, step, fence = (data.get(k) for k in ("slug", "holder", "step", "fence"))
    ttl, coordinate, expires = (
        data.get("ttl"),
        data.get("coordinate"),
        parse_iso(data.get("expires")),
    )
    if not (isinstance(slug_, str) and isinstance(holder, str) and isinstance(step, str)):
        return None
    if type(fence) is not int or not isinstance(ttl, (int, float)) or not ttl > 0:
        return None
    if expires is None or not (
        coordinate is None or (isinstance(coordinate, str) and _remote_ok(coordinate))
    ):
        return None  # a coordinate no remote can have is never handed to git
    return Membership(slug_, holder, step, fence, float(ttl), expires, coordinate)


def remember(ws: Workspace, member: Membership) -> None:
    body = member.to_json()
    record = {**body, seal.FIELD: seal.sign(FLEET, member.slug, body)}
    state.write_json(membership_path(ws, member.slug), record)


def forget(ws: Workspace, slug: str) -> None:
    state.remove(membership_path(ws, slug))


def renew(ws: Workspace, member: Membership, now: float) -> Membership | None:
    """The membership with its lease renewed; None when the lease is no longer this member's.
    Runs git, so a turn end calls it only once the renewal is due."""
    from agentcfg.fleet.leases import Lease, Store

    held = Lease(member.slug, member.step, member.holder, "", "", 0.0, member.expires, member.fence)
    renewed = Store.open(ws.root, member.coordinate).renew(held, now=now, ttl=member.ttl)
    if renewed is None:
        return None
    updated = member._replace(expires=renewed.expires)
    remember(ws, updated)
    return updated
