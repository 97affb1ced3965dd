"""The lease rules, with a manual clock: a standby takes over only after a whole duration
without a renewal, or at once when the holder's process is gone or it released the lease; a
leader stops acting a margin before that, and at once when a newer epoch exists."""

from __future__ import annotations

import pytest

from barrierflow.client.ha.lease import (
    SAFETY_MARGIN,
    Holder,
    LeaderTerm,
    Lease,
    LeaseObserver,
    Verdict,
)

HOLDER = Holder("host-a", 4242, 1000, "t1")


def lease(epoch: int = 1, renewals: int = 0, released: bool = False) -> Lease:
    return Lease(epoch, HOLDER, duration_ms=10_000, renewals=renewals, released=released)


def test_a_cluster_id_without_a_lease_is_free_for_epoch_1():
    seen = LeaseObserver().observe(None, now=0.0, holder_alive=None)
    assert (seen.verdict, seen.next_epoch) == (Verdict.FREE, 1)


def test_a_standby_waits_a_whole_duration_from_when_it_first_saw_the_lease_unchanged():
    observer = LeaseObserver()
    # the lease may be old when first seen: its age cannot be known without comparing clocks
    assert observer.observe(lease(), now=100.0, holder_alive=None).verdict is Verdict.HELD
    held = observer.observe(lease(), now=109.9, holder_alive=None)
    assert held.verdict is Verdict.HELD and held.wait_s == pytest.approx(0.1)
    free = observer.observe(lease(), now=110.0, holder_alive=None)
    assert (free.verdict, free.next_epoch) == (Verdict.FREE, 2)
    assert "ran out" in free.reason


def test_each_renewal_starts_the_standby_s_wait_again():
    observer = LeaseObserver()
    observer.observe(lease(renewals=1), now=0.0, holder_alive=None)
    assert observer.observe(lease(renewals=2), now=9.0, holder_alive=None).verdict is Verdict.HELD
    assert observer.observe(lease(renewals=2), now=18.0, holder_alive=None).verdict is Verdict.HELD
    assert observer.observe(lease(renewals=2), now=19.0, holder_alive=None).verdict is Verdict.FREE


def test_a_new_epoch_is_a_change_too():
    observer = LeaseObserver()
    observer.observe(lease(epoch=1), now=0.0, holder_alive=None)
    assert observer.observe(lease(epoch=2), now=9.0, holder_alive=None).verdict is Verdict.HELD
    assert observer.observe(lease(epoch=2), now=19.0, holder_alive=None).next_epoch == 3


def test_a_holder_whose_process_is_gone_or_that_released_frees_the_lease_at_once():
    gone = LeaseObserver().observe(lease(), now=0.0, holder_alive=False)
    assert (gone.verdict, gone.next_epoch) == (Verdict.FREE, 2) and "is gone" in gone.reason
    left = LeaseObserver().observe(lease(released=True), now=0.0, holder_alive=True)
    assert (left.verdict, left.next_epoch) == (Verdict.FREE, 2)


def test_a_live_holder_on_this_host_still_holds_its_lease_until_it_runs_out():
    observer = LeaseObserver()
    assert observer.observe(lease(), now=0.0, holder_alive=True).verdict is Verdict.HELD
    assert observer.observe(lease(), now=10.0, holder_alive=True).verdict is Verdict.FREE


def test_a_leader_stops_acting_a_margin_before_a_standby_may_take_over():
    term = LeaderTerm(epoch=3, duration_s=10.0, acquired_at=50.0)
    last_valid = 50.0 + 10.0 * (1 - SAFETY_MARGIN)
    assert term.valid(last_valid - 0.01)
    assert not term.valid(last_valid)
    assert term.valid_for_s(last_valid - 1) == pytest.approx(1.0)
    # a standby that first saw the lease just as it was renewed may take over at 60
    assert last_valid < 60.0


def test_a_renewal_counts_from_when_it_started():
    term = LeaderTerm(epoch=1, duration_s=9.0, acquired_at=0.0)
    assert not term.renewal_due(2.9) and term.renewal_due(3.0)
    term.renewed(started_at=3.0)
    assert term.valid(3.0 + 9.0 * (1 - SAFETY_MARGIN) - 0.01)
    term.renewed(started_at=1.0)  # a late answer to an older write changes nothing
    assert not term.renewal_due(5.9) and term.renewal_due(6.0)


def test_a_paused_leader_finds_its_term_over_when_it_wakes():
    term = LeaderTerm(epoch=1, duration_s=10.0, acquired_at=0.0)
    term.renewed(started_at=3.0)
    assert not term.valid(3.0 + 30.0)  # paused for three durations
    assert term.valid_for_s(33.0) == 0.0


def test_a_newer_epoch_ends_the_term_at_once_and_an_older_one_does_not():
    term = LeaderTerm(epoch=4, duration_s=10.0, acquired_at=0.0)
    term.newer_epoch_seen(4)
    term.newer_epoch_seen(2)
    assert term.valid(1.0) and term.lost_to is None
    term.newer_epoch_seen(6)
    term.newer_epoch_seen(5)
    assert not term.valid(1.0) and term.lost_to == 6
