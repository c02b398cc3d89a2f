"""Could typical jitter have a word the study's runs decide? The evidence for
``criteria: e2_typical_words``.

    RTSTUDY_ROOT=<a clone holding the reference> .venv/bin/python benchmarks/typical_words.py \
        [--draws 100] [--seed 0] [--margin 0.5 2] [--host HOST ...]

Measures nothing. For each host with two E2 sessions or more (the last two), deals their runs
again ``--draws`` times, condition by condition (:func:`exchange.deal`: no session effect),
and counts the share of dealt pairs whose words agree for every change both sessions measured
alike, under three rules for a change's typical jitter (its period IQR's ratio to the baseline,
with its CI over runs): the direction where the CI excludes 1 (the old rule), equivalence
against ``--margin`` (equivalent inside it, lower / higher wholly below / above 1, else not
settled), and no word (the late frames' word alone, as the recommendation table now decides).
Prints one Markdown row per host (with the runs' spread: the median over its sessions'
conditions of at least 3 runs of the standard deviation of log period IQR), then, per host, the
share of dealt pairs in which each change's words differ under the old rule; about 2 minutes
per host on 2 vCPUs at 100 draws.
"""
from __future__ import annotations

import argparse

import numpy as np

from rtstudy import data, params
from rtstudy.experiments.e2_rt_threads.checks import exchange
from rtstudy.experiments.e2_rt_threads.analysis import ladder
from rtstudy.inference.stats import CI
from rerun_exchange import EXPERIMENT, pairs   # this folder's: the same two sessions per host


def direction(r: dict, margin: tuple[float, float] | None) -> str:
    """A change's typical-jitter word: the CI's direction, or against ``margin`` when given."""
    low, high = r["iqr_low"], r["iqr_high"]
    if not (np.isfinite(low) and np.isfinite(high)):
        return "no CI"
    if margin and margin[0] <= low and high <= margin[1]:
        return "equivalent"
    return "lower" if high < 1 else "higher" if low > 1 else (
        "not settled" if margin else "no clear change")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--draws", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--margin", type=float, nargs=2, default=(0.5, 2.0))
    parser.add_argument("--host", action="append", default=[])
    args = parser.parse_args()
    configs = params.configs("default")
    ci, cfg = CI.from_params(configs[params.REPORT]), configs[EXPERIMENT]
    rules = {"direction": lambda r: f"{direction(r, None)}; {ladder.finding(r)}",
             f"margin {args.margin[0]:g}-{args.margin[1]:g}":
                 lambda r: f"{direction(r, tuple(args.margin))}; {ladder.finding(r)}",
             "no word (late frames only)": ladder.finding}
    described = data.hosts("default").set_index("host_id")
    print("| host | log IQR spread | " + " | ".join(rules) + " |\n|---|---|" + "---|" * len(rules))
    plain, notes = exchange.finding, []
    for host_id, ((_, a), (_, b)) in pairs(args.host or list(described.index), "default"):
        alike = exchange.alike_changes(a.tables["runs"], b.tables["runs"],
                                       cfg["ladder_policy"], ci)
        rng = np.random.default_rng(args.seed)
        dealt = [(exchange.deal(a.tables["runs"], b.tables["runs"], rng),
                  exchange.deal(a.tables["floor"], b.tables["floor"], rng))
                 for _ in range(args.draws)]
        shares, differ = [], {}
        for name, rule in rules.items():
            exchange.finding = rule      # what rerun_check names each change's words by
            words = [(exchange.rerun_check(ra, fa, cfg, ci)[1],
                      exchange.rerun_check(rb, fb, cfg, ci)[1]) for (ra, rb), (fa, fb) in dealt]
            shares.append(np.mean([all(x.get(k) == y.get(k) for k in alike) for x, y in words]))
            if name == "direction":
                differ = {k: np.mean([x.get(k) != y.get(k) for x, y in words]) for k in alike}
        exchange.finding = plain
        row = described.loc[host_id]
        print(f"| `{host_id}` ({row['state']}, {row['sdk']}) | {spread(a, b):.2f} | "
              + " | ".join(f"{s:.0%}" for s in shares) + " |", flush=True)
        notes.append(f"- `{host_id}`, words that differ under the old rule: " + ", ".join(
            f"{k} {v:.0%}" for k, v in sorted(differ.items())))
    print("\n" + "\n".join(notes))
    return 0


def spread(*sessions) -> float:
    """The median, over each session's conditions with at least 3 runs, of the standard
    deviation of the runs' log period IQR."""
    sds = [np.log(g["period_iqr_us"]).std(ddof=1) for ds in sessions
           for _, g in ds.tables["runs"].groupby("label") if len(g) >= 3]
    return float(np.median(sds)) if sds else float("nan")


if __name__ == "__main__":
    raise SystemExit(main())
