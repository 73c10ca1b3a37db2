"""An instance walked through a schema's character DFA as the automaton reads it: serialized by
`order_instance` (the location's declared keys first), compact JSON, UTF-8."""
from __future__ import annotations

import json

from fstbeam.compiler.structured.json_schema.location import order_instance


def dfa_accepts(dfa, schema, instance) -> bool:
    """Whether ``dfa`` (a `CharDFA` of ``schema``'s language) accepts ``instance``."""
    q = dfa.start
    for b in json.dumps(order_instance(schema, instance), separators=(",", ":"), ensure_ascii=False).encode():
        q = int(dfa.next[q, b])
        if q < 0:
            return False
    return bool(dfa.final[q])
