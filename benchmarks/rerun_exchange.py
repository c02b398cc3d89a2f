"""The re-run checks under exchange: how often would two sessions pass them if the session
did not matter, and how often does the check with power catch a known change?

    .venv/bin/python benchmarks/rerun_exchange.py [--profile default] [--draws 1000] [--seed 0]
        [--host HOST ...] [--record]

``--record`` judges the check with power instead (:func:`recheck.calibrate`): per host, the
share of dealt pairs whose recommendation words all agree, the share the check passes
(calibration, at least 0.9 wanted) and, for each change injected into one session of the
dealt pairs (a late-frame rate doubled, a fix's late frames removed, typical jitter ×1.5),
the share it fails (power, at least 0.8 wanted, judged only where a check could catch the
change: :func:`recheck.powerable`, an exact test at the check's strictest level with power
0.8 or more on the late frames divided by the pair's φ; the others are shown as not powered,
with their late frames);
written to ``benchmarks/rerun_exchange.json`` and printed as Markdown. Without it, as before:

Measures nothing. For every host whose E2 dataset holds two sessions or more
(:mod:`rtstudy.data.sessions`; ``--host`` picks some), takes its last two (in the reference dataset
the pair ``benchmarks/rerun_agreement.py`` measured one after the other) and judges them by
the first re-run check: every ladder rung's typical jitter and every late-frame rate at the headline
point inside the other session's CI, both ways, and the recommendation table's conclusions the
same. Then it deals the two sessions' runs again ``--draws`` times, condition by condition, and
judges each dealt pair the same way (:mod:`rtstudy.experiments.e2_rt_threads.checks.exchange`): the
share that pass is the check's chance with no session effect; the share with at least as many
misses as the real pair is the real pair's p-value. Prints Markdown for docs/benchmarks.md;
0.1-0.17 s per draw and host on 2 vCPUs (the reference dataset's four hosts, 1000 draws each:
9.4 minutes).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from rtstudy import data, params
from rtstudy.data import sessions
from rtstudy.experiments.e2_rt_threads.checks.exchange import exchange_test
from rtstudy.experiments.e2_rt_threads.checks.recheck import calibrate, session_test
from rtstudy.inference.stats import CI

EXPERIMENT = "e2_rt_threads"
RECORD = Path(__file__).with_name("rerun_exchange.json")
# The criteria the record judges, as the table names them.
CRITERIA = {"words_agree": "words agree", "calibration": "calibration", "power": "power"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", default="default", choices=["smoke", "default", "seed"])
    parser.add_argument("--draws", type=int, default=1000, help="pairs dealt per host")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--host", action="append", default=[],
                        help="only this host id (repeatable); default: every host with 2 sessions")
    parser.add_argument("--record", action="store_true",
                        help=f"judge the check with power; write {RECORD.name}")
    args = parser.parse_args()
    configs = params.configs(args.profile)
    ci = CI.from_params(configs[params.REPORT])
    if args.record:
        return record(args, configs, ci)
    hosts = args.host or list(data.hosts(args.profile)["host_id"])
    passes = []
    for host_id, ((one, a), (two, b)) in pairs(hosts, args.profile):
        start = time.monotonic()
        r = exchange_test(a.tables, b.tables, configs[EXPERIMENT], ci, args.draws, args.seed)
        seconds = time.monotonic() - start
        passes.append(r["pass_rate"])
        print(f"\nHost `{host_id}`: sessions {one} and {two}; {args.draws} pairs dealt "
              f"(seed {args.seed}, {seconds / 60:.1f} min).\n")
        print(describe(r))
    if not passes:
        print("no host here has two sessions of E2 (make new-session, then make study)")
        return 1
    if len(passes) > 1:
        print(f"\nEvery host's pair passing at once, were the hosts independent: "
              f"{np.prod(passes):.1%}.")
    return 0


def pairs(hosts: list[str], profile: str):
    """Each host with two E2 sessions or more, with its last two: ``(host, ((id, dataset),
    (id, dataset)))``."""
    for host_id in hosts:
        found = sessions.load(EXPERIMENT, host_id, profile)
        if len(found) >= 2:
            yield host_id, tuple(list(found.items())[-2:])


def record(args, configs: dict, ci: CI) -> int:
    """``--record``: :func:`calibrate` on each host's last two sessions, as JSON and Markdown."""
    described = data.hosts(args.profile).set_index("host_id")
    out = {"command": "benchmarks/rerun_exchange.py --record", "draws": args.draws,
           "seed": args.seed, "wanted": {"words_agree": 0.8, "calibration": 0.9, "power": 0.8},
           "hosts": {}}
    for host_id, ((one, a), (two, b)) in pairs(args.host or list(described.index), args.profile):
        start = time.monotonic()
        r = calibrate(a.tables, b.tables, configs[EXPERIMENT], ci, args.draws, args.seed)
        row = described.loc[host_id]
        out["hosts"][host_id] = {
            "state": row["state"], "sdk": row["sdk"], "sessions": [one, two],
            "minutes": round((time.monotonic() - start) / 60, 1),
            **{k: r[k] for k in ("words_agree", "calibration", "power", "powerable", "tests",
                                 "targets", "power_each", "powerable_each")},
            "met": met(r, out["wanted"]), "real_pair": r["observed"]}
    if not out["hosts"]:
        print("no host here has two sessions of E2 (make new-session, then make study)")
        return 1
    # Every real pair of every host state with two sessions or more, whatever --host picked for
    # the calibration (protocol v1): each pair's check, which fails where the sessions differ
    # by more than their runs.
    out["pairs"] = every_pair(list(described.index), args.profile)
    RECORD.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(table(out))
    print(pairs_table(out["pairs"]))
    return 0


