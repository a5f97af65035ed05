"""Hudi's internal schema history (schema on read): reading by name is exact only while ids and names agree."""

from __future__ import annotations

import json
from pathlib import Path

from hudi_layout.format.capabilities import Action, refusal
from hudi_layout.format.internal_schema import (
    history_name_changes,
    name_changes,
    names_by_id,
    versions_of,
)
from hudi_layout.format.properties import load_properties, write_properties


def _version(version_id: int, *fields: tuple[int, str, object]) -> dict:
    return {"max_column_id": max(i for i, _n, _t in fields), "version-id": version_id, "type": "record",
            "fields": [{"id": i, "name": n, "optional": True, "type": t} for i, n, t in fields]}


NESTED = _version(
    1, (0, "id", "long"),
    (1, "s", {"type": "record", "fields": [{"id": 4, "name": "x", "optional": True, "type": "int"}]}),
    (2, "l", {"type": "array", "element-id": 5, "element": "string", "element_optional": True}),
    (3, "m", {"type": "map", "key-id": 6, "key": "string", "value-id": 7,
              "value": {"type": "record", "fields": [{"id": 8, "name": "v", "optional": True, "type": "double"}]},
              "value_optional": True}))


def test_every_id_is_named_by_its_path():
    assert names_by_id(NESTED) == {0: "id", 1: "s", 4: "s.x", 2: "l", 5: "l.element", 3: "m", 6: "m.key",
                                   7: "m.value", 8: "m.value.v"}


def test_renames_and_re_added_names_are_changes_added_columns_and_promotions_are_not():
    first = _version(0, (0, "id", "long"), (1, "a", "int"))
    widened_and_added = _version(1, (0, "id", "long"), (1, "a", "long"), (2, "b", "string"))
    assert name_changes([first, widened_and_added]) == []
    renamed = _version(2, (0, "id", "long"), (1, "c", "long"), (2, "b", "string"))
    assert name_changes([first, widened_and_added, renamed]) == ["renamed a / c"]
    re_added = _version(2, (0, "id", "long"), (2, "b", "string"), (3, "a", "int"))  # a dropped, added again
    assert name_changes([first, widened_and_added, re_added]) == ["'a' dropped and added again"]
    nested_rename = json.loads(json.dumps(NESTED).replace('"name": "x"', '"name": "y"'))
    assert name_changes([NESTED, nested_rename]) == ["renamed s.x / s.y"]
    assert versions_of({"schemas": [first, renamed]}) == [first, renamed] and versions_of(first) == [first]


def _table(tmp_path: Path, *history: tuple[str, str]) -> Path:
    hoodie = tmp_path / ".hoodie"
    (hoodie / ".schema").mkdir(parents=True)
    write_properties(hoodie, {"hoodie.table.name": "t", "hoodie.table.version": "9",
                              "hoodie.table.type": "COPY_ON_WRITE", "hoodie.table.recordkey.fields": "id"})
    for name, text in history:
        (hoodie / ".schema" / name).write_text(text)
    return hoodie


def test_the_history_folder_decides_and_tables_with_name_changes_are_refused(tmp_path):
    """Only completed ``.schemacommit`` files count (an empty ``.schema`` folder is what every table has); a
    rename in any of them refuses reads, writes, clustering and indexing, naming the change."""
    plain = load_properties(_table(tmp_path / "plain"))
    assert not plain.internal_schema and plain.column_name_changes == ()
    first = _version(0, (0, "id", "long"), (1, "a", "int"))
    added = _version(1, (0, "id", "long"), (1, "a", "int"), (2, "b", "string"))
    consistent = load_properties(_table(
        tmp_path / "consistent", ("20250101000000000.schemacommit", json.dumps({"schemas": [first]})),
        ("20250102000000000.schemacommit", json.dumps({"schemas": [added, first]})),
        ("20250103000000000.schemacommit.requested", "")))
    assert consistent.internal_schema and consistent.column_name_changes == ()
    assert all(refusal(consistent, a) is None for a in (Action.READ, Action.WRITE, Action.CLUSTER, Action.INDEX))
    renamed = _version(2, (0, "id", "long"), (1, "a2", "int"), (2, "b", "string"))
    hoodie = _table(tmp_path / "renamed", ("20250101000000000.schemacommit", json.dumps({"schemas": [first]})),
                    ("20250104000000000.schemacommit", json.dumps({"schemas": [renamed, added, first]})))
    props = load_properties(hoodie)
    assert props.column_name_changes == ("renamed a / a2",)
    for action in (Action.READ, Action.WRITE, Action.CLUSTER, Action.INDEX):
        why = refusal(props, action)
        assert why is not None and "renamed a / a2" in why.message and ".hoodie/.schema" in why.message
    (hoodie / ".schema" / "20250105000000000.schemacommit").write_text("{not json")
    assert history_name_changes(hoodie)[1][-1] == "schema history 20250105000000000.schemacommit cannot be read"
