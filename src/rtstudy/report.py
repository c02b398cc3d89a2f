"""What the report notebook needs besides statistics and figures: provenance and rendering."""
from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd

from rtstudy import host, paths, seeds
from rtstudy.data import EXPERIMENTS
from rtstudy.harness import git_state
from rtstudy.stats import bootstrap_ci, format_p


def provenance(profile: str, sidecars_host_ids: list[str] | None = None) -> dict:
    """Git commit, host id(s), versions, profile and the digest of dvc.lock, for the footer."""
    fp = _fingerprint()
    lock = paths.root() / "dvc.lock"
    return {
        "git": git_state(),
        "host_id": fp["host_id"],
        "data_host_ids": sorted(set(sidecars_host_ids or [])),
        "profile": profile,
        "versions": fp["versions"],
        "dvc_lock_sha256": hashlib.sha256(lock.read_bytes()).hexdigest()[:12] if lock.exists() else "none yet",
        "kernel": fp["kernel"]["release"],
        "preempt": fp["kernel"]["preempt_model"],
        "cpu": f'{fp["cpu"]["count"]} × {fp["cpu"]["model"]}',
    }


def footer_markdown(prov: dict) -> str:
    git = prov["git"]
    dirty = " (with uncommitted changes)" if git.get("dirty") else ""
    versions = ", ".join(f"{k} {v}" for k, v in prov["versions"].items())
    hosts = ", ".join(prov["data_host_ids"]) or prov["host_id"]
    return (
        "---\n"
        "**Provenance.** "
        f"git commit `{git['commit'][:12]}`{dirty}; "
        f"profile `{prov['profile']}`; data from host id(s) `{hosts}` "
        f"(this host: `{prov['host_id']}`, {prov['cpu']}, kernel {prov['kernel']}, {prov['preempt']}); "
        f"dvc.lock sha256 `{prov['dvc_lock_sha256']}`.  \n"
        f"Versions: {versions}."
    )


def table_html(df: pd.DataFrame, caption: str = "") -> str:
    """A plain HTML table (no index) with its caption, which nbconvert keeps when code is hidden."""
    if df.empty:
        return ""
    head = f'<p class="table-caption">{caption}</p>' if caption else ""
    return head + df.to_html(index=False, escape=True, border=0, classes="rtstudy-table")


def report_host(profile: str) -> str:
    """The host whose data every section shows: this host if it measured ``profile``.

    Otherwise the host with data for the most experiments (ties: the first id),
    so all sections show one host; "Hosts compared" shows every host.
    """
    from rtstudy import data
    from rtstudy.data import DataError

    counts: dict[str, int] = {}
    for experiment in EXPERIMENTS:
        for d in data.datasets(experiment, profile):
            counts[d.parent.name] = counts.get(d.parent.name, 0) + 1
    if not counts:
        raise DataError(f"no data for profile {profile!r} under {paths.data_dir() / 'raw'}; run "
                        "`make study` (or `make pull`)")
    this_host = _fingerprint()["host_id"]
    if this_host in counts:
        return this_host
    return sorted(counts, key=lambda h: (-counts[h], h))[0]


def data_dir(experiment: str, profile: str):
    """The dataset of ``experiment`` that the report shows (:func:`report_host`'s)."""
    from rtstudy.data import DataError

    d = paths.raw_dir(experiment, report_host(profile), profile)
    if not (d / "plan.json").exists():
        raise DataError(f"{d}: no {experiment} data from host {d.parent.name} for profile "
                        f"{profile!r}; run `make study` there (or `make pull`)")
    return d


def title_markdown(profile: str) -> str:
    return (
        "# Real-time scheduling for NVIDIA Holoscan applications\n\n"
        "A reproducible study of four claims from NVIDIA's Holoscan documentation and tutorials:\n\n"
        "- **H1** — with the default double buffer a fast producer is throttled to a slower one's "
        "period; the async lock-free buffer decouples them under SCHED_DEADLINE.\n"
        "- **H2** — under CPU contention a real-time policy cuts an operator's frame-period jitter.\n"
        "- **H3** — Holoscan's per-iteration scheduling cost is ~10–60 µs, so operators doing "
        "less than ~20 µs of work are dominated by it.\n"
        "- **H4** — an isolated, tickless core has a latency tail close to its median.\n\n"
        f"Profile `{profile}`. Every number in this report is computed from the raw data under "
        "`data/raw/`; the seeds' published figures are quoted beside ours, with their source. "
        "Each section says how its claim is tested and whether it was reproduced here."
    )


def _slope_text(row: dict) -> str:
    ci = (f" [{row['low']:.2f}, {row['high']:.2f}]" if pd.notna(row.get("low")) else " (no CI)")
    return f"{row['slope']:.2f}{ci} ms/ms (n = {int(row['n'])} runs)"


