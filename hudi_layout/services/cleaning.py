"""Cleaning as a service: the public ``clean()`` and the automatic clean after every commit.

The work is Spark-free (:mod:`hudi_layout.cleaning`): a clean deletes files and writes timeline and
metadata-table entries on the driver. The automatic clean (:func:`hudi_layout.cleaning.clean_if_due`, Hudi's
``hoodie.clean.automatic``) runs after every write (:mod:`.write`, and the data source's commit) and after
every clustering (:mod:`.clustering`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hudi_layout import cleaning
from hudi_layout import options as cfg
from hudi_layout.cleaning import CleanResult
from hudi_layout.format.capabilities import Action, require
from hudi_layout.format.properties import load_properties
from hudi_layout.metadata.mdt_timeline import require_mdt_writable_if_present
from hudi_layout.table.paths import table_dir
from hudi_layout.writer.metadata_sync import drop_metadata_table_if_disabled


def clean(path: str, options: Mapping[str, Any] | None = None) -> list[CleanResult]:
    """Finish pending cleans, then clean ``path`` now by the cleaner options (``hoodie.cleaner.policy``,
    ``hoodie.cleaner.commits.retained``, ...); returns one result per clean instant (empty: nothing to delete).
    Runs even when ``hoodie.clean.automatic`` is false (that key only governs cleans after commits)."""
    opts = cfg.resolve_options(options)
    cfg.refuse_options_unused_by(options, cfg.CLEAN)
    base = table_dir(path)
    props = load_properties(base / ".hoodie")
    cfg.validate_all(opts)  # a bad value of any option given is refused, not passed over
    cfg.refuse_table_config_conflicts(props, options, props.table_name)
    require(props, Action.CLEAN)  # before the metadata table can be dropped or anything locked
    drop_metadata_table_if_disabled(str(base), opts)
    require_mdt_writable_if_present(base)  # before the clean's lock: a refusal changes nothing
    return cleaning.clean(base, opts)
