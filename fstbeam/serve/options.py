"""A request's search settings and the OpenAI fields beam search cannot honour.

- :func:`request_config`: the request's `SearchConfig`. Every field of `SearchConfig` may be set
  by its own name (``beam_size``, ``length_reward``, ``stop_at``, ...) and ``preset`` names a
  task preset, as ``fstbeam generate``'s flags do; OpenAI's ``max_tokens`` (or
  ``max_completion_tokens``) is ``max_new_tokens`` and ``n`` is ``nbest``. The values go through
  `fstbeam.runtime.presets.search_config`, the same code and messages as the command line; a bad
  one is a 400 naming the field as the client spelt it.
- :func:`constraints_with_structured`: ``response_format`` and vLLM's structured-output fields as
  the same constraint keys (``json_schema``, ``regex``, ``choice``) a ``constraints`` object takes.
- :func:`refuse_unsupported`: the other OpenAI fields, each honoured (a value that means what
  beam search does anyway) or refused with what to use instead.
"""
from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Any

from ..errors import DecodeError
from .errors import RequestError

if TYPE_CHECKING:
    from ..runtime.config import SearchConfig
    from .config import ServeConfig

__all__ = ["SEARCH_FIELDS", "STRUCTURED_FIELDS", "OPENAI_OPTIONAL", "request_config", "constraints_with_structured",
           "refuse_unsupported"]


def _search_fields() -> tuple[str, ...]:
    from ..runtime.config import SearchConfig

    # ``preset`` is a field too (which preset built a config): a request names one by it, read apart
    return tuple(f.name for f in dataclasses.fields(SearchConfig) if f.name != "preset")


#: every `SearchConfig` field: settable per request by this name
SEARCH_FIELDS = _search_fields()
#: OpenAI's name -> the `SearchConfig` field it sets
ALIASES = {"max_tokens": "max_new_tokens", "max_completion_tokens": "max_new_tokens", "n": "nbest"}
#: fields that belong to the server: requests of one setting share a continuous batch
SERVER_OWNED = {
    "batch_size": "the server's continuous batches have one size: start the server with --batch-size N",
    "refill": "the server refills its continuous batches at every step",
    "streaming": "the server always refills its batches as inputs finish",
}
#: structured-output fields (OpenAI, vLLM): :func:`constraints_with_structured`
STRUCTURED_FIELDS = ("response_format", "structured_outputs", "guided_json", "guided_regex", "guided_choice",
                     "guided_grammar", "guided_decoding_backend", "guided_whitespace_pattern")


def request_config(body: Any, config: ServeConfig, decoder_preset: str) -> SearchConfig:
    """The `SearchConfig` of a request body: the preset (the body's ``preset``, else the server's
    ``--preset``, else the prompt format's), the server's search flags, then the body's fields."""
    from ..runtime.presets import search_config

    given: dict[str, Any] = {}
    spelt: dict[str, str] = {}  # field -> the name the client used
    for name in SEARCH_FIELDS:
        v = getattr(body, name, None)
        if v is not None:
            given[name], spelt[name] = v, name
    for alias, name in ALIASES.items():
        v = getattr(body, alias, None)
        if v is None:
            continue
        if name in given and given[name] != v:
            raise RequestError(400, f"{spelt[name]}={given[name]!r} and {alias}={v!r} set the same thing "
                                    f"({name}): give one", alias)
        given[name], spelt[name] = v, alias
    for name in sorted(set(given) & set(SERVER_OWNED)):
        raise RequestError(400, f"{name} is not a per-request setting: {SERVER_OWNED[name]}", name)
    preset = getattr(body, "preset", None)
    if preset is not None and not isinstance(preset, str):
        raise RequestError(400, f"preset must be the name of a preset (text), not {preset!r}", "preset")
    B = config.batch_size
    overrides = {**config.search, **given, "batch_size": B, "refill": 1 - 1 / B}
    try:
        cfg = search_config(preset or config.preset or decoder_preset, overrides)
    except DecodeError as exc:
        raise RequestError(400, str(exc), _param(str(exc), spelt)) from None
    lim = config.limits
    for name, value, top, flag in (("beam_size", cfg.beam_size, lim.max_beam, "max_beam"),
                                   ("max_new_tokens", cfg.max_new_tokens, lim.max_tokens, "--max-tokens"),
                                   ("nbest", cfg.nbest, lim.max_n, "max_n")):
        if value > top:
            asked = spelt.get(name, name)
            raise RequestError(400, f"{asked}={value} is over this server's limit of {top} ({flag})", asked)
    return cfg


