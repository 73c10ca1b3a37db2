"""The transformers 4.x anchor of bench_quality: lexically constrained beam search
(``force_words_ids``, removed in transformers 5) on the default model, in a separate venv.

    python -m venv /work/venv-tf4
    echo /path/to/main/.venv/lib/python3.11/site-packages > /work/venv-tf4/lib/python3.11/site-packages/zz_main.pth
    /work/venv-tf4/bin/pip install "transformers==4.56.2" "tokenizers>=0.22,<0.23" "huggingface_hub<1.0"
    /work/venv-tf4/bin/python benchmarks/anchor_tf4.py IN.json OUT.json

The .pth file lends the main venv's torch (no second download); the venv's own transformers 4.x
comes first on the path. IN.json: {"model": folder, "max_new_tokens": M, "jobs": [{"prompt",
"constraints"}]}; each constraint word or phrase is forced as a disjunction of its spellings with
and without a leading space. Beam 5, length_penalty 0, stop at EOS or a newline, like fstbeam.
"""
from __future__ import annotations

import json
import sys
import time
import warnings

import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer


def main(src: str, dst: str) -> None:
    warnings.simplefilter("ignore")
    spec = json.loads(open(src).read())
    tok = AutoTokenizer.from_pretrained(spec["model"])
    model = AutoModelForCausalLM.from_pretrained(spec["model"], torch_dtype=torch.float32).eval()
    vocab = tok.convert_ids_to_tokens(list(range(len(tok))))
    newline = [i for i, t in enumerate(vocab) if t and set(t) <= {"\n", "\u010a"}]
    eos = [tok.eos_token_id] + newline
    outs = []
    for job in spec["jobs"]:
        enc = tok(job["prompt"], return_tensors="pt")
        force = [[tok(" " + c, add_special_tokens=False).input_ids, tok(c, add_special_tokens=False).input_ids]
                 for c in job["constraints"]]
        t0 = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(**enc, num_beams=5, max_new_tokens=spec["max_new_tokens"], do_sample=False, length_penalty=0.0,
                                 force_words_ids=force, eos_token_id=eos, pad_token_id=0)
        ids, ended = [], False
        for x in out[0, enc["input_ids"].shape[1]:].tolist():
            if x in eos:
                ended = True
                break
            ids.append(x)
        outs.append({"ids": ids, "ended": ended, "text": tok.decode(ids, skip_special_tokens=True),
                     "seconds": time.perf_counter() - t0})
    json.dump({"version": transformers.__version__, "method": "generate(num_beams=5, force_words_ids=...)", "outputs": outs},
              open(dst, "w"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
