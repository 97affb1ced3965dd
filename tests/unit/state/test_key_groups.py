"""Key groups: a stable key hash, memoized on the per-record path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from barrierflow.state.key_groups import (
    KeyGroupCache,
    UnhashableKeyError,
    assign_to_key_group,
    hashable_keys,
    stable_hash,
    unwrapped,
)

REPO = Path(__file__).resolve().parents[3]

SAMPLE_KEYS = [
    "alice",
    "ünïcødé ✓",
    "",
    b"\x00\xffbytes",
    ("user", 42, b"x", None, 2.5, True),
    (("nested",), -7),
    -7,
    2**70,
    0.1,
    None,
]

supported_keys = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=20)
    | st.binary(max_size=20),
    lambda children: st.tuples(children) | st.tuples(children, children),
    max_leaves=6,
)


def test_stable_hash_is_the_same_in_a_fresh_interpreter_with_another_hash_seed():
    # Python's hash() of str and bytes depends on PYTHONHASHSEED; give the child another seed.
    seed = "1" if os.environ.get("PYTHONHASHSEED") == "0" else "0"
    code = (
        "import json, sys\n"
        "from barrierflow.state.key_groups import stable_hash\n"
        f"keys = {SAMPLE_KEYS!r}\n"
        "json.dump({'hash': hash('alice'), 'stable': [stable_hash(k) for k in keys]}, sys.stdout)\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
    child = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    out = json.loads(child.stdout)
    assert out["hash"] != hash("alice"), "precondition: the child randomizes hash() differently"
    assert out["stable"] == [stable_hash(k) for k in SAMPLE_KEYS]


def test_stable_hash_of_equal_numbers_is_equal():
    assert stable_hash(1) == stable_hash(True) == stable_hash(1.0)
    assert stable_hash(0) == stable_hash(False) == stable_hash(0.0) == stable_hash(-0.0)
    assert stable_hash((1, "a")) == stable_hash((True, "a")) == stable_hash((1.0, "a"))
    assert stable_hash(float(2**70)) == stable_hash(2**70)


@given(st.integers())
def test_stable_hash_of_an_int_equals_that_of_an_equal_float(i):
    f = float(i)
    if f == i:
        assert stable_hash(f) == stable_hash(i)


@pytest.mark.parametrize(
    "keys",
    [
        [f"user-{i}" for i in range(4096)],
        list(range(4096)),
        [i.to_bytes(4, "big") for i in range(4096)],
    ],
    ids=["str", "int", "bytes"],
)
def test_stable_hash_spreads_similar_keys_over_all_key_groups(keys):
    counts = [0] * 128
    for key in keys:
        counts[assign_to_key_group(key, 128)] += 1
    # 32 keys per group on average; a usable hash stays far from empty or doubled groups
    assert min(counts) >= 12 and max(counts) <= 56, (min(counts), max(counts))


@pytest.mark.parametrize(
    ("key", "type_name"),
    [
        ([1, 2], "list"),
        ({"a": 1}, "dict"),
        ({1}, "set"),
        (object(), "object"),
        (Decimal("0.1"), "Decimal"),  # equals no int or float
    ],
)
def test_stable_hash_of_an_unsupported_key_raises_unhashable_key_error_naming_the_type(
    key, type_name
):
    with pytest.raises(UnhashableKeyError, match=rf"of type {type_name}\b"):
        stable_hash(key)
    with pytest.raises(UnhashableKeyError, match=rf"of type {type_name}\b"):
        stable_hash(("ok", key))  # also inside a tuple
    with pytest.raises(TypeError):  # it is a TypeError, as for hash()
        assign_to_key_group(key, 128)


@given(keys=st.lists(supported_keys, max_size=30), max_parallelism=st.integers(1, 1000))
def test_key_group_cache_agrees_with_assign_to_key_group(keys, max_parallelism):
    cache = KeyGroupCache(max_parallelism)
    for key in keys + keys:  # the second pass hits the cache
        kg = cache.key_group(key)
        assert kg == assign_to_key_group(key, max_parallelism)
        assert 0 <= kg < max_parallelism


def test_key_group_cache_stays_bounded_and_still_answers_after_clearing():
    cache = KeyGroupCache(128, capacity=10)
    for i in range(100):
        assert cache.key_group(f"k{i}") == assign_to_key_group(f"k{i}", 128)
        assert len(cache._cache) <= 10
    assert cache.key_group("k3") == assign_to_key_group("k3", 128)


def test_key_groups_of_partly_cached_keys_hash_only_the_new_ones(monkeypatch):
    cache = KeyGroupCache(128)
    old = [f"k{i}" for i in range(50)]
    assert cache.key_groups(old) == [assign_to_key_group(k, 128) for k in old]
    hashed = []

    def counting_hash(key):
        hashed.append(key)
        return stable_hash(key)

    keys = [*old, "new1", "k7", "new2"]
    expected = [assign_to_key_group(k, 128) for k in keys]
    monkeypatch.setattr("barrierflow.state.key_groups.stable_hash", counting_hash)
    assert cache.key_groups(keys) == expected
    assert sorted(hashed) == ["new1", "new2"]


def test_key_group_cache_rejects_unhashable_and_unsupported_keys():
    cache = KeyGroupCache(128)
    with pytest.raises(UnhashableKeyError, match="of type dict"):
        cache.key_group({1: 2})
    with pytest.raises(UnhashableKeyError, match="of type frozenset"):
        cache.key_group(frozenset({1}))


def test_a_list_key_from_an_unwrapped_selector_has_its_key_lists_key_group():
    # routing calls the user's selector itself (unwrapped), and keys its lists here
    select = hashable_keys(lambda record: [record, [record]])
    cache = KeyGroupCache(128)
    assert unwrapped(select) is not select
    assert cache.key_group(unwrapped(select)(7)) == cache.key_group(select(7))
    assert cache.key_group(select(7)) == assign_to_key_group((7, (7,)), 128)


def test_numbers_equal_to_an_int_share_its_key_group_whatever_the_cache_saw_first():
    # equal numbers are one dict key, so they must be one key group, cached or not
    assert stable_hash(Decimal(1)) == stable_hash(1) == stable_hash(Fraction(2, 2))
    assert stable_hash(Decimal("2.5")) == stable_hash(2.5)
    warm, cold = KeyGroupCache(128), KeyGroupCache(128)
    warm.key_group(1)
    assert warm.key_group(Decimal(1)) == cold.key_group(Decimal(1)) == cold.key_group(1)
