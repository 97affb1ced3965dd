"""Reactive mode's decisions: the parallelism of the slots offered, up to the max parallelism;
a scale-up once a larger offer held for the stabilization time, the time starting over when the
offer changes; nothing while the job uses what is offered."""

from __future__ import annotations

from barrierflow.cluster.scaling.reactive_mode import ReactiveMode


def test_an_attempt_starts_at_the_slots_offered_up_to_the_max_parallelism():
    mode = ReactiveMode(stabilization_s=10, max_parallelism=4)
    assert mode.parallelism_for(3) == 3
    assert mode.parallelism_for(9) == 4
    assert mode.parallelism_for(0) is None  # no slot: wait


def test_a_larger_offer_scales_up_once_it_held_for_the_stabilization_time():
    mode = ReactiveMode(stabilization_s=10, max_parallelism=8)
    assert mode.scale_up_to(offered=2, using=1, now=100.0) is None
    assert mode.scale_up_to(offered=2, using=1, now=109.9) is None
    assert mode.scale_up_to(offered=2, using=1, now=110.0) == 2


def test_an_offer_that_changes_starts_the_time_over():
    mode = ReactiveMode(stabilization_s=10, max_parallelism=8)
    assert mode.scale_up_to(offered=2, using=1, now=100.0) is None
    assert mode.scale_up_to(offered=3, using=1, now=108.0) is None  # another executor came
    assert mode.scale_up_to(offered=3, using=1, now=117.0) is None
    assert mode.scale_up_to(offered=3, using=1, now=118.0) == 3


def test_an_offer_the_job_uses_already_or_beyond_its_max_parallelism_asks_nothing():
    mode = ReactiveMode(stabilization_s=0, max_parallelism=2)
    assert mode.scale_up_to(offered=2, using=2, now=1.0) is None
    assert mode.scale_up_to(offered=5, using=2, now=2.0) is None
    assert mode.scale_up_to(offered=1, using=2, now=3.0) is None  # fewer: a restart decides


def test_an_offer_that_went_away_during_the_wait_asks_nothing_and_a_refused_one_asks_again():
    mode = ReactiveMode(stabilization_s=10, max_parallelism=8)
    mode.scale_up_to(offered=2, using=1, now=0.0)
    assert mode.scale_up_to(offered=1, using=1, now=5.0) is None  # the executor left again
    assert mode.scale_up_to(offered=2, using=1, now=6.0) is None  # back: the time starts over
    assert mode.scale_up_to(offered=2, using=1, now=16.0) == 2
    # the rescale was refused (one was in progress): asked again a stabilization time later
    assert mode.scale_up_to(offered=2, using=1, now=17.0) is None
    assert mode.scale_up_to(offered=2, using=1, now=26.0) == 2
