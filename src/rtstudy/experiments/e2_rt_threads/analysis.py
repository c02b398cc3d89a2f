"""E2, real-time vs normal thread under CPU contention: loading, effects over runs, the floor,
the trace attribution and the H2 verdict.

H2: under contention a real-time policy cuts the frame-period standard
deviation of a periodic operator (the published figures are in
``published.py``). It is judged against ``normal_dedicated``: the same thread
of its own and the same pinning, only the policy differs. Beside it: the
effect of a real-time dispatcher and of where the load runs, every
configuration's ratio to the operating system's floor (cyclictest measured like
with like in the same sweep), the seeds' own topologies, and per frame where the
delay accrues (a kernel scheduler trace).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from rtstudy.experiments.e2_rt_threads import published
from rtstudy.experiments.e2_rt_threads.plan import RT_POLICIES
from rtstudy.io import (Dataset, completed_cells, read_samples, run_columns, set_aside_drift,
                        wide)
from rtstudy.realtime import DISPATCHER, POLICY_NAMES
from rtstudy.stats import (CI, MIN_RUNS, Estimate, drift_check, effect_verdict,
                           equivalence_verdict, format_p, holm, percentiles, rank_test,
                           spread_test, two_group_ci)

# The columns and Arrow types of samples.parquet, as app.py and floor.py write them (data/README.md).
SAMPLES = {"frame": "int64", "t_start_ns": "int64", "exec_ns": "int64"}
TABLES = ("frames", "runs", "floor", "attribution", "traces")
BASELINE = "normal_dedicated"     # H2's baseline: only the policy differs
SEED_BASELINE = "normal"          # the seed's: target and loads share one pool
# H2's verdict: at the highest native load factor every real-time policy must cut the
# frame-period std by at least MIN_REDUCTION, with its CI above 0.
MIN_REDUCTION = 0.5
GIL_RATIO = 2  # RT std with Python loads over native loads above this: the GIL sets the jitter
FLOOR_GOAL = 2  # a configuration within 2x the floor's frame-period std is "at the floor"
# The parts of one frame's lateness against its release time (ms), each a kind of time the
# target's worker thread spent between the release and the start of compute: they add up to
# the lateness exactly (attribute_run()).
PARTS = {
    "wake_ms": "not yet woken (the timer, or the dispatcher)",
    "cpu_wait_ms": "runnable, waiting for a CPU",
    "blocked_ms": "woken, then asleep again (a lock in the app: the GIL, Holoscan's)",
    "running_ms": "running before compute (Holoscan, Python)",
}
# A release is looked for this long before its time (ms): a timer may fire a little early.
EARLY_MS = 1.0
FACTORS = ["policy", "topology", "dispatcher", "load_placement", "load_factor", "load_work_model"]


def rating(reduction: float) -> str:
    """The source benchmark's name for a std reduction (excellent, good, modest, limited)."""
    for threshold, name in published.RATING_BANDS:
        if reduction > threshold:
            return name
    return "limited"


def _factors(cfg: dict) -> dict:
    """A cell's factor levels; data measured before the factors existed reads as their defaults."""
    policy = cfg["policy"]
    return {"policy": policy,
            "topology": cfg.get("topology", "shared" if policy == "normal" else "dedicated"),
            "dispatcher": cfg.get("dispatcher", "other"),
            "load_placement": cfg.get("load_placement", "operators"),
            "load_factor": cfg["load_factor"], "loads": cfg["loads"],
            "load_work_model": cfg["load_work_model"]}


