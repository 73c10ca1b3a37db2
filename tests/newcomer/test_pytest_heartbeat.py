"""Issue 39: `pytest -q` is never silent for minutes: a long test gets a "still running" line."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_a_long_test_says_it_is_still_running():
    env = dict(os.environ, FSTBEAM_TEST_HEARTBEAT="0.5")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HERE / "heartbeat_case.py")],
                          cwd=HERE.parents[1], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    beats = [x for x in proc.stdout.splitlines() if "heartbeat_case.py::test_sleeps still running" in x]
    assert len(beats) >= 2, proc.stdout
    off = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HERE / "heartbeat_case.py")],
                         cwd=HERE.parents[1], env=dict(env, FSTBEAM_TEST_HEARTBEAT="0"), capture_output=True, text=True,
                         timeout=300)
    assert "still running" not in off.stdout
