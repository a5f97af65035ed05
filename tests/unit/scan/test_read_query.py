"""Read options (issue 17, finding 4): parsing, refusals, the one policy for unknown keys; the MOR read rule;
footer options of the files we write (finding 2). Pure, no Spark."""

from __future__ import annotations

import pyarrow as pa
import pytest

from hudi_layout import options as cfg
from hudi_layout.errors import InvalidArgumentError
from hudi_layout.format.capabilities import read_refusal
from hudi_layout.format.properties import TableProperties
from hudi_layout.options import QueryType, parse_instant_time
from hudi_layout.scan.query import ReadQuery
from hudi_layout.skipping.spark_column import session_read_options
from hudi_layout.writer.base_file_writer import ColumnEncoding, footer_options


@pytest.mark.parametrize(("text", "want"), [
    ("20240102030405678", "20240102030405678"),
    ("20240102030405", "20240102030405000"),
    ("2024-01-02 03:04:05.678", "20240102030405678"),
    ("2024-01-02 03:04:05", "20240102030405000"),
    ("2024-01-02T03:04:05.6", "20240102030405600"),
    ("2024-01-02", "20240102000000000"),
    ("earliest", cfg.EARLIEST),
])
def test_instant_formats(text, want):
    assert parse_instant_time(text) == want


@pytest.mark.parametrize("text", ["yesterday", "2024-13-01", "20241301000000000", "2024010203",
                                  "2024-01-02 03:04:05.6789"])
def test_bad_instants_are_refused(text):
    with pytest.raises(ValueError):
        parse_instant_time(text)


def test_read_query_from_options():
    q = ReadQuery.from_options({"hoodie.datasource.query.type": "incremental",
                                "hoodie.datasource.read.begin.instanttime": "2024-01-02"})
    assert q.is_incremental and q.begin == "20240102000000000" and q.end is None
    assert ReadQuery.from_options({"as.of.instant": "20240102030405678"}).as_of == "20240102030405678"
    assert not ReadQuery.from_options({"hoodie.enable.data.skipping": False}).use_column_stats
    assert not ReadQuery.from_options({"hoodie.metadata.enable": "false"}).use_column_stats
    assert ReadQuery.from_options(None) == ReadQuery()


@pytest.mark.parametrize("options", [
    {"hoodie.datasource.query.type": "incremental"},  # no begin
    {"hoodie.datasource.read.begin.instanttime": "earliest"},  # begin without incremental
    {"hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": "earliest",
     "as.of.instant": "20240101000000000"},
    {"hoodie.datasource.query.type": "cdc"},
    {"hoodie.datasource.query.typo": "snapshot"},
    {"hoodie.parquet.max.file.size": "1"},  # a write option on a read
    {"as.of.instant": "yesterday"},
])
def test_read_options_refused(options):
    with pytest.raises(InvalidArgumentError):
        ReadQuery.from_options(options)


@pytest.mark.parametrize(("key", "instead"), [("timestampAsOf", "as.of.instant"), ("versionAsOf", "as.of.instant"),
                                              ("as-of-timestamp", "as.of.instant"),
                                              ("startingVersion", "hoodie.datasource.read.begin.instanttime"),
                                              ("readChangeFeed", "incremental")])
def test_other_formats_time_travel_options_are_refused_with_the_hudi_one(key, instead):
    """Delta's and Iceberg's time-travel keys are outside our namespaces: a read answered them from the latest
    snapshot (session 28's probe: ``timestampAsOf`` read every row). Refused, naming the Hudi option."""
    with pytest.raises(InvalidArgumentError, match="another table format") as err:
        cfg.resolve_read_options({key: "2020-01-01"})
    assert instead in (err.value.hint or "")
    with pytest.raises(InvalidArgumentError, match="another table format"):
        cfg.resolve_read_options({key.lower(): "1"})  # Spark hands the data source its keys lower-cased


@pytest.mark.parametrize(("key", "instead"), [("pathGlobFilter", "predicate"), ("modifiedBefore", "as.of.instant"),
                                              ("datetimeRebaseMode", "datetimeRebaseModeInRead"),
                                              ("mergeSchema", "latest schema")])
def test_file_source_read_options_are_refused_naming_what_does_it(key, instead):
    """Spark's file-source read options were taken and did nothing (session 29): ``pathGlobFilter`` read every
    file. Refused in one line; ``mergeSchema=true`` says what a read does anyway and is accepted."""
    with pytest.raises(InvalidArgumentError, match="file sources") as err:
        cfg.resolve_read_options({key: "false" if key == "mergeSchema" else "x"})
    assert instead in (err.value.hint or "")
    assert cfg.resolve_read_options({"mergeSchema": "true"}) == {"mergeSchema": "true"}


