"""Does a re-run land inside the CIs? The study measured twice on this host, headline by headline.

    .venv/bin/python benchmarks/rerun_agreement.py [--profile default] [--keep] [--record]
        [--stage e2_rt_threads ...] [--sdk 4.6.0 ...]
    .venv/bin/python benchmarks/rerun_agreement.py --judge FIRST SECOND [--minutes A B] [--record]
    .venv/bin/python benchmarks/rerun_agreement.py --sessions [--profile default] [--record]
    .venv/bin/python benchmarks/rerun_agreement.py --show

Clones this checkout's HEAD twice into a temporary directory, sets the first
clone up (``make setup``) and runs the whole pipeline (``dvc repro``) in each,
one after the other, with the first clone's environment. Then, for every
headline quantity of ``report/metrics.json`` (estimate and CI over runs), prints
both estimates and whether each lies inside the other's CI, and every verdict of
both runs. Prints Markdown for docs/benchmarks.md; with ``--record`` also writes
both sessions' metrics to ``benchmarks/rerun_agreement.json``, whose agreement the
report's *Stability* section cites. Takes about twice the profile's study time
(``default``: about 37 minutes on 2 vCPUs). ``--stage`` measures only those stages (and what
they depend on) and renders the report from them (``rtstudy report``); ``--sdk`` measures only
those Holoscan versions (``params.yaml: sdk.versions``): e.g. E2's ladder and fixes twice on
4.6.0 in about 25 minutes. Such a partial pair is never ``--record``\ ed.

``--judge FIRST SECOND`` measures nothing: it renders the report of two kept clones (``--keep``)
with *this* checkout's code (``RTSTUDY_ROOT``; each clone's own data and parameters) and
compares them, so two sessions measured once are judged again under the current analysis and
rules; ``--minutes`` carries their recorded ``dvc repro`` times into the record.

``--show`` prints the recorded pair again, judged by this checkout's code (how many misses
chance alone gives, for one), and measures nothing. ``--sessions`` measures nothing either: in this checkout, for every host whose dataset holds
three sessions or more (``make new-session``, then ``make study``: :mod:`rtstudy.data.sessions`), it
judges the latest session against the session-aware intervals of the earlier ones, headline by
headline: inside their prediction interval for a next session, and inside their CI of the mean;
then, over all its sessions, which variance component (between sessions, between runs, within a
run) is the largest for how many headlines. With ``--record`` it also writes how far the shown host's sessions moved each headline to
``benchmarks/session_spread.json``, which the report cites beside a host of one session.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rtstudy import paths
from rtstudy.report.stability import (agreement, agreement_table, chance_misses, finding_changes,
                                      verdict_changes)

ROOT = Path(__file__).resolve().parents[1]
OUT = paths.rerun_file()
SPREAD = paths.session_spread_file()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="default", choices=["smoke", "default", "seed"])
    parser.add_argument("--keep", action="store_true", help="keep the temporary clones")
    parser.add_argument("--record", action="store_true",
                        help=f"write both sessions' metrics to {OUT.name}, which the report cites")
    parser.add_argument("--stage", action="append", default=[],
                        help="measure only this stage (repeatable); the report is rendered from it")
    parser.add_argument("--sdk", action="append", default=[],
                        help="measure only this Holoscan version (repeatable)")
    parser.add_argument("--judge", nargs=2, type=Path, metavar=("FIRST", "SECOND"),
                        help="render and compare two kept clones; measure nothing")
    parser.add_argument("--minutes", nargs=2, type=float, metavar=("A", "B"),
                        help="with --judge: the two sessions' recorded dvc repro minutes")
    parser.add_argument("--sessions", action="store_true",
                        help="judge this checkout's latest session against its earlier ones")
    parser.add_argument("--show", action="store_true",
                        help=f"print the recorded pair ({OUT.name}) again; measure nothing")
    args = parser.parse_args()
    if args.show:
        report(json.loads(OUT.read_text()), False)
        return 0
    if args.sessions:
        return judge_sessions(args.profile, args.record)
    if args.record and (args.stage or args.sdk):
        parser.error("--record keeps whole sessions only: drop --stage / --sdk")
    if args.judge:
        return judge(args)

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
            if args.sdk:
                only_versions(clone / "params.yaml", args.sdk)
            start = time.monotonic()
            # One session per clone, as `make study` names one
            # (rtstudy.measure.harness.session_record).
            session = {**env, "RTSTUDY_SESSION": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                       + f"-rerun-{clone.name}"}
            subprocess.run(["dvc", "repro", *args.stage], cwd=clone, env=session, check=True,
                           stdout=subprocess.DEVNULL)
            if args.stage:
                subprocess.run(["rtstudy", "report"], cwd=clone, env=session, check=True,
                               stdout=subprocess.DEVNULL)
            minutes.append((time.monotonic() - start) / 60)
            metrics.append(json.loads((clone / "report" / "metrics.json").read_text()))

        record = {"profile": args.profile, "host_id": metrics[0]["host_id"],
                  "commit": head(clones[0]),
                  "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "minutes": [round(m, 1) for m in minutes], "sessions": metrics}
        report(record, args.record)
    finally:
        if args.keep:
            print(f"\nclones kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def head(clone: Path) -> str:
    """The commit a clone's HEAD is at."""
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, text=True,
                          capture_output=True, check=True).stdout.strip()


