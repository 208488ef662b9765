"""The stop hook's first look: is there anything to decide at all?

Most fires come from sessions with no claim. This module answers that case with the
interpreter's own modules only (no json, re or dataclasses), so that a fire with nothing
to do costs little more than starting Python.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

CONFIG_NAME = "agentcfg.yaml"
PAYLOAD_LIMIT = 16 * 1024 * 1024


class _Decoding:
    # the attributes _json's scanner reads; the json package (and its re) is not loaded
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = float
    memo: dict[str, str] = {}  # noqa: RUF012


def loads(text: str) -> object:
    """json.loads for a JSON text, ValueError when it is not one."""
    try:
        from _json import make_scanner
    except ImportError:  # pragma: no cover - CPython always has it
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip())
    try:
        value, end = make_scanner(_Decoding)(text, start)  # type: ignore[arg-type]
    except StopIteration:
        raise ValueError("not JSON") from None
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    if text[end:].strip():
        raise ValueError("extra data after JSON")
    return value


def sha256_hex(data: bytes) -> str:
    """sha256 in hex, from the builtin module where there is one: hashlib loads OpenSSL."""
    try:
        from _sha256 import sha256  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - builds without it
        from hashlib import sha256
    digest: str = sha256(data).hexdigest()
    return digest


def session_key(session_id: str) -> str:
    """The first 32 hex digits of sha256(session id): the session's file name in state/."""
    return sha256_hex(session_id.encode("utf-8", "surrogatepass"))[:32]


def locate_root(cwd: str, env: Mapping[str, str]) -> str:
    """$AGENTCFG_ROOT, else the nearest ancestor holding agentcfg.yaml or roadmaps/, else cwd."""
    explicit = env.get("AGENTCFG_ROOT")
    if explicit:
        return os.path.abspath(explicit)
    start = folder = os.path.abspath(cwd or ".")
    while True:
        if os.path.isfile(os.path.join(folder, CONFIG_NAME)) or os.path.isdir(
            os.path.join(folder, "roadmaps")
        ):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return start
        folder = parent


def nothing_to_do(root: str, session_id: str) -> bool:
    """True when no concern can act: no claim for this session and no gate set to `always`."""
    if session_id and os.path.exists(
        os.path.join(root, "state", "claims", session_key(session_id) + ".json")
    ):
        return False
    try:
        with open(os.path.join(root, CONFIG_NAME), "rb") as handle:
            config = handle.read(1024 * 1024 + 1)
    except OSError:
        return True
    # Only `turn_end_gate.scope: always` acts without a claim, and it needs that word.
    return b"always" not in config
