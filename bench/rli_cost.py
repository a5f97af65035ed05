"""What a record-level index would cost with the project's HFile code (docs/live-writes.md, "Locating the stored
keys"): write N key cells (sorted keys, a ~44-byte value like a ``HoodieRecordIndexInfo``) with
``hudi_layout.metadata.hfile.writer.write_hfile``, then look up 1% of them with ``HFileReader.get``.

Run: ``python -m bench.rli_cost [N]`` (default 100,000). Prints the timings; writes no report.
"""

from __future__ import annotations

import os
import random
import sys
import time

from hudi_layout.metadata.hfile.reader import HFileReader
from hudi_layout.metadata.hfile.writer import write_hfile


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    n = int(args[0]) if args else 100_000
    keys = sorted(str(i).encode() for i in range(n))
    value = os.urandom(44)
    t = time.perf_counter()
    data = write_hfile(None, ((k, value) for k in keys))
    written = time.perf_counter() - t
    reader = HFileReader(data)
    probe = random.Random(1).sample(keys, max(1, n // 100))
    t = time.perf_counter()
    hits = sum(1 for k in probe if reader.get(k) is not None)
    looked = time.perf_counter() - t
    print(f"write {n:,} cells: {written:.2f} s ({written / n * 1e6:.2f} us/key, {len(data) / 2**20:.1f} MiB); "
          f"{len(probe):,} lookups: {looked:.2f} s ({looked / len(probe) * 1e6:.1f} us/key), {hits:,} found")
    return 0


if __name__ == "__main__":
    sys.exit(main())