@pytest.mark.parametrize(("key", "instead"), [("compression", "hoodie.parquet.compression.codec"),
                                              ("maxRecordsPerFile", "hoodie.parquet.max.file.size"),
                                              ("partitionOverwriteMode", "insert_overwrite"),
                                              ("replaceWhere", "insert_overwrite"), ("txnAppId", "upsert"),
                                              ("overwriteSchema", "widened"), ("mergeSchema", "evolves"),
                                              ("target-file-size-bytes", "hoodie.parquet.max.file.size")])
def test_peer_write_options_are_refused_naming_what_does_it(key, instead):
    """Spark's file-source, Delta's and Iceberg's write options were taken and did nothing (session 29's probe:
    ``partitionOverwriteMode=dynamic`` with ``mode("overwrite")`` replaced the whole table). Refused in one line,
    in Spark's lower-cased spelling too; ``mergeSchema=true`` is what a write does anyway and is accepted."""
    value = "false" if key == "mergeSchema" else "dynamic"
    with pytest.raises(InvalidArgumentError, match="another table format") as err:
        cfg.resolve_options({key: value}, use_defaults_file=False)
    assert instead in (err.value.hint or "")
    with pytest.raises(InvalidArgumentError, match="another table format"):
        cfg.resolve_options({key.lower(): value}, use_defaults_file=False)
    assert cfg.resolve_options({"mergeSchema": "true"}, use_defaults_file=False) == {"mergeSchema": "true"}


def test_a_key_and_its_alias_with_different_values_are_refused() -> None:
    """``Option.get`` took the first spelling it found and ignored the other (session 29's probe); the same
    setting spelled twice with equal meaning is fine."""
    with pytest.raises(InvalidArgumentError, match="same setting"):
        cfg.resolve_read_options({"as.of.instant": "20200101000000000", "hoodie.read.as.of.timestamp": "20210101"})
    with pytest.raises(InvalidArgumentError, match="same setting"):
        cfg.validate_all({"hoodie.clustering.inline": "true", "hoodie.datasource.clustering.inline.enable": "false"})
    cfg.validate_all({"hoodie.datasource.write.keygenerator.type": "SIMPLE",
                      "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.SimpleKeyGenerator",
                      "hoodie.clustering.inline": True, "hoodie.datasource.clustering.inline.enable": "true"})


@pytest.mark.parametrize("key", ["hoodie.parquet.max.file.szie", "hoodie.clustering.plan.strategy.sort.colums",
                                 "as.of.instant"])
def test_write_keys_refused_alike(key):
    with pytest.raises(InvalidArgumentError, match="not supported"):
        cfg.resolve_options({key: "1"}, use_defaults_file=False)


def test_write_keys_accepted():
    opts = {"hoodie.table.name": "t", "hoodie.table.precombine.field": "ts", "spark.sql.x": "1",
            "hoodie.upsert.shuffle.parallelism": "8"}
    assert cfg.resolve_options(opts, use_defaults_file=False) == opts


def _props(table_type: str, **extra: str) -> TableProperties:
    return TableProperties({"hoodie.table.name": "t", "hoodie.table.version": "6", "hoodie.table.type": table_type,
                            **extra})


def test_mor_reads_every_query_type():
    mor = _props("MERGE_ON_READ")
    assert read_refusal(mor, QueryType.INCREMENTAL) is None  # the blocks in range merged (session 16)
    assert read_refusal(mor, QueryType.SNAPSHOT) is None  # log files merged (scan.merge)
    assert read_refusal(mor, QueryType.READ_OPTIMIZED) is None
    assert read_refusal(_props("COPY_ON_WRITE"), QueryType.SNAPSHOT) is None
    no_meta = _props("COPY_ON_WRITE", **{"hoodie.populate.meta.fields": "false"})
    assert read_refusal(no_meta, QueryType.INCREMENTAL) is not None


