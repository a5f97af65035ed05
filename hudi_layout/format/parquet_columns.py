"""Where a parquet file keeps each column's chunks.

A parquet file stores one column chunk per *leaf*: a flat column is one leaf, a struct one per field
(recursively), a list the leaves of its element, a map those of its key and then its value. Row-group metadata
numbers chunks by leaf, in schema order, so a top-level column's field number is its chunk number only while
no nested column comes before it.
"""

from __future__ import annotations

import pyarrow as pa


def _leaves(t: pa.DataType) -> int:
    """How many parquet leaf columns (column chunks) a value of type ``t`` takes."""
    if pa.types.is_struct(t):
        return sum(_leaves(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _leaves(t.key_type) + _leaves(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _leaves(t.value_type)
    return 1


def leaf_index(schema: pa.Schema) -> dict[str, int]:
    """The column-chunk index of each flat top-level column of a parquet file (``schema``: its Arrow schema).
    Chunks are numbered by leaf: a struct, list or map column takes one chunk per leaf, so a flat column after
    it is not at its field number (a struct of two fields before ``v`` put ``v``'s bounds on the struct's
    second leaf)."""
    out: dict[str, int] = {}
    at = 0
    for f in schema:
        n = _leaves(f.type)
        if not pa.types.is_nested(f.type):
            out[f.name] = at
        at += n
    return out
