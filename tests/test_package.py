"""What a newcomer types first: the package's attributes resolve without importing everything."""
from __future__ import annotations

import subprocess
import sys


def test_grammars_is_an_attribute_of_the_package():
    code = ("import sys, fstbeam; assert 'pynini' not in sys.modules; "
            "f = fstbeam.grammars.run_cases; n, failures = f('dates'); print(n, len(failures))")
    out = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    n, failed = map(int, out.stdout.split())
    assert n > 10 and failed == 0