def test_tables_whose_files_leave_out_the_partition_columns_are_refused():
    """Hudi's ``hoodie.datasource.write.drop.partition.columns=true`` keeps partition values in folder names only;
    we read columns from the files, so reads answered NULL for them (session 15: ``part = '1'``: no rows)."""
    from hudi_layout.format.capabilities import Action, refusal

    dropped = _props("COPY_ON_WRITE", **{"hoodie.datasource.write.drop.partition.columns": "true",
                                         "hoodie.table.partition.fields": "part", "hoodie.table.version": "9"})
    for action in (Action.READ, Action.WRITE, Action.CLUSTER):
        why = refusal(dropped, action)
        assert why is not None and "drop.partition.columns=true" in why.message and "['part']" in why.message
    unpartitioned = _props("COPY_ON_WRITE", **{"hoodie.datasource.write.drop.partition.columns": "true"})
    assert read_refusal(unpartitioned) is None
    kept = _props("COPY_ON_WRITE", **{"hoodie.datasource.write.drop.partition.columns": "false",
                                      "hoodie.table.partition.fields": "part"})
    assert read_refusal(kept) is None


def test_float_columns_get_no_footer_statistics_or_dictionary():
    schema = pa.schema([("id", pa.int64()), ("d", pa.float64()), ("f", pa.float32()),
                        ("s", pa.struct([("x", pa.float64()), ("y", pa.string())]))])
    opts = footer_options(schema, ColumnEncoding(True))
    assert opts["write_statistics"] == ["id", "s.y"]
    assert opts["use_dictionary"] == ["id", "s.y"]
    assert footer_options(schema, ColumnEncoding(("d", "id")))["use_dictionary"] == ["id"]
    assert footer_options(schema, ColumnEncoding(False))["use_dictionary"] is False


def test_read_settings_are_read_options_and_override_the_defaults_file(tmp_path, monkeypatch):
    """hudi_layout's read settings (curve-region step, query log) come from the defaults file and, per read,
    from the read options; a bad value is refused by name; they stay valid in a defaults file a write uses."""
    from hudi_layout.scan.plan import read_settings

    conf = tmp_path / "defaults.conf"
    conf.write_text("hudi_layout.skipping.curve.region.enable false\nhudi_layout.workload.log.enable true\n")
    monkeypatch.setenv("HUDI_LAYOUT_CONF", str(conf))
    assert not cfg.CURVE_REGION_ENABLE.get(read_settings())
    got = read_settings({"hudi_layout.skipping.curve.region.enable": True, "hoodie.datasource.query.type": "snapshot"})
    assert cfg.CURVE_REGION_ENABLE.get(got) and cfg.WORKLOAD_LOG_ENABLE.get(got)
    assert "hoodie.datasource.query.type" not in got
    assert ReadQuery.from_options({"hudi_layout.skipping.curve.region.enable": "false"}) == ReadQuery()
    with pytest.raises(InvalidArgumentError, match="curve.region.enable"):
        ReadQuery.from_options({"hudi_layout.skipping.curve.region.enable": "perhaps"})
    cfg.resolve_options({}, conf_file=conf)  # a write with that defaults file is not refused


def test_the_incremental_fallback_on_a_snapshot_read_is_refused_as_begin_and_end_are():
    """It was taken without effect by snapshot reads (session 29's probe); a session setting of it still only
    counts for incremental reads."""
    with pytest.raises(InvalidArgumentError, match="only applies to incremental"):
        ReadQuery.from_options({"hoodie.datasource.read.incr.fallback.fulltablescan.enable": "true"})
    session = {"hoodie.datasource.read.incr.fallback.fulltablescan.enable": "true"}
    assert ReadQuery.from_options(cfg.read_options_beneath_session(session, {})) == ReadQuery()


def test_option_keys_are_matched_in_any_letter_case_and_trimmed():
    """``{"Hoodie.Datasource.Write.Operation": "upsert"}`` passed ``hl.write`` as a key of no namespace (the write
    was a bulk insert) and ``{"AS.OF.INSTANT": ...}`` read the latest snapshot (session 29's probe); Spark
    already hands the data source its keys lower-cased. Two spellings with different values are refused."""
    assert cfg.resolve_options({" Hoodie.Datasource.Write.Operation ": "upsert"}, use_defaults_file=False) == \
        {"hoodie.datasource.write.operation": "upsert"}
    assert cfg.resolve_read_options({"AS.OF.INSTANT": "20240101000000000"}) == {"as.of.instant": "20240101000000000"}
    with pytest.raises(InvalidArgumentError, match="same key"):
        cfg.resolve_options({"hoodie.datasource.write.operation": "upsert",
                             "HOODIE.DATASOURCE.WRITE.OPERATION": "insert"}, use_defaults_file=False)
    with pytest.raises(InvalidArgumentError, match="not supported"):
        cfg.resolve_options({"Hoodie.Parquet.Max.File.Szie": "1"}, use_defaults_file=False)
    assert cfg.resolve_options({"header": "true"}, use_defaults_file=False) == {"header": "true"}  # not ours


