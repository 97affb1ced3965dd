"""The campaign's plans: a seed alone decides a run (so that any run replays), and a campaign
of many seeds reaches every job, fault kind and bad input, each only where it fits."""

from __future__ import annotations

import hashlib
from collections import Counter

from chaos_plan import BadInput, FaultKind, JobTraits, plan

JOBS = [
    JobTraits("keyed_count"),
    JobTraits("windows"),
    JobTraits("broadcast"),
    JobTraits("unaligned", poison=False),
    JobTraits("kafka_to_kafka", kafka=True),
    JobTraits("kafka_to_postgres", kafka=True, postgres=True),
    JobTraits("files_to_parquet"),
]
ALL_FAULTS = list(FaultKind)
ALL_BAD = list(BadInput)
SEEDS = range(1000, 1400)


def _campaign(faults=ALL_FAULTS, jobs=JOBS, bad=ALL_BAD):
    return [plan(seed, jobs, faults, bad) for seed in SEEDS]


def test_a_seed_gives_the_same_plan_every_time():
    assert _campaign() == _campaign()
    assert plan(1079, JOBS, ALL_FAULTS, ALL_BAD) == plan(1079, list(JOBS), ALL_FAULTS, ALL_BAD)


def test_seeds_give_different_plans():
    plans = _campaign()
    assert len({(p.job, p.backend, p.storage, p.faults) for p in plans}) > len(plans) * 0.9


def test_a_campaign_covers_every_job_fault_kind_bad_input_backend_and_storage():
    plans = _campaign()
    assert {p.job for p in plans} == {j.name for j in JOBS}
    assert {f.kind for p in plans for f in p.faults} == set(FaultKind)
    assert {p.bad_input for p in plans} == {None, *BadInput}
    assert {p.backend for p in plans} == {"hashmap", "rocksdb"}
    assert {p.storage for p in plans} == {"local", "s3"}


def test_each_run_has_one_to_three_faults_in_order_within_the_run():
    for p in _campaign():
        assert 1 <= len(p.faults) <= 3
        times = [f.at for f in p.faults]
        assert times == sorted(times) and all(0.05 <= t <= 0.8 for t in times)
        assert 0.3 <= p.bad_at <= 0.7


def test_a_server_restart_falls_only_where_the_run_uses_that_server():
    traits = {j.name: j for j in JOBS}
    for p in _campaign():
        kinds = {f.kind for f in p.faults}
        if FaultKind.RESTART_S3 in kinds:
            assert p.storage == "s3"
        if FaultKind.RESTART_KAFKA in kinds or p.bad_input is BadInput.MALFORMED_KAFKA:
            assert traits[p.job].kafka
        if FaultKind.RESTART_POSTGRES in kinds:
            assert traits[p.job].postgres
        if p.bad_input is BadInput.POISON:
            assert traits[p.job].poison


def test_a_selection_of_jobs_and_faults_is_honoured():
    plans = _campaign(faults=[FaultKind.RESTART_POSTGRES], bad=[])
    assert {p.job for p in plans} == {"kafka_to_postgres"}
    assert Counter(f.kind for p in plans for f in p.faults).keys() == {FaultKind.RESTART_POSTGRES}
    assert {p.bad_input for p in plans} == {None}


# --- driver high availability -----------------------------------------------------------------

HA = [FaultKind.KILL_DRIVER_RESTART, FaultKind.KILL_DRIVER_STANDBY, FaultKind.PAUSE_LEADER]
RESCALING = [FaultKind.RESCALE, FaultKind.KILL_DURING_RESCALE]
BEFORE_HA = [k for k in FaultKind if k not in HA and k not in RESCALING]


def test_a_selection_without_the_high_availability_kinds_draws_what_it_drew_before_them():
    # seeds 1000-1199 over every job, the ten kinds before driver high availability and every
    # bad input, as plan() drew them before the three kinds came (a digest of their repr)
    plans = [plan(seed, JOBS, BEFORE_HA, ALL_BAD) for seed in range(1000, 1200)]
    digest = hashlib.sha256(repr(plans).encode()).hexdigest()
    assert digest == "96175beb514205aaeaa7a8dce1f5b779c162bdec1f42b10ad09b4efbc74d4208"
    assert not any(p.high_availability for p in plans)
    assert plans[17].describe() == "unaligned rocksdb s3 bad=corrupt_state@0.41"


def test_the_high_availability_kinds_fall_on_every_job_and_put_its_drivers_under_it():
    plans = _campaign(faults=HA, bad=[])
    assert {p.job for p in plans} == {j.name for j in JOBS}
    assert {f.kind for p in plans for f in p.faults} == set(HA)
    assert all(p.high_availability for p in plans)
    standby = [p for p in plans if p.needs_standby]
    assert standby and all(
        {FaultKind.KILL_DRIVER_STANDBY, FaultKind.PAUSE_LEADER} & {f.kind for f in p.faults}
        for p in standby
    )
    assert "ha(lease 2s)" in plans[0].describe()


def test_a_run_mixing_kinds_is_under_high_availability_when_one_of_its_faults_needs_it():
    mixed = _campaign(faults=[FaultKind.KILL_TASK, FaultKind.PAUSE_LEADER], bad=[])
    for p in mixed:
        assert p.high_availability == any(f.kind is FaultKind.PAUSE_LEADER for f in p.faults)
    assert {p.high_availability for p in mixed} == {True, False}


def test_each_job_of_a_run_has_a_cluster_id_of_its_own():
    p = plan(5, JOBS, HA, [])
    assert [p.cluster_id(n) for n in (1, 2, 3)] == ["chaos-5", "chaos-5-2", "chaos-5-3"]


def test_the_rescaling_kinds_fall_on_every_job_and_leave_earlier_selections_alone():
    plans = _campaign(faults=RESCALING, bad=[])
    assert {p.job for p in plans} == {j.name for j in JOBS}
    assert {f.kind for p in plans for f in p.faults} == set(RESCALING)
    assert all(
        f.detail.startswith("task ") for p in plans for f in p.faults
        if f.kind is FaultKind.KILL_DURING_RESCALE
    )  # fmt: skip
    # seeds 1000-1199 over every job, every kind but the rescaling ones and every bad input,
    # as plan() drew them before the rescaling kinds came (a digest of their repr)
    before = [plan(seed, JOBS, [*BEFORE_HA, *HA], ALL_BAD) for seed in range(1000, 1200)]
    digest = hashlib.sha256(repr(before).encode()).hexdigest()
    assert digest == "c1d93f48816a0cc1193f6d37af0342ccf55d1cee5fc0787bf928a04cc85296f5"