def load(directory: Path, cfg: dict) -> Dataset:
    """Frames and per-run metrics of the plan's completed cells, the floor, and the attribution.

    Parameters
    ----------
    directory : Path
        The dataset folder.
    cfg : dict
        E2's resolved parameters (``warmup_frames``, ``late_threshold_ms``).

    Returns
    -------
    Dataset
        ``tables`` (below), ``missing`` cell ids.

    Notes
    -----
    frames : DataFrame
        One row per kept frame of a Holoscan run: its factors (:data:`FACTORS`),
        ``t_s`` (seconds since the first kept frame, measured), ``period_ms``
        (to the previous frame) and ``exec_ms``.
    runs : DataFrame
        One row per Holoscan run: frame period mean/std/min/max/P50/P99/P99.9,
        execution time mean/std/P99/max, ``late`` (period > nominal +
        threshold), ``missed`` (frames expected over the measured span minus
        frames seen), N, and ``dispatcher_read`` (the dispatcher's policy as read
        back on its thread).
    floor : DataFrame
        The same metrics for each cyclictest run (its "frame" is one loop).
    attribution : DataFrame
        One row per frame of each traced run (:func:`attribute_run`): its
        lateness against its release, the parts (:data:`PARTS`, ms) and who
        woke, blocked and preceded the worker.
    traces : DataFrame
        One row per traced run: its events, frames and the frames attributed.
    """
    warmup_frames, late_threshold_ms = cfg["warmup_frames"], cfg["late_threshold_ms"]
    sidecars, missing = completed_cells(directory, SAMPLES)
    frame_frames, rows, floor_rows, attributed, traces = [], [], [], [], []
    for sc in sidecars:
        config = sc["requested"]["config"]
        s = read_samples(Path(sc["_dir"]) / "samples.parquet").sort_values("frame")
        dispatcher = sc["operators"].get(DISPATCHER, {}).get("sched") or {}
        base = {"cell_id": sc["cell_id"], "host_id": sc["host_id"], **_factors(config),
                "fps": config["fps"], "pinned": config["pinned"], "repetition": sc["repetition"],
                "dispatcher_read": POLICY_NAMES.get(dispatcher.get("policy"), ""),
                **run_columns(sc)}
        if config.get("trace_s"):
            trace = Path(sc["_dir"]) / "trace.parquet"
            frames_of = attribute_run(read_samples(trace), s, sc, warmup_frames) \
                if trace.is_file() else pd.DataFrame()
            attributed.append(frames_of.assign(**base))
            traces.append({**base, "events": int(sc["summary"].get("trace", {}).get("n_events", 0)),
                           "frames": int(len(s)) - warmup_frames,
                           "attributed": int(len(frames_of))})
            continue
        s = s[s["frame"] >= warmup_frames]
        t = s["t_start_ns"].to_numpy()
        period = np.diff(t) / 1e6
        execs = s["exec_ns"].to_numpy()[1:] / 1e6
        nominal = config["period_ns"] / 1e6
        p = percentiles(period, (50, 99, 99.9))
        e = percentiles(execs, (50, 99))
        span_s = (t[-1] - t[0]) / 1e9 if t.size > 1 else 0.0
        expected = int(round(span_s * 1e3 / nominal))
        row = {**base, "nominal_ms": nominal, "n": p["n"],
               "period_mean_ms": float(period.mean()) if period.size else np.nan,
               "period_std_ms": float(period.std(ddof=1)) if period.size > 1 else np.nan,
               "period_min_ms": float(period.min()) if period.size else np.nan,
               "period_max_ms": p["max"], "period_p50_ms": p["p50"],
               "period_p99_ms": p["p99"], "period_p99.9_ms": p["p99.9"],
               "exec_mean_ms": float(execs.mean()) if execs.size else np.nan,
               "exec_std_ms": float(execs.std(ddof=1)) if execs.size > 1 else np.nan,
               "exec_p99_ms": e["p99"], "exec_max_ms": e["max"],
               "late": int((period > nominal + late_threshold_ms).sum()),
               "missed": max(0, expected - int(period.size))}
        if config.get("tool"):
            floor_rows.append(row)
            continue
        frame_frames.append(pd.DataFrame({"t_s": (t[1:] - t[0]) / 1e9, "period_ms": period,
                                          "exec_ms": execs}).assign(**base))
        rows.append(row)
    frames = pd.concat(frame_frames, ignore_index=True) if frame_frames else pd.DataFrame()
    tables = {"frames": frames, "runs": pd.DataFrame(rows), "floor": pd.DataFrame(floor_rows),
              "traces": pd.DataFrame(traces),
              # float: a traced run with no complete chain adds an empty (object) frame.
              "attribution": (pd.concat(attributed, ignore_index=True).astype(
                  {c: float for c in ["lateness_ms", "deviation_ms", *PARTS]}) if attributed
                  else pd.DataFrame())}
    return Dataset(Path(directory), set_aside_drift(tables, "runs"), missing)


# ---------------------------------------------------------------------------
# Attribution: where a frame's delay accrues, from the kernel scheduler trace

