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


def verdicts(schema, instances) -> list[tuple[object, bool, bool]]:
    """(instance, whether ``schema``'s automaton accepts it, whether `jsonschema`'s validator for
    the schema's draft finds it valid) for each of ``instances``."""
    import jsonschema

    from fstbeam.compiler.char_dfa import fst_to_dfa
    from fstbeam.compiler.structured.json_schema.schema import json_schema_fst

    dfa = fst_to_dfa(json_schema_fst(schema))
    check = jsonschema.validators.validator_for(schema)(schema)
    return [(x, dfa_accepts(dfa, schema, x), check.is_valid(x)) for x in instances]
