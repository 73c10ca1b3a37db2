"""Test fixtures for the runtime: a scripted stub LM, tiny dict vocabularies, tiny HF models,
and reference implementations (brute-force search, a plain-Python DBA) used as oracles."""
from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import Callable, Sequence

import torch

from fstbeam.runtime.search.tables import FREE, TEXT  # noqa: F401 - re-exported for tests


# ---------------------------------------------------------------------------------------------
# Scripted stub LM: logits are a fixed function of the whole prefix (prompt + generated tokens)
# ---------------------------------------------------------------------------------------------
def prefix_logits(seq: Sequence[int], V: int, *, scale: float = 3.0, eos: Sequence[int] = (), eos_bias: float = 0.0,
                  table: dict | None = None) -> torch.Tensor:
    """Deterministic pseudo-random logits for ``seq``; ``table`` can script exact rows."""
    key = tuple(int(x) for x in seq)
    if table is not None and key in table:
        return torch.as_tensor(table[key], dtype=torch.float32)
    return _random_logits(key, V, float(scale), tuple(eos), float(eos_bias))


@functools.lru_cache(maxsize=1 << 18)
def _random_logits(key: tuple, V: int, scale: float, eos: tuple, eos_bias: float) -> torch.Tensor:
    h = hashlib.sha256(repr(key).encode()).digest()
    g = torch.Generator().manual_seed(int.from_bytes(h[:8], "little"))
    x = torch.randn(V, generator=g) * scale
    for e in eos:
        x[e] += eos_bias
    return x


@dataclass
class StubState:
    seqs: list[list[int]]

    @property
    def rows(self) -> int:
        return len(self.seqs)


class StubLM:
    """A model adapter whose next-token logits are ``prefix_logits(prompt + generated)``.

    Counts the rows it is asked to compute (``forward_rows``), like the HF adapters.
    """

    # The ModelAdapter protocol's capabilities: a scripted causal LM without a model, an output
    # layer or packed weights; rows may join mid-decode.
    kind = "causal"
    device = torch.device("cpu")
    supports_refill = True
    decoder_start = None
    model_eos_ids: tuple[int, ...] = ()
    model = None
    packing = None
    no_head_reason = "the stub LM scripts its logits (no output_projection)"

    def __init__(self, V: int, *, scale: float = 3.0, eos: Sequence[int] = (0,), eos_bias: float = 0.0,
                 table: dict | None = None, max_positions: int | None = None):
        self.vocab_size = V
        self.scale, self.eos, self.eos_bias, self.table = scale, tuple(eos), eos_bias, table
        self.max_positions = max_positions
        self.forward_rows = 0
        self.forward_calls = 0

    def logits_for(self, seq) -> torch.Tensor:
        return prefix_logits(seq, self.vocab_size, scale=self.scale, eos=self.eos, eos_bias=self.eos_bias, table=self.table)

    def logprobs(self, seq) -> torch.Tensor:
        return _logsoftmax(tuple(int(x) for x in seq), self.vocab_size, float(self.scale), self.eos, float(self.eos_bias)) \
            if self.table is None else torch.log_softmax(self.logits_for(seq).double(), -1)

    def _rows(self, seqs):
        self.forward_rows += len(seqs)
        self.forward_calls += 1
        return torch.stack([self.logits_for(s) for s in seqs])

    def output_projection(self):
        return None

    def prefill(self, prompts, hidden: bool = False):
        assert not hidden, "the stub LM has no hidden states"
        seqs = [list(p) for p in prompts]
        return self._rows(seqs), StubState(seqs)

    def step(self, state: StubState, tokens, hidden: bool = False):
        assert not hidden, "the stub LM has no hidden states"
        for s, t in zip(state.seqs, tokens.tolist()):
            s.append(int(t))
        return self._rows(state.seqs)

    def select(self, state: StubState, index):
        state.seqs = [list(state.seqs[i]) for i in index.tolist()]
        return state

    def take(self, state: StubState, index):
        return StubState([list(state.seqs[i]) for i in index.tolist()])

    def concat(self, states):
        return StubState([list(s) for st in states for s in st.seqs])


@functools.lru_cache(maxsize=1 << 18)
def _logsoftmax(key, V, scale, eos, eos_bias):
    return torch.log_softmax(_random_logits(key, V, scale, eos, eos_bias).double(), -1)


