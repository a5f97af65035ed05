"""The user's path, pure parts: the options reference in the README, the defaults file lookup, progress
off without a terminal, the few-files note, our errors through Spark's wrapping."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from hudi_layout import options as cfg
from hudi_layout import progress
from hudi_layout.clustering.metrics import GroupMetrics, few_files_note
from hudi_layout.errors import UnsupportedTableError, from_spark_error_text, spark_error_text
from hudi_layout.tools.progress_view import progress_wanted, terminal_progress

ROOT = Path(__file__).resolve().parents[2]
BEGIN, END = "<!-- options:begin -->", "<!-- options:end -->"


def test_readme_options_table_is_the_generated_one() -> None:
    text = (ROOT / "README.md").read_text()
    assert BEGIN in text and END in text, "README.md lost its options table markers"
    table = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert table == cfg.options_reference_markdown().strip(), (
        "README options table differs from hudi_layout/options.py; regenerate it with "
        "`python -m hudi_layout.tools.options_doc README.md`")


def test_every_option_is_documented_and_says_who_honours_it() -> None:
    for o in cfg.ALL_OPTIONS:
        assert o.doc, o.key
        assert set(o.used_by) <= set(cfg.HONOURED_BY_LEGEND), o.key
    assert sum(1 for o in cfg.ALL_OPTIONS if not o.used_by) <= 1  # only the precombine field, kept for Hudi


def test_defaults_file_lookup_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HUDI_LAYOUT_CONF", raising=False)
    monkeypatch.setenv("HUDI_CONF_DIR", str(tmp_path / "hudi"))
    assert cfg.default_conf_path() == cfg.PACKAGED_DEFAULTS_FILE  # beside the package, last
    (tmp_path / "hudi").mkdir()
    (tmp_path / "hudi" / "hudi-defaults.conf").write_text("hoodie.parquet.max.file.size 1000\n")
    assert cfg.default_conf_path() == tmp_path / "hudi" / "hudi-defaults.conf"  # Hudi's own file
    assert cfg.resolve_options({})["hoodie.parquet.max.file.size"] == "1000"
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "hudi-layout-defaults.conf").write_text("hoodie.parquet.max.file.size=2000\n")
    assert cfg.default_conf_path() == tmp_path / "conf" / "hudi-layout-defaults.conf"  # ./conf beats Hudi's
    mine = tmp_path / "mine.conf"
    mine.write_text("hoodie.parquet.max.file.size 3000\n")
    monkeypatch.setenv("HUDI_LAYOUT_CONF", str(mine))
    assert cfg.default_conf_path() == mine  # the environment beats everything
    monkeypatch.setenv("HUDI_LAYOUT_CONF", str(tmp_path / "missing.conf"))
    with pytest.raises(cfg.InvalidArgumentError, match="HUDI_LAYOUT_CONF"):
        cfg.default_conf_path()


def test_progress_is_off_without_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HUDI_LAYOUT_PROGRESS", raising=False)
    monkeypatch.delenv("CI", raising=False)
    assert not progress_wanted(io.StringIO())

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert progress_wanted(Tty())
    monkeypatch.setenv("CI", "true")
    assert not progress_wanted(Tty())
    monkeypatch.setenv("HUDI_LAYOUT_PROGRESS", "1")
    assert progress_wanted(io.StringIO())
    with terminal_progress(enabled=False) as shown:
        assert not shown and not progress.is_listened()


def test_progress_reports_reach_listeners_and_failures_do_not_break_steps() -> None:
    seen: list[progress.Progress] = []

    def broken(_: progress.Progress) -> None:
        raise RuntimeError("display gone")

    assert not progress.is_listened()
    with progress.listening(broken), progress.listening(seen.append):
        progress.report(progress.Progress("index", 1, 2, "files"))
    progress.report(progress.Progress("index", 2, 2, "files"))  # nobody listens any more
    assert [p.done for p in seen] == [1]


def _groups(files_out: int, partitions: int, bytes_each: int) -> tuple[GroupMetrics, ...]:
    return tuple(GroupMetrics(f"p{i}", 10, files_out, bytes_each, bytes_each, 100, 1.0) for i in range(partitions))


def test_few_files_note_names_the_option_and_a_value() -> None:
    key = cfg.TARGET_FILE_MAX_BYTES.key
    note = few_files_note(_groups(1, 12, 1_200_000), 1 << 30, key)
    assert note is not None and key in note and "12 partition(s)" in note
    assert f"-o {key}=149504" in note  # 1.2 MB / 8 = 150 kB per file, in whole KiB (146 KiB)
    assert "(1 GiB)" in note
    assert few_files_note(_groups(8, 12, 1_200_000), 1 << 20, key) is None
    unpartitioned = (GroupMetrics("", 10, 2, 50_000_000, 50_000_000, 100, 1.0),)
    assert "for the table" in (few_files_note(unpartitioned, 1 << 30, key) or "")
    # a target below the data: the note must not call it "larger than the data" (cluster probe, session 32)
    small = few_files_note(_groups(3, 4, 836_000), 300_000, key) or ""
    assert "leaves few files of the data" in small and "larger" not in small
    resumed = few_files_note(_groups(3, 4, 836_000), None, key) or ""  # a plan an earlier run scheduled
    assert "the plan's target file size" in resumed and f"-o {key}=" in resumed


def test_our_errors_survive_sparks_wrapping() -> None:
    line = spark_error_text(UnsupportedTableError("operation 'upsert' is not supported", hint="use insert"))
    wrapped = ("[PYTHON_DATA_SOURCE_ERROR] Failed to initialize Python data source writer: Traceback (most recent "
               "call last):\n  File \"x.py\", line 1\nhudi_layout.errors.UnsupportedTableError: " + line
               + "\n SQLSTATE: 38000")
    found = from_spark_error_text(wrapped)
    assert isinstance(found, UnsupportedTableError)
    assert (str(found), found.hint) == ("operation 'upsert' is not supported", "use insert")
    assert from_spark_error_text("some other error") is None
    again = from_spark_error_text(spark_error_text(UnsupportedTableError("multi\nline", hint="h")))
    assert again is not None and str(again) == "multi line"


def test_terminal_progress_renders_steps_with_and_without_totals(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    with terminal_progress(enabled=True) as shown:
        assert shown and progress.is_listened()
        progress.report(progress.Progress("ingest into t", 3, None, "tasks", files=2, rows=1000, bytes=2_000_000))
        progress.report(progress.Progress("ingest into t", 8, 8, "tasks", files=8, rows=4000, finished=True))
    err = capsys.readouterr().err
    assert "ingest into t" in err and "8/8 tasks" in err and "4,000 rows" in err


def test_reconcile_schema_is_a_real_option_now() -> None:
    """It sat among the keys accepted without effect, with any value; true asks for a cast of each batch to the
    table's schema, which hudi_layout.write now does (tests/integration/test_schema_evolution.py)."""
    from hudi_layout.errors import InvalidArgumentError

    assert cfg.RECONCILE_SCHEMA.get(cfg.resolve_options({"hoodie.datasource.write.reconcile.schema": "true"}))
    assert not cfg.RECONCILE_SCHEMA.get(cfg.resolve_options({}))
    assert "hoodie.datasource.write.reconcile.schema" not in cfg.ACCEPTED_WITHOUT_EFFECT
    with pytest.raises(InvalidArgumentError):
        cfg.validate_all(cfg.resolve_options({"hoodie.datasource.write.reconcile.schema": "maybe"}))