def attribute_run(trace: pd.DataFrame, samples: pd.DataFrame, sidecar: dict,
                  warmup_frames: int) -> pd.DataFrame:
    """Each traced frame's lateness against its release, split into :data:`PARTS`.

    The periodic condition (and a DEADLINE period) releases frame k at T_k = T_0 + k·P
    on a fixed grid: a late frame is followed by an early one. The grid's offset is
    the earliest start of all frames (that frame's lateness is 0), so the lateness
    L_k = C_k − T_k of compute start C_k is ≥ 0, and a frame's deviation from
    the period is L_k − L_{k−1}.

    From T_k to C_k the target's worker thread is, at every instant, in one
    state that the trace gives (its ``sched_waking`` and ``sched_switch``
    events, CLOCK_MONOTONIC like C_k): asleep and not yet woken for this frame
    (the timer or the dispatcher has not woken it), runnable but without a CPU
    (woken or preempted), asleep again after it woke (blocked on a lock of the
    app: the GIL or a Holoscan mutex), or running before ``compute`` starts. The
    four durations add up to L_k exactly. Also recorded: who made the final
    wake-up (the dispatcher, or a timer/another thread) and who had the CPU
    the worker got.

    Parameters
    ----------
    trace : DataFrame
        The run's ``trace.parquet`` (:mod:`rtstudy.apps.trace` columns).
    samples : DataFrame
        Its frames (``t_start_ns``).
    sidecar : dict
        Its ``cell.json`` (the target's thread id; every thread of the app).
    warmup_frames : int
        Frames left out at the start, as in the statistics.
    """
    threads = sidecar["summary"].get("threads", [])
    target = (sidecar["operators"]["target"].get("sched") or {}).get("tid")
    dispatcher = next((t["tid"] for t in threads if t["comm"] == DISPATCHER), None)
    app_tids = {t["tid"] for t in threads}
    period = sidecar["requested"]["config"]["period_ns"]
    t = samples.sort_values("frame")["t_start_ns"].to_numpy()[warmup_frames:]
    columns = ["frame", "lateness_ms", "deviation_ms", *PARTS, "waker", "displaced",
               "blocked_by"]
    ev = trace.sort_values("t_ns", kind="stable")
    mine = ev[((ev["event"] == "waking") & (ev["pid"] == target)) |
              ((ev["event"] == "switch") & ((ev["pid"] == target) | (ev["prev_pid"] == target)))]
    if t.size < 2 or mine.empty:
        return pd.DataFrame(columns=columns)
    times = mine["t_ns"].to_numpy()
    # Only frames inside the trace: the grid is fitted on them.
    inside = (t > times[0] + EARLY_MS * 1e6) & (t <= times[-1])
    k_all = np.arange(t.size)
    offset = int(np.min(t[inside] - k_all[inside] * period)) if inside.any() else 0
    rows = []
    for k in k_all[inside]:
        release, start = offset + int(k) * period, int(t[k])
        first = int(np.searchsorted(times, release, side="right"))
        early = int(np.searchsorted(times, release - EARLY_MS * 1e6, side="right"))
        state = _state_before(mine, first, target)
        # A wake-up in the moments before the release counts: the timer may fire early.
        woken = bool((mine["event"].iloc[early:first] == "waking").any())
        spent = dict.fromkeys(PARTS, 0)
        now, waker, displaced, blocked_by = release, "", "", ""
        for e in mine.iloc[first:int(np.searchsorted(times, start, side="right"))].itertuples():
            spent[_part(state, woken)] += e.t_ns - now
            now = e.t_ns
            if e.event == "waking":
                if state == "asleep" and woken:
                    blocked_by = _who(int(e.tid), "", dispatcher, app_tids)
                state, woken = "runnable", True
                waker = "dispatcher" if e.tid == dispatcher else "timer or other thread"
            elif e.pid == target:
                state = "running"
                displaced = _who(int(e.prev_pid), str(e.prev_comm), dispatcher, app_tids)
            else:
                state = "runnable" if str(e.prev_state).startswith("R") else "asleep"
        spent[_part(state, woken)] += start - now
        rows.append({"frame": int(k) + warmup_frames, "lateness_ms": (start - release) / 1e6,
                     "deviation_ms": (start - int(t[k - 1]) - period) / 1e6 if k else np.nan,
                     **{p: v / 1e6 for p, v in spent.items()}, "waker": waker or "already awake",
                     "displaced": displaced or "(already running)", "blocked_by": blocked_by})
    return pd.DataFrame(rows, columns=columns)


def _state_before(mine: pd.DataFrame, i: int, target: int) -> str:
    """The worker's state just before ``mine``'s i-th event (asleep when none came before)."""
    if i <= 0:
        return "asleep"
    e = mine.iloc[i - 1]
    if e["event"] == "waking":
        return "runnable"
    if e["pid"] == target:
        return "running"
    return "runnable" if str(e["prev_state"]).startswith("R") else "asleep"


def _part(state: str, woken: bool) -> str:
    """Which part a stretch of time in ``state`` belongs to."""
    if state == "running":
        return "running_ms"
    if state == "runnable":
        return "cpu_wait_ms"
    return "blocked_ms" if woken else "wake_ms"


def _who(pid: int, comm: str, dispatcher: int | None, app_tids: set[int]) -> str:
    """Who had the CPU when the worker got it: a readable class of thread."""
    if pid == 0:
        return "idle"
    if pid == dispatcher:
        return "dispatcher"
    if pid in app_tids:
        return "the app's own threads (loads)"
    if comm.startswith("stress-ng"):
        return "stress-ng"
    return "other tasks (kernel, system)"


