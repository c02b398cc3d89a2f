"""Where `make test`'s wall time goes, worker by worker: a pytest plugin that records when each
test started and ended, and a summary of those records.

    rm -f /tmp/timeline-*.tsv
    CI=true PYTHONPATH=$PWD/benchmarks PYTEST_ADDOPTS="-p pytest_timeline" make test
    .venv/bin/python benchmarks/pytest_timeline.py [/tmp]

The plugin appends ``start end node-id`` (s since the epoch) to ``timeline-<worker>.tsv`` in
``$RTSTUDY_TIMELINE_DIR`` (default /tmp). The summary prints, per worker, when its first test
started and its last ended (s from the first start of any worker), the sum of its tests'
times, every gap of over 5 s between two tests (a wait: for the measuring lock, the smoke
data, a fixture's teardown) and every test over 20 s.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

_started: dict[str, float] = {}


def _folder() -> Path:
    return Path(os.environ.get("RTSTUDY_TIMELINE_DIR", "/tmp"))


def pytest_runtest_logstart(nodeid, location) -> None:
    _started[nodeid] = time.time()


def pytest_runtest_logfinish(nodeid, location) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(_folder() / f"timeline-{worker}.tsv", "a") as out:
        out.write(f"{_started.get(nodeid, 0.0):.2f}\t{time.time():.2f}\t{nodeid}\n")


def summary(folder: Path) -> str:
    """The per-worker summary of the records in ``folder`` (the xdist controller's, which
    repeats the workers' tests, is left out)."""
    runs = {}
    for path in sorted(folder.glob("timeline-gw*.tsv")):
        rows = []
        for line in path.read_text().splitlines():
            start, end, node = line.split("\t")
            rows.append((float(start), float(end), node))
        runs[path.stem.removeprefix("timeline-")] = sorted(rows)
    if not runs:
        return f"no timeline-gw*.tsv in {folder}"
    t0 = min(rows[0][0] for rows in runs.values())
    lines = []
    for worker, rows in runs.items():
        busy = sum(end - start for start, end, _ in rows)
        lines.append(f"{worker}: first test at {rows[0][0] - t0:.0f} s, last done at "
                     f"{rows[-1][1] - t0:.0f} s, tests {busy:.0f} s")
        previous = rows[0][0]
        for start, end, node in rows:
            if start - previous > 5:
                lines.append(f"  waited {start - previous:.0f} s before {node}")
            if end - start > 20:
                lines.append(f"  {start - t0:5.0f} s: {end - start:.0f} s {node}")
            previous = end
    return "\n".join(lines)


if __name__ == "__main__":
    print(summary(Path(sys.argv[1]) if len(sys.argv) > 1 else _folder()))
