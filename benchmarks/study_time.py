"""Wall time of `make study` from a fresh clone, split into set-up, measurement and overhead.

    .venv/bin/python benchmarks/study_time.py [--profile default] [--keep]

Clones this checkout's HEAD into a temporary directory and runs there, in order:

1. ``make setup``              -> set-up (venv from requirements/py3.X.lock, native build, apt tools)
2. ``dvc repro <experiments>`` -> the measuring stages (host fingerprint + E1-E4)
3. ``dvc repro``               -> what remains (the report)
4. ``make study``              -> a second study with nothing changed

Measurement is the time spent inside Holoscan app runs, summed over the cells'
sidecars (``timing.measured_s``); overhead is the rest of the measuring stages:
DVC, papermill and its kernel, cell subprocess start-up and imports, and writes.
Prints a Markdown table for docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rtstudy.registry import REGISTRY as EXPERIMENTS

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd: list[str], cwd: Path, env: dict) -> float:
    start = time.monotonic()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="default", choices=["smoke", "default", "seed"])
    parser.add_argument("--keep", action="store_true", help="keep the temporary clone")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="rtstudy-bench-"))
    clone = work / "rtstudy"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("RTSTUDY_ROOT", "VIRTUAL_ENV")}
    env["PATH"] = f"{clone / '.venv' / 'bin'}:{env['PATH']}"
    try:
        setup = timed(["make", "setup"], clone, env)
        subprocess.run([str(clone / ".venv/bin/rtstudy"), "params", "use", args.profile], cwd=clone,
                       env=env, check=True, stdout=subprocess.DEVNULL)
        measuring = timed(["dvc", "repro", *EXPERIMENTS], clone, env)
        report = timed(["dvc", "repro"], clone, env)
        second = timed(["make", "study"], clone, env)

        sidecars = [json.loads(p.read_text()) for p in
                    (clone / "data" / "raw").glob(f"*/*/{args.profile}/*/cell.json")]
        measured = sum(s["timing"]["measured_s"] for s in sidecars)
        per_experiment = {e: sum(s["timing"]["measured_s"] for s in sidecars if s["experiment"] == e)
                          for e in EXPERIMENTS}
        cell_wall = sum(s["timing"]["child_wall_s"] for s in sidecars)
        overhead = measuring - measured
        print(f"Profile `{args.profile}`, {len(sidecars)} cells, {os.cpu_count()} CPUs.\n")
        print("| phase | wall time (s) | share |")
        print("|---|---:|---:|")
        total = setup + measuring + report
        for name, value in [("set-up (`make setup`, fresh venv)", setup),
                            ("measuring stages (`dvc repro` E1-E4)", measuring),
                            ("- measurement (inside the measured runs)", measured),
                            *[(f"  - {e}", v) for e, v in per_experiment.items()],
                            ("- overhead: cell subprocess start, imports, writes", cell_wall - measured),
                            ("- overhead: DVC, host fingerprint, papermill", measuring - cell_wall),
                            ("report (`dvc repro`: notebook, figures, HTML)", report),
                            ("total first `make study`", total)]:
            print(f"| {name} | {value:.1f} | {value / total:.0%} |")
        print(f"\nOverhead / measurement: {overhead / measured:.1%} (target <= 10 %).")
        print(f"Second `make study`, nothing changed: {second:.1f} s.")
    finally:
        if args.keep:
            print(f"\nclone kept in {clone}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