def every_pair(hosts: list[str], profile: str) -> dict[str, list[dict]]:
    """Per host, :func:`recheck.session_test` of every pair of its E2 sessions (oldest first):
    ``sessions``, ``passed`` and what ``differ``s."""
    out = {}
    for host_id in hosts:
        found = list(sessions.load(EXPERIMENT, host_id, profile).items())
        checked = []
        for i, (one, a) in enumerate(found):
            for two, b in found[i + 1:]:
                r = session_test(a.tables["runs"], b.tables["runs"])
                checked.append({"sessions": [one, two], "passed": r["passed"],
                                "differ": r["differ"], "tests": r["tests"]})
        if checked:
            out[host_id] = checked
    return out


def pairs_table(pairs: dict[str, list[dict]]) -> str:
    """Every real pair's outcome per host, as Markdown."""
    lines = ["", "| host | pairs | pass | fail | what the failing pairs differ in (most often) |",
             "|---|---|---|---|---|"]
    for host_id, checked in pairs.items():
        failing = [c for c in checked if not c["passed"]]
        seen: dict[str, int] = {}
        for c in failing:
            for what in c["differ"]:
                kind = what.split(": ")[-1]
                seen[kind] = seen.get(kind, 0) + 1
        common = ", ".join(f"{k} ({n})" for k, n in sorted(seen.items(), key=lambda kv: -kv[1]))
        lines.append(f"| `{host_id}` | {len(checked)} | {len(checked) - len(failing)} | "
                     f"{len(failing)} | {common or '—'} |")
    return "\n".join(lines)


def judged(r: dict, injection: str, wanted: float) -> bool:
    """Whether an injection's power is judged: it changed something, and a check could catch
    it (typical jitter everywhere is always judged; see :func:`recheck.powerable`)."""
    best = r["powerable"].get(injection, {"best_power": 1.0})
    return r["power"][injection] is not None and best is not None and \
        best["best_power"] >= wanted


def met(r: dict, wanted: dict) -> dict[str, bool]:
    """Each criterion of ``wanted`` met by one host's :func:`calibrate`: the power on every
    injection judged (:func:`judged`)."""
    return {"words_agree": r["words_agree"] >= wanted["words_agree"],
            "calibration": r["calibration"] >= wanted["calibration"],
            "power": all(r["power"][k] >= wanted["power"] for k in r["power"]
                         if judged(r, k, wanted["power"]))
            and all(p >= wanted["power"] for p in powered_each(r, wanted["power"]).values())}


