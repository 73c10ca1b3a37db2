"""A request body's ``constraints`` object -> ``CompiledConstraints``: the one place that parses it.

The object has the keys of a JSON Lines input line (``phrases`` with nested lists for AnyOf,
``avoid``, ``prefix``, ``ordered``, ``sentence_case``; parsed by :mod:`fstbeam.inputs`, so the
two cannot drift apart), plus the hard part: ``words`` (a list), ``cefr``, ``grammar`` with
``grammar_params``, ``leading_space``; or ``artifact``: the id of a stored artifact
(``POST /v1/constraints`` or ``--constraints name=path``), which the request's phrases extend.

The hard part compiles once per content (a CEFR level: seconds the first time) and is cached as a
base; the request's phrases go on top with ``with_request`` (milliseconds). Whole requests are
cached by content too. (When the frozen request type of the package arrives, its ``from_json``
replaces :func:`parse_request` here.)
"""
from __future__ import annotations

import json
import os

from ..errors import Error
from .errors import RequestError

__all__ = ["compile_request", "parse_request", "canonical_key", "LIGHT_KEYS", "HARD_KEYS"]

LIGHT_KEYS = ("phrases", "avoid", "prefix", "ordered", "sentence_case")
HARD_KEYS = ("words", "cefr", "grammar", "grammar_params", "leading_space")
_KEYS = set(LIGHT_KEYS) | set(HARD_KEYS) | {"artifact"}
FIELD = "constraints"


def canonical_key(obj) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def parse_request(body, limits) -> tuple[dict, dict, str | None]:
    """(hard part, light part in ``fstbeam.inputs`` form, artifact id) of a ``constraints``
    object, or a 400 :class:`RequestError` naming the key."""
    from ..inputs import _parse

    if not isinstance(body, dict):
        raise RequestError(400, f"{FIELD} must be an object such as {{\"phrases\": [\"green tea\"]}}", FIELD)
    unknown = sorted(set(body) - _KEYS)
    if unknown:
        raise RequestError(400, f"{FIELD}: unknown key {unknown[0]!r}; the keys are {', '.join(sorted(_KEYS))}",
                           f"{FIELD}.{unknown[0]}")
    light = {k: body[k] for k in LIGHT_KEYS if k in body}
    try:  # the JSONL line parser (a placeholder prompt: the prompt comes from the body, not here)
        _, request = _parse(json.dumps({"prompt": "-", **light}), FIELD)
    except Error as exc:
        raise RequestError(400, str(exc), _field_of(str(exc))) from None
    _check_sizes(request, limits)
    hard = {k: body[k] for k in HARD_KEYS if k in body}
    _check_hard(hard, limits)
    artifact = body.get("artifact")
    if artifact is not None and (not isinstance(artifact, str) or not artifact):
        raise RequestError(400, f"{FIELD}.artifact must be the id of a stored artifact (text)", f"{FIELD}.artifact")
    if artifact is not None and any(k in hard for k in ("words", "cefr", "grammar")):
        raise RequestError(400, f"{FIELD}: give either an artifact or words/cefr/grammar, not both", f"{FIELD}.artifact")
    return hard, request, artifact


def _field_of(message: str) -> str:
    for k in LIGHT_KEYS:
        if f'"{k}"' in message:
            return f"{FIELD}.{k}"
    return FIELD


def _check_sizes(request: dict, limits) -> None:
    texts = [t for key in ("phrases", "avoid") for item in request[key] for t in (item if isinstance(item, list) else [item])]
    if len(texts) > limits.max_phrases:
        raise RequestError(400, f"{FIELD}: {len(texts)} phrase and avoid texts; at most {limits.max_phrases} per "
                                "request (store larger sets with POST /v1/constraints)", f"{FIELD}.phrases")
    if request["prefix"] is not None:
        texts.append(request["prefix"])
    long = next((t for t in texts if len(t) > limits.max_phrase_chars), None)
    if long is not None:
        raise RequestError(400, f"{FIELD}: a text of {len(long)} characters ({long[:30]!r}...); at most "
                                f"{limits.max_phrase_chars} per phrase, avoid entry or prefix", f"{FIELD}.phrases")
    if any(not t.strip() for t in texts):
        raise RequestError(400, f"{FIELD}: an empty or blank phrase, avoid entry or prefix: remove it", f"{FIELD}.phrases")


