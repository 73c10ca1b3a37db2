"""A real server process (:class:`Server`) and what a request should return, computed offline
with the public API (the oracle)."""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SETTINGS = dict(beam_size=3, max_tokens=8)


def offline_result(dec, prompt: str, constraints: dict | None, *, beam_size=3, max_tokens=8, n=1, artifact=None,
                   stop=()):
    """``Decoder.generate`` with the settings ``fstbeam generate`` uses, and the constraints built
    with ``compile_constraints`` / ``with_request`` (phrases on top of a word list or artifact)."""
    from fstbeam import AnyOf, Phrase, compile_constraints, load_constraints, with_request
    from fstbeam.runtime.defaults import generate_defaults

    c = dict(constraints or {})
    sc = c.pop("sentence_case", False)
    phrases = [AnyOf(*p, sentence_case=sc) if isinstance(p, list) else Phrase(p, sentence_case=sc)
               for p in c.pop("phrases", [])]
    light = dict(phrases=phrases, avoid=c.pop("avoid", []), prefix=c.pop("prefix", None), ordered=c.pop("ordered", False))
    base = None
    if "artifact" in c:
        base = load_constraints(artifact, tokenizer=dec.tokenizer)
    elif "words" in c:
        base = compile_constraints(words=c.pop("words"), tokenizer=dec.vocab, leading_space=True)
    has_light = light["phrases"] or light["avoid"] or light["prefix"] is not None
    if base is None:
        cc = compile_constraints(tokenizer=dec.vocab, **light) if has_light else None
    else:
        cc = with_request(base, **light) if has_light else base
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        [r] = dec.generate([prompt], cc, beam_size=beam_size, max_new_tokens=max_tokens, nbest=n, batch_size=4,
                           stop=tuple(stop), **generate_defaults())
    return r


class Server:
    """A ``python -m fstbeam.serve`` child process; ``url`` once it is ready; its stderr lines."""

    def __init__(self, args, timeout: float = 120.0):
        env = dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", OMP_NUM_THREADS="1")
        self.proc = subprocess.Popen([sys.executable, "-m", "fstbeam.serve", "--port", "0", *map(str, args)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        self.lines: list[str] = []
        ready: queue.Queue = queue.Queue()

        def read():
            for line in self.proc.stderr:
                self.lines.append(line.rstrip("\n"))
                if "fstbeam serve: ready on " in line:
                    ready.put(line.split("ready on ", 1)[1].strip())
            ready.put(None)

        threading.Thread(target=read, daemon=True).start()
        try:
            self.url = ready.get(timeout=timeout)
        except queue.Empty:
            self.stop()
            raise RuntimeError("the server did not start in time:\n" + "\n".join(self.lines[-20:])) from None
        if self.url is None:
            raise RuntimeError("the server exited:\n" + "\n".join(self.lines[-20:]))

    def stop(self, timeout: float = 60.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def wait_log(self, needle: str, timeout: float = 10.0) -> bool:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if any(needle in ln for ln in self.lines):
                return True
            time.sleep(0.05)
        return False
