"""A slow test run by test_pytest_heartbeat.py in a pytest of its own (not collected here: no test_ prefix)."""
import time


def test_sleeps():
    time.sleep(1.6)