def _param(message: str, spelt: dict[str, str]) -> str:
    """The field a `SearchConfig` error names (its messages start with it), as the client spelt it."""
    if message.startswith("unknown preset"):
        return "preset"
    m = re.match(r"(\w+)", message)
    name = m.group(1) if m else ""
    if name not in SEARCH_FIELDS:  # e.g. "shortlist='on' needs renormalize=True"
        name = next((f for f in SEARCH_FIELDS if message.startswith(f)), "body")
    return spelt.get(name, name)


def constraints_with_structured(body: Any) -> dict[str, Any] | None:
    """The body's ``constraints`` with its structured-output field turned into the same request
    keys (docs/serve.md, "Structured outputs"): OpenAI's ``response_format`` (``json_object``,
    ``json_schema``), vLLM's ``structured_outputs`` (``json``, ``regex``, ``choice``) and the older
    ``guided_json``, ``guided_regex``, ``guided_choice``. One structured field per request; a
    form the server cannot honour is a 400 that names it and says what to use instead."""
    given = [(name, getattr(body, name, None)) for name in STRUCTURED_FIELDS]
    given = [(name, v) for name, v in given if v is not None]
    if len(given) > 1:
        raise RequestError(400, f"{given[0][0]} and {given[1][0]} both set the output's form: give one", given[1][0])
    keys: dict[str, Any] = {}
    for name, value in given:
        for key, v in _structured_keys(name, value).items():
            if key in keys:
                raise RequestError(400, f"{name} and another structured-output field both set the output's form: "
                                        "give one", name)
            keys[key] = v
    constraints = dict(body.constraints or {})
    for key in keys:
        if constraints.get(key) is not None:
            raise RequestError(400, f"constraints.{key} and {given[0][0]} both set the output's form: give one", key)
    if not keys:
        unchanged: dict[str, Any] | None = body.constraints
        return unchanged
    return {**constraints, **keys}


def _structured_keys(name: str, value: Any) -> dict[str, Any]:
    """The constraint keys (``json_schema``, ``regex``, ``choice``, ``json_strict``) of one
    structured-output field."""
    def need(kind: type[Any], what: str) -> Any:
        if not isinstance(value, kind):
            raise RequestError(400, f"{name} must be {what}, not {type(value).__name__}", name)
        return value

    if name == "response_format":
        need(dict, 'an object such as {"type": "json_object"}')
        kind = value.get("type")
        if kind == "text":
            return {}
        if kind == "json_object":
            return {"json_schema": {"type": "object"}}
        if kind == "json_schema":
            spec = value.get("json_schema")
            if not isinstance(spec, dict) or not isinstance(spec.get("schema"), (dict, bool)):
                raise RequestError(400, 'response_format.json_schema must be an object with the schema under "schema" '
                                        '(and a "name")', "response_format.json_schema")
            strict = spec.get("strict")
            if strict is not None and not isinstance(strict, bool):
                raise RequestError(400, "response_format.json_schema.strict must be true or false",
                                   "response_format.json_schema.strict")
            # strict: only the members and items the schema declares (as OpenAI's strict schemas say)
            return {"json_schema": spec["schema"], **({"json_strict": True} if strict else {})}
        raise RequestError(400, f"response_format.type {kind!r} is not known: use text, json_object or json_schema",
                           "response_format.type")
    if name == "structured_outputs":
        need(dict, 'an object with one of json, regex or choice')
        out = {}
        for key, target in (("json", "json_schema"), ("regex", "regex"), ("choice", "choice")):
            if value.get(key) is not None:
                out[target] = value[key]
        if value.get("json_object"):
            out["json_schema"] = {"type": "object"}
        closed = value.get("disable_additional_properties")
        if closed is not None and not isinstance(closed, bool):
            raise RequestError(400, "structured_outputs.disable_additional_properties must be true or false",
                               "structured_outputs.disable_additional_properties")
        other = sorted(k for k in value if k not in ("json", "regex", "choice", "json_object", "disable_additional_properties")
                       and value[k] is not None)
        if other:
            raise RequestError(400, f"structured_outputs.{other[0]} is not supported: fstbeam takes json, regex and "
                                    "choice (a grammar: a registered pynini grammar in constraints.grammar)",
                               f"structured_outputs.{other[0]}")
        if len(out) != 1:
            raise RequestError(400, "structured_outputs takes exactly one of json, regex, choice, json_object",
                               "structured_outputs")
        if closed and "json_schema" not in out:
            raise RequestError(400, "structured_outputs.disable_additional_properties applies to json: give json",
                               "structured_outputs.disable_additional_properties")
        return {**out, "json_strict": True} if closed else out
    if name in ("guided_json", "guided_regex", "guided_choice"):
        return {{"guided_json": "json_schema", "guided_regex": "regex", "guided_choice": "choice"}[name]: value}
    fix = {"guided_grammar": "a registered pynini grammar in constraints.grammar (EBNF grammars are not finite-state)",
           "guided_decoding_backend": "leave it out: fstbeam compiles structured outputs itself",
           "guided_whitespace_pattern": 'constraints.json_whitespace: "compact" (the default) or "flexible"'}
    raise RequestError(400, f"{name} is not supported: use {fix.get(name, 'the constraints field')}", name)


