"""Decoder speed on the default model (Gemma 3 270M), beam 5, fixed learner and MT-style prompts.

    python benchmarks/bench_decode.py --quick            # a few minutes on a 2-core CPU
    python benchmarks/bench_decode.py --out benchmarks/results/decode.json

Sections (each prints its ratios; everything lands in one JSON file):

1. ``unconstrained_vs_hf``: fstbeam (optimal stopping, and to the length limit) vs
   ``model.generate(num_beams=5, length_penalty=0)`` on the same model and prompts, batched:
   throughput and the model log-probability of each output (HF's outputs re-scored by the model).
2. ``a1_vs_unconstrained``: CEFR A1 word-list decoding vs unconstrained fstbeam, both run to the
   length limit (same number of steps), so the ratio is the cost of the masks.
3. ``dba_phrases``: 1, 2, 4, 8, 16 must-include phrases (DBA) vs unconstrained, to the length limit,
   with the plain track (the default) and without it (``plain_track=False``).
4. ``streaming``: the same decoder with a static batch vs streaming refill (epsilon 1/6) on
   inputs of mixed output lengths; the outputs must be identical.
5. ``stopping``: steps taken with the optimal-stopping certificate vs the length limit vs HF's
   ``early_stopping=True``.
6. ``shortlist``: time per step and throughput of unconstrained decoding, CEFR A1 and B1 with the
   full output layer and with the shortlist (``renormalize=True``, ``shortlist="off"`` / ``"auto"``,
   or ``"on"`` with ``--shortlist on``),
   8 prompts in one batch x beam 5, all to the length limit (same number of steps), run
   alternately; ratios to unconstrained and shortlist to full head; whether the outputs agree.
   ``--union`` adds the shortlist without its static set (the per-step union of the rows' masks).

Times are wall-clock seconds and process CPU seconds (``time.process_time``: the machine is
shared, so CPU time is the steadier figure; ratios use it). Timings live here, never in tests.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import time
import warnings
from pathlib import Path

import torch

LEARNER = [
    "Question: What do you eat for breakfast?\nAnswer:",
    "Question: Where do you live?\nAnswer:",
    "Question: What is your favourite animal and why?\nAnswer:",
    "Question: What do you do at the weekend?\nAnswer:",
    "Question: Can you describe your family?\nAnswer:",
    "Question: What time do you get up in the morning?\nAnswer:",
]
MT = [
    "Translate to French: The cat is sleeping on the sofa.\nFrench:",
    "Translate to German: I would like a cup of tea, please.\nGerman:",
    "Translate to Spanish: Where is the train station?\nSpanish:",
    "Translate to Italian: We are going to the beach tomorrow.\nItalian:",
]
PHRASES = ["good", "friend", "water", "morning", "family", "school", "happy", "music", "house", "book", "city",
           "red", "walk", "bread", "tea", "cat"]
# Short and long answers mixed, for the streaming comparison.
MIXED = [
    "Question: What is two plus two?\nAnswer:",
    "Write a long story about a dragon who learns to bake bread.\nStory:",
    "Question: Is the sky blue? Answer yes or no.\nAnswer:",
    "Describe in detail how to plant a garden, step by step.\nSteps:",
    "Question: What colour is grass?\nAnswer:",
    "Write a letter to a friend about your holiday in the mountains.\nLetter:",
    "Question: How many legs does a cat have?\nAnswer:",
    "Explain why people like music, with many examples.\nExplanation:",
]


class Timer:
    def __enter__(self):
        self.w, self.c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.w
        self.cpu = time.process_time() - self.c


def fst_run(dec, prompts, cc=None, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with Timer() as t:
            res = dec.generate(prompts, cc, **{"preset": "plain", **kw})  # the settings as given (the API's default preset is the format's since issue 39)
    st = dec.last_stats
    return res, t, st


def hf_run(dec, prompts, *, beam, max_new_tokens, early_stopping):
    tok = dec.tokenizer
    tok.padding_side = "left"
    enc = tok(prompts, return_tensors="pt", padding=True)
    with torch.inference_mode(), Timer() as t:
        out = dec.model.generate(**enc, num_beams=beam, max_new_tokens=max_new_tokens, do_sample=False, length_penalty=0.0,
                                 early_stopping=early_stopping, eos_token_id=list(dec.eos_ids), pad_token_id=0)
    n = enc["input_ids"].shape[1]
    gens = []
    for row in out[:, n:].tolist():
        toks, ended = [], False
        for x in row:
            if x in dec.eos_ids:
                ended = True
                break
            if x == 0:  # padding after EOS
                break
            toks.append(x)
        gens.append((toks, ended))
    return gens, t, out.shape[1] - n


class Best:
    """Min CPU and min wall time over repeats: the machine is shared, and the work is
    deterministic, so the fastest repeat is the least disturbed one."""

    def __init__(self):
        self.cpu = self.wall = float("inf")

    def add(self, t):
        self.cpu = min(self.cpu, t.cpu)
        self.wall = min(self.wall, t.wall)


def repeat(n, fn):
    best, out = Best(), None
    for _ in range(n):
        out = fn()
        best.add(out[1])
    return out[0], best, out[2]


def rate(n, t):
    return n / t.cpu if t.cpu > 0 else float("nan")


def paired(n, fa, fb):
    """Run ``fa`` and ``fb`` alternately ``n`` times each; min CPU of each (contention hits both)."""
    return interleaved(n, fa, fb)


def interleaved(n, *fns):
    """Run ``fns`` in turn, ``n`` rounds; per function its last output, best times and stats."""
    bests, outs = [Best() for _ in fns], [None] * len(fns)
    for _ in range(n):
        for i, fn in enumerate(fns):
            outs[i] = fn()
            bests[i].add(outs[i][1])
    return tuple((o[0], b, o[2]) for o, b in zip(outs, bests))


def _per_step_union(fn):
    """``fn`` with the static shortlist turned off (the per-step union of the rows' masks)."""
    from fstbeam.runtime.model import shortlist

    def run():
        saved, shortlist.STATIC_MAX_FRACTION = shortlist.STATIC_MAX_FRACTION, 0.0
        try:
            return fn()
        finally:
            shortlist.STATIC_MAX_FRACTION = saved
    return run


def shortlist_section(dec, prompts, beam, steps, repeats, shortlist_mode="auto", union=False) -> dict:
    """6. Unconstrained vs A1/B1 with the full head and with the shortlist, same prompts and steps
    (``union``: also the shortlist without the static set, a per-step union)."""
    from fstbeam.compiler.api import compile_constraints
    from fstbeam.runtime.model.adapters import adapter_for

    levels = {lvl: compile_constraints(cefr=lvl, tokenizer=dec.vocab, leading_space=True) for lvl in ("A1", "B1")}
    kw = dict(beam_size=beam, max_new_tokens=steps, batch_size=len(prompts), stopping="exhaustive")
    runs = {"unconstrained": lambda: fst_run(dec, prompts, **kw)}
    packed, unpacked = dec.adapter, adapter_for(dec.model, "off")  # the same model, linear weights not packed

    def without_packing(fn):
        def run():
            dec.adapter = unpacked
            try:
                return fn()
            finally:
                dec.adapter = packed
        return run
    if getattr(packed, "packing", None) is not None and packed.packing.active:
        runs["unconstrained_unpacked"] = without_packing(runs["unconstrained"])
        runs["A1_shortlist_unpacked"] = without_packing(
            lambda: fst_run(dec, prompts, levels["A1"], **kw, renormalize=True, shortlist=shortlist_mode))
    for lvl, cc in levels.items():
        for head in ("full", "shortlist"):
            mode = "off" if head == "full" else shortlist_mode
            runs[f"{lvl}_{head}"] = lambda cc=cc, mode=mode: fst_run(dec, prompts, cc, **kw, renormalize=True, shortlist=mode)
        if union:
            runs[f"{lvl}_union"] = _per_step_union(
                lambda cc=cc: fst_run(dec, prompts, cc, **kw, renormalize=True, shortlist=shortlist_mode))
    names = list(runs)
    load0 = os.getloadavg()
    outs = dict(zip(names, interleaved(repeats, *runs.values())))
    sec = {"prompts": len(prompts), "batch_size": len(prompts), "beam": beam, "steps_to_limit": steps, "repeats": repeats,
           "shortlist_mode": shortlist_mode,
           "loadavg_start": load0, "loadavg_end": os.getloadavg(), "configs": {}}
    base = outs["unconstrained"]
    base_step = base[1].cpu / base[2].steps
    for name, (res, t, st) in outs.items():
        per_step = t.cpu / st.steps
        sec["configs"][name] = {
            "cpu": t.cpu, "wall": t.wall, "steps": st.steps, "cpu_per_step": per_step, "wall_per_step": t.wall / st.steps,
            "tokens_per_cpu_s": len(prompts) * st.steps / t.cpu, "per_step_vs_unconstrained": per_step / base_step,
            "wall_per_step_vs_unconstrained": (t.wall / st.steps) / (base[1].wall / base[2].steps),
            "shortlist_steps": st.shortlist_steps, "logits_per_row": st.logits_elements / max(1, st.model_rows),
            "satisfied": sum(r.satisfied for r in res)}
    if "unconstrained_unpacked" in outs:  # the packed linear weights' share (runtime/model/packed_model.py)
        (_, t_uu, s_uu), (_, t_au, s_au) = outs["unconstrained_unpacked"], outs["A1_shortlist_unpacked"]
        sec["unpacked_A1_shortlist_vs_unconstrained"] = (t_au.cpu / s_au.steps) / (t_uu.cpu / s_uu.steps)
        sec["packed_vs_unpacked_per_step"] = {
            "unconstrained": (base[1].cpu / base[2].steps) / (t_uu.cpu / s_uu.steps),
            "A1_shortlist": (outs["A1_shortlist"][1].cpu / outs["A1_shortlist"][2].steps) / (t_au.cpu / s_au.steps)}
        print(f"[6] linear weights not packed: A1 shortlist {sec['unpacked_A1_shortlist_vs_unconstrained']:.3f}x per step "
              f"vs unconstrained; packing makes a step {sec['packed_vs_unpacked_per_step']['unconstrained']:.3f}x "
              f"(unconstrained) and {sec['packed_vs_unpacked_per_step']['A1_shortlist']:.3f}x (A1 shortlist) as long")
    for lvl in levels:
        (full, t_f, s_f), (short, t_s, s_s) = outs[f"{lvl}_full"], outs[f"{lvl}_shortlist"]
        sec[f"{lvl}_shortlist_vs_full_per_step"] = (t_s.cpu / s_s.steps) / (t_f.cpu / s_f.steps)
        sec[f"{lvl}_identical_tokens"] = [a.token_ids for a in full] == [b.token_ids for b in short]
        sec[f"{lvl}_max_score_diff"] = max(abs(a.score - b.score) for a, b in zip(full, short))
        sec[f"{lvl}_texts"] = [r.text for r in short]
        if union:
            (uni, t_u, s_u) = outs[f"{lvl}_union"]
            sec[f"{lvl}_static_vs_union_per_step"] = (t_s.cpu / s_s.steps) / (t_u.cpu / s_u.steps)
            sec[f"{lvl}_union_identical_tokens"] = [a.token_ids for a in full] == [b.token_ids for b in uni]
            print(f"[6] {lvl}: per-step union {sec['configs'][f'{lvl}_union']['per_step_vs_unconstrained']:.3f}x vs "
                  f"unconstrained; static/union {sec[f'{lvl}_static_vs_union_per_step']:.3f}x; identical tokens "
                  f"{sec[f'{lvl}_union_identical_tokens']}")
        print(f"[6] {lvl}: full head {sec['configs'][f'{lvl}_full']['per_step_vs_unconstrained']:.3f}x, shortlist "
              f"{sec['configs'][f'{lvl}_shortlist']['per_step_vs_unconstrained']:.3f}x per step vs unconstrained "
              f"(wall {sec['configs'][f'{lvl}_shortlist']['wall_per_step_vs_unconstrained']:.3f}x) "
              f"(shortlist/full {sec[f'{lvl}_shortlist_vs_full_per_step']:.3f}x); identical tokens "
              f"{sec[f'{lvl}_identical_tokens']}, max score diff {sec[f'{lvl}_max_score_diff']:.2e}; "
              f"logits per row {sec['configs'][f'{lvl}_shortlist']['logits_per_row']:.0f}")
    print(f"[6] unconstrained {base_step:.3f}s cpu per step ({len(prompts)} x beam {beam}); load {load0} -> {sec['loadavg_end']}")
    return sec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer prompts and tokens (a few minutes on 2 cores)")
    ap.add_argument("--out", default=None, help="JSON file (default benchmarks/results/decode[_quick].json); "
                                                "sections not run keep their previous figures")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--sections", default="1,2,3,4,5,6", help="which sections to run, e.g. 3,4")
    ap.add_argument("--shortlist", default="auto", choices=("auto", "on"), help="section 6: the shortlist setting measured")
    ap.add_argument("--union", action="store_true", help="section 6: also the shortlist without the static set (per-step union)")
    ap.add_argument("--repeats", type=int, default=None, help="runs per configuration, min CPU time kept (default 2 quick, 3 full)")
    args = ap.parse_args(argv)
    out_path = Path(args.out or ("benchmarks/results/decode_quick.json" if args.quick else "benchmarks/results/decode.json"))
    sections = {int(x) for x in args.sections.split(",") if x.strip()}
    from fstbeam.compiler.api import compile_constraints
    from fstbeam.kernels.dispatch import resolve_backend
    from fstbeam.runtime import Decoder

    quick = args.quick
    R = args.repeats or (2 if quick else 3)
    prompts = (LEARNER[:2] + MT[:2]) if quick else (LEARNER + MT)
    M = 12 if quick else 24
    beam = args.beam
    with Timer() as t_load:
        dec = Decoder(device=args.device)
    result = json.loads(out_path.read_text()) if out_path.exists() else {}
    env = {"torch": torch.__version__, "threads": torch.get_num_threads(), "cpu": platform.processor() or platform.machine(),
                     "device": args.device, "kernel_backend": resolve_backend("auto", torch.device(args.device)), "loadavg_start": os.getloadavg(),
                     "quick": quick, "beam": beam, "max_new_tokens": M, "prompts": len(prompts), "repeats": R,
                     "timing": "min process CPU seconds over repeats, configurations compared run alternately",
                     "load_seconds": round(t_load.wall, 2), "sections_run": sorted(sections)}
    if sections >= {1, 2, 3, 4, 5, 6} or "env" not in result:
        result["env"] = env
        result.pop("reruns", None)
    else:  # a partial rerun: the other sections keep the figures (and environment) of their run
        result.setdefault("reruns", []).append(env)
    print(f"model loaded in {t_load.wall:.1f}s; kernels: {env['kernel_backend']}")
    dec.generate(prompts[:1], beam_size=beam, max_new_tokens=2)  # warm-up (kernel JIT)
    common = dict(beam_size=beam, max_new_tokens=M, batch_size=len(prompts))
    free_to_limit = lambda: fst_run(dec, prompts, **common, stopping="exhaustive")  # noqa: E731

    if sections & {1, 5}:
        # 1. unconstrained vs HF --------------------------------------------------------------------
        (fo, t_fo, s_fo), (hf, t_hf, hf_steps) = paired(
            R, lambda: fst_run(dec, prompts, **common), lambda: hf_run(dec, prompts, beam=beam, max_new_tokens=M, early_stopping=False))
        fe, t_fe, s_fe = repeat(R, free_to_limit)
        hf_lp = [dec.score(p, toks, eos=ended) for p, (toks, ended) in zip(prompts, hf)]
        fst_lp = [r.logprob for r in fo]
        better = sum(a >= b - 1e-3 for a, b in zip(fst_lp, hf_lp))
        sec1 = {
            "fstbeam_optimal": {"wall": t_fo.wall, "cpu": t_fo.cpu, "steps": s_fo.steps, "inputs_per_cpu_s": rate(len(prompts), t_fo)},
            "fstbeam_to_limit": {"wall": t_fe.wall, "cpu": t_fe.cpu, "steps": s_fe.steps, "inputs_per_cpu_s": rate(len(prompts), t_fe)},
            "hf_generate": {"wall": t_hf.wall, "cpu": t_hf.cpu, "steps": hf_steps, "inputs_per_cpu_s": rate(len(prompts), t_hf)},
            "throughput_ratio_optimal_vs_hf": t_hf.cpu / t_fo.cpu,
            "throughput_ratio_to_limit_vs_hf": t_hf.cpu / t_fe.cpu,
            "logprob_fstbeam": fst_lp, "logprob_hf": hf_lp, "fstbeam_equal_or_better": f"{better}/{len(prompts)}",
            "texts": [r.text for r in fo],
        }
        result["unconstrained_vs_hf"] = sec1
        print(f"[1] unconstrained: fstbeam {t_fo.cpu:.1f}s cpu ({s_fo.steps} steps), to-limit {t_fe.cpu:.1f}s, "
              f"HF {t_hf.cpu:.1f}s ({hf_steps} steps) -> {sec1['throughput_ratio_optimal_vs_hf']:.2f}x "
              f"({sec1['throughput_ratio_to_limit_vs_hf']:.2f}x to the limit); scores >= HF: {better}/{len(prompts)}")
        # 5. stopping: newline tokens end an answer too, so outputs finish at different lengths ------
        eos = tuple(dec.eos_ids) + dec.newline_ids()  # for HF; fstbeam: stop_at="line"
        so, t_so, s_so = repeat(R, lambda: fst_run(dec, prompts, **common, stop_at="line"))
        sx, t_sx, s_sx = repeat(1, lambda: fst_run(dec, prompts, **common, stop_at="line", stopping="exhaustive"))
        saved_dec = dec.eos_ids
        dec.eos_ids = eos  # hf_run passes dec.eos_ids to generate()
        try:
            _, t_hs, hs_steps = repeat(1, lambda: hf_run(dec, prompts, beam=beam, max_new_tokens=M, early_stopping=True))
            _, t_hn, hn_steps = repeat(1, lambda: hf_run(dec, prompts, beam=beam, max_new_tokens=M, early_stopping=False))
        finally:
            dec.eos_ids = saved_dec
        sec5 = {"eos": "model EOS + newline tokens", "length_limit": M,
                "optimal_steps_per_input": [r.steps for r in so], "optimal_batch_steps": s_so.steps, "optimal_cpu": t_so.cpu,
                "to_limit_steps_per_input": [r.steps for r in sx], "to_limit_batch_steps": s_sx.steps, "to_limit_cpu": t_sx.cpu,
                "same_outputs_as_to_limit": [a.token_ids for a in so] == [b.token_ids for b in sx],
                "hf_early_stopping_true_batch_steps": hs_steps, "hf_early_stopping_true_cpu": t_hs.cpu,
                "hf_early_stopping_false_batch_steps": hn_steps, "hf_early_stopping_false_cpu": t_hn.cpu,
                "texts": [r.text for r in so]}
        result["stopping"] = sec5
        print(f"[5] stopping (newline ends an answer): optimal {s_so.steps} batch steps, per input "
              f"{sec5['optimal_steps_per_input']} ({sum(sec5['optimal_steps_per_input'])} in all) vs to the limit "
              f"{sum(sec5['to_limit_steps_per_input'])}; HF early_stopping=True {hs_steps} batch steps, False {hn_steps}; "
              f"same outputs as to the limit: {sec5['same_outputs_as_to_limit']}")

    if 2 in sections:
        # 2. A1 vs unconstrained (both to the length limit) -----------------------------------------
        with Timer() as t_c:
            a1 = compile_constraints(cefr="A1", tokenizer=dec.vocab)
        (ua, t_ua, s_ua), (ra, t_ra, s_ra) = paired(
            R, free_to_limit, lambda: fst_run(dec, prompts, a1, **common, stopping="exhaustive"))
        ro, _, _ = fst_run(dec, prompts, a1, **common, length_reward=1.0, stop_at="line")
        # Answers after "Answer:" with and without an allowed leading space (model log-probabilities).
        a1_lead = compile_constraints(cefr="A1", tokenizer=dec.vocab, leading_space=True)
        learner = [p for p in prompts if p in LEARNER]
        no_lead, _, _ = fst_run(dec, learner, a1, beam_size=beam, max_new_tokens=32, stop_at="line")
        lead, _, _ = fst_run(dec, learner, a1_lead, beam_size=beam, max_new_tokens=32, stop_at="line")
        sec2_lead = {"no_leading_space": {"logprob": [r.logprob for r in no_lead], "texts": [r.text for r in no_lead]},
                     "leading_space": {"logprob": [r.logprob for r in lead], "texts": [r.text for r in lead]},
                     "mean_logprob_gain": sum(b.logprob - a.logprob for a, b in zip(no_lead, lead)) / max(1, len(learner))}
        sec2 = {
            "leading_space": sec2_lead,
            "compile_seconds": t_c.wall, "unconstrained_cpu": t_ua.cpu, "a1_cpu": t_ra.cpu, "steps": [s_ua.steps, s_ra.steps],
            "time_ratio": t_ra.cpu / t_ua.cpu, "per_step_ratio": (t_ra.cpu / s_ra.steps) / (t_ua.cpu / s_ua.steps),
            "satisfied": sum(r.satisfied for r in ra), "a1_texts_reward_stop_at_newline": [r.text for r in ro],
            "a1_satisfied_reward_stop_at_newline": sum(r.satisfied for r in ro),
        }
        result["a1_vs_unconstrained"] = sec2
        print(f"[2] CEFR A1 vs unconstrained (to the limit): {sec2['time_ratio']:.3f}x time, "
              f"{sec2['per_step_ratio']:.3f}x per step; satisfied {sec2['satisfied']}/{len(prompts)}; "
              f"leading space: {sec2_lead['mean_logprob_gain']:+.2f} nats per learner answer")

    if 3 in sections:
        # 3. DBA phrases --------------------------------------------------------------------------------
        sec3 = {"by_phrases": {}}
        for P in ((1, 4, 16) if quick else (1, 2, 4, 8, 16)):
            cc = compile_constraints(phrases=PHRASES[:P], tokenizer=dec.vocab)
            # the default (with the plain track, runtime/search/tracks.py) and plain DBA, run alternately
            (_, t_u, s_u), (rp, t_p, s_p), (_, t_d, s_d) = interleaved(
                R, free_to_limit, lambda: fst_run(dec, prompts, cc, **common, stopping="exhaustive"),
                lambda: fst_run(dec, prompts, cc, **common, stopping="exhaustive", plain_track=False))
            ratio = (t_p.cpu / s_p.steps) / (t_u.cpu / s_u.steps)
            ratio_d = (t_d.cpu / s_d.steps) / (t_u.cpu / s_u.steps)
            sec3["by_phrases"][P] = {"cpu": t_p.cpu, "unconstrained_cpu": t_u.cpu, "steps": s_p.steps, "ratio_per_step": ratio,
                                     "model_rows": s_p.model_rows, "advance_elements": s_p.advance_elements,
                                     "logits_elements": s_p.logits_elements, "satisfied": sum(r.satisfied for r in rp),
                                     "without_plain_track": {"cpu": t_d.cpu, "ratio_per_step": ratio_d, "model_rows": s_d.model_rows}}
            print(f"[3] DBA {P:2d} phrases: {ratio:.3f}x per step vs unconstrained ({ratio_d:.3f}x without the plain "
                  f"track); satisfied {sec3['by_phrases'][P]['satisfied']}/{len(prompts)} (model rows {s_p.model_rows}, "
                  f"{s_d.model_rows} without; advance entries {s_p.advance_elements})")
        result["dba_phrases"] = sec3

    if 4 in sections:
        # 4. streaming vs static batch ---------------------------------------------------------------------
        mixed = MIXED * 2 if quick else MIXED * 3
        b = 8  # refill when live inputs <= 8/6, i.e. at 1
        Ms = 32 if quick else 48
        kw = dict(beam_size=beam, max_new_tokens=Ms, batch_size=b)
        (st_res, t_st, s_st), (sm_res, t_sm, s_sm), (sl_res, t_sl, s_sl) = interleaved(
            R, lambda: fst_run(dec, mixed, **kw, streaming=False), lambda: fst_run(dec, mixed, **kw, streaming=True),
            lambda: fst_run(dec, mixed, **kw, streaming=True, expand="least_advanced"))
        same = all(a.token_ids == c.token_ids == d.token_ids for a, c, d in zip(st_res, sm_res, sl_res))
        sec4 = {"inputs": len(mixed), "batch_size": b, "max_new_tokens": Ms, "static_cpu": t_st.cpu, "streaming_cpu": t_sm.cpu,
                "static_wall": t_st.wall, "streaming_wall": t_sm.wall, "static_steps": s_st.steps, "streaming_steps": s_sm.steps,
                "throughput_ratio": t_st.cpu / t_sm.cpu, "throughput_ratio_wall": t_st.wall / t_sm.wall,
                "least_advanced_cpu": t_sl.cpu, "least_advanced_wall": t_sl.wall, "least_advanced_steps": s_sl.steps,
                "least_advanced_paused_input_steps": s_sl.paused,
                "least_advanced_throughput_ratio": t_st.cpu / t_sl.cpu, "least_advanced_throughput_ratio_wall": t_st.wall / t_sl.wall,
                "model_rows": [s_st.model_rows, s_sm.model_rows, s_sl.model_rows],
                "identical_outputs": same, "output_steps": [r.steps for r in st_res]}
        result["streaming"] = sec4
        print(f"[4] streaming vs static: expand=all {sec4['throughput_ratio']:.2f}x cpu / "
              f"{sec4['throughput_ratio_wall']:.2f}x wall ({s_st.steps} -> {s_sm.steps} batch steps); "
              f"least_advanced {sec4['least_advanced_throughput_ratio']:.2f}x cpu / "
              f"{sec4['least_advanced_throughput_ratio_wall']:.2f}x wall ({s_sl.steps} steps); identical outputs: {same}")

    if 6 in sections:
        result["shortlist"] = shortlist_section(dec, (LEARNER + MT)[:8], beam, M, R, args.shortlist, args.union)

    env["loadavg_end"] = os.getloadavg()
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(result, indent=2, default=float))
    print(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
