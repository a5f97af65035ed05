"""Create a new Copy-on-Write table: ``.hoodie/`` layout and ``hoodie.properties`` as Hudi writes them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pyarrow as pa

from hudi_layout.errors import InvalidArgumentError
from hudi_layout.format.capabilities import require_creatable
from hudi_layout.format.merge_config import MergeMode, merge_properties
from hudi_layout.format.properties import write_properties
from hudi_layout.format.schema_conversion import arrow_to_avro_schema_json


def keygenerator_type(record_key_fields: list[str], partition_fields: list[str]) -> str:
    if not partition_fields:
        return "NON_PARTITION"
    return "COMPLEX" if len(record_key_fields) > 1 or len(partition_fields) > 1 else "SIMPLE"


def table_properties_for(
    *,
    table_name: str,
    schema: pa.Schema,
    record_key_fields: list[str],
    partition_fields: list[str],
    hive_style: bool,
    table_version: int = 9,
    url_encode: bool = False,
    ordering_fields: tuple[str, ...] = (),
    merge_mode: MergeMode | None = None,
    merge_on_read: bool = False,
) -> dict[str, str]:
    """The ``hoodie.properties`` content for a new table at ``table_version`` (8 or 9): Copy-on-Write, or
    Merge-on-Read with ``merge_on_read``.

    ``merge_mode`` defaults as in Hudi 1.x: event time when ``ordering_fields`` are given, else commit time."""
    require_creatable(table_version=table_version)
    if not table_name:
        raise InvalidArgumentError("hoodie.table.name is required to create a table")
    props: dict[str, str] = {
        "hoodie.table.name": table_name,
        "hoodie.table.type": "MERGE_ON_READ" if merge_on_read else "COPY_ON_WRITE",
        "hoodie.table.version": str(table_version),
        "hoodie.table.initial.version": str(table_version),
        "hoodie.timeline.layout.version": "2",
        "hoodie.timeline.path": "timeline",
        "hoodie.timeline.history.path": "history",
        "hoodie.archivelog.folder": "history",
        "hoodie.table.recordkey.fields": ",".join(record_key_fields),
        "hoodie.table.keygenerator.type": keygenerator_type(record_key_fields, partition_fields),
        "hoodie.datasource.write.hive_style_partitioning": "true" if hive_style else "false",
        "hoodie.datasource.write.partitionpath.urlencode": "true" if url_encode else "false",
        "hoodie.datasource.write.drop.partition.columns": "false",
        "hoodie.table.create.schema": arrow_to_avro_schema_json(schema, table_name),
        "hoodie.table.base.file.format": "PARQUET",
        "hoodie.populate.meta.fields": "true",
        "hoodie.table.metadata.partitions": "",
        "hoodie.table.timeline.timezone": "LOCAL",
    }
    if merge_mode is None:
        merge_mode = MergeMode.EVENT_TIME_ORDERING if ordering_fields else MergeMode.COMMIT_TIME_ORDERING
    if merge_mode is MergeMode.EVENT_TIME_ORDERING and not ordering_fields:
        raise InvalidArgumentError("hoodie.record.merge.mode=EVENT_TIME_ORDERING needs an ordering field",
                                   hint="set hoodie.datasource.write.precombine.field")
    props.update(merge_properties(table_version, merge_mode, tuple(ordering_fields)))
    if table_version >= 9:
        props["hoodie.table.format"] = "native"
    if partition_fields:
        props["hoodie.table.partition.fields"] = ",".join(partition_fields)
    return props


def create_table_layout(base_path: str | os.PathLike[str], props: Mapping[str, str]) -> None:
    """Write ``.hoodie/`` folders and ``hoodie.properties`` (the last step: its presence = a table)."""
    base = Path(base_path)
    hoodie = base / ".hoodie"
    for sub in (".aux/.bootstrap/.partitions", ".aux/.bootstrap/.fileids", ".schema", ".temp", ".heartbeat",
                ".locks", "timeline/history"):
        (hoodie / sub).mkdir(parents=True, exist_ok=True)
    write_properties(hoodie / "hoodie.properties", props)
