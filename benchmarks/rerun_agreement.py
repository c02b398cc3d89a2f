"""Does a re-run land inside the CIs? The study measured twice on this host, headline by headline.

    .venv/bin/python benchmarks/rerun_agreement.py [--profile default] [--keep]

Clones this checkout's HEAD twice into a temporary directory, sets the first
clone up (``make setup``) and runs the whole pipeline (``dvc repro``) in each,
one after the other, with the first clone's environment. Then, for every
headline quantity of ``report/metrics.json`` (estimate and CI over runs), prints
both estimates and whether each lies inside the other's CI, and every verdict of
both runs. Prints Markdown for docs/benchmarks.md. Takes about twice the
profile's study time (``default``: about 35 minutes on 2 vCPUs).
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

ROOT = Path(__file__).resolve().parents[1]


def inside(x: float | None, low: float | None, high: float | None) -> str:
    if x is None or low is None or high is None:
        return "no CI"
    return "yes" if low <= x <= high else "**no**"


def fmt(q: dict) -> str:
    if q["value"] is None:
        return "n/a"
    ci = f" [{q['low']:.3g}, {q['high']:.3g}]" if q["low"] is not None else " (no CI)"
    return f"{q['value']:.3g}{ci} {q['unit']}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="default", choices=["smoke", "default", "seed"])
    parser.add_argument("--keep", action="store_true", help="keep the temporary clones")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="rtstudy-rerun-"))
    clones = [work / "first", work / "second"]
    env = {k: v for k, v in os.environ.items() if k not in ("RTSTUDY_ROOT", "VIRTUAL_ENV")}
    env["PATH"] = f"{clones[0] / '.venv' / 'bin'}:{env['PATH']}"
    metrics, minutes = [], []
    try:
        for clone in clones:
            subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        subprocess.run(["make", "setup"], cwd=clones[0], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        for clone in clones:
            # The first clone's venv runs both; each stage finds its own project from its cwd.
            subprocess.run(["rtstudy", "params", "use", args.profile], cwd=clone, env=env,
                           check=True, stdout=subprocess.DEVNULL)
            start = time.monotonic()
            subprocess.run(["dvc", "repro"], cwd=clone, env=env, check=True,
                           stdout=subprocess.DEVNULL)
            minutes.append((time.monotonic() - start) / 60)
            metrics.append(json.loads((clone / "report" / "metrics.json").read_text()))

        a, b = metrics
        print(f"Profile `{args.profile}`, measured twice on host `{a['host_id']}`, one after the "
              f"other ({minutes[0]:.1f} and {minutes[1]:.1f} min), CIs at {a['confidence']:.0%} "
              "over runs.\n")
        print("| experiment | quantity | first run | second run | first inside second's CI "
              "| second inside first's CI |")
        print("|---|---|---|---|---|---|")
        agree = total = 0
        for label in sorted(k for k in a if isinstance(a[k], dict)):
            for name, qa in a[label]["headline"].items():
                qb = b.get(label, {}).get("headline", {}).get(name)
                if qb is None:
                    continue
                one, two = inside(qa["value"], qb["low"], qb["high"]), \
                    inside(qb["value"], qa["low"], qa["high"])
                if "no CI" not in (one, two):
                    total += 1
                    agree += one == two == "yes"
                print(f"| {label} | {name} | {fmt(qa)} | {fmt(qb)} | {one} | {two} |")
        print(f"\nBoth estimates inside the other's CI: {agree} of {total} quantities with CIs.\n")
        print("| verdict | first run | second run |")
        print("|---|---|---|")
        for label in sorted(k for k in a if isinstance(a[k], dict)):
            for claim, verdict in a[label]["verdicts"].items():
                other = b.get(label, {}).get("verdicts", {}).get(claim, "—")
                print(f"| {claim} | {verdict} | {other} |")
    finally:
        if args.keep:
            print(f"\nclones kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
