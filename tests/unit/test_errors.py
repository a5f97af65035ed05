"""Errors that cross Spark come back as ours (class, one-line message, hint); default hints per class."""

from __future__ import annotations

from hudi_layout import errors
from hudi_layout.format.partition_path import UnsafePartitionPathError


def test_marker_round_trip_keeps_class_and_hint() -> None:
    exc = UnsafePartitionPathError("partition value '../x' of field 'p' cannot be a partition folder", hint="h")
    wrapped = f"Job aborted ... PythonException: ... ValueError: {errors.spark_error_text(exc)}\n at ..."
    back = errors.from_spark_error_text(wrapped)
    assert type(back) is UnsafePartitionPathError and str(back) == str(exc) and back.hint == "h"


def test_worker_line_of_a_data_source_error() -> None:
    text = ("[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: "
            "hudi_layout.errors.NotAHudiTableError: /t: not a Hudi table (directory does not exist)\n SQLSTATE: 38000")
    back = errors.from_spark_error_text(text)
    assert isinstance(back, errors.NotAHudiTableError) and str(back).startswith("/t: not a Hudi table")
    assert back.hint == errors.NotAHudiTableError.hint
    assert errors.from_spark_error_text("java.lang.OutOfMemoryError: heap") is None


def test_default_hints() -> None:
    assert errors.NotAHudiTableError("x").hint and errors.CorruptFileError("x").hint
    assert errors.HFileFormatError("x").hint == errors.CorruptFileError.hint
    assert errors.CorruptFileError("x", hint="specific").hint == "specific"
