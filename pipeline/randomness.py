"""Counter-based randomness: every draw is a pure function of (seed, episode id, slot).

No generator state exists, so an episode comes out the same whichever worker, shard or order built
it (README: The episode). The seed is mixed through a 64-bit finaliser before it meets the id, so seed s and
s + 1 give unrelated streams rather than copies shifted by one.
"""

from __future__ import annotations

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_SLOT = np.uint64(0xD6E8FEB86659FD93)
_SUB = np.uint64(0xCA5A826395121157)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, vectorised over uint64 (wrap-around is intended); in place after its first step."""
    x = x ^ (x >> np.uint64(30))
    x *= _M1
    x ^= x >> np.uint64(27)
    x *= _M2
    x ^= x >> np.uint64(31)
    return x


def _key(seed: int) -> np.uint64:
    with np.errstate(over="ignore"):
        return _mix(np.array([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64) + _GOLDEN)[0]


def bits(seed: int, ids: np.ndarray, slot: int, sub: int | np.ndarray = 0) -> np.ndarray:
    """64 random bits per id for draw `slot` (a named draw) and `sub` (its index, e.g. a document), broadcast: subs
    per id, or `ids[:, None]` and a row of subs for a column per sub (the ids are mixed once for all of them)."""
    ids = np.asarray(ids, dtype=np.int64).astype(np.uint64)
    with np.errstate(over="ignore"):
        x = _mix(ids * _GOLDEN ^ _key(seed))
        x = _mix(x ^ (np.uint64(slot + 1) * _SLOT))
        return _mix(x ^ (np.uint64(sub + 1) * _SUB))


def uniform(seed: int, ids: np.ndarray, slot: int, sub: int = 0) -> np.ndarray:
    """Floats in [0, 1) from the top 53 bits."""
    return (bits(seed, ids, slot, sub) >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def integers(seed: int, ids: np.ndarray, slot: int, high: int | np.ndarray, sub: int = 0) -> np.ndarray:
    """Integers in [0, high) per id; `high` may vary per id (every high must be >= 1)."""
    high = np.asarray(high, dtype=np.int64)
    if np.any(high < 1):
        raise ValueError("integers(): every high must be >= 1")
    return np.minimum((uniform(seed, ids, slot, sub) * high).astype(np.int64), high - 1)


def permutations(seed: int, ids: np.ndarray, slot: int, n: int) -> np.ndarray:
    """One random permutation of range(n) per id, shape (len(ids), n); uses subs 0 .. n-1 of `slot`."""
    keys = bits(seed, np.asarray(ids)[:, None], slot, np.arange(n))
    return np.argsort(keys, axis=1, kind="stable").astype(np.int64)
