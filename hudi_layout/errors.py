"""One rooted exception hierarchy, so callers (and the CLI) can tell our errors from bugs.

Every error raised on purpose by hudi_layout derives from :class:`HudiLayoutError`. Arguments that
are wrong in themselves (an unknown column, an unsupported type) raise :class:`InvalidArgumentError`,
which is also a ``ValueError``.
"""

from __future__ import annotations


class HudiLayoutError(Exception):
    """Base of every error hudi_layout raises deliberately."""

    hint: str | None = None

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint


class InvalidArgumentError(HudiLayoutError, ValueError):
    """A caller-supplied argument is wrong: unknown column, unsupported type, bad option value."""


class NotAHudiTableError(HudiLayoutError):
    """The path exists (or not) but holds no readable ``.hoodie/hoodie.properties``."""


class UnsupportedTableError(HudiLayoutError):
    """The table uses a feature (version, type, index) we cannot read or maintain correctly."""


class CorruptFileError(HudiLayoutError):
    """A file on disk does not parse as the format it claims to be."""


class HFileFormatError(CorruptFileError):
    """An HFile is malformed: wrong magic, truncated block, bad trailer."""


class CommitConflictError(HudiLayoutError):
    """A concurrent commit changed file groups this operation depends on."""


class SchemaMismatchError(HudiLayoutError):
    """Appended data does not match the table schema."""
