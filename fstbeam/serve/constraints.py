"""A request body's ``constraints`` object -> ``CompiledConstraints``: the one place that parses it.

The object is a `fstbeam.ConstraintRequest` in its JSON form (the keys of a JSON Lines input
line and a batch row: ``phrases`` with nested lists for AnyOf, ``avoid``, ``prefix``,
``ordered``, ``sentence_case``, and the hard part ``words`` (a list: the server never opens a
file named by a client), ``cefr``, ``grammar`` with ``grammar_params``, ``leading_space``), plus
``artifact``: the id of a stored artifact (``POST /v1/constraints`` or ``--constraints
name=path``), which the request's phrases extend by the request's merge rule.

The hard part compiles once per content (a CEFR level: seconds the first time) and is cached as a
base; the request's light part goes on top (milliseconds). Whole requests are cached by content.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re

from ..compiler.request import HARD_KEYS, LIGHT_KEYS, ConstraintRequest
from ..errors import Error
from .errors import RequestError

__all__ = ["compile_request", "parse_request", "canonical_key", "LIGHT_KEYS", "HARD_KEYS"]

FIELD = "constraints"


def canonical_key(obj) -> str:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def parse_request(body, limits) -> tuple[ConstraintRequest, str | None]:
    """(the request, artifact id) of a ``constraints`` object, or a 400 :class:`RequestError`
    naming the key."""
    if not isinstance(body, dict):
        raise RequestError(400, f"{FIELD} must be an object such as {{\"phrases\": [\"green tea\"]}}", FIELD)
    artifact = body.get("artifact")
    if artifact is not None and (not isinstance(artifact, str) or not artifact):
        raise RequestError(400, f"{FIELD}.artifact must be the id of a stored artifact (text)", f"{FIELD}.artifact")
    try:
        request = ConstraintRequest.from_json({k: v for k, v in body.items() if k != "artifact"}, where=FIELD,
                                              extra=("artifact",), allow_paths=False)
    except Error as exc:
        raise RequestError(400, str(exc), _field_of(str(exc))) from None
    _check_sizes(request, limits)
    _check_hard(request, limits)
    return request, artifact


def _field_of(message: str) -> str:
    unknown = re.match(rf"{FIELD}: unknown key '([^']*)'", message)
    if unknown:
        return f"{FIELD}.{unknown.group(1)}"
    m = re.match(rf"{FIELD}: ([a-z_]+)", message)
    return f"{FIELD}.{m.group(1)}" if m and m.group(1) in (*HARD_KEYS, *LIGHT_KEYS) else FIELD


def _check_sizes(request: ConstraintRequest, limits) -> None:
    texts = [a for p in request.phrases for a in getattr(p, "alternatives", (p.text,))] + [p.text for p in request.avoid]
    if len(texts) > limits.max_phrases:
        raise RequestError(400, f"{FIELD}: {len(texts)} phrase and avoid texts; at most {limits.max_phrases} per "
                                "request (store larger sets with POST /v1/constraints)", f"{FIELD}.phrases")
    if request.prefix is not None:
        texts.append(request.prefix)
    long = next((t for t in texts if len(t) > limits.max_phrase_chars), None)
    if long is not None:
        raise RequestError(400, f"{FIELD}: a text of {len(long)} characters ({long[:30]!r}...); at most "
                                f"{limits.max_phrase_chars} per phrase, avoid entry or prefix", f"{FIELD}.phrases")


def _check_hard(request: ConstraintRequest, limits) -> None:
    if request.words is not None and len(request.words) > limits.max_words:
        raise RequestError(400, f"{FIELD}.words: {len(request.words)} words; at most {limits.max_words} per request "
                                "(store a larger list as an artifact: --constraints name=path)", f"{FIELD}.words")
    params = dict(request.grammar_params)
    if params:
        if len(canonical_key(params)) > 4 * limits.max_phrase_chars:
            raise RequestError(400, f"{FIELD}.grammar_params is too large", f"{FIELD}.grammar_params")
        # a request must not make the server read its files (a grammar's Path parameters)
        if any("/" in v or "\\" in v or os.path.exists(v) for v in params.values()):
            raise RequestError(400, f"{FIELD}.grammar_params may not name files on the server: compile the grammar "
                                    "into an artifact and load it with --constraints name=path", f"{FIELD}.grammar_params")


def compile_request(body, store):
    """``CompiledConstraints`` (or ``None``: no constraint) of a body's ``constraints`` object,
    using ``store`` (:class:`~.artifacts.ArtifactStore`) for stored artifacts and the caches.
    Bad content is a 400 :class:`RequestError` naming the key; unknown artifact ids are 404."""
    from ..compiler.compiler import compiler_for

    if body is None:
        return None
    request, artifact = parse_request(body, store.limits)
    base = None if artifact is None else store.get(artifact)  # 404 once it was deleted or dropped, cached or not
    key = canonical_key(body)
    hit = store.cached(key)
    if hit is not None:
        return hit
    light = request  # on an artifact: the merge rule (`ConstraintRequest.added_to`) decides, as at every door
    if base is None and request.has_hard:  # the request's own hard part: a base cached by content
        hard = dataclasses.replace(request.for_prompt_format(store.continues_text), phrases=(), avoid=(), prefix=None,
                                   ordered=False)
        base = store.base(canonical_key(hard.to_json()), lambda: _compile_hard(hard, store))
        light = dataclasses.replace(request, words=None, cefr=None, grammar=None, grammar_params=(), regex=None,
                                    choice=None, json_schema=None, json_max_depth=None, json_whitespace=None,
                                    json_strict=None, leading_space=False)  # (the json_* options: the base's)
    try:
        cc = base if light.is_empty else compiler_for(base.vocab if base is not None else store.vocab).compile_request(
            light, base=base)
    except (Error, ValueError) as exc:
        raise RequestError(400, str(exc), _field_of(str(exc))) from None
    return store.remember(key, cc)


def _compile_hard(hard: ConstraintRequest, store):
    from ..compiler.compiler import compiler_for

    try:
        return compiler_for(store.vocab).compile_request(hard)
    except (Error, ValueError) as exc:
        which = next((k for k in ("words", "cefr", "grammar", "regex", "choice", "json_schema") if getattr(hard, k)), "words")
        raise RequestError(400, f"{FIELD}.{which}: {exc}", f"{FIELD}.{which}") from None
