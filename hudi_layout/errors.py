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


#: Our errors inside text that Spark wraps (Python data source, executor tasks) start with this tag, so the
#: driver, the CLI and the interpreter's error hook can show them as one line again.
SPARK_ERROR_TAG = "HUDI_LAYOUT_ERROR:"
SPARK_HINT_TAG = " [HINT] "


def tagged_message(message: str, hint: str | None = None) -> str:
    """``message`` (and ``hint``) as one tagged line that survives Spark's wrapping."""
    one_line = " ".join(message.split())
    return f"{SPARK_ERROR_TAG} {one_line}" + (f"{SPARK_HINT_TAG}{' '.join(hint.split())}" if hint else "")


def unwrap_error_text(text: str) -> tuple[str, str | None] | None:
    """``(message, hint)`` of the first tagged error in ``text`` (e.g. ``str()`` of a Spark exception), or
    ``None`` when it holds none of ours."""
    at = text.find(SPARK_ERROR_TAG)
    if at < 0:
        return None
    rest = text[at + len(SPARK_ERROR_TAG):].strip()
    line = rest.splitlines()[0] if rest else ""
    message, _, hint = line.partition(SPARK_HINT_TAG.strip())
    return message.strip(), (hint.strip() or None)
