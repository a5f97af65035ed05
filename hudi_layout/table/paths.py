"""A table's location as given by a caller: a local path, or a ``file:`` URI of one (how Spark and Hudi print
local paths). Every entry point turns it into a local path here before anything is read or written.

Until session 31 only readers understood ``file:`` URIs: ``hl.write(df, "file:///data/t")`` wrote a second,
stray table under ``./file:/data/t`` in the current folder, and every reader of the real table missed the rows
(a probe). Other schemes (``s3://``, ``hdfs://``, ...) are refused: tables live in a local or mounted file
system that the driver and every Spark worker see.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from hudi_layout.errors import InvalidArgumentError

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


def local_table_path(path: str | os.PathLike[str]) -> str:
    """``path`` as a local path: a ``file:`` URI (``file:/x``, ``file:///x``, ``file://localhost/x``) becomes
    ``/x``; a plain path is returned as given (``~`` expanded). Refuses other URI schemes in one line.

    What follows the scheme and authority is taken **literally**, as Hadoop's ``Path`` (and so Spark) does:
    ``%20`` stays three characters and ``#`` / ``?`` are part of the name. Spark hands a SQL table's
    ``LOCATION`` to data sources in that form (``file:/data/a%20b`` for a folder named ``a%20b``); decoding it
    as an RFC URI opened another folder, or another table (session 32)."""
    text = os.fspath(path)
    if not text.strip():
        raise InvalidArgumentError("the table path is empty", hint="give the table's base folder, e.g. /data/t")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(f"{text!r}: the path is not valid UTF-8, so Spark cannot address it",
                                   hint="rename the folder to a UTF-8 name") from None
    match = _SCHEME.match(text)
    if match is None or len(match.group(1)) == 1:  # no scheme (a one-letter "scheme" is a Windows drive)
        return os.path.expanduser(text)
    scheme = match.group(1).lower()
    if scheme != "file":
        raise InvalidArgumentError(
            f"{text}: hudi_layout reads and writes tables in a local or mounted file system; {scheme}: paths are "
            "not supported",
            hint="mount the storage where the driver and every Spark worker see it (NFS, a FUSE mount) and give "
                 f"that local path; a relative folder whose name holds ':' is written ./{text}")
    rest = text[match.end():]
    if rest.startswith("//"):
        authority, slash, rest = rest[2:].partition("/")
        if authority not in ("", "localhost"):
            raise InvalidArgumentError(f"{text}: a file: URI of another host ({authority}) is not a local path",
                                       hint="give the path as the driver sees it, e.g. file:///data/t or /data/t")
        rest = slash + rest
    if not rest.startswith("/"):
        raise InvalidArgumentError(f"{text}: a file: URI names an absolute path",
                                   hint="write file:///data/t (or the plain path /data/t)")
    return rest


def table_dir(path: str | os.PathLike[str]) -> Path:
    """:func:`local_table_path` as an absolute :class:`~pathlib.Path`; a path the file system cannot even look
    up (a name over 255 bytes, a path over PATH_MAX, a symbolic-link loop, a folder we may not enter) is refused
    in one line here, not as an ``OSError`` from the first ``is_dir()`` deep inside a command."""
    base = Path(local_table_path(path)).absolute()
    if str(base).startswith("//"):  # POSIX keeps a leading "//"; Hadoop reads "//work/t" as host "work"
        base = Path("/" + str(base).lstrip("/"))
    try:
        os.stat(base)
    except (FileNotFoundError, NotADirectoryError):
        if base.is_symlink():
            raise InvalidArgumentError(f"{path}: a symbolic link to nothing ({os.readlink(base)})",
                                       hint="create the folder it points to, or give the real path") from None
    except OSError as e:
        raise InvalidArgumentError(f"{path}: {e.strerror or e}",
                                   hint="check the path (its length, its symbolic links) and its permissions") from None
    if ".." in base.parts:
        # Hadoop (so Spark) folds "x/link/../t" to "x/t" by the letters, the OS goes through the link: one
        # physical spelling for everyone (session 32: reads opened the lexical twin, a clean refused its plan)
        base = Path(os.path.realpath(base))
    return base