def attribution_summary(att: pd.DataFrame) -> pd.DataFrame:
    """Per traced condition: each part's mean and maximum (ms) and its share of the lateness's variance.

    The shares are Cov(part, lateness) / Var(lateness): they add up to 1
    because the parts add up to the lateness. Also the lateness's std, the
    largest lateness and how often that frame's worker was woken by the
    dispatcher, who the worker displaced most often, and who woke it when it
    had been blocked.
    """
    if att.empty:
        return pd.DataFrame()
    rows = []
    for label, g in att.groupby("label", sort=False):
        late = g["lateness_ms"].to_numpy(dtype=float)
        var = float(late.var(ddof=1)) if late.size > 1 else np.nan
        blocked = g.loc[g["blocked_by"] != "", "blocked_by"]
        row = {"label": label, **{f: g[f].iloc[0] for f in FACTORS}, "frames": len(g),
               "lateness_std_ms": float(np.sqrt(var)) if np.isfinite(var) else np.nan,
               "lateness_max_ms": float(late.max()),
               "by_dispatcher": float((g["waker"] == "dispatcher").mean()),
               # Who had the CPU the worker waited for, over the frames in which it waited.
               "displaced": g.loc[g["cpu_wait_ms"] > 0.01, "displaced"]
               .value_counts(normalize=True).to_dict(),
               "blocked_frames": int(len(blocked)),
               "blocked_by": blocked.value_counts().to_dict()}
        for part in PARTS:
            x = g[part].to_numpy(dtype=float)
            row[f"{part}_mean"] = float(x.mean())
            row[f"{part}_max"] = float(x.max())
            row[f"{part}_share"] = (float(np.cov(x, late, ddof=1)[0, 1] / var)
                                    if np.isfinite(var) and var > 0 else np.nan)
        rows.append(row)
    return pd.DataFrame(rows)


def std_reduction(a, b, ci: CI) -> Estimate:
    """``1 − mean(b) / mean(a)`` of per-run frame-period stds, with a bootstrap CI over runs.

    ``a`` and ``b`` hold one std per independent run (the baseline's and the
    policy's). Positive means ``b`` (e.g. a real-time policy) has the smaller
    jitter. Runs are resampled in each group; below
    :data:`rtstudy.stats.MIN_RUNS` runs in either group there is no CI.
    """
    return two_group_ci(a, b, lambda x, y: 1 - y.mean() / x.mean(), ci)


def std_difference(a, b, ci: CI) -> Estimate:
    """``mean(b) − mean(a)`` of per-run frame-period stds (ms), bootstrap CI over runs."""
    return two_group_ci(a, b, lambda x, y: y.mean() - x.mean(), ci)


def std_ratio(a, b, ci: CI) -> Estimate:
    """``mean(b) / mean(a)`` of per-run frame-period stds, bootstrap CI over runs."""
    return two_group_ci(a, b, lambda x, y: y.mean() / x.mean(), ci)


def grid(runs: pd.DataFrame) -> pd.DataFrame:
    """The policy grid's runs: load operators, Holoscan's own dispatcher, the study's topologies."""
    if runs.empty:
        return runs
    return runs[(runs["dispatcher"] == "other") & (runs["load_placement"] == "operators")
                & runs["topology"].isin(["dedicated", "shared"])]


def headline_point(runs: pd.DataFrame) -> pd.DataFrame:
    """Runs of the dedicated topology at the highest load factor with native loads."""
    if runs.empty:
        return runs
    g = runs[(runs["topology"] == "dedicated") & (runs["load_work_model"] == "native")]
    return g[g["load_factor"] == g["load_factor"].max()] if len(g) else g


def reductions(runs: pd.DataFrame, frames: pd.DataFrame, ci: CI,
               baseline: str = BASELINE) -> pd.DataFrame:
    """Every policy of the grid vs ``baseline``, per load factor and load work model, over runs.

    Columns: the mean per-run std of each (``std_normal_ms``, ``std_ms``) and
    their run counts (``n_runs_normal``, ``n_runs``); the ``reduction`` of the
    std with its CI over runs (``low``, ``high``; NaN below 3 runs each) and the
    difference in ms (``diff_ms``, ``diff_low``, ``diff_high``). As a screen,
    the Brown–Forsythe (spread, ``p_spread``) and Mann–Whitney (location,
    ``p_location``) p-values over the pooled frames, Holm-adjusted over the
    grid (``*_holm``): frames of one run are not independent, so they are no
    test of H2.
    """
    rows = []
    runs = grid(runs)
    frames = grid(frames) if len(frames) else frames
    for (factor, model), g in runs.groupby(["load_factor", "load_work_model"]):
        base = g.loc[g["policy"] == baseline, "period_std_ms"]
        if base.empty:
            continue
        f = frames[(frames["load_factor"] == factor) & (frames["load_work_model"] == model)]
        base_frames = f.loc[f["policy"] == baseline, "period_ms"]
        for policy, h in g.groupby("policy"):
            if policy == baseline:
                continue
            est = std_reduction(base, h["period_std_ms"], ci)
            diff = std_difference(base, h["period_std_ms"], ci)
            policy_frames = f.loc[f["policy"] == policy, "period_ms"]
            rows.append({"load_factor": factor, "load_work_model": model, "policy": policy,
                         "baseline": baseline,
                         "std_normal_ms": float(base.mean()), "std_ms": float(h["period_std_ms"].mean()),
                         "n_runs_normal": int(base.size), "n_runs": int(h["period_std_ms"].size),
                         "reduction": est.value, "low": est.low, "high": est.high,
                         "diff_ms": diff.value, "diff_low": diff.low, "diff_high": diff.high,
                         "rating": rating(est.value),
                         "p_spread": spread_test(base_frames, policy_frames),
                         "p_location": rank_test(base_frames, policy_frames)})
    out = pd.DataFrame(rows)
    if len(out):
        out["p_spread_holm"] = holm(out["p_spread"])
        out["p_location_holm"] = holm(out["p_location"])
    return out


