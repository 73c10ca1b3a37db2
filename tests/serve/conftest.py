"""A real ``fstbeam serve`` process on a free 127.0.0.1 port, over a tiny random-weight model and a
tiny byte-level BPE tokenizer saved to disk; and the same model loaded here as the offline oracle."""
from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
WORDS = ["a", "cat", "dog", "the", "sat", "on", "mat", "ran", "and"]


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    d = tmp_path_factory.mktemp("tiny-serve-model")
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(["a cat and a dog. the cat sat on a mat. the dog ran."] * 20, vocab_size=300,
                            min_frequency=1, special_tokens=["<eos>"], show_progress=False)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, eos_token="<eos>")
    tok.save_pretrained(d)
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=128,
                      eos_token_id=tok.eos_token_id, bos_token_id=None, pad_token_id=None)
    model = LlamaForCausalLM(cfg)
    with torch.no_grad():
        model.lm_head.weight.mul_(4.0)  # peaked distributions: fewer near-ties between beams
    model.save_pretrained(d)
    return d


@pytest.fixture(scope="session")
def offline(model_dir):
    from fstbeam.runtime.decoder import Decoder

    return Decoder(str(model_dir), device="cpu")


@pytest.fixture(scope="session")
def words_artifact(offline, tmp_path_factory):
    import fstbeam

    cc = fstbeam.compile_constraints(tokenizer=offline.vocab, words=WORDS, leading_space=True)
    path = tmp_path_factory.mktemp("artifact") / "animals.fstbeam"
    cc.save(path)
    return path


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
            raise RuntimeError("the server did not start in time:\n" + "\n".join(self.lines[-20:]))
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


@pytest.fixture(scope="module")
def server(model_dir, words_artifact):
    s = Server(["--model", model_dir, "--device", "cpu", "--batch-size", "4", "--model-name", "tiny",
                "--constraints", f"animals={words_artifact}", "--max-body", "20000", "--timeout", "60"])
    yield s
    assert s.stop() == 0