def e1_markdown(h: dict, slope_df: pd.DataFrame, missing: list[str], cfg: dict) -> str:
    """The E1 section's prose; every figure in it comes from ``h`` and ``slope_df``."""
    pin = "pinned to distinct CPUs" if h["pinned"] else \
        "unpinned (this host refuses a SCHED_DEADLINE thread pinned to one CPU, or has too few CPUs)"
    lines = [
        "## E1 — Async lock-free buffer vs default buffer under SCHED_DEADLINE (H1)",
        "",
        f"Source: {seeds.E1_SOURCE}. `tx1 → rx.in1` and `tx2 → rx.in2`; tx1 works "
        f"{cfg['tx1_work_ms']:g} ms and tx2 {cfg['tx2_work_ms']:g} ms before emitting, rx works "
        f"{cfg['rx_work_ms']:g} ms per tick; native work that releases the GIL, as C++ operators. "
        f"Every operator runs on its own SCHED_DEADLINE thread (deadline = period; runtimes "
        f"{cfg['tx1_runtime_ms']:g} / {cfg['tx2_runtime_ms']:g} / {cfg['rx_runtime_ms']:g} ms; "
        f"rx period {cfg['rx_period_ms']} ms), {pin}. In S1 tx1 stays at "
        f"{cfg['fixed_period_ms']} ms while tx2 takes each period of "
        f"{', '.join(str(p) for p in h['periods'])} ms; S2 swaps them. {h['n_cells']} runs, "
        f"{h['repetitions']} repetition(s) per point, about {h['messages_per_cell']} messages per "
        f"producer and run after discarding the first {cfg['discard_head']} and last "
        f"{cfg['discard_tail']}.",
        "",
        "**H1 as a number**: the slope of the fixed producer's max latency against the other "
        "producer's period. Reproduced when the default buffer's slope is at least 0.8 ms/ms with "
        "its CI above 0 and the async buffer's is within ±0.1 ms/ms with its CI covering 0.",
        "",
    ]
    for scenario, v in sorted(h["verdict"].items()):
        fixed, varied = ("tx1", "tx2") if scenario == "S1" else ("tx2", "tx1")
        if "default" in v and "async" in v:
            lines.append(f"- **{scenario}** ({fixed} fixed, {varied} varied): default buffer "
                         f"{_slope_text(v['default'])}; async buffer {_slope_text(v['async'])} — "
                         f"**{v['verdict']}**.")
        else:
            lines.append(f"- **{scenario}**: {v['verdict']} ({v.get('why', '')}).")
    lines += [
        "",
        f"The async buffer re-delivers the latest message on every read; rx counted each index "
        f"once and {h['stale_async']:,} re-reads of the fixed producer's port as stale "
        f"(default buffer: {h['stale_default']:,}).",
        "",
        "**The seed's driver script** declares its async option as `a:` (taking an argument), "
        "so `-a` swallowed the flag after it: the seed's S2 async runs most probably all ran "
        "with tx1 = 20 ms. This study runs the intended periods.",
    ]
    if missing:
        lines += ["", f"**Incomplete data**: {len(missing)} planned run(s) are missing; "
                  "re-run `make study`."]
    return "\n".join(lines)


def e1_methods_markdown(cfg: dict, cells: pd.DataFrame) -> str:
    hosts = ", ".join(sorted(cells["host_id"].unique()))
    return (
        "### E1 methods\n\n"
        "Each run is one subprocess. Producers stamp `t_start` (CLOCK_MONOTONIC) before their "
        "work and `t_emit` after it; rx stamps each new message on arrival. *Latency* is "
        "arrival − `t_start`, as the seed (arrival − `t_emit` is kept too); *interval* is the "
        "time between consecutive new arrivals on a port; *max* is over the kept messages of one "
        "run (N in the table's n and the figures). The three operators' policy, reservation and "
        "CPUs were read back on their own threads in every run; a run in which any of them did "
        "not get SCHED_DEADLINE is failed, never reported. Runs execute in a seeded random order. "
        f"Host(s): `{hosts}`."
    )


def e3_markdown(h: dict, missing: list[str]) -> str:
    """The E3 section's prose; every figure in it comes from ``h`` (:func:`rtstudy.e3.headline`)."""
    lo, hi = h["fixed_share"]
    lines = [
        "## E3 — Scheduler overhead (H3)",
        "",
        f"Source: {seeds.E3_SOURCE}. Two apps — two port-less operators (`ops`) and a Tx → Rx "
        "ping (`ping`) — run with no work in `compute`, under the Greedy scheduler and the "
        "EventBased scheduler (EBS) with several worker threads. Each configuration was timed at "
        f"N = {', '.join(f'{n:,}' for n in h['iterations'])} iterations, {h['repetitions']} "
        f"repetition(s): {h['n_runs']} timed app runs in {h['n_cells']} subprocess cells.",
        "",
        f"**The seed's method** (whole app — constructor, compose, run, teardown — divided by N) "
        f"gives, at N = {h['n_max']:,}, {h['greedy_ops']:.1f} µs per iteration for Greedy without "
        f"messages (seed: ~10 µs) and {h['greedy_ping']:.1f} µs with a message (seed: ~17 µs).",
        "",
        "**Beyond the seed**, time stamps at the start of every `compute` split each run into "
        "start-up (constructor to first compute), the steady iterations, and teardown. The steady "
        f"cost of Greedy is {h['greedy_ops_steady']:.1f} µs per iteration without messages and "
        f"{h['greedy_ping_steady']:.1f} µs with one; start-up took "
        f"{h['startup_ms'][0]:.1f}–{h['startup_ms'][1]:.1f} ms per run, and start-up plus teardown "
        f"are {lo:.1%}–{hi:.1%} of the seed-method figure at N = {h['n_max']:,}, so at this N "
        "the seed's method measures the steady cost. The slope of whole-app time against N "
        "(second figure) is a cross-check of the steady cost.",
    ]
    if missing:
        lines += ["", f"**Incomplete data**: {len(missing)} planned cell(s) are missing "
                  f"({', '.join(missing[:5])}{' …' if len(missing) > 5 else ''}); re-run `make study`."]
    return "\n".join(lines)