def h2_verdict(red: pd.DataFrame) -> dict:
    """H2 at the highest native load factor, each real-time policy judged over runs.

    A policy *shows* H2 when its std reduction reaches :data:`MIN_REDUCTION` with
    its CI (over runs) above 0, and *refutes* it when the whole CI lies below
    :data:`MIN_REDUCTION` (:func:`rtstudy.stats.effect_verdict`). Reproduced when
    every policy shows it; not reproduced when every one refutes it; partly
    reproduced when some show and the rest refute it; otherwise, and below
    3 runs, inconclusive.
    """
    native = red[red["load_work_model"] == "native"] if len(red) else red
    if native.empty:
        return {"verdict": "inconclusive", "why": "no native-load runs"}
    top = native[native["load_factor"] == native["load_factor"].max()]
    rt = top[top["policy"].isin(RT_POLICIES)]
    if rt.empty:
        return {"verdict": "inconclusive", "why": "no real-time policy measured"}
    each = {r["policy"]: effect_verdict(Estimate(r["reduction"], r["low"], r["high"],
                                                 min(r["n_runs"], r["n_runs_normal"]), 0),
                                        MIN_REDUCTION) for r in rt.to_dict("records")}
    states = set(each.values())
    if states == {"shown"}:
        verdict = "reproduced"
    elif states == {"refuted"}:
        verdict = "not reproduced"
    elif states == {"shown", "refuted"}:
        verdict = "partly reproduced"
    else:
        verdict = "inconclusive"
    out = {"verdict": verdict, "load_factor": float(top["load_factor"].iloc[0]),
           "rows": rt.to_dict("records"), "each": each,
           "runs": int(min(rt["n_runs"].min(), rt["n_runs_normal"].min()))}
    if verdict == "inconclusive":
        few = out["runs"] < MIN_RUNS
        out["why"] = (f"fewer than {MIN_RUNS} runs per policy, so no CI" if few else
                      "a reduction's CI straddles the " f"{MIN_REDUCTION:.0%} threshold")
    return out


def null_verdict(red: pd.DataFrame, margin_ms: float) -> dict:
    """Without contention (the lowest load factor), is each real-time policy's jitter the same?

    Equivalence within ±``margin_ms`` of the difference in mean per-run std
    (policy − baseline), CI over runs (:func:`rtstudy.stats.equivalence_verdict`):
    ``equivalent`` for every policy → "no difference"; any ``different`` → "differs";
    otherwise inconclusive.
    """
    if red.empty:
        return {"verdict": "inconclusive", "why": "no runs", "margin_ms": margin_ms, "rows": [],
                "each": {}, "load_factor": float("nan")}
    zero = red[(red["load_factor"] == red["load_factor"].min()) & red["policy"].isin(RT_POLICIES)]
    each = {r["policy"]: equivalence_verdict(Estimate(r["diff_ms"], r["diff_low"], r["diff_high"],
                                                      min(r["n_runs"], r["n_runs_normal"]), 0),
                                             margin_ms) for r in zero.to_dict("records")}
    states = set(each.values())
    verdict = ("no difference" if states == {"equivalent"} else
               "differs" if "different" in states else "inconclusive")
    return {"verdict": verdict, "each": each, "margin_ms": margin_ms, "rows": zero.to_dict("records"),
            "load_factor": float(zero["load_factor"].iloc[0]) if len(zero) else float("nan")}


def _ci(low: float, high: float, fmt: str) -> str:
    return f" [{fmt.format(low)}, {fmt.format(high)}]" if np.isfinite(low) else " (no CI)"


def comparison_table(red: pd.DataFrame) -> pd.DataFrame:
    """Every policy of the grid against its baseline, for the report.

    The mean per-run std of each, the reduction with its CI over runs (none
    below 3 runs: "no CI") and the source's rating, then, as a screen over the
    pooled frames, the Holm-adjusted p-values of the spread (Brown–Forsythe)
    and location (Mann–Whitney) tests.
    """
    if red.empty:
        return pd.DataFrame()
    rows = []
    for r in red.sort_values(["load_work_model", "load_factor", "policy"]).to_dict("records"):
        reduction = (f"{r['reduction']:+.0%}{_ci(r['low'], r['high'], '{:+.0%}')}"
                     if pd.notna(r["reduction"]) else "n/a")
        rows.append({"loads": r["load_work_model"], "loads per CPU": f"{r['load_factor']:g}",
                     "policy": r["policy"], f"std {r['baseline']} ms": f"{r['std_normal_ms']:.3f}",
                     "std ms": f"{r['std_ms']:.3f}", "std reduction": reduction,
                     "rating": r["rating"], "runs": f"{r['n_runs']} vs {r['n_runs_normal']}",
                     "p spread, frames (Holm)": format_p(r["p_spread_holm"]),
                     "p location, frames (Holm)": format_p(r["p_location_holm"])})
    return pd.DataFrame(rows)