# ---------------------------------------------------------------------------------------------
# Brute force: the true best constrained output
# ---------------------------------------------------------------------------------------------
def brute_force(logprobs: Callable[[list[int]], torch.Tensor], prompt: list[int], *, V: int, L: int,
                eos: Sequence[int], matcher_factory=None, rank=None, nbest: int = 1, renormalize: bool = False):
    """Every output of at most ``L`` tokens: ``y EOS`` (EOS allowed where the constraints accept)
    or ``L`` text tokens ending in an accepting state. Returns the ``nbest`` best
    ``(rank, logprob, tokens, eos or None)``; ``rank(logprob, length)`` defaults to ``logprob``."""
    rank = rank or (lambda lp, n: lp)
    found = []
    eos = list(eos)

    def rec(seq, lp_sum, m):
        lp = logprobs(prompt + seq)
        accepting = m is None or m.is_final()
        if renormalize and m is not None:  # log-probabilities over the allowed ids (EOS where accepting)
            ids = [t for t in m.allowed_token_ids().tolist() if t not in eos] + (list(eos) if accepting else [])
            lp = lp - torch.logsumexp(lp[ids], 0)
        if accepting:
            e = max(eos, key=lambda e: lp[e].item())
            total = lp_sum + lp[e].item()
            found.append((rank(total, len(seq) + 1), total, list(seq), e))
        if len(seq) + 1 > L:
            return
        allowed = range(V) if m is None else m.allowed_token_ids().tolist()
        for v in allowed:
            if v in eos:
                continue
            m2 = advanced_copy(m, v, matcher_factory)
            if len(seq) + 1 == L:
                if m2 is None or m2.is_final():
                    total = lp_sum + lp[v].item()
                    found.append((rank(total, L), total, seq + [v], None))
            else:
                rec(seq + [v], lp_sum + lp[v].item(), m2)

    rec([], 0.0, matcher_factory() if matcher_factory else None)
    found.sort(key=lambda x: -x[0])
    return found[:nbest]


def advanced_copy(m, token: int, factory):
    """A copy of matcher ``m`` (None: unconstrained) that has also taken ``token``."""
    if m is None:
        return None
    m2 = _copy_matcher(m, factory)
    m2.advance(token)
    return m2


def _copy_matcher(m, factory):
    m2 = factory()
    for t in m.history:
        m2.advance(t)
    return m2


# ---------------------------------------------------------------------------------------------
# Tiny vocabularies and models
# ---------------------------------------------------------------------------------------------
TINY_TOKENS = ["<eos>", "a", "b", " ", "ab", " a", " b", "c", ".", " c", "ba", "a ", "<x>"]


def tiny_vocab(tokens=TINY_TOKENS, eos=(0,)):
    from fstbeam.contract.vocab import Vocab

    return Vocab.from_dict({i: t for i, t in enumerate(tokens) if i not in eos and not (t.startswith("<") and t.endswith(">"))},
                           eos_ids=list(eos), width=len(tokens))


def tiny_llama(V: int, seed: int = 0, scale: float = 4.0):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    m = LlamaForCausalLM(LlamaConfig(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                     num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=256,
                                     bos_token_id=None, eos_token_id=0, pad_token_id=None)).eval()
    with torch.no_grad():
        m.lm_head.weight.mul_(scale)
    return m


def tiny_gpt2(V: int, seed: int = 0):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    return GPT2LMHeadModel(GPT2Config(vocab_size=V, n_embd=16, n_layer=2, n_head=2, n_positions=128,
                                      bos_token_id=0, eos_token_id=0)).eval()


def tiny_gemma3(V: int, seed: int = 0):
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(seed)
    return Gemma3ForCausalLM(Gemma3TextConfig(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=3,
                                              num_attention_heads=2, num_key_value_heads=1, head_dim=8, sliding_window=3,
                                              layer_types=["sliding_attention", "sliding_attention", "full_attention"],
                                              max_position_embeddings=256, bos_token_id=2, eos_token_id=0, pad_token_id=0)).eval()


def tiny_t5(V: int, seed: int = 0):
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(seed)
    return T5ForConditionalGeneration(T5Config(vocab_size=V, d_model=16, d_kv=8, d_ff=32, num_layers=2, num_decoder_layers=2,
                                               num_heads=2, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
                                               relative_attention_num_buckets=8)).eval()


def hf_logprobs(model):
    """``seq -> log-softmax of the next-token logits`` under a causal HF model (no cache)."""

    @functools.lru_cache(maxsize=None)
    def cached(key):
        with torch.no_grad():
            return torch.log_softmax(model(torch.tensor([list(key)])).logits[0, -1].double(), -1)

    return lambda seq: cached(tuple(int(x) for x in seq))
