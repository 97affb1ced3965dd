"""``bench/state_scaling.py``'s pure parts: which key each update of the steady phase goes
to, its percentile, and the ratios line; no benchmark runs here."""

from __future__ import annotations

from state_scaling import nearest_rank, ratios, update_key, window_keys


def test_a_second_of_updates_spreads_over_its_window_each_key_once() -> None:
    keys, rate = 10_000_000, 10_000
    window = window_keys(keys, 0.01)
    assert window == 100_000
    second = [update_key(u, keys, rate, window) for u in range(rate)]
    assert len(set(second)) == rate
    assert min(second) == 0 and max(second) < window
    following = {update_key(u, keys, rate, window) for u in range(rate, 2 * rate)}
    assert min(following) == window and max(following) < 2 * window


def test_a_window_smaller_than_the_rate_takes_each_key_rate_over_window_times() -> None:
    keys, rate = 100_000, 10_000
    window = window_keys(keys, 0.01)
    second = [update_key(u, keys, rate, window) for u in range(rate)]
    assert sorted(set(second)) == list(range(window))
    assert all(second.count(k) == rate // window for k in range(0, window, 97))


def test_the_window_rolls_over_every_key_and_wraps() -> None:
    keys, rate = 1_000, 10
    window = window_keys(keys, 0.01)
    seconds = keys // window
    touched = {update_key(u, keys, rate, window) for u in range(seconds * rate)}
    assert touched == set(range(keys))
    assert update_key(seconds * rate, keys, rate, window) == 0


def test_nearest_rank() -> None:
    assert nearest_rank([], 0.99) is None
    assert nearest_rank([3.0, 1.0, 2.0], 0.5) == 2.0
    assert nearest_rank([float(v) for v in range(1, 31)], 0.99) == 30.0
    assert nearest_rank([float(v) for v in range(1, 201)], 0.99) == 198.0


def _line(backend: str, keys: int, ms: float, size: int, rss: float, restore: float) -> dict:
    return {"backend": backend, "keys": keys, "checkpoint_ms_p50": ms,
            "checkpoint_bytes_p50": size, "peak_rss_mib": rss, "restore_s": restore}  # fmt: skip


def test_ratios_of_the_largest_size_to_the_next_and_the_goals_on_rocksdb() -> None:
    lines = [
        _line("rocksdb", 100_000, 20.0, 100, 900.0, 0.5),
        _line("rocksdb", 1_000_000, 40.0, 1000, 1000.0, 0.8),
        _line("rocksdb", 10_000_000, 100.0, 1500, 1500.0, 2.0),
        _line("hashmap", 100_000, 30.0, 10, 800.0, 0.5),
        _line("hashmap", 1_000_000, 300.0, 100, 1200.0, 2.0),
    ]
    found = ratios(lines)
    assert found["ratios"]["rocksdb"] == {
        "keys": [10_000_000, 1_000_000],
        "checkpoint_ms_p50": 2.5,
        "checkpoint_bytes_p50": 1.5,
        "peak_rss_mib": 1.5,
        "restore_s_largest": 2.0,
    }
    assert found["ratios"]["hashmap"]["checkpoint_ms_p50"] == 10.0
    assert found["goals"] == {
        "keys": [10_000_000, 1_000_000],
        "as_set": True,
        "checkpoint_ms_p50_within_2x": False,
        "checkpoint_bytes_p50_within_2x": True,
        "peak_rss_mib_within_2x": True,
        "restore_within_3s": True,
    }


def test_a_failed_case_is_left_out_of_the_ratios() -> None:
    lines = [
        _line("rocksdb", 10_000, 20.0, 100, 900.0, 0.5),
        {"backend": "rocksdb", "keys": 100_000, "error": "exit code 1"},
    ]
    assert ratios(lines) == {"benchmark": "state_scaling", "ratios": {}, "goals": None}
