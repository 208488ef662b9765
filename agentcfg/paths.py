"""Names every part agrees on, with the interpreter's own modules and the core's digest only:
the stop hook reads them before it knows it has work to do.

The workspace root rule (docs/architecture.md, section 2) lives here once, for the hook and
the CLI.
"""

from __future__ import annotations

import os

from agentcfg.core.digest import sha256_hex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

CONFIG_NAME = "agentcfg.yaml"
ROADMAPS = "roadmaps"
STATE = "state"
LEDGER_NAME = "run-continuation.jsonl"  # state/run-continuation.jsonl: every fire's event
# the folders of state/, one kind of file each
CLAIMS = "claims"  # state/claims/<session key>.json: a session's claim on a roadmap
PENDING = "pending"  # state/pending/<token>.json: a claim waiting for the session that shows it
RUNS = "runs"  # state/runs/<session key>-<slug>.json: a run's counters
STOPS = "stops"  # state/stops/<slug>.json: a person's stop on a roadmap
YIELDS = "yields"  # state/yields/<run>.json: `agentcfg run` asks a run to end its turn
REFUSALS = "refusals"  # state/refusals/<session key>.json: the turn-end gate's refusals
MARKS = "marks"  # state/marks/<session key>-<slug>.json: the open steps the last fire saw
PROOFS = "proofs"  # state/proofs/<slug>.json: earlier versions' proofs, read, never written
CACHE = "cache"  # state/cache/<kind>-<name>.json: parses kept by the file they came from
LOCKS = "locks"  # state/locks/roadmap-<slug>.lock: one writer of a roadmap file at a time
FLEET = "fleet"  # state/fleet/<slug>.json: this workspace's step lease in a fleet
WORKTREES = "worktrees"  # state/worktrees/<slug>/<n>/: the worktrees of `run --agents`
CONTRACTS = "contracts"  # state/contracts/<key>-<slug>.json: the contract of one run
RECEIPTS = "receipts"  # state/receipts/<slug>.json: the receipts of a roadmap's steps
FINALS = "finals"  # state/finals/<slug>.json: the re-proof of every contracted step at the end
CARRIED = "carried"  # state/carried/<slug>.json: a fleet's receipts, committed on its branch
CHECKS = "checks"  # state/checks/<slug>.json: steps `roadmap done` refused, their check changed
CHECKPOINTS = "checkpoints"  # state/checkpoints/<slug>.json: the step the last checkpoint was for
BASELINES = "baselines"  # state/baselines/<slug>.json: each open step's check before the work
DRIVERS = "drivers"  # state/drivers/<session key>.json: the `agentcfg run` process of a claim
# set by `agentcfg run` for the host it starts: the run is unattended, on this host
RUN_HOST_ENV = "AGENTCFG_RUN_HOST"
# a person's own state, outside any workspace (see user_state)
TRUST_STORE = "trust.json"  # the verify lines a person trusted
SEAL_KEY = "seal.key"  # the key that seals the records deciding a run's ending (contract/seal.py)
ERROR_LOG = "error.log"  # the traceback of the CLI's last unexpected error


def locate_root(cwd: str, env: Mapping[str, str]) -> str:
    """$AGENTCFG_ROOT, else the nearest ancestor holding agentcfg.yaml or roadmaps/, else cwd."""
    explicit = env.get("AGENTCFG_ROOT")
    if explicit:
        return os.path.abspath(explicit)
    start = folder = os.path.abspath(cwd or ".")
    while True:
        if os.path.isfile(os.path.join(folder, CONFIG_NAME)) or os.path.isdir(
            os.path.join(folder, ROADMAPS)
        ):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return start
        folder = parent


_REMOTE_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/")


def remote_name_ok(name: str) -> bool:
    """A name git can only read as a remote's: letters, digits and `._-/`, never starting with
    `-` (an option to git) or `.`, with no `..` and at most 100 characters. Every coordinate
    that reaches git goes through this, whether a person typed it or a file held it."""
    return (
        0 < len(name) <= 100
        and name[0] not in "-./"
        and ".." not in name
        and all(c in _REMOTE_CHARS for c in name)
    )


def session_key(session_id: str) -> str:
    """The first 32 hex digits of sha256(session id): the session's file name in state/."""
    return sha256_hex(session_id.encode("utf-8", "surrogatepass"))[:32]


def user_state(env: Mapping[str, str]) -> str:
    """$XDG_STATE_HOME/agentcfg, else ~/.local/state/agentcfg: what is a person's, not a
    workspace's (a relative $XDG_STATE_HOME is ignored, as the XDG rules say)."""
    base = env.get("XDG_STATE_HOME", "")
    if not os.path.isabs(base):
        home = env.get("HOME") or os.path.expanduser("~")
        base = os.path.join(home, ".local", "state")
    return os.path.join(base, "agentcfg")
