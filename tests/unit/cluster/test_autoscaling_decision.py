"""The autoscaler's decision on metric series (``autoscaling_series.py``): a load step up and
down, an oscillating load that must not flap, a skewed vertex, a source without a backlog
metric; and each rule on its own: the band, the guards against scaling down, the key groups,
a non-parallel vertex, the settings that contradict each other."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from barrierflow.cluster.scaling.autoscaler_settings import AutoscalerSettings
from barrierflow.cluster.scaling.autoscaling_decision import (
    Backlog,
    ScalingState,
    VertexLoad,
    decide,
)
from barrierflow.errors import ConfigurationError
from tests.unit.cluster.autoscaling_series import simulate

# Minutes instead of the defaults' quarter hours, as the benchmark's short test windows
FAST = AutoscalerSettings(
    metrics_window_s=60,
    stabilization_s=60,
    catch_up_s=120,
    scale_up_grace_s=600,
)
READY = ScalingState(window_covers_s=60, since_rescale_s=600, restart_cost_s=2)


def load(**kw) -> VertexLoad:
    values = dict(id="v", name="count", parallelism=2, max_parallelism=16, busy=0.5,
                  records_in_per_s=1000.0)  # fmt: skip
    return VertexLoad(**{**values, **kw})


def test_a_load_step_up_scales_up_and_the_backlog_catches_up():
    run = simulate(lambda t: 600 if t < 300 else 1800, 1200, FAST)
    assert run.parallelism[0] == (0.0, 1)
    first_up = next(t for t, p in run.parallelism[1:] if p > 1)
    assert 300 < first_up <= 300 + 120, run.parallelism
    assert run.final_parallelism() in (4, 8)  # 1800/s at 0.7 of 1000/s each: 3, aligned to 4
    assert max(b for t, b in run.backlog if t > 900) < 1800  # within a second of input


def test_a_load_step_down_scales_down_by_at_most_the_max_factor_each_time():
    run = simulate(lambda t: 4800 if t < 300 else 600, 2400, FAST, parallelism=8)
    steps = [p for _, p in run.parallelism]
    assert steps[-1] < 8 and steps[-1] >= 1
    for before, after in itertools.pairwise(steps):
        assert after >= math.ceil(before * (1 - FAST.scale_down_max_factor))
    assert run.rescales_between(0, 300) == 0  # busy at the higher rate: nothing to change


def test_an_oscillating_load_does_not_flap():
    noise = random.Random(7)
    run = simulate(lambda t: 1400 * (1 + 0.2 * math.sin(t / 45) + noise.uniform(-0.1, 0.1)),
                   3 * 3600, FAST)  # fmt: skip
    settled = run.parallelism[1][0] if len(run.parallelism) > 1 else 0
    for hour in range(3):
        start = max(settled + 1, hour * 3600)
        assert run.rescales_between(start, (hour + 1) * 3600) <= 2, run.parallelism


def test_a_skewed_vertex_scales_on_its_busiest_subtask():
    # 1300/s at parallelism 2: evenly, each subtask is 0.65 busy; when one takes 80% of the
    # records it saturates (the vertex takes 1250/s) while the average subtask is 0.62 busy
    skewed = simulate(
        lambda t: 1300, 900, FAST, parallelism=2, skew=lambda p: 0.8 if p == 2 else 1 / p
    )
    assert skewed.final_parallelism() > 2
    even = simulate(lambda t: 1300, 900, FAST, parallelism=2)
    assert even.final_parallelism() == 2


def test_a_source_without_a_backlog_metric_is_scaled_on_busy_time_alone():
    run = simulate(lambda t: 3000, 900, FAST, backlog_metric=False)
    assert run.final_parallelism() > 1
    reasons = " ".join(d.summary() for _, d in run.decisions)
    assert "no backlog metric: on busy time alone" in reasons


def test_nothing_is_decided_before_the_window_is_full_or_during_stabilization():
    loads = [load(busy=0.99)]
    early = decide(loads, ScalingState(30, 600, 2), FAST)
    assert not early.changes and "metrics window not full yet (30 of 60 s)" in early.summary()
    settling = decide(loads, ScalingState(60, 20, 2), FAST)
    assert "stabilizing after the last rescale (20 of 60 s)" in settling.summary()


def test_within_the_band_nothing_changes_and_outside_it_the_target_is_aimed_at():
    assert not decide([load(busy=0.6)], READY, FAST).changes
    up = decide([load(busy=0.95, keyed=False)], READY, FAST)
    assert up.changes == {"v": 3}  # ceil(2 * 0.95 / 0.7)
    assert "scaled count 2 -> 3: utilization 0.95 > 1.00" not in up.summary()
    assert "scaled count 2 -> 3" in up.summary()


def test_a_busy_vertex_is_never_scaled_down_even_when_its_backlog_shrinks_fast():
    source = load(id="s", name="source", parallelism=1, busy=0.1,
                  backlog=Backlog("Kafka lag", 100, -900, 1000))  # fmt: skip
    busy = load(busy=1.0, inputs=("s",))
    decision = decide([source, busy], READY, FAST)
    assert "v" not in decision.changes
    assert "busiest subtask busy 1.00 >= 0.95" in decision.summary()


def test_no_scale_down_within_the_grace_period_after_a_scale_up():
    state = ScalingState(60, 600, 2, scaled_up_at={"v": 100})
    decision = decide([load(busy=0.1)], state, FAST)
    assert not decision.changes and "within the grace period" in decision.summary()
    assert decide([load(busy=0.1)], READY, FAST).changes == {"v": 1}


def test_a_keyed_vertex_takes_a_parallelism_that_divides_its_key_groups():
    decision = decide([load(busy=1.0, parallelism=2, keyed=True)], READY, FAST)
    assert decision.changes == {"v": 4}  # 3 wanted; 128 key groups divide evenly by 4


def test_a_vertex_stays_within_its_bounds_and_a_non_parallel_one_is_left_alone():
    capped = AutoscalerSettings(**{**FAST.__dict__, "vertex_max_parallelism": 3})
    assert decide([load(busy=1.0, keyed=False)], READY, capped).changes == {"v": 3}
    single = decide([load(busy=1.0, parallelism=1, max_parallelism=1)], READY, FAST)
    assert not single.changes
    assert "its max parallelism is 1 (a non-parallel operator)" in single.summary()


def test_a_vertex_whose_parallelism_cannot_change_is_kept_saying_why():
    why = "'count' reads the output of source 'events' reinterpreted as keyed"
    for busy in (1.0, 0.05):  # saturated, then nearly idle
        kept = decide([load(busy=busy, fixed=why)], READY, FAST)
        assert not kept.changes
        assert f"count stays at 2: its parallelism cannot change: {why}" in kept.summary()


def test_the_backlog_and_the_restart_cost_set_the_demand():
    # reading 1000/s, the lag grows 500/s: 1500/s arrive, plus 60,000 to drain in 120 s
    source = load(id="s", name="source", parallelism=1, busy=0.1,
                  backlog=Backlog("Kafka lag", 60_000, 500, 1000))  # fmt: skip
    work = load(busy=0.6, inputs=("s",), keyed=False)
    decision = decide([source, work], READY, FAST)
    # demand (1500 * (1 + 2/120) + 500) / 1000 = 2.03; utilization 0.6 * 2.03 = 1.22
    assert decision.changes == {"v": 4}  # ceil(2 * 1.22 / 0.7)
    assert "Kafka lag 60,000, growing 500/s" in decision.summary()


@pytest.mark.parametrize(
    "values, keys",
    [
        ({"utilization_boundary": 0.8}, "target.utilization.boundary and job.autoscaler.target"),
        ({"target_utilization": 1.5}, "job.autoscaler.target.utilization"),
        ({"scale_down_max_factor": 0}, "job.autoscaler.scale-down.max-factor"),
        ({"metrics_window_s": 0}, "job.autoscaler.metrics.window"),
        ({"vertex_max_parallelism": 0}, "job.autoscaler.vertex.max-parallelism"),
    ],
)
def test_settings_that_contradict_each_other_are_refused_naming_the_keys(values, keys):
    with pytest.raises(ConfigurationError, match=keys):
        AutoscalerSettings(**values).check()