def e3_methods_markdown(runs: pd.DataFrame) -> str:
    hosts = ", ".join(sorted(runs["host_id"].unique()))
    return (
        "### E3 methods\n\n"
        "Each cell is one subprocess (a fresh GXF context, a 32 MiB stack, a hard timeout): an "
        "untimed warm-up app, then one timed app per N in a seeded random order; cells themselves "
        "run in a seeded random order. Time is CLOCK_MONOTONIC throughout. *Seed method*: "
        "(end of `run()` − before the constructor) / N. *Per-iteration (fit)*: slope of "
        "whole-app time against N, least squares over every run and repetition, t-based CI. "
        "*Steady*: (last − first `compute` start of the lead operator, op1 or tx) / (N − 1); "
        "in `ops` one iteration is one tick of each operator. *Start-up*: before the constructor "
        "to the first `compute`; *teardown*: last `compute` to the end of `run()`. Recording a "
        "time stamp adds about 0.1 µs per compute. CIs: bootstrap over repetitions (a CI from "
        "two repetitions is only their range). "
        f"Host(s): `{hosts}`."
    )


def _pct(est_row: dict) -> str:
    ci = (f" [{est_row['low']:.0%}, {est_row['high']:.0%}]"
          if pd.notna(est_row.get("low")) else " (no CI)")
    return f"{est_row['reduction']:+.0%}{ci}"


