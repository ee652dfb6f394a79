"""The hidden-split key: read from the environment or refused in one line; what it derives is stable, differs per
key, split and seed, and reveals nothing of the key."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline import hiddenkey

KEY = b"k" * hiddenkey.MIN_CHARS


@pytest.mark.parametrize(
    ("environ", "found"),
    [({}, "it is not set"), ({hiddenkey.KEY_ENV: "short"}, "it has 5")],
    ids=["unset", "short"],
)
def test_a_missing_or_short_key_is_refused_naming_the_variable(environ, found):
    with pytest.raises(hiddenkey.HiddenKeyError) as refused:
        hiddenkey.read_key(environ)
    message = str(refused.value)
    assert hiddenkey.KEY_ENV in message and found in message and "\n" not in message


def test_a_long_enough_key_is_read_as_bytes():
    assert hiddenkey.read_key({hiddenkey.KEY_ENV: "x" * 40}) == b"x" * 40


def test_draw_ids_are_a_stable_keyed_function_of_the_id():
    ids = np.arange(1000, 1100, dtype=np.int64)
    split_key = hiddenkey.draw_key(KEY, 7, "test")
    draws = hiddenkey.draw_ids(split_key, ids)
    assert draws.dtype == np.int64 and len(np.unique(draws)) == len(ids)
    assert np.array_equal(draws[10:20], hiddenkey.draw_ids(split_key, ids[10:20])), "each id's draw is its own"
    others = [
        hiddenkey.draw_key(b"j" * hiddenkey.MIN_CHARS, 7, "test"),  # another key
        hiddenkey.draw_key(KEY, 8, "test"),  # another seed
        hiddenkey.draw_key(KEY, 7, "validation"),  # another split
    ]
    for other in others:
        assert not np.any(hiddenkey.draw_ids(other, ids) == draws)


def _windows(text: str, width: int) -> set[str]:
    return {text[start : start + width] for start in range(len(text) - width + 1)}


def test_the_synthetic_seed_and_fingerprint_follow_the_key_and_do_not_show_it():
    other = b"j" * hiddenkey.MIN_CHARS
    seeds = [hiddenkey.synthetic_seed(KEY, 7), hiddenkey.synthetic_seed(other, 7), hiddenkey.synthetic_seed(other, 8)]
    assert len(set(seeds)) == 3, "the seed differs per key and per seed"
    assert hiddenkey.synthetic_seed(KEY, 7) == hiddenkey.synthetic_seed(KEY, 7)
    assert len(hiddenkey.fingerprint(KEY)) == 16 and hiddenkey.fingerprint(KEY) != hiddenkey.fingerprint(other)
    # keys of varied characters sharing their first 16 (and last 16): a fingerprint made of key material would match
    prefix, suffix = b"0123456789abcdef", b"ghijklmnopqrstuv"
    keys = [prefix + suffix, prefix + suffix[::-1], prefix[::-1] + suffix, b"ABCDEFGHIJKLMNOP" + prefix]
    prints = [hiddenkey.fingerprint(key) for key in keys]
    assert len(set(prints)) == len(keys), "keys that share a prefix or a suffix have different fingerprints"
    for key, printed in zip(keys, prints, strict=True):
        assert hiddenkey.fingerprint(key) == printed, "the fingerprint is stable"
        for window in _windows(key.decode(), 8) | _windows(key.hex(), 8):  # no 8 characters of the key, raw or hex
            assert window.lower() not in printed.lower(), f"{window!r} of the key is in its fingerprint {printed!r}"
