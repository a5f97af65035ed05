"""Never a damaged table (issue #11), without Spark: the WriteSession the data source uses, fed by the
executors' writer run in-process.

* hostile partition values never create a file outside the base path or inside ``.hoodie``; they are
  refused with one error naming the value and the option, or encoded (``urlencode=true``) and read back;
* every option and the schema are validated before the first byte; a failure after ``begin_write`` releases
  everything (heartbeat, gate, markers, temp folder);
* options that contradict ``hoodie.properties`` are refused, naming key, table value and given value;
* a failed first write into an existing empty folder leaves the folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hudi_layout.errors import HudiLayoutError, InvalidArgumentError, from_spark_error_text
from hudi_layout.format.partition_path import UnsafePartitionPathError
from hudi_layout.table.hudi_table import HudiTable
from hudi_layout.table.locks import writer_is_alive
from hudi_layout.writer.base_file_writer import WriterInputError, write_partition
from hudi_layout.writer.base_file_writer import key_and_partition_values as _key_and_partition
from hudi_layout.writer.transaction import WriteSession

OPTS = {"hoodie.table.name": "safety", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p", "hoodie.metadata.enable": "false"}


def rows(ps: list[str | None], start: int = 0) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + len(ps)), pa.int64()), "p": pa.array(ps, pa.string()),
                     "v": pa.array([float(i) for i in range(len(ps))])})


def write(path: Path, data: pa.Table, opts: dict[str, str] | None = None, overwrite: bool = False) -> None:
    """One write, as the data source does it; an executor error comes back as our driver-side error."""
    session = WriteSession.start(str(path), {**OPTS, **(opts or {})}, data.schema, overwrite)
    try:
        batches = (_key_and_partition(b, session.record_keys, session.spec.partition_rule)
                   for b in data.to_batches(max_chunksize=50))
        try:
            out = [r for o in write_partition(session.spec, batches) for r in o.to_pylist()]
        except WriterInputError as e:
            raise from_spark_error_text(str(e)) from None
        session.commit(out)
    except BaseException:
        session.abort()
        raise


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def everything_under(root: Path, inside: Path) -> bool:
    real = os.path.realpath(inside)
    return all(os.path.realpath(p).startswith(real + os.sep) or os.path.realpath(p) == real
               for p in root.rglob("*") if p.name != "sibling")


@pytest.mark.parametrize("value", ["../ESCAPED", "/abs", ".hoodie", ".", "..", "a\x00b", "x" * 300, "a/b",
                                   "../../../../../../tmp/x", ".hoodie/.temp"])
def test_hostile_partition_value_is_refused_and_nothing_is_written(tmp_path: Path, value: str):
    path = tmp_path / "t"
    write(path, rows(["ok"]))
    before = tree(tmp_path)
    with pytest.raises(UnsafePartitionPathError) as e:
        write(path, rows(["fine", value], start=10))
    assert "field 'p'" in str(e.value)
    if len(value) < 255:
        assert "partitionpath.urlencode=true" in (e.value.hint or "")
    after = tree(tmp_path)
    assert not {a for a in after - before if not a.startswith("t/")}, "a file appeared outside the table"
    new = after - before
    assert not [n for n in new if n.endswith(".parquet")], new   # the 'fine' file was rolled back too
    assert {f.split("/")[-1] for f in new} <= {"p=fine", "fine", ".hoodie_partition_metadata"} | {
        n.split("/")[-1] for n in new if "/.hoodie/" in "/" + n}
    assert [s.partition_path for s in HudiTable(path).file_slices()] == ["ok"]


def test_url_encoded_table_takes_hostile_values(tmp_path: Path):
    path = tmp_path / "t"
    values = ["../ESCAPED", "/abs", ".hoodie", ".", "..", "a\x00b", "a/b", "%2F", "é😀", None, ""]
    write(path, rows(values), {"hoodie.datasource.write.partitionpath.urlencode": "true"})
    assert everything_under(tmp_path, path)
    table = HudiTable(path)
    assert table.properties.url_encode_partitioning
    parts = {s.partition_path for s in table.file_slices()}
    assert parts == {"%2E.%2FESCAPED", "%2Fabs", "%2Ehoodie", "%2E", "%2E.", "a%00b", "a%2Fb", "%252F", "é😀",
                     "__HIVE_DEFAULT_PARTITION__"}
    import hudi

    got = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read())
    assert sorted(zip(got.column("id").to_pylist(), got.column("p").to_pylist())) == sorted(
        zip(range(len(values)), values))


@pytest.mark.property
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.none(), st.sampled_from(["..", ".", "/", "a/../b", "\x00", ".hoodie", "%", "=",
                                                       "x" * 240, "é" * 90]),
                          st.text(alphabet=st.sampled_from(list("./\\%=:\x00 aé😀")), max_size=10)),
                min_size=1, max_size=6),
       st.booleans(), st.booleans())
def test_property_every_file_stays_inside_and_values_read_back(tmp_path_factory, values, hive, urlencode):
    root = tmp_path_factory.mktemp("prop")
    path = root / "t"
    opts = {"hoodie.datasource.write.hive_style_partitioning": str(hive).lower(),
            "hoodie.datasource.write.partitionpath.urlencode": str(urlencode).lower()}
    try:
        write(path, rows(values), opts)
    except UnsafePartitionPathError:
        assert not [p for p in root.rglob("*.parquet")], "a refused write left a data file"
        assert everything_under(root, path)
        return
    assert everything_under(root, path)
    assert not [p for p in (path / ".hoodie").rglob("*.parquet")], "data written into .hoodie"
    import hudi

    got = pa.Table.from_batches(hudi.HudiTableBuilder.from_base_uri(str(path)).build().read())
    assert sorted(zip(got.column("id").to_pylist(), got.column("p").to_pylist())) == sorted(
        zip(range(len(values)), values))


@pytest.mark.parametrize("key,value", [("hoodie.parquet.max.file.size", "abc"),
                                       ("hoodie.parquet.max.file.size", "0"),
                                       ("hoodie.parquet.compression.codec", "rar"),
                                       ("hoodie.metadata.compact.max.delta.commits", "-1"),
                                       ("hoodie.datasource.write.partitionpath.urlencode", "maybe"),
                                       ("hoodie.datasource.write.operation", "merge_into")])
def test_bad_options_fail_before_the_first_byte(tmp_path: Path, key: str, value: str):
    path = tmp_path / "t"
    write(path, rows(["a"]))
    before = tree(path)
    with pytest.raises(HudiLayoutError) as e:
        write(path, rows(["b"], start=5), {key: value})
    assert key in str(e.value)
    assert tree(path) == before, "a refused write touched the table"
    with pytest.raises(HudiLayoutError):
        write(tmp_path / "new", rows(["b"]), {key: value})
    assert not (tmp_path / "new").exists()


def test_failure_after_begin_releases_everything(tmp_path: Path):
    path = tmp_path / "t"
    write(path, rows(["a"]))
    data = rows(["b", "c"], start=5)
    session = WriteSession.start(str(path), OPTS, data.schema, False)
    t = session.pending.instant_time
    batches = (_key_and_partition(b, session.record_keys, session.spec.partition_rule) for b in data.to_batches())
    list(write_partition(session.spec, batches))
    assert writer_is_alive(path, t) and list((path / ".hoodie" / ".temp" / t).rglob("*.marker.*"))
    session.abort()
    assert not writer_is_alive(path, t)
    hoodie = path / ".hoodie"
    assert not (hoodie / ".temp" / t).exists() and not (hoodie / ".heartbeat" / t).exists()
    assert not (hoodie / ".locks" / f"instant-{t}.lock").exists()
    assert not [f for f in os.listdir(hoodie / "timeline") if f.startswith(t)]
    assert not [p for p in path.rglob(f"*_{t}.parquet")]
    # an executor of that write that is still running can no longer create files
    with pytest.raises(WriterInputError, match="takes no more files"):
        list(write_partition(session.spec, (_key_and_partition(b, ["id"], session.spec.partition_rule)
                                            for b in data.to_batches())))
    assert not [p for p in path.rglob(f"*_{t}.parquet")]


@pytest.mark.parametrize("key,value,table_value", [
    ("hoodie.table.name", "other", "safety"),
    ("hoodie.datasource.write.recordkey.field", "v", "id"),
    ("hoodie.datasource.write.partitionpath.field", "v", "p"),
    ("hoodie.table.version", "8", "9"),
    ("hoodie.datasource.write.table.type", "MERGE_ON_READ", "COPY_ON_WRITE"),
    ("hoodie.datasource.write.hive_style_partitioning", "true", "false"),
    ("hoodie.datasource.write.partitionpath.urlencode", "true", "false"),
    ("hoodie.datasource.write.keygenerator.class", "org.apache.hudi.keygen.ComplexKeyGenerator", "SIMPLE"),
    ("hoodie.table.keygenerator.type", "TIMESTAMP", "SIMPLE"),
    ("hoodie.table.base.file.format", "ORC", "PARQUET"),
])
def test_conflicting_options_are_refused(tmp_path: Path, key: str, value: str, table_value: str):
    path = tmp_path / "t"
    write(path, rows(["a"]))
    before = tree(path)
    with pytest.raises(InvalidArgumentError) as e:
        write(path, rows(["b"], start=5), {key: value})
    msg = str(e.value)
    assert key in msg and repr(value) in msg and repr(table_value) in msg, msg
    assert tree(path) == before
    write(path, rows(["b"], start=5), {key: table_value} if key != "hoodie.table.version" else {})  # same: fine


@pytest.mark.parametrize("key,value,ours", [
    ("hoodie.table.cdc.enabled", "true", "no such setting"),  # the table would claim CDC logs we never write
    ("hoodie.table.keygenerator.class", "org.apache.hudi.keygen.TimestampBasedKeyGenerator", "'SIMPLE'"),
    ("hoodie.datasource.write.keygenerator.type", "COMPLEX", "'SIMPLE'"),
    ("hoodie.table.base.file.format", "ORC", "'PARQUET'"),
    ("hoodie.table.timeline.timezone", "UTC", "'LOCAL'"),
    ("hoodie.table.recordkey.fields", "v", "'id'"),
    ("hoodie.table.checksum", "123", "no such setting"),
    ("hoodie.table.made.up", "x", "no such setting"),
])
def test_table_configs_a_new_table_would_not_have_are_refused(tmp_path: Path, key: str, value: str, ours: str):
    """Until session 15 a new table stored any ``hoodie.table.*`` option it did not set itself (a CDC flag, a
    timestamp key generator) beside data that does not follow it, and dropped the ones it sets (ORC, UTC
    timeline): both silently. Now each is refused by name, and nothing is written."""
    path = tmp_path / "t"
    with pytest.raises(InvalidArgumentError) as e:
        write(path, rows(["a"]), {key: value})
    msg = str(e.value)
    assert f"{key}={value!r}" in msg and ours in msg, msg
    assert not path.exists()


@pytest.mark.parametrize("options", [
    {"hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator"},
    {"hoodie.datasource.write.keygenerator.type": "simple_avro"},
    {"hoodie.table.keygenerator.class": "org.apache.hudi.keygen.SimpleAvroKeyGenerator"},
    {"hoodie.table.cdc.enabled": "false", "hoodie.table.base.file.format": "parquet"},
])
def test_table_configs_that_name_what_we_write_are_accepted(tmp_path: Path, options: dict[str, str]):
    """A Hudi user's usual options (the key generator by class or type) are fine when they are what the table
    gets: a partitioned table with one key field is SIMPLE."""
    path = tmp_path / "t"
    write(path, rows(["a"]), options)
    write(path, rows(["b"], start=5), options)  # and on the existing table
    assert "hoodie.table.keygenerator.class" not in (path / ".hoodie" / "hoodie.properties").read_text()


def test_commands_on_a_table_refuse_table_configs_it_does_not_have(tmp_path: Path):
    """cluster, index and clean took ``hoodie.table.*`` options and ignored them; they compare them with the
    table as writes do (cluster plans without Spark here: it refuses before scheduling)."""
    import hudi_layout as hl
    from hudi_layout.services.clustering import run_clustering
    from hudi_layout.services.index import build_column_stats_index

    def no_spark() -> None:
        raise AssertionError("refused before Spark")

    path = tmp_path / "t"
    write(path, rows(["a"]))
    before = tree(path)
    bad = {"hoodie.table.cdc.enabled": "true"}
    for call in (lambda: hl.clean(str(path), options=bad),
                 lambda: build_column_stats_index(str(path), bad, rebuild=True),
                 lambda: run_clustering(no_spark, str(path), ["v"], options=bad)):
        with pytest.raises(InvalidArgumentError, match="hoodie.table.cdc.enabled='true' but the table has"):
            call()
    assert tree(path) == before
    hl.clean(str(path), options={"hoodie.table.name": "safety", "hoodie.table.cdc.enabled": "false"})


def test_failed_first_write_keeps_an_existing_empty_folder(tmp_path: Path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UnsafePartitionPathError):
        write(empty, rows(["ok", "../x"]))
    assert empty.is_dir() and not list(empty.iterdir())
    nested = tmp_path / "a" / "b" / "c"
    with pytest.raises(UnsafePartitionPathError):
        write(nested, rows(["ok", "../x"]))
    assert not (tmp_path / "a").exists()  # everything this write created, and only that, is gone
    assert tree(tmp_path) == {"empty"}