def test_a_defaults_files_read_options_are_the_reads_and_writes_leave_them(tmp_path, monkeypatch):
    """``hoodie.enable.data.skipping false`` in the defaults file: reads skipped by column_stats anyway and every
    write refused the file for holding a read option (session 29's probe). Reads now take the file's Hudi read
    options beneath the session's and their own, as Hudi reads ``hudi-defaults.conf``; writes leave them."""
    from hudi_layout.spark.datasource import _read_options

    conf = tmp_path / "defaults.conf"
    conf.write_text("hoodie.enable.data.skipping false\nhoodie.datasource.query.type read_optimized\n"
                    "hoodie.parquet.max.file.size 1000\n")
    monkeypatch.setenv("HUDI_LAYOUT_CONF", str(conf))
    file_only = cfg.read_options_beneath_session(cfg.defaults_file_read_options(), {})
    assert ReadQuery.from_options(file_only) == ReadQuery(QueryType.READ_OPTIMIZED, use_column_stats=False)
    over = cfg.read_options_beneath_session(cfg.defaults_file_read_options(), {"hoodie.enable.data.skipping": "true"})
    assert ReadQuery.from_options(over).use_column_stats
    assert ReadQuery.from_options(_read_options({"path": "/t"})).query_type is QueryType.READ_OPTIMIZED
    assert cfg.resolve_options({}) == {"hoodie.parquet.max.file.size": "1000"}  # the write takes its own keys


def test_zeros_begin_an_incremental_read_at_the_start_as_in_hudi_docs():
    """Hudi's docs start incremental reads with begin instant "000"; the read-path soak asked that and every
    entry point refused it (regression)."""
    from hudi_layout import options as cfg

    assert cfg.parse_instant_time("000") == cfg.parse_instant_time("0") == cfg.EARLIEST
    assert cfg.parse_instant_time("earliest") == cfg.EARLIEST


def test_a_mor_incremental_read_reaching_archived_commits_is_refused(tmp_path):
    """From 'earliest', an incremental read also takes rows of commits archived off the timeline; on a MOR
    table their log blocks would be skipped as not committed, so the read is refused (one line, a hint);
    a range on the active timeline is planned."""
    from hudi_layout import explain
    from hudi_layout.errors import UnsupportedTableError
    from tests.helpers.mor_builder import Upserts, make_mor_table, row

    t = make_mor_table(tmp_path / "t")
    fid = t.deltacommit(inserts={"": [row("a", 1), row("b", 1)]}).file_ids[0]
    c2 = t.deltacommit(logs={fid: [Upserts([row("a", 2)])]})
    t.deltacommit(logs={fid: [Upserts([row("b", 2)])]})
    first = sorted(p for p in t.timeline.iterdir() if p.is_file())[0].name.split(".")[0].split("_")[0]
    for p in t.timeline.iterdir():  # archive the first deltacommit: off the active timeline, into the history
        if p.is_file() and p.name.startswith(first):
            p.unlink()
    (t.timeline / "history" / f"{first}_{first}_0.parquet").write_bytes(b"")
    incremental = {"hoodie.datasource.query.type": "incremental"}
    with pytest.raises(UnsupportedTableError, match="archived") as refused:
        explain(str(t.base), options={**incremental, "hoodie.datasource.read.begin.instanttime": "earliest"})
    assert "as.of.instant" in (refused.value.hint or "")
    plan = explain(str(t.base), options={**incremental, "hoodie.datasource.read.begin.instanttime": c2.completion})
    assert plan.files_read == 1


# ---- the session's Hudi read settings beneath a read's options (Hudi's DefaultSource takes hoodie.* from it)