def e2_markdown(cfg: dict, runs: pd.DataFrame, red: pd.DataFrame, verdict: dict,
                floor_std_ms: float, missing: list[str]) -> str:
    """The E2 section's prose; every figure comes from ``runs``, ``red`` and the floor."""
    from rtstudy.e2 import RT_POLICIES

    pinned = sorted(runs.loc[runs["pinned"], "policy"].unique())
    factors = ", ".join(f"{f:g}" for f in sorted(runs["load_factor"].unique()))
    lines = [
        "## E2 — Real-time vs normal thread under CPU contention (H2)",
        "",
        f"Source: {seeds.E2_SOURCE}. A target operator at {cfg['fps']} FPS stamps the start of "
        f"every `compute` and times {cfg['target_work_iterations']:,} iterations of fixed native "
        f"work; load operators with no condition run back to back, {cfg['load_work_ms']:g} ms of "
        f"work per call, {factors} load(s) per CPU. `normal`: target and loads share the default "
        "pool (the seed's baseline); `normal_dedicated`: the target alone on its own normal "
        "thread; FIFO / RR (priority "
        f"{cfg['priority']}) and DEADLINE (runtime {cfg['deadline_runtime_fraction']:.0%} of the "
        "period): the target alone on its own real-time thread, verified on that thread in every "
        f"run. Pinned to one CPU: {', '.join(pinned) or 'none'} (the host decides; DEADLINE "
        f"cannot be pinned while sched_rt_runtime_us ≠ −1). {len(runs)} runs of "
        f"{cfg['duration_s']:g} s after {cfg['warmup_frames']} warm-up frames.",
        "",
        "**H2 as a number**: the reduction of the frame-period standard deviation against "
        "`normal`, 1 − std(policy)/std(normal), with a bootstrap CI over frames (repetitions "
        "pooled). Reproduced when every real-time policy cuts it by at least 50 % with a CI "
        "above 0 at the highest load factor with native loads.",
        "",
    ]
    if "rows" in verdict:
        lf = verdict["load_factor"]
        parts = [f"{r['policy'].replace('SCHED_', '')} {_pct(r)} ({r['rating']}; std "
                 f"{r['std_ms']:.3f} ms vs {r['std_normal_ms']:.3f} ms)" for r in verdict["rows"]]
        lines.append(f"- **At {lf:g} loads per CPU, native loads** — {'; '.join(parts)}: "
                     f"**{verdict['verdict']}**.")
    else:
        lines.append(f"- H2: **{verdict['verdict']}** ({verdict.get('why', '')}).")
    zero = red[red["load_factor"] == red["load_factor"].min()]
    if len(zero):
        parts = [f"{r['policy'].replace('SCHED_', '')} {_pct(r)}" for r in zero.to_dict("records")]
        with_ci = [r for r in zero.to_dict("records") if pd.notna(r["low"])]
        base_ms = float(zero["std_normal_ms"].iloc[0])
        nominal_ms = 1e3 / cfg["fps"]
        if not with_ci:
            verdict_text = "no CI could be computed, so no statement is made."
        elif all(r["low"] <= 0 <= r["high"] for r in with_ci):
            verdict_text = ("no difference the data can resolve (every CI covers 0): with no "
                            "runnable competitor there is little for a policy to win.")
        else:
            verdict_text = (f"the std still changes, from {base_ms:.3f} ms (normal) to "
                            f"{zero['std_ms'].min():.3f}–{zero['std_ms'].max():.3f} ms; every "
                            f"one of these is at most "
                            f"{max(base_ms, zero['std_ms'].max()) / nominal_ms:.1%} of the "
                            f"{nominal_ms:.1f} ms period.")
        lines.append(f"- **At {zero['load_factor'].iloc[0]:g} loads per CPU** (no contention) — "
                     f"{'; '.join(parts)}: {verdict_text}")
    gil = red[(red["load_work_model"] == "python")
              & (red["load_factor"] == red["load_factor"].max())]
    if len(gil):
        parts = [f"{r['policy'].replace('SCHED_', '')} {_pct(r)}" for r in gil.to_dict("records")]
        late = runs[(runs["load_work_model"] == "python")
                    & (runs["load_factor"] == runs["load_factor"].max())]
        lost = late.groupby("policy")["missed"].sum()
        text = (f"- **GIL-holding Python loads** at {gil['load_factor'].iloc[0]:g} per CPU — "
                f"{'; '.join(parts)}. Frames missed per policy (summed over runs): "
                + ", ".join(f"{p.replace('SCHED_', '')} {int(n)}" for p, n in lost.items()) + ".")
        native = red[(red["load_work_model"] == "native")
                     & (red["load_factor"] == gil["load_factor"].iloc[0])].set_index("policy")
        ratios = {r["policy"]: r["std_ms"] / native.loc[r["policy"], "std_ms"]
                  for r in gil.to_dict("records")
                  if r["policy"] in RT_POLICIES and r["policy"] in native.index
                  and native.loc[r["policy"], "std_ms"] > 0}
        if ratios:
            text += (" With Python loads the real-time target's std is "
                     + ", ".join(f"{p.replace('SCHED_', '')} {v:.1f}×" for p, v in ratios.items())
                     + " its std with native loads at the same load factor")
            if min(ratios.values()) > 2:
                text += (": the policy puts the thread on a CPU, but it cannot run Python until "
                         "a load releases the GIL, so the interpreter, not the kernel, sets the "
                         "jitter.")
            else:
                text += "."
        lines.append(text)
    rt_top = red[(red["policy"].isin(RT_POLICIES)) & (red["load_work_model"] == "native")
                 & (red["load_factor"] == red["load_factor"].max())]
    if np.isfinite(floor_std_ms) and floor_std_ms > 0 and len(rt_top):
        # A period is the difference of two wake-ups: with independent wake-up latencies of
        # std s its std is sqrt(2) s, so that is the floor a frame period can reach.
        period_floor_ms = np.sqrt(2) * floor_std_ms
        ratios = ", ".join(f"{r['policy'].replace('SCHED_', '')} {r['std_ms'] / period_floor_ms:.0f}×"
                           for r in rt_top.to_dict("records"))
        lines += ["", f"**Against the platform floor** (E4: cyclictest, SCHED_FIFO at the same "
                  f"period and priority under stress-ng): its wake-up latency std is "
                  f"{floor_std_ms * 1e3:.1f} µs, so a period between two such wake-ups would "
                  f"have a std of about √2 × that, {period_floor_ms * 1e3:.1f} µs (if successive "
                  f"latencies are independent). The Holoscan target's frame-period std at "
                  f"{rt_top['load_factor'].iloc[0]:g} native loads per CPU is {ratios} that floor."]
    if missing:
        lines += ["", f"**Incomplete data**: {len(missing)} planned run(s) are missing; "
                  "re-run `make study`."]
    return "\n".join(lines)


def e2_seed_table(runs: pd.DataFrame, red: pd.DataFrame) -> pd.DataFrame:
    """Our normal and real-time frame-period std at the highest native load, beside the seeds'."""
    rows = [{"source": f"{p['implementation']}", "real-time policy": p["policy"],
             "normal std ms": p["normal_ms"], "real-time std ms": p["realtime_ms"],
             "change": p["change"]} for p in seeds.E2_PUBLISHED]
    top = red[(red["load_work_model"] == "native") & (red["load_factor"] == red["load_factor"].max())]
    for r in top.to_dict("records"):
        rows.append({"source": f"this study, {r['load_factor']:g} loads/CPU (n = {r['n_frames']} "
                               "frames)",
                     "real-time policy": r["policy"], "normal std ms": round(r["std_normal_ms"], 3),
                     "real-time std ms": round(r["std_ms"], 3),
                     "change": f"{-r['reduction']:+.1%} [{-r['high']:+.0%}, {-r['low']:+.0%}]"})
    return pd.DataFrame(rows)


