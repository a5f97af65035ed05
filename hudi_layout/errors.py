"""One rooted exception hierarchy, so callers (and the CLI) can tell our errors from bugs.

Every error raised on purpose by hudi_layout derives from :class:`HudiLayoutError`. Arguments that
are wrong in themselves (an unknown column, an unsupported type) raise :class:`InvalidArgumentError`,
which is also a ``ValueError``.
"""

from __future__ import annotations


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


class CommitConflictError(HudiLayoutError):
    """A concurrent commit changed file groups this operation depends on."""


class SchemaMismatchError(HudiLayoutError):
    """Appended data does not match the table schema."""