def test_session_read_settings_go_beneath_the_reads_options():
    session = session_read_options({"hoodie.datasource.query.type": "read_optimized",
                                    "hoodie.read.query.type": "incremental",  # hudi-rs's name: not Hudi's
                                    "hoodie.cleaner.commits.retained": "3",  # a write setting
                                    "hoodie.datasource.read.begin.instanttime": "20200101000000000",
                                    "spark.sql.session.timeZone": "UTC"})
    assert session == {"hoodie.datasource.query.type": "read_optimized",
                       "hoodie.datasource.read.begin.instanttime": "20200101000000000"}
    # begin counts only for incremental reads, as Hudi uses it
    assert ReadQuery.from_options(cfg.read_options_beneath_session(session, None)).query_type \
        is QueryType.READ_OPTIMIZED
    incremental = cfg.read_options_beneath_session(session, {"hoodie.datasource.query.type": "incremental"})
    assert ReadQuery.from_options(incremental).begin == "20200101000000000"
    # the read's own option wins, by its name or an alias
    aliased = cfg.read_options_beneath_session(session, {"hoodie.read.query.type": "snapshot"})
    assert ReadQuery.from_options(aliased).query_type is QueryType.SNAPSHOT
    # a begin the read gives itself is still refused on a snapshot read
    with pytest.raises(InvalidArgumentError, match="only apply to incremental"):
        ReadQuery.from_options(cfg.read_options_beneath_session(
            {}, {"hoodie.datasource.read.begin.instanttime": "20200101000000000"}))


@pytest.mark.parametrize("key, value", [("hoodie.datasource.merge.type", "skip_merge"),
                                        ("hoodie.datasource.query.incremental.format", "CDC"),
                                        ("hoodie.datasource.read.paths", "/t/a.parquet"),
                                        ("hoodie.datasource.view.type", "realtime")])
def test_session_settings_that_change_hudis_answer_are_refused(key, value):
    with pytest.raises(InvalidArgumentError, match=f"session sets {key}"):
        session_read_options({key: value})
    assert session_read_options({"hoodie.datasource.merge.type": " Payload_Combine "}) == {}


def test_values_hudi_would_refuse_are_refused_and_zero_hours_retained_is_hudis():
    """Session 29's probe: ``includeMetaColumns=yes`` silently meant false, the shuffle-parallelism keys took
    ``abc``, ``hoodie.clustering.max.parallelism`` took -3, and ``hoodie.cleaner.hours.retained=0`` (which Hudi
    and the clean take) was refused by the option's own parser."""
    from hudi_layout.spark.datasource import _wants_meta_columns

    assert _wants_meta_columns({"includeMetaColumns": " TRUE "}) and not _wants_meta_columns({})
    with pytest.raises(InvalidArgumentError, match="includeMetaColumns"):
        _wants_meta_columns({"includeMetaColumns": "yes"})
    for bad in ({"hoodie.upsert.shuffle.parallelism": "abc"}, {"hoodie.insert.shuffle.parallelism": "1.5"},
                {"hoodie.clustering.max.parallelism": "-3"}):
        with pytest.raises(InvalidArgumentError):
            cfg.validate_all(cfg.resolve_options(bad, use_defaults_file=False))
    cfg.resolve_options({"hoodie.upsert.shuffle.parallelism": "200"}, use_defaults_file=False)
    assert cfg.CLEANER_HOURS_RETAINED.get({"hoodie.cleaner.hours.retained": "0"}) == 0


def test_a_stream_never_passes_a_commit_that_can_still_complete_behind_it() -> None:
    """``stream_frontier``: with completion times (v8 / v9) the latest one; without (v6, requested times) it stops
    before the earliest pending commit, which would otherwise complete behind the stream's offset and never be
    read (Hudi's hollow commit); a pending clean does not hold it back."""
    from pathlib import Path

    from hudi_layout.format.instant import Instant, State
    from hudi_layout.scan.query import stream_frontier
    from hudi_layout.table.timeline import Timeline

    def timeline(*instants: Instant) -> Timeline:
        return Timeline(Path("."), Path("."), 1, instants)

    assert stream_frontier(timeline()) == cfg.EARLIEST
    v8 = [Instant("100", "commit", State.COMPLETED, "105"), Instant("102", "commit", State.INFLIGHT),
          Instant("103", "deltacommit", State.COMPLETED, "110")]
    assert stream_frontier(timeline(*v8)) == "110"
    v6 = [Instant("100", "commit", State.COMPLETED), Instant("102", "commit", State.INFLIGHT),
          Instant("103", "commit", State.COMPLETED), Instant("104", "clean", State.REQUESTED)]
    assert stream_frontier(timeline(*v6)) == "100"
    assert stream_frontier(timeline(v6[0], v6[2], v6[3])) == "103"
    assert stream_frontier(timeline(Instant("102", "replacecommit", State.REQUESTED), v6[2])) == cfg.EARLIEST