def judge(args) -> int:
    """Render two kept clones' reports with this checkout's code, then compare and record."""
    metrics = []
    for clone in args.judge:
        env = {**os.environ, "RTSTUDY_ROOT": str(clone.resolve())}
        subprocess.run([str(ROOT / ".venv" / "bin" / "rtstudy"), "report"], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        metrics.append(json.loads((clone / "report" / "metrics.json").read_text()))
    # When the first session finished measuring: its dvc.lock was last written then.
    measured = time.gmtime((args.judge[0] / "dvc.lock").stat().st_mtime)
    record = {"profile": metrics[0].get("profile", "default"), "host_id": metrics[0]["host_id"],
              "commit": head(args.judge[0]), "judged_with": head(ROOT),
              "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", measured),
              "minutes": list(args.minutes) if args.minutes else [None, None],
              "sessions": metrics}
    report(record, args.record)
    return 0


def judge_sessions(profile: str, write: bool) -> int:
    """Print, per host with ≥ 3 sessions, how its latest session lands against the earlier
    ones' session-aware intervals (Markdown for docs/benchmarks.md); ``write``: record how far
    the shown host's sessions moved each headline (:data:`SPREAD`)."""
    from rtstudy import data
    from rtstudy.report.stability import format_quantity, session_spread
    from rtstudy.report.study import Study

    study = Study.load(profile)
    if write:
        tidy = study.session_quantities()
        if tidy.empty:  # no experiment of the shown host has two sessions
            print(f"host {study.host_id} has one session: nothing to record", file=sys.stderr)
            return 1
        SPREAD.write_text(json.dumps({
            "host_id": study.host_id, "profile": profile, "commit": head(ROOT),
            "recorded_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "sessions": list(dict.fromkeys(tidy["session"])),
            "quantities": session_spread(tidy)}, indent=2) + "\n")
        print(f"recorded in {SPREAD}", file=sys.stderr)
    hosts = data.hosts(profile)
    judged_any = False
    for host_id in hosts["host_id"]:
        tidy = study.session_quantities(host_id)
        est = study.session_estimates(host_id)
        if len(est) == 0 or est["latest_inside"].isna().all():
            continue
        judged_any = True
        ids = list(dict.fromkeys(tidy["session"]))
        latest = tidy[tidy["session"] == ids[-1]].set_index(["experiment", "quantity"])
        earlier = estimates_without(tidy, ids[-1], study.ci.confidence)
        print(f"\nHost `{host_id}`: the latest session ({ids[-1]}) against the "
              f"{len(ids) - 1} earlier ({', '.join(ids[:-1])}).\n")
        print("| experiment | quantity | latest session | earlier: mean [CI] | earlier: a next "
              "session | inside |")
        print("|---|---|---|---|---|---|")
        judged = est[est["latest_inside"].notna()]
        for r in judged.itertuples():
            q = latest.loc[(r.experiment, r.quantity)]
            e = earlier.loc[(r.experiment, r.quantity)]
            print(f"| {r.experiment} | {r.quantity} | "
                  f"{format_quantity({**q.to_dict(), 'low': none(q.low), 'high': none(q.high)})} | "
                  f"{e.value:.3g} [{e.low:.3g}, {e.high:.3g}] | [{e.next_low:.3g}, "
                  f"{e.next_high:.3g}] | {'yes' if r.latest_inside else '**no**'} |")
        print(f"\nInside the earlier sessions' prediction interval: "
              f"{int(judged['latest_inside'].sum())} of {len(judged)}; inside their CI of the "
              f"mean: {int(judged['latest_inside_ci'].sum())} of {len(judged)}.")
        print(components_text(est, len(ids)))
    if not judged_any:
        print("no host here has 3 sessions with a spread to judge by (make new-session, then "
              "make study, measures another)")
    return 0