def e4_markdown(record: dict, stats: pd.DataFrame, missing: list[str]) -> str:
    """The E4 section's prose, from the recorded audit and the measurements."""
    summary = record.get("summary", {})
    counts = summary.get("counts", {})
    iso = summary.get("isolated_cpus") or []
    osn = record.get("osnoise", {})
    jitter = stats[stats["kind"] == "jitter"]
    lines = [
        "## E4 — Host tuning audit, jitter probe and platform floor (H4)",
        "",
        f"Source: {seeds.E4_SOURCE} and seed 000 ('Host CPU Isolation'). The audit is read-only "
        f"(`rtstudy host audit`): {', '.join(f'{n} {s}' for s, n in counts.items() if n)}; "
        f"isolated CPUs: {', '.join(map(str, iso)) or 'none'}; this host is "
        f"**{'tuned' if summary.get('tuned') else 'not tuned'}** for real-time work. "
        "Each item below names its evidence and the exact remedy.",
    ]
    if len(jitter):
        worst = jitter.loc[jitter["p99"].idxmax()]
        lines += ["", f"**Jitter probe** (C, pinned per CPU, TSC calibrated against "
                  f"CLOCK_MONOTONIC_RAW): the worst P99 is {worst['p99']:,.0f} ns against a P50 of "
                  f"{worst['p50']:,.0f} ns (CPU {int(worst['cpu'])}, {worst['load']}), max "
                  f"{jitter['max'].max() / 1e3:,.1f} µs over {int(jitter['n'].sum()):,} loops. "
                  f"This probe's loop takes about {jitter['p50'].median():,.0f} ns (the seed's "
                  "about 85 ns), so compare the ladders' shape — tail over median — rather "
                  "than their absolute values."]
        if not iso:
            lines.append("With no isolated CPU, H4's comparison (isolated vs housekeeping) cannot "
                         "be made on this host: **inconclusive here**; the seed's two ladders are "
                         "shown for reference. On a tuned host set `e4_host.jitter_cpus` to an "
                         "isolated and a housekeeping CPU.")
    lines += ["", "**rtla osnoise**: " + (
        "available on this host, but this version of the study does not run it yet."
        if osn.get("available") else f"N/A — {osn.get('why', 'not recorded')}.")]
    if missing:
        lines += ["", f"**Incomplete data**: {len(missing)} planned measurement(s) are missing; "
                  "re-run `make study`."]
    return "\n".join(lines)


def audit_table(record: dict) -> pd.DataFrame:
    return pd.DataFrame([{"status": i["status"], "item": i["name"], "evidence": i["evidence"],
                          "remedy": i.get("remedy", "")} for i in record.get("items", [])])


def summary_markdown(h1: dict, h2: dict, h3: dict, h4: dict) -> str:
    """The report's first section: each claim, the seed's figure, ours, and the verdict."""
    def slopes(v: dict) -> str:
        if "default" not in v:
            return v.get("why", "")
        return (f"max-latency slope: default {_slope_text(v['default'])}, "
                f"async {_slope_text(v['async'])}")

    rows = []
    for scenario, v in sorted(h1.items()):
        rows.append(("H1 " + scenario, "default ~30 → ~100 ms as tx2 goes 20 → 100 ms; async "
                     "~13–15 ms flat", slopes(v), v["verdict"]))
    if "rows" in h2:
        parts = "; ".join(f"{r['policy'].replace('SCHED_', '')} {_pct(r)}" for r in h2["rows"])
        ours = f"std reduction at {h2['load_factor']:g} loads/CPU: {parts}"
    else:
        ours = h2.get("why", "")
    rows.append(("H2", "std 0.297 → 0.049 ms (−83.6 %, Python); 0.257 → 0.013 ms (−94.8 %, C++)",
                 ours, h2["verdict"]))
    g = h3.get("greedy_us", {})
    ours = ", ".join(f"{app} {us:.1f} µs ({h3['ratios'][app]:.1f}× the seed's)"
                     for app, us in g.items())
    ours += "; ordering as the seed" if h3["ordering"] else "; ordering differs from the seed"
    rows.append(("H3", "Greedy ~10 µs (no messages) / ~17 µs (Tx→Rx); EventBased ~11–15 / 25–62 µs",
                 "Greedy steady cost: " + ours, h3["verdict"]))
    worst = max(h4["ratios"].values()) if h4.get("ratios") else float("nan")
    rows.append(("H4", "P99 1248 → 91 ns, max 62 µs → 0.4 µs on an isolated core",
                 f"P99.99/P50 up to {worst:.0f}× on this host's CPUs"
                 + (f"; {h4['why']}" if h4.get("why") else ""), h4["verdict"]))
    lines = ["## Summary", "",
             "| claim | seed's published figure | this study (95 % CI) | verdict |",
             "|---|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | **{d}** |" for a, b, c, d in rows]
    lines += ["", "Each verdict's criterion is stated in its section. *Inconclusive* means this "
              "host cannot test the claim (it says why), not that the claim failed."]
    return "\n".join(lines)


