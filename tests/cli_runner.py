"""Run the ``reclaim`` command line in a subprocess, as a user would, with a wide terminal."""

from __future__ import annotations

import os
import subprocess
import sys


def reclaim(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from reclaim.cli import main; main()", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "200"},
        timeout=300,
    )
