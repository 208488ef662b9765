"""The stop hook's first look: is there anything to decide at all?

Most fires come from sessions with no claim. This module answers that case with the
interpreter's own modules only (no json, re or dataclasses), so that a fire with nothing
to do costs little more than starting Python.
"""

from __future__ import annotations

import os

from agentcfg import _speed
from agentcfg.paths import CLAIMS, CONFIG_NAME, PENDING, STATE, session_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

PAYLOAD_LIMIT = 16 * 1024 * 1024


def loads(text: str) -> object:
    """json.loads for a JSON text, ValueError when it is not one (without loading json)."""
    return _speed.loads(text)


def nothing_to_do(root: str, session_id: str, env: Mapping[str, str]) -> bool:
    """True when no concern can act: no claim for this session, no pending claim it could
    adopt, and no gate set to `always`."""
    if session_id and (
        os.path.exists(os.path.join(root, STATE, CLAIMS, session_key(session_id) + ".json"))
        or any_pending(root)
    ):
        return False
    try:
        with open(os.path.join(root, CONFIG_NAME), "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return True
    # Only `turn_end_gate.scope: always` acts without a claim, and a file that does not hold
    # the word cannot say it; one that does is read properly.
    if b"always" not in head and len(head) < 4096:
        return True
    from pathlib import Path

    from agentcfg.config import load_config
    from agentcfg.workspace import Workspace

    return load_config(Workspace(Path(root)), env).gate_scope != "always"


def any_pending(root: str) -> bool:
    """A claim made with no session id waits in state/pending/ for the session that shows it.

    Stops at the first one: the folder may hold any number of files."""
    try:
        with os.scandir(os.path.join(root, STATE, PENDING)) as entries:
            return any(entry.name.endswith(".json") for entry in entries)
    except OSError:
        return False
