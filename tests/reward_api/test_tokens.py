"""State tokens: round trip, and refusal of tampered, foreign and malformed tokens."""

from __future__ import annotations

import base64
import json
import logging

import pytest

from reward_api.game import GameState
from reward_api.tokens import KEY_ENV, TokenError, TokenSigner, server_secret

SIGNER = TokenSigner(b"secret", "dataset-a")
STATE = GameState(12, frozenset({1, 5}), 3, False)


def _payload(token: str) -> dict:
    text = token.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def _with_payload(token: str, payload: dict) -> str:
    raw = json.dumps(payload, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode() + "." + token.split(".")[1]


def test_round_trip_keeps_the_state_and_nothing_hidden():
    token = SIGNER.sign(STATE)
    assert SIGNER.verify(token) == STATE
    assert set(_payload(token)) == {"v", "e", "f", "u", "d"}
    # Another signer with the same secret and dataset (a replica, a restart) takes it.
    assert TokenSigner(b"secret", "dataset-a").verify(token) == STATE


@pytest.mark.parametrize(
    "change", [{"e": 13}, {"f": [1]}, {"u": 0}, {"d": True}], ids=["other-episode", "flags", "budget", "done"]
)
def test_any_change_to_the_payload_is_refused(change):
    token = SIGNER.sign(STATE)
    with pytest.raises(TokenError, match="signature"):
        SIGNER.verify(_with_payload(token, {**_payload(token), **change}))


def test_tokens_of_another_secret_or_dataset_are_refused():
    token = SIGNER.sign(STATE)
    for other in (TokenSigner(b"other", "dataset-a"), TokenSigner(b"secret", "dataset-b")):
        with pytest.raises(TokenError, match="another server or dataset"):
            other.verify(token)


@pytest.mark.parametrize("token", ["", "abc", "a.b.c", "!!!.???", "x" * 600])
def test_malformed_tokens_are_refused(token):
    with pytest.raises(TokenError, match="malformed|signature"):
        SIGNER.verify(token)


def _last_bit_flipped(text: str) -> str:
    """The last character's unused low bit set: the same bytes to a lenient decoder."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    return text[:-1] + alphabet[alphabet.index(text[-1]) ^ 1]


@pytest.mark.parametrize(
    "respell",
    [
        lambda payload, mac: f"{payload}.!!{mac}",
        lambda payload, mac: f"{payload}.{_last_bit_flipped(mac)}",
        lambda payload, mac: f"{_last_bit_flipped(payload)}.{mac}",
    ],
    ids=["characters-outside-the-alphabet", "mac-unused-bits", "payload-unused-bits"],
)
def test_a_token_is_taken_only_as_it_was_issued(respell):
    """An edited token whose bytes a lenient decoder reads the same is refused: a token has one spelling."""
    payload, mac = SIGNER.sign(STATE).split(".")
    assert len(mac) % 4 and len(payload) % 4, "the case needs unused bits in both parts"
    with pytest.raises(TokenError, match="malformed"):
        SIGNER.verify(respell(payload, mac))


def test_secret_from_the_environment_or_a_random_one_with_a_warning(monkeypatch, caplog):
    monkeypatch.setenv(KEY_ENV, "shared")
    assert server_secret() == b"shared"
    monkeypatch.delenv(KEY_ENV)
    with caplog.at_level(logging.WARNING):
        assert server_secret() != server_secret()
    assert KEY_ENV in caplog.text