def powered_each(r: dict, wanted: float) -> dict[str, float]:
    """The conditions whose doubling any check could catch (best power at least ``wanted``),
    with the share of doubled pairs the check failed."""
    return {label: p for label, p in r.get("power_each", {}).items()
            if (r["powerable_each"].get(label) or {}).get("best_power", 0) >= wanted}


def cell(h: dict, injection: str, wanted: float) -> str:
    """One power in the table: the share, or why it is not judged."""
    power, best = h["power"][injection], h["powerable"].get(injection)
    if power is None:
        return "n/a"
    if judged(h, injection, wanted):
        return f"{power:.0%}" + (f" (φ {best['phi']:.1f})" if best else "")
    return f"{power:.0%} (not powered: {best['late_frames']:.0f} late frames, at best " \
        f"{best['best_power']:.0%})"


def table(out: dict) -> str:
    """The record as the Markdown table docs/benchmarks.md shows."""
    injections = list(next(iter(out["hosts"].values()))["power"])
    lines = ["| host | words agree | calibration | " + " | ".join(f"power: {k}" for k in injections)
             + " | power: each condition's late ×2 | criteria met | the real pair |",
             "|---|---|---|" + "---|" * len(injections) + "---|---|---|"]
    for host_id, h in out["hosts"].items():
        power = [cell(h, k, out["wanted"]["power"]) for k in injections]
        pair = "passes" if h["real_pair"]["passed"] else \
            "fails: " + "; ".join(h["real_pair"]["differ"])
        met_ = ", ".join(CRITERIA[k] for k, ok in h["met"].items() if ok) or "none"
        each = powered_each(h, out["wanted"]["power"])
        each_text = (f"{min(each.values()):.0%} at least, over the {len(each)} of "
                     f"{len(h.get('power_each', {}))} conditions a check could catch"
                     if each else f"none of {len(h.get('power_each', {}))} powered")
        lines.append(f"| `{host_id}` ({h['state']}, {h['sdk']}) | {h['words_agree']:.0%} | "
                     f"{h['calibration']:.0%} | " + " | ".join(power)
                     + f" | {each_text} | {met_} | {pair} |")
    return "\n".join(lines)


def describe(r: dict) -> str:
    """One host's result as Markdown: the real pair, the dealt pairs, the quantities that miss
    most often by chance."""
    obs, misses, differ = r["observed"], r["misses"], r["differ"]
    lines = [
        f"- **The real pair**: {len(obs['misses'])} of {obs['judged']} quantities miss "
        f"({'; '.join(obs['misses']) or 'none'}); {len(obs['differ'])} of {obs['changes']} "
        f"conclusions differ ({'; '.join(obs['differ']) or 'none'}): the check "
        f"{'passes' if obs['passed'] else 'fails'}.",
        f"- **Dealt pairs** (no session effect): every quantity lands in {r['land_rate']:.1%}, "
        f"every conclusion the same in {r['same_rate']:.1%}, both (the check passes) in "
        f"**{r['pass_rate']:.1%}**. Misses per pair: median {np.median(misses):g}, 95th "
        f"percentile {np.percentile(misses, 95):g}; conclusions that differ: median "
        f"{np.median(differ):g}, 95th percentile {np.percentile(differ, 95):g}.",
        f"- **The real pair against them**: as many misses or more in {r['p_misses']:.0%} of "
        f"the dealt pairs, as many differing conclusions or more in {r['p_differ']:.0%} "
        f"(permutation p-values for a session effect).",
        "", "| quantity | misses by chance (share of dealt pairs) | the real pair |", "|---|---|---|"]
    for name, rate in sorted(r["miss_rate"].items(), key=lambda kv: -kv[1]):
        lines.append(f"| {name} | {rate:.0%} | {'**miss**' if name in obs['misses'] else 'lands'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