def components_text(est, k: int) -> str:
    """Each headline split three ways with its variance components' shares over all ``k``
    sessions (a Markdown table), then which is largest for how many headlines and the median
    shares per experiment."""
    import numpy as np

    from rtstudy.report.stability import largest_components

    c = largest_components(est)
    split = est[np.isfinite(est["share_within"].astype(float))]
    medians = "; ".join(
        f"{name} {g['share'].median():.0%} / {g['share_runs'].median():.0%} / "
        f"{g['share_within'].median():.0%}" for name, g in split.groupby("experiment"))
    rows = "\n".join(f"| {r.experiment} | {r.quantity} | {r.share:.0%} / {r.share_runs:.0%} / "
                     f"{r.share_within:.0%} |" for r in split.itertuples())
    return (f"\n| experiment | headline | variance: sessions / runs / within a run |\n"
            f"|---|---|---|\n{rows}\n"
            f"\nVariance components over the {k} sessions: of {c['split']} headlines split three "
            f"ways, the largest part is between sessions for {c['sessions']}, between runs for "
            f"{c['runs']}, within a run for {c['within']} ({c['unsplit']} more have no within-run "
            f"part of their own). Per experiment, the median of each share (sessions / runs / within "
            f"a run): {medians}.")


def estimates_without(tidy, session: str, confidence: float):
    """The session-level estimates of every session but ``session``, by experiment and quantity."""
    from rtstudy.report.stability import session_estimates

    return session_estimates(tidy[tidy["session"] != session], confidence).set_index(
        ["experiment", "quantity"])


def none(x):
    """NaN → None, as metrics.json holds a missing bound."""
    return None if x != x else float(x)


def report(record: dict, write: bool) -> None:
    """Print the comparison of a record's two sessions (Markdown); ``write``: store the record."""
    a, b = record["sessions"]
    if write:
        # The report cites this file (its "Stability" section; a dependency of its DVC stage).
        OUT.write_text(json.dumps(record, indent=2) + "\n")
        print(f"recorded in {OUT}", file=sys.stderr)
    minutes = " and ".join(f"{m:.1f}" if m is not None else "?" for m in record["minutes"])
    print(f"Profile `{record['profile']}`, measured twice on host `{a['host_id']}`, one after the "
          f"other ({minutes} min), CIs at {a['confidence']:.0%} over runs.\n")
    table = agreement(a, b)
    print(agreement_table(table).to_markdown(index=False))
    judged = table[table["agree"].notna()]
    chance = chance_misses(table, a["confidence"])
    print(f"\nBoth estimates inside the other's CI: {int(judged['agree'].sum())} of "
          f"{len(judged)} quantities with CIs. With no difference between the sessions, about "
          f"{chance['expected']:.0f} would miss by chance (two sessions of {chance['runs']} runs "
          f"agree on a quantity {chance['agree']:.0%} of the time); as many misses or more in "
          f"{chance['p']:.0%} of such pairs.\n")
    print("| verdict | first session | second session |")
    print("|---|---|---|")
    for claim, (one, two) in verdict_changes(a, b).items():
        print(f"| {claim} | {one} | {two}{' (differs)' if one != two else ''} |")
    findings = finding_changes(a, b)
    if findings:
        same = sum(one == two for one, two in findings.values())
        print(f"\nFindings (E2's recommendation table): the same in {same} of "
              f"{len(findings)}.\n")
        print("| finding | first session | second session |")
        print("|---|---|---|")
        for name, (one, two) in findings.items():
            print(f"| {name} | {one} | {two}{' (differs)' if one != two else ''} |")


def only_versions(path: Path, versions: list[str]) -> None:
    """Set ``sdk.versions`` (and every profile's) in a clone's params.yaml to ``versions``."""
    text = re.sub(r"(?m)^(\s+versions: )\[.*\]$", rf"\g<1>[{', '.join(versions)}]",
                  path.read_text())
    path.write_text(text)


if __name__ == "__main__":
    raise SystemExit(main())