def test_flags_take_hudis_reading_or_are_refused() -> None:
    """Hudi parses flags with ``Boolean.parseBoolean``: ``yes`` / ``1`` are false there, so they are refused
    here rather than read as true (the session 22 probe: ``hoodie.compact.inline=yes`` compacted)."""
    from hudi_layout.errors import InvalidArgumentError

    assert cfg.COMPACT_INLINE.get(cfg.resolve_options({"hoodie.compact.inline": " TRUE "}))
    assert not cfg.COMPACT_INLINE.get(cfg.resolve_options({"hoodie.compact.inline": "no"}))
    for value in ("yes", "1", "on"):
        with pytest.raises(InvalidArgumentError, match="anything but 'true'"):
            cfg.validate_all(cfg.resolve_options({"hoodie.compact.inline": value}))


def test_small_file_limit_takes_any_size_and_refuses_a_negative_one() -> None:
    """``hoodie.parquet.small.file.limit``: 0 (hudi_layout's default, packing off) and any size in bytes (an
    upsert packs new keys into files below it, docs/live-writes.md); a negative value is refused naming the key."""
    from hudi_layout.errors import InvalidArgumentError

    for value in (0, "104857600"):
        cfg.validate_all(cfg.resolve_options({"hoodie.parquet.small.file.limit": value}))
    assert cfg.WRITE_SMALL_FILE_LIMIT.default == 0
    with pytest.raises(InvalidArgumentError, match="small.file.limit"):
        cfg.validate_all(cfg.resolve_options({"hoodie.parquet.small.file.limit": "-1"}))


def test_the_package_exports_every_public_name_of_the_api() -> None:
    """``hudi_layout.X`` works for every name ``hudi_layout.api.__all__`` lists (the probe found
    ``build_column_stats_index`` listed there but missing from the package)."""
    import hudi_layout
    from hudi_layout import api

    assert set(hudi_layout._EXPORTS) == set(api.__all__)
    assert all(getattr(hudi_layout, name) is getattr(api, name) for name in api.__all__)


def test_a_hudi_feature_we_do_not_build_is_named_not_misspelled() -> None:
    """Keys of Hudi indexes we do not maintain say so; a spelling hint named a key of another meaning
    (``hoodie.metadata.record.index.enable`` -> "did you mean hoodie.metadata.enable?"). Misspellings keep it."""
    for key in cfg.UNBUILT_HUDI_FEATURES:
        with pytest.raises(Exception, match="not maintained") as info:
            cfg.resolve_options({key: "true"}, use_defaults_file=False)
        assert "did you mean" not in (getattr(info.value, "hint", "") or "")
    with pytest.raises(Exception) as info:
        cfg.resolve_options({"hoodie.clean.commits.retain": "3"}, use_defaults_file=False)
    assert "hoodie.cleaner.commits.retained" in (getattr(info.value, "hint", "") or "")
