"""``benchmarks/bench.py``'s shard assignment (``shards``): files dealt by size so that shards run side by side end
together; the benchmark itself is not run here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("tmemlint_bench", ROOT / "benchmarks" / "bench.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_largest_first_to_the_lightest_shard() -> None:
    # 100 -> 0, 60 -> 1, 50 -> 1 (60 < 100), 40 -> 0 (100 < 110), 10 -> 1 (110 < 140)
    assert _bench().shards([10, 100, 50, 60, 40], 2) == [1, 0, 1, 1, 0]


def test_every_file_in_one_shard_and_ties_to_the_lowest() -> None:
    bench = _bench()
    assert bench.shards([5, 5, 5, 5], 3) == [0, 1, 2, 0]
    assert bench.shards([], 4) == []
    assert bench.shards([7, 3], 1) == [0, 0]
    sizes = [(i * 7919) % 1000 + 1 for i in range(97)]
    dealt = bench.shards(sizes, 8)
    assert sorted(set(dealt)) == list(range(8))
    loads = [sum(s for s, k in zip(sizes, dealt) if k == j) for j in range(8)]
    assert max(loads) - min(loads) <= max(sizes)


def test_no_shards_is_an_error() -> None:
    with pytest.raises(ValueError):
        _bench().shards([1], 0)