def seed_compatible(runs: pd.DataFrame, ci: CI) -> list[dict]:
    """Each seed topology's reduction (its own normal mode → its real-time mode), over runs."""
    out = []
    for topology, g in runs.groupby("topology", sort=True) if len(runs) else []:
        if not str(topology).startswith("seed"):
            continue
        base = g.loc[g["policy"] == "normal", "period_std_ms"]
        for policy, h in g[g["policy"] != "normal"].groupby("policy"):
            est = std_reduction(base, h["period_std_ms"], ci)
            out.append({"topology": topology, "policy": policy,
                        "load_work_model": h["load_work_model"].iloc[0],
                        "nominal_ms": float(h["nominal_ms"].iloc[0]),
                        "mean_normal_ms": float(g.loc[g["policy"] == "normal",
                                                      "period_mean_ms"].mean()),
                        "mean_ms": float(h["period_mean_ms"].mean()),
                        "loads": int(h["loads"].iloc[0]), "pinned": bool(h["pinned"].all()),
                        "std_normal_ms": float(base.mean()) if len(base) else np.nan,
                        "std_ms": float(h["period_std_ms"].mean()), "reduction": est.value,
                        "low": est.low, "high": est.high,
                        "n_runs": int(len(h)), "n_runs_normal": int(len(base))})
    return out


def seed_table(seeds: list[dict]) -> pd.DataFrame:
    """The seeds' published reductions beside this study's, measured with each seed's topology."""
    rows = [{"source": p["implementation"], "real-time policy": p["policy"],
             "normal std ms": p["normal_ms"], "real-time std ms": p["realtime_ms"],
             "change": p["change"]} for p in published.STD_MS]
    for r in seeds:
        ci = (f" [{-r['high']:+.1%}, {-r['low']:+.1%}]" if np.isfinite(r["low"])
              else f" (no CI: {min(r['n_runs'], r['n_runs_normal'])} runs)")
        rows.append({"source": f"this study, {r['topology']} ({r['loads']} {r['load_work_model']} "
                               f"loads; runs {r['n_runs']} vs {r['n_runs_normal']}"
                               f"{'' if r['pinned'] else '; target unpinned'})",
                     "real-time policy": r["policy"], "normal std ms": round(r["std_normal_ms"], 3),
                     "real-time std ms": round(r["std_ms"], 3),
                     "change": f"{-r['reduction']:+.1%}{ci}",
                     "mean period ms (normal → RT)": f"{r['mean_normal_ms']:.2f} → {r['mean_ms']:.2f}"})
    column = "mean period ms (normal → RT)"
    out = pd.DataFrame(rows)
    out[column] = out[column].fillna("not published") if column in out else "not published"
    return out


def floor_ratios(runs: pd.DataFrame, floor: pd.DataFrame, ci: CI) -> pd.DataFrame:
    """Every Holoscan condition's frame-period std over the floor's at the same load factor.

    The floor is cyclictest in the same sweep (``floor.py``): the same period,
    priority and pinning, with ``loads`` stress-ng workers beside it. The ratio
    of mean per-run stds has a bootstrap CI over the runs of both.
    """
    if runs.empty or floor.empty:
        return pd.DataFrame()
    rows = []
    for label, g in runs.groupby("label", sort=False):
        f = floor.loc[floor["load_factor"] == g["load_factor"].iloc[0], "period_std_ms"]
        if f.empty:
            continue
        est = std_ratio(f, g["period_std_ms"], ci)
        rows.append({"label": label, **{k: g[k].iloc[0] for k in FACTORS},
                     "std_ms": float(g["period_std_ms"].mean()), "floor_std_ms": float(f.mean()),
                     "ratio": est.value, "low": est.low, "high": est.high,
                     "n_runs": int(len(g)), "n_floor": int(len(f))})
    return pd.DataFrame(rows).sort_values("ratio", kind="stable").reset_index(drop=True)


