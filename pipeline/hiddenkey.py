"""The secret that keeps a hidden split hidden.

A build's seed regenerates every draw and the seed is published, so a split hidden only by leaving its
columns out could be rebuilt by anyone running this code: its corrupt positions from the seed, and a fictional
entity's answer from the facts the same seed builds. A hidden build therefore takes a key from the environment
(`KEY_ENV`; never in params.yaml, dvc.lock or any output). Each episode of a hidden split draws from a secret 64-bit
id, a keyed BLAKE2b of its episode id, and the synthetic facts come from a keyed seed; neither can be recomputed
without the key. Same params and key → the same bytes. The other splits draw from the published seed alone, but
their synthetic facts come from the keyed seed too: regenerating them needs the build's facts table (or the key).
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping

import numpy as np

KEY_ENV = "CONTEXTCORRUPTION_HIDDEN_KEY"
MIN_CHARS = 32
FINGERPRINT_KEY = b"contextcorruption.hidden_key"  # facts table metadata: which key built its synthetic facts


class HiddenKeyError(ValueError):
    """No usable key for a build with a hidden split; the message says how to set one."""


def read_key(environ: Mapping[str, str] = os.environ) -> bytes:
    """The key of a hidden build, from `KEY_ENV`."""
    text = environ.get(KEY_ENV, "")
    if len(text) < MIN_CHARS:
        found = f"it has {len(text)}" if text else "it is not set"
        raise HiddenKeyError(
            f"episodes.hidden_test is true: {KEY_ENV} must hold a secret of at least {MIN_CHARS} characters "
            f"({found}); make one with `python -c 'import secrets; print(secrets.token_hex(32))'` and keep it "
            "private, like the answers"
        )
    return text.encode()


def _derive(key: bytes, purpose: str) -> bytes:
    return hmac.new(key, purpose.encode(), hashlib.sha256).digest()


def draw_key(key: bytes, seed: int, split: str) -> bytes:
    """The key of one hidden split's draws (what a worker gets, not the build's key)."""
    return _derive(key, f"draws/{seed}/{split}")


def draw_ids(split_key: bytes, ids: np.ndarray) -> np.ndarray:
    """The secret ids (int64) that episodes `ids` of a hidden split draw from: keyed BLAKE2b, a PRF of the id."""
    digests = b"".join(
        hashlib.blake2b(int(i).to_bytes(8, "little", signed=True), key=split_key, digest_size=8).digest() for i in ids
    )
    return np.frombuffer(digests, dtype="<i8").astype(np.int64)


def synthetic_seed(key: bytes, seed: int) -> int:
    """The seed of a hidden build's synthetic facts: a fictional entity's facts cannot be rebuilt from `seed`."""
    return int.from_bytes(_derive(key, f"synthetic/{seed}")[:8], "little")


def fingerprint(key: bytes) -> str:
    """Names the key in the facts table's metadata without revealing it: the episodes stage checks that its facts
    were built with its own key."""
    return _derive(key, "fingerprint")[:8].hex()
