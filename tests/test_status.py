"""The status line of slow steps (fstbeam.files.status): said once a step runs long, repeated
with the time spent, closed when it ends; silent for quick steps and with FSTBEAM_QUIET."""
from __future__ import annotations

import io
import sys
import time

from fstbeam.files import status as st


def _run(monkeypatch, body, **kw) -> list[str]:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    with st.status("doing the slow thing", **kw):
        body(err)
    return err.getvalue().splitlines()


def _wait_for(err, n, timeout=60.0):
    deadline = time.monotonic() + timeout
    while err.getvalue().count("\n") < n and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_slow_step_is_announced_repeated_and_closed(monkeypatch):
    lines = _run(monkeypatch, lambda err: _wait_for(err, 3), after=0.0, every=0.01)
    assert lines[0] == "[fstbeam] doing the slow thing ..."
    assert lines[1].startswith("[fstbeam] doing the slow thing ... ") and lines[1].endswith(" s")
    assert lines[-1].startswith("[fstbeam] doing the slow thing: done in ")
    assert all(x.startswith(st.PREFIX) for x in lines)


def test_a_quick_step_says_nothing(monkeypatch):
    assert _run(monkeypatch, lambda err: None, after=30.0) == []


def test_quiet(monkeypatch):
    monkeypatch.setenv("FSTBEAM_QUIET", "1")
    assert _run(monkeypatch, lambda err: time.sleep(0.05), after=0.0, every=0.01) == []


def test_an_error_in_the_step_still_closes_it(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    try:
        with st.status("failing", after=0.0, every=0.01):
            _wait_for(err, 1)
            raise KeyError("x")
    except KeyError:
        pass
    assert err.getvalue().splitlines()[-1].startswith("[fstbeam] failing: done in")


def test_an_exception_as_the_watcher_starts_stops_the_watcher(monkeypatch):
    """An exception (a KeyboardInterrupt) may land in this thread just as the watcher has
    started: the watcher must end, not report the step for ever."""
    import threading

    class Interrupted(BaseException):
        pass

    start = threading.Thread.start

    def start_then_interrupted(self):
        start(self)
        raise Interrupted

    monkeypatch.setattr(threading.Thread, "start", start_then_interrupted)
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    try:
        with st.status("interrupted", after=0.05, every=0.01):
            raise AssertionError("the step never runs")
    except Interrupted:
        pass
    monkeypatch.setattr(threading.Thread, "start", start)
    deadline = time.monotonic() + 10
    while any(t.name == "fstbeam-status" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(t.name == "fstbeam-status" for t in threading.enumerate())
    time.sleep(0.1)  # past `after`: a watcher left running would have said the step by now
    assert err.getvalue() == ""


def test_steps_share_one_watcher_and_report_each_slow_step(monkeypatch):
    """`StatusSteps` (a compile's stages): a quick step says nothing, a slow one is announced,
    repeated and closed under its own name, an error still closes its step, and `close` ends
    the one watcher thread."""
    import threading

    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    steps = st.StatusSteps(after=0.05, every=0.01)
    with steps("quick"):
        pass
    with steps("slow"):
        _wait_for(err, 3)
    try:
        with steps("failing"):
            _wait_for(err, 5)
            raise KeyError("x")
    except KeyError:
        pass
    watchers = [t for t in threading.enumerate() if t.name == "fstbeam-status"]
    steps.close()
    lines = err.getvalue().splitlines()
    assert not any("quick" in x for x in lines)
    slow = [x for x in lines if "slow" in x]
    assert slow[0] == "[fstbeam] slow ..." and slow[1].endswith(" s") and slow[-1].startswith("[fstbeam] slow: done in ")
    assert lines[-1].startswith("[fstbeam] failing: done in ")
    assert len(watchers) >= 1 and not any(t.is_alive() for t in watchers if t is steps._watcher)
    with steps("after close"):  # (closed: silent, no new watcher)
        time.sleep(0.1)
    assert "after close" not in err.getvalue()


def test_steps_are_quiet_with_fstbeam_quiet(monkeypatch):
    monkeypatch.setenv("FSTBEAM_QUIET", "1")
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    steps = st.StatusSteps(after=0.0, every=0.01)
    with steps("slow"):
        time.sleep(0.05)
    steps.close()
    assert err.getvalue() == "" and steps._watcher is None


def test_a_step_inside_another_hands_the_watch_back(monkeypatch):
    """A step inside a step: the inner one is reported; after it the outer one is watched again
    and reported under its own name."""
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    steps = st.StatusSteps(after=0.05, every=0.01)
    with steps("outer"):
        with steps("inner"):
            _wait_for(err, 1)
        _wait_for(err, 3)
    steps.close()
    lines = err.getvalue().splitlines()
    assert lines[0] == "[fstbeam] inner ..." and lines[1].startswith("[fstbeam] inner: done in ")
    assert "[fstbeam] outer ..." in lines and lines[-1].startswith("[fstbeam] outer: done in ")
