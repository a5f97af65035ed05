"""Named crash points, for the fault-injection tests only.

``HUDI_LAYOUT_FAULT=<point>`` makes the process that reaches :func:`crash_point` ``<point>`` kill itself with
SIGKILL (no cleanup, no ``finally``: what a power cut or the OOM killer does). ``<point>@group`` kills the
whole process group instead (a driver: the Python process and its JVM, not PySpark's worker daemon, which runs
in a group of its own). Several points may be listed, comma-separated. Executor-side points fire in the Spark
Python worker that reaches them (the environment reaches workers through the JVM).

Unset (the normal case) every call is one dictionary lookup.
"""

from __future__ import annotations

import os
import signal

ENV = "HUDI_LAYOUT_FAULT"


def crash_point(name: str) -> None:
    spec = os.environ.get(ENV)
    if not spec:
        return
    for item in spec.split(","):
        point, _, scope = item.strip().partition("@")
        if point == name:
            if scope == "group":
                os.killpg(os.getpgid(0), signal.SIGKILL)
            os.kill(os.getpid(), signal.SIGKILL)
