"""The campaign's plans: a seed alone decides a run (so that any run replays), and a campaign
of many seeds reaches every job, fault kind and bad input, each only where it fits."""

from __future__ import annotations

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