def p_columns_formatted(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with every p-value column (named ``p …``) formatted for reading."""
    out = df.copy()
    for col in out.columns:
        if str(col).startswith("p "):
            out[col] = out[col].map(format_p)
    return out


def methods_markdown(fp: dict, profile: str, cfgs: dict, e1_cells: pd.DataFrame, e2_runs: pd.DataFrame,
                     e3_runs: pd.DataFrame, e4_stats: pd.DataFrame) -> str:
    """The report's methods: host, profile, what was run and how often, run order, statistics.

    Parameters
    ----------
    fp : dict or None
        Fingerprint of the host that measured the data (:func:`data_fingerprint`).
    profile : str
        The parameter profile the data was measured with.
    cfgs : dict
        Resolved parameters per stage (``params.stage_config``), keyed by stage name.
    e1_cells, e2_runs, e3_runs, e4_stats : DataFrame
        The loaded data; every count below comes from them.
    """
    e1c, e2c, e3c, e4c, rep = (cfgs[k] for k in ("e1_async_buffer", "e2_rt_threads",
                                                 "e3_overhead", "e4_host", "report"))
    jitter = e4_stats[e4_stats["kind"] == "jitter"] if len(e4_stats) else e4_stats
    floor = e4_stats[e4_stats["kind"] != "jitter"] if len(e4_stats) else e4_stats
    if fp:
        host_line = (f"**Host.** `{fp['host_id']}`: {fp['cpu']['count']} × {fp['cpu']['model']}, "
                     f"kernel {fp['kernel']['release']} ({fp['kernel']['preempt_model']}), "
                     f"sched_rt_runtime_us {fp['sched']['rt_runtime_us']}; policies the study "
                     "could use there: "
                     + ", ".join(f"{k} {v.split(':')[0]}" for k, v in fp["realtime"].items()) + ".")
    else:
        host_line = ("**Host.** The measuring host's fingerprint was not recorded with this data "
                     "(measured before the study kept it).")
    e1_factors = " × ".join(f"{len(e1c[k])} {name}" for k, name in (
        ("scenarios", "scenario(s)"), ("buffers", "buffer(s)"), ("policies", "policy(ies)"),
        ("work_models", "work model(s)"), ("periods_ms", "periods")))
    lines = [
        "## Methods",
        "",
        host_line,
        "",
        f"**Profile** `{profile}` (sizes in `params.yaml`). What was measured:",
        "",
        f"- **E1**: {e1_cells['cell_id'].nunique() if len(e1_cells) else 0} runs "
        f"({e1_factors} × {e1c['repetitions']} repetition(s)), "
        f"{e1c['messages']} messages per producer, first {e1c['discard_head']} and last "
        f"{e1c['discard_tail']} discarded.",
        f"- **E2**: {len(e2_runs)} runs of {e2c['duration_s']:g} s at {e2c['fps']} FPS "
        f"after {e2c['warmup_frames']} warm-up frames; "
        f"{int(e2_runs['n'].sum()) if len(e2_runs) else 0:,} frame periods kept.",
        f"- **E3**: {len(e3_runs)} timed app runs in "
        f"{e3_runs['cell_id'].nunique() if len(e3_runs) else 0} cells, N = "
        f"{', '.join(f'{n:,}' for n in e3c['iterations'])}, {e3c['warmup_iterations']} warm-up "
        "iterations.",
        f"- **E4**: jitter probe {e4c['jitter_seconds']:g} s per CPU and load "
        f"({int(jitter['n'].sum()) if len(jitter) else 0:,} loops); rt-tests floor "
        f"{e4c['floor_seconds']:g} s per tool and load "
        f"({int(floor['n'].sum()) if len(floor) else 0:,} cycles).",
        "",
        "**Procedure.** Every run is its own subprocess (fresh Holoscan state, 32 MiB stack, a "
        "hard timeout), in a seeded random order (seeds in `params.yaml`), so slow drift of the "
        "host is not confounded with a configuration. Intervals are CLOCK_MONOTONIC. A run that "
        "asked for a real-time policy counts only if every operator read that policy back on its "
        "own thread. Every sample is kept in `data/raw/` with the effective configuration.",
        "",
        f"**Statistics.** Confidence intervals are {rep['confidence']:.0%}: BCa bootstrap "
        f"({rep['bootstrap_resamples']:,} resamples, seed {rep['random_seed']}) for means, "
        "standard deviations and percentiles, percentile bootstrap for ratios, t-based for "
        "regression slopes. Spread is compared with the Brown–Forsythe test (Levene's, centred "
        "on the median), location with the Mann–Whitney U test; p-values over a sweep grid are "
        "Holm-adjusted. Consecutive frames and messages of one run are correlated, so CIs and "
        "p-values that treat them as independent are too narrow; effects are judged by their "
        "size and by agreement across repetitions, and p-values are a screen. *max* is always "
        "quoted with its N.",
    ]
    return "\n".join(lines)


def limitations(fp: dict | None, record: dict, e1_cells: pd.DataFrame,
                e2_runs: pd.DataFrame) -> list[str]:
    """What limits this dataset, derived from the host fingerprint, the audit and the data.

    Parameters
    ----------
    fp : dict or None
        The measuring host's fingerprint (:func:`data_fingerprint`); None when it
        was not recorded, which is itself stated.
    record : dict
        E4's recorded audit (:func:`rtstudy.e4.read_audit`).
    e1_cells, e2_runs : DataFrame
        The loaded E1 and E2 data (their ``pinned`` and ``policy`` columns).

    Returns
    -------
    list of str
        One sentence per limitation; empty for a tuned host with nothing to flag.
    """
    from rtstudy.e2 import RT_POLICIES

    if not fp:
        return ["The measuring host's fingerprint was not recorded with this data, so its "
                "limitations cannot be derived; re-measure to record it."]
    out = []
    n_cpu = fp["cpu"]["count"]
    if n_cpu <= 4:
        out.append(f"The host has {n_cpu} CPUs: the operating system, the loads and the measured "
                   "threads share them, so contention is hard to avoid and hard to isolate.")
    iso = fp["isolation"]["isolated"]
    if not iso:
        out.append("No CPU is isolated (no isolcpus / nohz_full / rcu_nocbs): every measured "
                   "thread shares its CPU with the tick, RCU callbacks, IRQs and kernel threads. "
                   "H4 cannot be tested here.")
    runtime, period = fp["sched"]["rt_runtime_us"], fp["sched"]["rt_period_us"]
    if runtime != -1 and period > 0:
        out.append(f"sched_rt_runtime_us = {runtime}: real-time threads are throttled for the rest "
                   f"of each period, and SCHED_DEADLINE admission is capped at "
                   f"{runtime / period:.2f} × CPUs.")
    pinned_dl = fp["realtime"].get("SCHED_DEADLINE pinned", "not probed")
    if pinned_dl != "ok":
        out.append(f"A SCHED_DEADLINE thread pinned to one CPU was refused here ({pinned_dl}).")
    if "RT" not in fp["kernel"]["preempt_model"].replace("PREEMPT_DYNAMIC", ""):
        out.append(f"The kernel is not PREEMPT_RT ({fp['kernel']['preempt_model']}): "
                   "long non-preemptible kernel sections add to every tail.")
    e1_dl = e1_cells[e1_cells["policy"] == "deadline"] if len(e1_cells) else e1_cells
    if len(e1_dl) and not e1_dl["pinned"].any():
        out.append("E1's SCHED_DEADLINE threads ran unpinned (the host refused pinning); the "
                   "kernel's global EDF placed them.")
    if len(e2_runs):
        pinned = set(e2_runs.loc[e2_runs["pinned"], "policy"])
        unpinned = [p for p in RT_POLICIES if p in set(e2_runs["policy"]) and p not in pinned]
        if unpinned:
            out.append(f"E2's {', '.join(unpinned)} target ran unpinned; the pinned policies "
                       f"({', '.join(sorted(pinned)) or 'none'}) had one CPU to themselves only "
                       "as far as the loads allowed.")
    warn = [i["name"] for i in record.get("items", []) if i["status"] in ("WARN", "FAIL")]
    if warn:
        out.append("The host audit (E4) flags: " + ", ".join(warn) + "; remedies are in the "
                   "audit table.")
    if (record.get("osnoise") or {}).get("available") is False:
        out.append(f"rtla osnoise could not run: {record['osnoise'].get('why', 'not available')}.")
    return out


def limitations_markdown(items: list[str]) -> str:
    """The Limitations section from :func:`limitations`' sentences."""
    lines = ["## Limitations", "", "Derived from the measuring host's fingerprint, the audit and "
             "the data:", ""]
    lines += [f"- {item}" for item in items] or ["- none found"]
    return "\n".join(lines)


def _fingerprint() -> dict:
    fp_file = paths.fingerprint_file()
    return json.loads(fp_file.read_text()) if fp_file.exists() else host.current()


def data_fingerprint(profile: str) -> dict | None:
    """The fingerprint of the host whose data the report shows, or None if not recorded.

    Each dataset carries its measuring host's fingerprint (``host.json``); for
    data measured before that was recorded, this host's fingerprint is used only
    when it is the same host.
    """
    from rtstudy.harness import HOST_FILE

    host_id = report_host(profile)
    for experiment in EXPERIMENTS:
        f = paths.raw_dir(experiment, host_id, profile) / HOST_FILE
        if f.is_file():
            return json.loads(f.read_text())
    fp = _fingerprint()
    return fp if fp["host_id"] == host_id else None


def cross_host(profile: str, confidence: float, n_resamples: int, seed: int) -> pd.DataFrame:
    """Each experiment's headline figure per host that has data for ``profile``.

    Returns a tidy frame, one row per host and quantity: ``host_id``,
    ``experiment``, ``quantity``, ``value``, ``low``, ``high`` (CI, NaN where
    there is none), ``unit`` and ``n``. Empty when only one host has data.
    """
    from rtstudy import data, e1, e2, e3, e4

    measured = [exp for exp in EXPERIMENTS if data.datasets(exp, profile)]
    hosts = {d.parent.name for exp in measured for d in data.datasets(exp, profile)}
    if len(hosts) < 2:
        return pd.DataFrame()
    rows = []

    def add(host_id, experiment, quantity, value, low=np.nan, high=np.nan, unit="", n=0):
        rows.append({"host_id": host_id, "experiment": experiment, "quantity": quantity,
                     "value": value, "low": low, "high": high, "unit": unit, "n": n})

    # data.load concatenates every host's tables (host_id column), with the stages' discards.
    if e1.EXPERIMENT in measured:
        for h, cells in data.load(e1.EXPERIMENT, profile)["cells"].groupby("host_id"):
            for r in e1.slopes(cells, confidence).to_dict("records"):
                if r["policy"] == "deadline" and r["work_model"] == "native":
                    add(h, "E1", f"{r['scenario']} {r['buffer']}: max-latency slope", r["slope"],
                        r["low"], r["high"], "ms/ms", r["n"])
    if e2.EXPERIMENT in measured:
        for h, frames in data.load(e2.EXPERIMENT, profile)["frames"].groupby("host_id"):
            red = e2.reductions(frames, confidence, n_resamples, seed)
            top = red[(red["load_work_model"] == "native")
                      & (red["load_factor"] == red["load_factor"].max())] if len(red) else red
            for r in top.to_dict("records"):
                add(h, "E2", f"{r['policy']}: std reduction at {r['load_factor']:g} loads/CPU",
                    r["reduction"] * 100, r["low"] * 100, r["high"] * 100, "%", r["n_frames"])
    if e3.EXPERIMENT in measured:
        for h, runs in data.load(e3.EXPERIMENT, profile)["runs"].groupby("host_id"):
            at_max = runs[runs["iterations"] == runs["iterations"].max()]
            for (app, label), g in at_max.groupby(["app", "scheduler_label"]):
                est = bootstrap_ci(g["steady_us_per_iter"], np.mean, confidence, n_resamples, seed)
                add(h, "E3", f"{app}, {label}: steady cost", est.value, est.low, est.high, "µs",
                    est.n)
    if e4.EXPERIMENT in measured:
        for h, stats in data.load(e4.EXPERIMENT, profile)["stats"].groupby("host_id"):
            for r in stats[(stats["kind"] == "jitter") & (stats["p50"] > 0)].to_dict("records"):
                add(h, "E4", f"CPU {int(r['cpu'])}, {r['load']}: P99.99 / P50", r["p99.99"] / r["p50"],
                    unit="×", n=r["n"])
            for r in stats[stats["kind"] != "jitter"].to_dict("records"):
                add(h, "E4", f"{r['kind']}, {r['load']}: latency P99", r["p99"] / 1e3, unit="µs",
                    n=r["n"])
    return pd.DataFrame(rows)


def cross_host_markdown(xh: pd.DataFrame, profile: str) -> str:
    """The cross-host section's text: which hosts, and how to add one."""
    lines = ["## Hosts compared", ""]
    if xh.empty:
        lines.append(f"Only one host has data for profile `{profile}`. Datasets measured on other "
                     "hosts and pulled into `data/raw/` (`make pull`, see the README's *Sharing "
                     "data*) appear here side by side.")
        return "\n".join(lines)
    hosts = sorted(xh["host_id"].unique())
    lines.append(f"Data for profile `{profile}` from {len(hosts)} hosts: "
                 + ", ".join(f"`{h}`" for h in hosts) + f". The sections above show host "
                 f"`{report_host(profile)}`'s data; here each experiment's headline figure is "
                 "shown per host, with its CI where it has one.")
    return "\n".join(lines)


def cross_host_table(xh: pd.DataFrame) -> pd.DataFrame:
    """``xh`` (:func:`cross_host`) as a wide table: one row per quantity, one column per host."""
    if xh.empty:
        return xh
    def cell(r) -> str:
        ci = f" [{r['low']:.3g}, {r['high']:.3g}]" if np.isfinite(r["low"]) else ""
        return f"{r['value']:.3g}{ci} {r['unit']} (n = {int(r['n']):,})"
    wide = xh.assign(text=xh.apply(cell, axis=1)).pivot_table(
        index=["experiment", "quantity"], columns="host_id", values="text", aggfunc="first")
    return wide.reset_index().fillna("—")
