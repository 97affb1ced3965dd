"""Leader election over real lease files in a directory, with a manual clock (no sleeps): one
leader per cluster id, standbys that wait and take the next epoch, renewals, release, a paused
leader that finds it lost, and a newer epoch that ends a term."""

from __future__ import annotations

import threading

import pytest

from barrierflow.checkpoint.storage_layout import epoch_file
from barrierflow.client.ha.ha_files import LocalHaFiles, ha_files
from barrierflow.client.ha.leader_election import (
    LeaderElection,
    holder_process_alive,
    this_process,
)
from barrierflow.client.ha.lease import Holder
from barrierflow.client.ha.records import LeaseRecord, UnreadableRecordError, decode
from barrierflow.cluster.process_identity import process_start_time
from barrierflow.errors import ConfigurationError, LeadershipLostError


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def holder(name: str) -> Holder:
    return Holder("elsewhere", 1, 0, name)  # on another host: its process cannot be checked


def election(files, clock: Clock, name: str, alive=lambda h: None) -> LeaderElection:
    return LeaderElection(
        files, duration_s=10.0, holder=holder(name), clock=clock, sleep=clock.sleep,
        holder_alive=alive,
    )  # fmt: skip


def test_the_first_program_of_a_cluster_id_leads_epoch_1(tmp_path):
    files = LocalHaFiles(str(tmp_path))
    first = election(files, Clock(), "a")
    assert first.acquire() == 1 and first.valid()
    record = decode(files.read(epoch_file(1)), LeaseRecord, "lease")
    assert (record.epoch, record.token, record.duration_ms) == (1, "a", 10_000)


def test_a_second_program_waits_as_a_standby_until_the_lease_runs_out(tmp_path):
    files, clock = LocalHaFiles(str(tmp_path)), Clock()
    election(files, clock, "a").acquire()  # never renewed: as if SIGKILLed on another host
    told = []
    standby = election(files, clock, "b")
    assert standby.acquire(on_standby=told.append) == 2
    assert len(told) == 1 and "epoch 1 is held by elsewhere" in told[0].reason
    assert 10.0 <= clock.now <= 10.6  # a whole duration, and at most one poll more


def test_a_renewed_lease_keeps_the_standby_waiting(tmp_path):
    files, clock = LocalHaFiles(str(tmp_path)), Clock()
    leader = election(files, clock, "a")
    leader.acquire()
    standby = election(files, clock, "b")

    renewed_at = []

    def sleep_and_renew(seconds: float) -> None:
        clock.sleep(seconds)
        if clock.now < 30 and leader._term.renewal_due(clock.now):
            assert leader.renew_once()
            renewed_at.append(clock.now)

    standby._sleep = sleep_and_renew
    assert standby.acquire() == 2
    assert len(renewed_at) >= 8  # every third of the duration, until 30 s
    # then a whole duration without a renewal, and at most one poll more
    assert renewed_at[-1] + 10 <= clock.now <= renewed_at[-1] + 10.6


def test_a_holder_whose_process_is_gone_is_taken_over_at_once(tmp_path):
    files, clock = LocalHaFiles(str(tmp_path)), Clock()
    election(files, clock, "a").acquire()
    assert election(files, clock, "b", alive=lambda h: False).acquire() == 2
    assert clock.now == 0.0


def test_a_released_lease_is_taken_over_at_once(tmp_path):
    files, clock = LocalHaFiles(str(tmp_path)), Clock()
    leader = election(files, clock, "a")
    leader.acquire()
    leader.release()
    assert not leader.valid()
    assert election(files, clock, "b").acquire() == 2 and clock.now == 0.0


def test_a_leader_paused_past_its_lease_finds_its_term_over_and_checks_fail(tmp_path):
    files, clock = LocalHaFiles(str(tmp_path)), Clock()
    leader = election(files, clock, "a")
    leader.acquire()
    leader.check("complete checkpoint 3")
    clock.now += 30  # SIGSTOPped for three durations
    assert not leader.valid()
    with pytest.raises(LeadershipLostError, match=r"lease ran out .*; complete checkpoint 3"):
        leader.check("complete checkpoint 3")
    assert not leader.renew_once()  # and it does not renew itself back to life


def test_a_newer_epoch_ends_the_term_at_the_next_renewal(tmp_path):
    files, clock = LocalHaFiles(str(tmp_path)), Clock()
    leader = election(files, clock, "a")
    leader.acquire()
    clock.now += 11  # a standby saw no renewal for a duration (the leader was cut off)
    assert election(files, clock, "b").acquire() == 2
    clock.now = 1.0  # the old leader's clock: it still thinks its lease runs
    assert leader.valid()
    assert not leader.renew_once()
    with pytest.raises(LeadershipLostError, match="lost leadership to epoch 2"):
        leader.check("notify checkpoint 4 complete")


def test_the_renewal_thread_calls_on_lost_once_the_term_ends(tmp_path):
    files = LocalHaFiles(str(tmp_path))
    leader = LeaderElection(files, duration_s=0.3, holder=holder("a"))
    leader.acquire()
    lost = threading.Event()
    errors = []
    leader.start_renewing(lambda e: (errors.append(e), lost.set()))
    assert not lost.wait(0.5)  # renewed: still leading after more than a duration
    assert leader.valid()
    files.create(epoch_file(2), files.read(epoch_file(1)))  # a newer epoch appears
    assert lost.wait(2.0)
    assert errors[0].lost_to == 2
    leader.release()


def test_of_many_standbys_racing_for_one_epoch_exactly_one_wins(tmp_path):
    files = LocalHaFiles(str(tmp_path))
    won = []
    barrier = threading.Barrier(8)

    def race(i: int) -> None:
        barrier.wait()
        if files.create(epoch_file(1), f"{i}".encode()):
            won.append(i)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1 and files.read(epoch_file(1)) == f"{won[0]}".encode()
    assert files.list("leader") == ["epoch-00000000000000000001.json"]


def test_a_damaged_lease_is_refused_naming_it(tmp_path):
    files = LocalHaFiles(str(tmp_path))
    files.create(epoch_file(1), b"{not json")
    with pytest.raises(UnreadableRecordError, match=r"epoch-00000000000000000001\.json"):
        election(files, Clock(), "b").acquire()


def test_storage_without_an_exclusive_create_is_refused():
    with pytest.raises(ConfigurationError, match=r"gs:// cannot"):
        ha_files("gs://bucket/ha", "job")


def test_this_process_is_alive_and_a_process_that_is_gone_is_not():
    me = this_process()
    assert holder_process_alive(me) is True
    assert holder_process_alive(Holder(me.host, me.pid, me.process_start + 1, "x")) is False
    assert holder_process_alive(Holder("another-host", me.pid, me.process_start, "x")) is None
    assert process_start_time(2**22 + 12345) is None
