"""How a schema is read before it is compiled, one job per module:

- `walk`: where a schema's schemas sit (`schema_nodes`, `rebuilt`: the one walk every reading
  here takes);
- `uris`: where its `$ref`s lead (`local_refs` makes references by URI local pointers once;
  `Resolver` follows pointers and plain names);
- `drafts`: the draft it declares (`$schema`) and the keywords that draft does not have (not
  yet, or no longer), left out as its validators leave them;
- `unevaluated`: `unevaluatedProperties`/`unevaluatedItems` where what the node's other
  keywords evaluate is known before any instance is seen;
- `strict`: the strict reading (`json_strict`, `closed_declared`).
"""
from __future__ import annotations

from .drafts import INTRODUCED, REMOVED, for_draft, read_as_declared
from .strict import closed_declared
from .uris import Resolver, local_refs
from .walk import DATA_KEYWORDS, IN_PLACE_KEYWORDS, NAMED_KEYWORDS, declared_draft, escape_pointer, rebuilt, schema_nodes

__all__ = ["declared_draft", "for_draft", "read_as_declared", "closed_declared", "INTRODUCED", "REMOVED",
           "DATA_KEYWORDS", "NAMED_KEYWORDS", "IN_PLACE_KEYWORDS", "escape_pointer", "local_refs", "Resolver",
           "schema_nodes", "rebuilt"]