# field -> (values that mean what beam search does anyway, what to use instead)
_ACCEPTED_IF: dict[str, tuple[tuple[Any, ...], str]] = {
    "temperature": ((0, 0.0, 1, 1.0), "beam search is deterministic: leave temperature out (or 0 or 1)"),
    "top_p": ((1, 1.0), "beam search keeps the beam_size best hypotheses: set beam_size instead"),
    "presence_penalty": ((0, 0.0), "use no_repeat_ngram (no token n-gram twice) or constraints.avoid"),
    "frequency_penalty": ((0, 0.0), "use no_repeat_ngram (no token n-gram twice) or constraints.avoid"),
    "logit_bias": (({},), "forbid texts with constraints.avoid, or allow only some with constraints.words"),
    "tools": (([],), "tool calls are not served: describe the output with constraints instead"),
    "tool_choice": (("none",), "tool calls are not served: leave tool_choice out"),
    "parallel_tool_calls": ((False,), "tool calls are not served: leave parallel_tool_calls out"),
    "suffix": (("",), "insertion is not served: put the text before the gap in the prompt"),
    "store": ((False,), "completions are not stored by this server: leave store out"),
    "metadata": (({},), "completions are not stored by this server: leave metadata out"),
    "service_tier": (("auto", "default"), "this server has one tier: leave service_tier out"),
    "modalities": ((["text"],), "this server outputs text only"),
    "audio": ((), "this server outputs text only: leave audio out"),
    "prediction": ((), "predicted outputs are not served: leave prediction out"),
    "functions": (([],), "function calls are not served: leave functions out"),
    "function_call": (("none",), "function calls are not served: leave function_call out"),
    "web_search_options": ((), "web search is not served: leave web_search_options out"),
    "reasoning_effort": ((), "this model does not reason in a separate channel: leave reasoning_effort out"),
}


#: OpenAI fields checked by :func:`refuse_unsupported`
OPENAI_OPTIONAL = tuple(_ACCEPTED_IF)


def refuse_unsupported(body: Any) -> None:
    """A 400 for an OpenAI field set to a value beam search cannot honour, naming it and what to
    use instead (``seed`` is honoured: every seed gives the same, deterministic output)."""
    for name, (ok, instead) in _ACCEPTED_IF.items():
        v = getattr(body, name, None)
        if v is not None and not any(v == x and type(v) is type(x) or _same_number(v, x) for x in ok):
            raise RequestError(400, f"{name}={v!r} is not supported by beam search: {instead}", name)
    best_of = getattr(body, "best_of", None)
    if best_of is not None and best_of != getattr(body, "n", None) and best_of != 1:
        raise RequestError(400, f"best_of={best_of!r} is not supported: the beam keeps beam_size hypotheses and n "
                                "returns the n best: set beam_size and n", "best_of")


def _same_number(v: Any, x: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool) and isinstance(x, (int, float))
            and not isinstance(x, bool) and v == x)
