"""The command line as a shell user meets it."""
from __future__ import annotations

import subprocess

from helpers import BIN


def test_a_reader_that_stops_early_gets_no_traceback():
    """`rtstudy params show | head`: the reader closes the pipe before everything is written."""
    proc = subprocess.run(f"{BIN / 'rtstudy'} params show | true; "
                          "exit ${PIPESTATUS[0]}", shell=True, executable="/bin/bash",
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
