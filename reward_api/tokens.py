"""State tokens: the agent's game state, signed with HMAC-SHA256, so any replica can continue a game.

The token is `base64url(payload).base64url(mac)`. The payload is the agent's own progress (episode id,
flags, budget used, done), nothing hidden. The MAC key is derived from the server secret and the
dataset's params hash, so a token from another dataset (or another secret) is refused, and the episode
id is inside the signed payload, so a token cannot be moved to another episode.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import os
import secrets

from reward_api.game import GameState

log = logging.getLogger(__name__)

KEY_ENV = "CONTEXTCORRUPTION_STATE_KEY"
TOKEN_VERSION = 1
MAX_TOKEN_CHARS = 512


class TokenError(ValueError):
    """A state token that is malformed, tampered with, or signed for another dataset or server."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    """The bytes of `text` written as `_b64` writes them, and only so: the lenient decoder drops characters outside
    the alphabet and the last character's unused bits, so other spellings of a token would verify too."""
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64(data) != text:
        raise ValueError("not canonical base64url")
    return data


def server_secret() -> bytes:
    """The secret from CONTEXTCORRUPTION_STATE_KEY; without it, a random one that dies with the process."""
    value = os.environ.get(KEY_ENV)
    if value:
        return value.encode()
    log.warning(
        "%s is not set: state tokens are signed with a random per-process key, so they stop working after a "
        "restart and are refused by other replicas. Set it to the same secret on every replica.",
        KEY_ENV,
    )
    return secrets.token_bytes(32)


class TokenSigner:
    """Signs and verifies GameState tokens for one dataset."""

    def __init__(self, secret: bytes, dataset_hash: str) -> None:
        self._key = hmac.new(secret, b"contextcorruption-state|" + dataset_hash.encode(), hashlib.sha256).digest()

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._key, payload, hashlib.sha256).digest()

    def sign(self, state: GameState) -> str:
        body = {"v": TOKEN_VERSION, "e": state.episode_id, "f": sorted(state.flagged), "u": state.budget_used}
        payload = json.dumps({**body, "d": state.done}, separators=(",", ":")).encode()
        return f"{_b64(payload)}.{_b64(self._mac(payload))}"

    def verify(self, token: str) -> GameState:
        """The state inside a token; TokenError if it is malformed or its signature does not match."""
        if len(token) > MAX_TOKEN_CHARS or token.count(".") != 1:
            raise TokenError("state_token is malformed: expected the token returned by /reset or /step")
        payload_text, mac_text = token.split(".")
        try:
            payload, mac = _unb64(payload_text), _unb64(mac_text)
        except (binascii.Error, ValueError) as exc:
            raise TokenError("state_token is malformed: not base64url") from exc
        if not hmac.compare_digest(mac, self._mac(payload)):
            raise TokenError("state_token signature does not match: tampered, or issued by another server or dataset")
        body = json.loads(payload)
        if body.get("v") != TOKEN_VERSION:
            raise TokenError(f"state_token version {body.get('v')} is not supported")
        return GameState(body["e"], frozenset(body["f"]), body["u"], body["d"])