def effects(runs: pd.DataFrame, ci: CI) -> pd.DataFrame:
    """At the headline point, the effect of each factor with the others held, over runs.

    For every pair of conditions that differ in one factor only — the policy
    (against ``normal_dedicated``), the dispatcher (FIFO against Holoscan's
    own) or the load placement (process or threads against operators) — the
    std reduction ``1 − mean(std with) / mean(std without)`` with its CI.
    """
    top = headline_point(runs)
    if top.empty:
        return pd.DataFrame()
    contrasts = [("policy", BASELINE), ("dispatcher", "other"), ("load_placement", "operators")]
    keys = ["policy", "dispatcher", "load_placement"]
    groups = {k: g["period_std_ms"] for k, g in top.groupby(keys)}
    rows = []
    for factor, reference in contrasts:
        held = [k for k in keys if k != factor]
        for key, values in groups.items():
            level = dict(zip(keys, key))
            if level[factor] == reference or (factor == "policy" and level["policy"] == "normal"):
                continue
            ref_key = tuple(reference if k == factor else level[k] for k in keys)
            if ref_key not in groups:
                continue
            est = std_reduction(groups[ref_key], values, ci)
            rows.append({"factor": factor, "level": level[factor], "reference": reference,
                         **{k: level[k] for k in held},
                         "std_reference_ms": float(groups[ref_key].mean()),
                         "std_ms": float(values.mean()), "reduction": est.value,
                         "low": est.low, "high": est.high,
                         "n_runs": int(len(values)), "n_reference": int(len(groups[ref_key]))})
    return pd.DataFrame(rows)


def effects_table(eff: pd.DataFrame) -> pd.DataFrame:
    """:func:`effects` for the report: what changed, with what held, and the reduction."""
    if eff.empty:
        return pd.DataFrame()
    rows = []
    for r in eff.to_dict("records"):
        held = ", ".join(f"{k.replace('load_', '')} {r[k]}" for k in
                         ("policy", "dispatcher", "load_placement") if k != r["factor"])
        rows.append({"factor": r["factor"].replace("load_", "load "),
                     "change": f"{r['reference']} → {r['level']}", "held": held,
                     "std ms": f"{r['std_reference_ms']:.3f} → {r['std_ms']:.3f}",
                     "std reduction": f"{r['reduction']:+.0%}{_ci(r['low'], r['high'], '{:+.0%}')}",
                     "runs": f"{r['n_runs']} vs {r['n_reference']}"})
    return pd.DataFrame(rows)


def floor_table(ratios: pd.DataFrame) -> pd.DataFrame:
    """:func:`floor_ratios` for the report, closest to the floor first."""
    if ratios.empty:
        return pd.DataFrame()
    return pd.DataFrame([{
        "configuration": r["label"], "std ms": f"{r['std_ms']:.3f}",
        "floor std ms": f"{r['floor_std_ms']:.3f}",
        "ratio to floor": f"{r['ratio']:.1f}×{_ci(r['low'], r['high'], '{:.1f}')}",
        "runs": f"{r['n_runs']} vs {r['n_floor']}"} for r in ratios.to_dict("records")])


def attribution_table(summary: pd.DataFrame) -> pd.DataFrame:
    """:func:`attribution_summary` for the report: per traced condition, each part's mean / max
    (µs) and share of the lateness's variance, how often it was blocked and by whom, and who
    had the CPU it waited for."""
    if summary.empty:
        return pd.DataFrame()
    rows = []
    for r in summary.to_dict("records"):
        top_who = max(r["displaced"].items(), key=lambda kv: kv[1]) if r["displaced"] else ("", 0)
        row = {"traced run": r["label"].replace("-trace", ""), "frames": r["frames"],
               "lateness std / max, µs": f"{r['lateness_std_ms'] * 1000:.0f} / "
                                         f"{r['lateness_max_ms'] * 1000:.0f}"}
        for part, name in PARTS.items():
            row[name] = (f"{r[f'{part}_mean'] * 1000:.0f} / {r[f'{part}_max'] * 1000:.0f}; "
                         f"{r[f'{part}_share']:.0%}" if np.isfinite(r[f"{part}_share"])
                         else f"{r[f'{part}_mean'] * 1000:.0f} / {r[f'{part}_max'] * 1000:.0f}")
        row["blocked frames (woken by)"] = (
            f"{r['blocked_frames']} (" + ", ".join(f"{k} {v}" for k, v in r["blocked_by"].items())
            + ")" if r["blocked_frames"] else "0")
        row["woken by dispatcher"] = f"{r['by_dispatcher']:.0%}"
        row["who had the CPU it waited for"] = (f"{top_who[0]} ({top_who[1]:.0%})" if top_who[0]
                                                 else "(never waited)")
        rows.append(row)
    return pd.DataFrame(rows)