def _check_hard(hard: dict, limits) -> None:
    words = hard.get("words")
    if words is not None:
        if not isinstance(words, list) or not words or not all(isinstance(w, str) and w.strip() for w in words):
            raise RequestError(400, f"{FIELD}.words must be a non-empty list of words (texts)", f"{FIELD}.words")
        if len(words) > limits.max_words:
            raise RequestError(400, f"{FIELD}.words: {len(words)} words; at most {limits.max_words} per request (store "
                                    "a larger list as an artifact: --constraints name=path)", f"{FIELD}.words")
    for key in ("cefr", "grammar"):
        if key in hard and (not isinstance(hard[key], str) or not hard[key].strip()):
            raise RequestError(400, f"{FIELD}.{key} must be non-empty text", f"{FIELD}.{key}")
    params = hard.get("grammar_params")
    if params is not None:
        if not isinstance(params, dict) or "grammar" not in hard:
            raise RequestError(400, f"{FIELD}.grammar_params must be an object and needs {FIELD}.grammar",
                               f"{FIELD}.grammar_params")
        if len(canonical_key(params)) > 4 * limits.max_phrase_chars:
            raise RequestError(400, f"{FIELD}.grammar_params is too large", f"{FIELD}.grammar_params")
        # a request must not make the server read its files (a grammar's Path parameters)
        if any(isinstance(v, str) and ("/" in v or "\\" in v or os.path.exists(v)) for v in params.values()):
            raise RequestError(400, f"{FIELD}.grammar_params may not name files on the server: compile the grammar "
                                    "into an artifact and load it with --constraints name=path", f"{FIELD}.grammar_params")
    if "leading_space" in hard and not isinstance(hard["leading_space"], bool):
        raise RequestError(400, f"{FIELD}.leading_space must be true or false", f"{FIELD}.leading_space")


def compile_request(body, store):
    """``CompiledConstraints`` (or ``None``: no constraint) of a body's ``constraints`` object,
    using ``store`` (:class:`~.artifacts.ArtifactStore`) for stored artifacts and the caches.
    Bad content is a 400 :class:`RequestError` naming the key; unknown artifact ids are 404."""
    from ..inputs import _compile

    if body is None:
        return None
    hard, request, artifact = parse_request(body, store.limits)
    key = canonical_key(body)
    hit = store.cached(key)
    if hit is not None:
        return hit
    if artifact is not None:
        base = store.get(artifact)
    elif any(k in hard for k in ("words", "cefr", "grammar")):
        base = store.base(canonical_key(hard), lambda: _compile_hard(hard, store))
    else:
        base = None
    try:
        cc = _compile(request, base, store.vocab, FIELD)
    except (Error, ValueError) as exc:
        raise RequestError(400, str(exc), _field_of(str(exc))) from None
    return store.remember(key, cc)


def _compile_hard(hard: dict, store):
    from ..compiler.compile import compile_constraints

    lead = hard.get("leading_space", store.continues_text)
    try:
        return compile_constraints(words=hard.get("words"), cefr=hard.get("cefr"), grammar=hard.get("grammar"),
                                   grammar_params=hard.get("grammar_params"), tokenizer=store.vocab, leading_space=lead)
    except (Error, ValueError) as exc:
        which = next((k for k in ("words", "cefr", "grammar") if k in hard), "words")
        raise RequestError(400, f"{FIELD}.{which}: {exc}", f"{FIELD}.{which}") from None
