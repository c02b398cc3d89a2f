"""When Holoscan 5.0's busy-polling target loses frames: its skipped releases against the
kernel's real-time throttling (H5c; docs/benchmarks.md).

Runs E2's two Holoscan 5.0 cells at the headline point that differ only in the wake mode
(``SCHED_FIFO-lf3-native``, the target asleep between frames, and ``…-busy_poll``, spinning),
at the default profile's size, in the Debian 13 root, into a folder of its own (never the
dataset), and prints one JSON line per cell label: its late frames and skipped releases on
the releases its clock recorded (:mod:`rtstudy.experiments.e2_rt_threads.analysis.metrics`), the
skip events' spacing, and the host state (``kernel.sched_rt_runtime_us`` of
``sched_rt_period_us``; the shield). Run it in each host state, as root, on a quiet machine::

    .venv/bin/python benchmarks/busy_poll_throttling.py                  # untuned
    .venv/bin/rtstudy host study --cpus 1 --yes --timeout-min 10 --rt-throttling keep -- \\
        .venv/bin/python benchmarks/busy_poll_throttling.py
    .venv/bin/rtstudy host study --cpus 1 --yes --timeout-min 10 -- \\
        .venv/bin/python benchmarks/busy_poll_throttling.py              # throttling lifted

``--record`` appends each line to ``benchmarks/busy_poll_throttling.json``. ``--reference``
measures nothing: it prints the same lines for every host of the dataset here whose E2 data
holds these cells (every session pooled), with the host's state as its fingerprint recorded it.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from rtstudy import data, params, paths
from rtstudy.data import sessions
from rtstudy.experiments.e2_rt_threads.analysis import dataset as analysis, metrics
from rtstudy.experiments.e2_rt_threads.measuring import plan
from rtstudy.machine import host, placement, shield
from rtstudy.measure.harness import SweepContext, run_sweep
from rtstudy.sdks import sdk

EXPERIMENT = "e2_rt_threads"
LABELS = ("SCHED_FIFO-lf3-native", "SCHED_FIFO-lf3-native-busy_poll")
RECORD = Path(__file__).with_name("busy_poll_throttling.json")


def _state(fp: dict) -> dict:
    """The host state a fingerprint records: its RT throttling and its shield."""
    return {"host_id": fp["host_id"], "sched_rt_runtime_us": fp["sched"]["rt_runtime_us"],
            "sched_rt_period_us": fp["sched"]["rt_period_us"],
            "shield": shield.method_of(shield.of(fp)) if shield.of(fp) else "none"}


def skip_events(samples: pd.DataFrame, warmup_frames: int, period_ns: int) -> list[tuple]:
    """Each gap between a run's recorded releases that skipped some: (its start in s since the
    run's first kept frame, the releases it skipped; :func:`.metrics.skipped_per_gap`)."""
    releases = metrics.kept_releases(samples, warmup_frames, metrics.RECORDED)
    t = samples[samples["frame"] >= warmup_frames].sort_values("frame")["t_start_ns"].to_numpy()
    skipped = metrics.skipped_per_gap(releases, period_ns)
    return [(float((t[k] - t[0]) / 1e9), int(skipped[k])) for k in np.flatnonzero(skipped)]


def _events(folder: Path, cfg: dict) -> dict[str, list[list[tuple]]]:
    """Each label's runs' :func:`skip_events`, one list per run."""
    out: dict[str, list[list[tuple]]] = {label: [] for label in LABELS}
    for cell in sorted(folder.iterdir()):
        if (cell / "cell.json").is_file() and (cell / "samples.parquet").is_file():
            label = json.loads((cell / "cell.json").read_text())["label"]
            if label in out:
                out[label].append(skip_events(pd.read_parquet(cell / "samples.parquet"),
                                              cfg["warmup_frames"], plan.period_ns(cfg["fps"])))
    return out


def _line(label: str, runs: pd.DataFrame, events: list[list[tuple]], state: dict) -> dict:
    """One label's JSON line: late frames, skipped releases and the skip events' spacing."""
    r = runs[runs["label"] == label]
    spacing = [b[0] - a[0] for run in events for a, b in zip(run, run[1:])]
    return {"label": label, **state, "runs": int(len(r)), "releases": int(r["n"].sum()),
            "late": int(r["late"].sum()), "skipped": int(r["skipped"].sum()),
            "late_fixed": int(r["late_fixed"].sum()),
            "skip_events": sum(map(len, events)),
            "skipped_per_event": sorted({k for run in events for _, k in run}),
            "event_spacing_s": ([round(float(q), 3) for q in np.percentile(spacing, (10, 50, 90))]
                                if spacing else None),
            "period_iqr_us": round(float(r["period_iqr_us"].median()), 1) if len(r) else None}


def reference(cfg: dict) -> list[dict]:
    """:func:`_line` for each host with these cells in the dataset here, every session pooled."""
    lines = []
    for host_id in data.hosts("default")["host_id"]:
        try:
            found = sessions.load(EXPERIMENT, host_id, "default")
        except data.DataError:
            continue
        runs = pd.concat([ds.tables["runs"] for ds in found.values()] or [pd.DataFrame()],
                         ignore_index=True)
        if "label" not in runs or not (runs["label"] == LABELS[1]).any():
            continue  # not a Holoscan 5.0 host: no busy-polling runs
        events: dict[str, list] = {label: [] for label in LABELS}
        for ds in found.values():
            for label, runs_events in _events(ds.directory, cfg).items():
                events[label] += runs_events
        fp = json.loads((paths.dataset_dir(EXPERIMENT, host_id, "default")
                         / paths.HOST_FILE).read_text())
        state = {**_state(fp), "sessions": len(found)}
        lines += [_line(label, runs, events[label], state) for label in LABELS]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--record", action="store_true", help=f"append to {RECORD.name}")
    parser.add_argument("--reference", action="store_true",
                        help="measure nothing: the dataset's recorded cells, per host")
    args = parser.parse_args()
    cfg = params.stage_config(EXPERIMENT, "default")
    if args.reference:
        for line in reference(cfg):
            print(json.dumps(line))
        return 0
    env = sdk.environment("5.0.0", build=True)
    env.prepare()
    fp = env.fingerprint(host.current())
    configs = {"cpus": params.stage_config("cpus", "default")}
    cells = [c for c in plan.plan(cfg, fp, configs) if c.label in LABELS and not c.drift]
    where = placement.resolve(configs["cpus"], fp)
    state = _state(fp)
    # Under the checkout: the Debian 13 root sees it (not /tmp).
    with tempfile.TemporaryDirectory(prefix=".busy-poll-", dir=paths.root()) as tmp, \
            open(os.devnull, "w") as quiet:
        started = time.monotonic()
        out = run_sweep(cells, Path(tmp), SweepContext.from_fingerprint(fp, "default", where, env),
                        cfg["order_seed"], progress=quiet)
        failed = [o.reason[:200] for o in out if o.status != "ok"]
        runs, events = analysis.load(Path(tmp), cfg).tables["runs"], _events(Path(tmp), cfg)
        state["seconds"] = round(time.monotonic() - started, 1)
    lines = [{**_line(label, runs, events[label], state), "failed": failed} for label in LABELS]
    for line in lines:
        print(json.dumps(line))
    if args.record:
        with RECORD.open("a") as f:
            f.writelines(json.dumps(line) + "\n" for line in lines)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