def headline(cfg: dict, ds_tables: dict, red: pd.DataFrame, ci: CI) -> dict:
    """The numbers E2's prose quotes, all computed here.

    Parameters
    ----------
    cfg : dict
        E2's resolved parameters.
    ds_tables : dict
        :func:`load`'s tables.
    red : DataFrame
        :func:`reductions` against ``normal_dedicated``.
    ci : CI
        How CIs over runs are made.

    Returns
    -------
    dict
        ``verdict`` (:func:`h2_verdict`), ``zero`` (:func:`null_verdict`),
        ``one`` (each real-time policy at 1 load per CPU), ``gil`` (GIL-holding
        loads at the highest factor), ``seed_style`` (the reductions against the
        seed's shared-pool baseline), ``seeds`` (:func:`seed_compatible`),
        ``effects`` (:func:`effects`), ``floor`` (:func:`floor_ratios`, the
        closest configuration), ``attribution`` and the counts the prose states.
    """
    runs, frames = ds_tables["runs"], ds_tables["frames"]
    out = {"factors": sorted(float(f) for f in runs["load_factor"].unique()) if len(runs) else [],
           "pinned": sorted(runs.loc[runs["pinned"], "policy"].unique()) if len(runs) else [],
           "n_runs": int(len(runs)), "verdict": h2_verdict(red), "min_reduction": MIN_REDUCTION,
           "min_runs": MIN_RUNS, "baseline": BASELINE, "seed_baseline": SEED_BASELINE,
           "zero": null_verdict(red, cfg["null_margin_ms"]), "gil": None, "floor": None,
           "one": [], "seed_style": [], "seeds": seed_compatible(runs, ci), "effects": [],
           "attribution": [], "floor_goal": FLOOR_GOAL, "dispatchers_read": {}, "parts": PARTS,
           "unattributed": [], "unattributed_policies": []}
    if len(runs):
        out["dispatchers_read"] = {d: sorted(set(g["dispatcher_read"]) - {""})
                                   for d, g in runs.groupby("dispatcher")}
    if len(red):
        native = red[red["load_work_model"] == "native"]
        out["one"] = native[(native["load_factor"] == 1)
                            & native["policy"].isin(RT_POLICIES)].to_dict("records")
        seed_style = reductions(runs, frames, ci, SEED_BASELINE)
        if len(seed_style):
            s = seed_style[(seed_style["load_work_model"] == "native")]
            out["seed_style"] = s[s["load_factor"] == s["load_factor"].max()].to_dict("records")
    gil = red[(red["load_work_model"] == "python")
              & (red["load_factor"] == red["load_factor"].max())] if len(red) else red
    if len(gil):
        factor = float(gil["load_factor"].iloc[0])
        g = grid(runs)
        late = g[(g["load_work_model"] == "python") & (g["load_factor"] == factor)]
        native = red[(red["load_work_model"] == "native")
                     & (red["load_factor"] == factor)].set_index("policy")
        ratios = {r["policy"]: r["std_ms"] / native.loc[r["policy"], "std_ms"]
                  for r in gil.to_dict("records")
                  if r["policy"] in RT_POLICIES and r["policy"] in native.index
                  and native.loc[r["policy"], "std_ms"] > 0}
        out["gil"] = {"load_factor": factor, "rows": gil.to_dict("records"),
                      "lost": {p: int(n) for p, n in late.groupby("policy")["missed"].sum().items()},
                      "ratios": ratios, "gil_ratio": GIL_RATIO,
                      "gil_bound": bool(ratios) and min(ratios.values()) > GIL_RATIO}
    eff = effects(runs, ci)
    out["effects"] = eff.to_dict("records")
    ratios = floor_ratios(headline_point(runs), ds_tables["floor"], ci)
    if len(ratios):
        best = ratios.iloc[0].to_dict()
        out["floor"] = {"best": best, "rows": ratios.to_dict("records"),
                        "floor_std_ms": best["floor_std_ms"], "load_factor": best["load_factor"],
                        "at_floor": [r["label"] for r in ratios.to_dict("records")
                                     if np.isfinite(r["high"]) and r["high"] <= FLOOR_GOAL]}
    out["attribution"] = attribution_summary(ds_tables["attribution"]).to_dict("records")
    traces = ds_tables.get("traces", pd.DataFrame())
    none = traces[traces["attributed"] == 0] if len(traces) else traces
    out["unattributed"] = none["label"].str.replace("-trace", "").tolist() if len(none) else []
    out["unattributed_policies"] = sorted(set(none["policy"])) if len(none) else []
    return out


# What the drift check compares (stats.drift_check): a name and its unit.
DRIFT_QUANTITY = ("frame-period std", "ms")


def drift(ds: Dataset) -> dict | None:
    """The sweep's drift check on the frame-period std (ms); None without one."""
    return drift_check(ds.tables["runs"], ds.tables["drift"], "period_std_ms")


# The table behind E2's figure that DVC plots (dvc.yaml `plots:`): one row per run of a load
# factor (native loads, the policy grid), one column per policy.
PLOT_FILE = "e2_period_std.csv"


def plot_table(ds: Dataset) -> pd.DataFrame | None:
    """The frame-period std (ms) per run against the load factor, native loads, the policy grid."""
    runs = grid(ds.tables["runs"])
    if not len(runs):
        return None
    native = runs[runs["load_work_model"] == "native"]
    return wide(native, ["load_factor", "repetition"], native["policy"], "period_std_ms")
