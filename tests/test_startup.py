"""Start-up helpers of the commands (fstbeam/_startup.py): the collector is off inside ``no_gc``
and back as it was after; stages record and report wall and CPU seconds in order."""
from __future__ import annotations

import gc
import time

from fstbeam._startup import Stages, no_gc


def test_no_gc_turns_the_collector_off_and_back_on():
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    with no_gc(freeze=False):
        assert not gc.isenabled()
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_no_gc_restores_a_disabled_collector_as_disabled():
    gc.disable()
    try:
        with no_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the caller's setting wins; nothing frozen for it
    finally:
        gc.enable()


def test_no_gc_freeze_moves_the_objects_made_so_far_out_of_the_collections():
    before = gc.get_freeze_count()
    try:
        with no_gc(freeze=True):
            kept = [[i] for i in range(1000)]  # noqa: F841 - objects the freeze must count
        assert gc.get_freeze_count() >= before + 1000
    finally:
        gc.unfreeze()


def test_stages_record_and_report_in_order():
    seen = []
    st = Stages(lambda name, wall, cpu: seen.append((name, wall, cpu)))
    with st.stage("sleep"):
        time.sleep(0.05)
    with st.stage("work"):
        sum(i * i for i in range(200_000))
    assert [s[0] for s in seen] == ["sleep", "work"] == list(st.wall)
    assert st.wall["sleep"] >= 0.05 and st.cpu["sleep"] < st.wall["sleep"]  # sleeping is not CPU time
    assert st.cpu["work"] > 0
    wall, cpu = st.total()
    assert wall >= st.wall["sleep"] + st.wall["work"] - 1e-3
