"""The jitter probe and the floor per host state: the table in docs/benchmarks.md "Tuned host".

    .venv/bin/python benchmarks/host_states.py [--profile default]

Reads every host's E4 dataset of the profile (for example the untuned and the
shielded state of one machine after `make study-tuned`) and prints, per host,
CPU and load, the jitter probe's P50 / P99 / P99.99 (mean over repetitions),
its max (over repetitions) and the share of time lost to interruptions (H4's
quantity), then cyclictest's P99 and max per load. Measures nothing.
"""
from __future__ import annotations

import argparse

from rtstudy import data
from rtstudy.machine import shield
from rtstudy.report.study import data_fingerprint


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="default", choices=["smoke", "default", "seed"])
    args = parser.parse_args()
    hosts = [d.parent.name for d in data.datasets("e4_host", args.profile)]
    print("| host | state | CPU | load | P50 (ns) | P99 (ns) | P99.99 (ns) | max (µs) | lost (%) |")
    print("|---|---|---|---|---|---|---|---|---|")
    floors = []
    for host_id in hosts:
        ds = data.load_dataset("e4_host", host_id, args.profile)
        shielded = shield.of(data_fingerprint(args.profile, host_id))
        state = f"shielded CPU {shielded['cpus']}" if shielded else "untuned"
        stats = ds.tables["stats"]
        for (cpu, load), g in stats[stats["kind"] == "jitter"].groupby(["cpu", "load"]):
            print(f"| {host_id} | {state} | {int(cpu)} | {load} | {g['p50'].mean():.0f} | "
                  f"{g['p99'].mean():.1f} | {g['p99.99'].mean():.0f} | {g['max'].max() / 1e3:,.0f} | "
                  f"{g['lost_share'].mean() * 100:.2f} |")
        for load, g in stats[stats["kind"] == "cyclictest"].groupby("load"):
            floors.append(f"| {host_id} | {state} | {load} | {g['p99'].mean() / 1e3:.1f} | "
                          f"{g['max'].max() / 1e3:,.0f} |")
    print("\n| host | state | load | cyclictest P99 (µs) | max (µs) |\n|---|---|---|---|---|")
    print("\n".join(floors))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
