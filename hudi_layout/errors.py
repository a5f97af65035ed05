"""One rooted exception hierarchy, so callers (and the CLI) can tell our errors from bugs.

Every error raised on purpose by hudi_layout derives from :class:`HudiLayoutError`. Arguments that
are wrong in themselves (an unknown column, an unsupported type) raise :class:`InvalidArgumentError`,
which is also a ``ValueError``.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar


class HudiLayoutError(Exception):
    """Base of every error hudi_layout raises deliberately.

    ``hint`` says what to do about it; classes set a default that fits every instance (a missing table, a
    damaged file), callers pass a specific one.
    """

    hint: str | None = None

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint


class InvalidArgumentError(HudiLayoutError, ValueError):
    """A caller-supplied argument is wrong: unknown column, unsupported type, bad option value."""


class CleanedAwayError(InvalidArgumentError):
    """A past version of the table (time travel, a pinned snapshot, an incremental range) needs files a clean
    deleted."""


class NotAHudiTableError(HudiLayoutError):
    """The path exists (or not) but holds no readable ``.hoodie/hoodie.properties``."""

    hint = ("give the table's base folder (the one holding .hoodie/hoodie.properties); "
            "'hudi-layout ingest' creates a new table")


class UnsupportedTableError(HudiLayoutError):
    """The table uses a feature (version, type, index) we cannot read or maintain correctly."""


class CorruptFileError(HudiLayoutError):
    """A file on disk does not parse as the format it claims to be."""

    hint = ("the named file is damaged or not what its name says: restore it from a copy; a damaged metadata "
            "table (.hoodie/metadata) is rebuilt with 'hudi-layout index PATH --rebuild'")


class HFileFormatError(CorruptFileError):
    """An HFile is malformed: wrong magic, truncated block, bad trailer."""


class VanishedFileError(HudiLayoutError, FileNotFoundError):
    """A file a read planned is gone: a clean (or a replace) removed it after the plan was made. Also a
    ``FileNotFoundError``, so a reader that turns missing files into its own refusal catches it."""

    hint = "plan the read again"


class CommitConflictError(HudiLayoutError):
    """A concurrent commit changed file groups this operation depends on."""


class PendingClusteringError(CommitConflictError):
    """A clustering plan left pending by an interrupted run blocks the operation until it is resumed or
    abandoned."""


class SchemaMismatchError(HudiLayoutError):
    """Appended data does not match the table schema."""


# ------------------------------------------------------------------------------ errors that cross Spark

#: starts the message of an error raised in a Spark Python worker, so the driver can rebuild it
SPARK_ERROR_MARKER = "HUDI_LAYOUT_ERROR:"
_ERROR_LINE = re.compile(r"(?:^|\s)hudi_layout(?:\.\w+)*\.(\w+(?:Error|Exception))(?:: (.*))?$")


def _error_class(name: str) -> type[HudiLayoutError] | None:
    todo: list[type[HudiLayoutError]] = [HudiLayoutError]
    while todo:
        cls = todo.pop()
        if cls.__name__ == name:
            return cls
        todo.extend(cls.__subclasses__())
    return None


SPARK_HINT_TAG = " [HINT] "


def spark_error_text(exc: HudiLayoutError) -> str:
    """One readable line that survives Spark's wrapping: the marker, the error's class, its message and
    hint (``HUDI_LAYOUT_ERROR: NotAHudiTableError: /t: not a Hudi table [HINT] ...``). Workers and the data
    source raise it; :func:`from_spark_error_text` rebuilds the error on the driver."""
    message = " ".join(str(exc).split())
    hint = f"{SPARK_HINT_TAG}{' '.join(exc.hint.split())}" if exc.hint else ""
    return f"{SPARK_ERROR_MARKER} {type(exc).__name__}: {message}{hint}"


def from_spark_error_text(text: str) -> HudiLayoutError | None:
    """Our error inside the text of an exception Spark raised (a task failure, an ``AnalysisException`` of
    the Python data source): from :func:`spark_error_text`'s marker, else from the last line that names a
    hudi_layout error class (``hudi_layout.errors.NotAHudiTableError: ...``, as a worker reports it). ``None``
    when the text carries neither."""
    idx = text.find(SPARK_ERROR_MARKER)
    if idx >= 0:
        rest = text[idx + len(SPARK_ERROR_MARKER):].strip()
        line = rest.splitlines()[0].strip() if rest else ""
        body, _, hint = line.partition(SPARK_HINT_TAG.strip())
        name, sep, message = body.partition(": ")
        cls = _error_class(name.strip()) if sep else None
        if cls is None:
            cls, message = InvalidArgumentError, body
        return cls(message.strip(), hint=hint.strip() or None)
    for raw in reversed(text.splitlines()):
        m = _ERROR_LINE.search(raw.strip())
        if m:
            found = _error_class(m.group(1))
            if found is not None:
                return found(m.group(2) or "")
    return None


_F = TypeVar("_F", bound=Callable[..., Any])


def one_line_errors(fn: _F) -> _F:
    """Wrap code that runs inside Spark (a Python data source's methods, a ``mapInArrow`` task).

    Spark shows an error raised there as its own message followed by the Python traceback, where only the
    last line names our error, without its hint. Our errors are re-raised with message and hint as one
    tagged line (:func:`spark_error_text`, no chained traceback), which the CLI, the ``install_error_hook``
    of the data source and ``str(exception)`` searches find. Generator functions (a reader's ``read``, a
    task's mapper) raise while Spark iterates them, so they are wrapped as generators.
    """

    def one_line(e: HudiLayoutError) -> HudiLayoutError:
        return e if str(e).startswith(SPARK_ERROR_MARKER) else type(e)(spark_error_text(e), hint=e.hint)

    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def generator(*args: Any, **kwargs: Any) -> Any:
            try:
                yield from fn(*args, **kwargs)
            except HudiLayoutError as e:
                raise one_line(e) from None

        return generator  # type: ignore[return-value]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except HudiLayoutError as e:
            raise one_line(e) from None

    return wrapper  # type: ignore[return-value]


# ------------------------------------------------------------------------------ argument types of the API


_NOT_GIVEN: Any = object()


def check_argument_types(*, path: Any = _NOT_GIVEN, options: Any = None, columns: Any = None) -> None:
    """The public functions' common arguments, checked before anything else: a wrong type is one
    :class:`InvalidArgumentError` naming the argument, not an ``AttributeError`` deep inside (``options`` given as
    a list, ``path`` as a number, ``columns`` as a list of non-strings)."""
    if path is not _NOT_GIVEN and not isinstance(path, (str, os.PathLike)):
        raise InvalidArgumentError(f"path must be a str or a path object, not {type(path).__name__}",
                                   hint="the table's base folder, e.g. '/data/conn'")
    if options is not None and not isinstance(options, Mapping):
        raise InvalidArgumentError(f"options must be a mapping of Hudi option names to values, not "
                                   f"{type(options).__name__}", hint='options={"hoodie.table.name": "t"}')
    if columns is not None and not isinstance(columns, str) and (
            not hasattr(columns, "__iter__") or not all(isinstance(c, str) for c in columns)):
        raise InvalidArgumentError(f"columns must be column names (str), not {columns!r}",
                                   hint="columns=['a', 'b'] or columns='a,b'")
