"""What the report notebook needs besides statistics and figures: provenance and rendering."""
from __future__ import annotations

import hashlib
import json

import pandas as pd

from rtstudy import host, paths, seeds
from rtstudy.harness import git_state


def provenance(profile: str, sidecars_host_ids: list[str] | None = None) -> dict:
    """Git commit, host id(s), versions, profile and the digest of dvc.lock, for the footer."""
    fp_file = paths.fingerprint_file()
    fp = json.loads(fp_file.read_text()) if fp_file.exists() else host.current()
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


def table_html(df: pd.DataFrame) -> str:
    """A plain HTML table (no index) that nbconvert keeps when code is hidden."""
    return df.to_html(index=False, escape=True, border=0, classes="rtstudy-table")


def data_dir(experiment: str, profile: str):
    """The dataset the report shows for ``experiment``: this host's, else the only one present."""
    from rtstudy.data import DataError

    fp_file = paths.fingerprint_file()
    this_host = json.loads(fp_file.read_text())["host_id"] if fp_file.exists() else host.current()["host_id"]
    mine = paths.raw_dir(experiment, this_host, profile)
    if (mine / "plan.json").exists():
        return mine
    others = sorted(p.parent for p in paths.raw_root(experiment).glob(f"*/{profile}/plan.json"))
    if len(others) == 1:
        return others[0]
    if not others:
        raise DataError(f"no {experiment} data for profile {profile!r} under "
                        f"{paths.raw_root(experiment)}; run `make study` (or `dvc pull`)")
    raise DataError(f"{experiment} has data from several hosts for profile {profile!r} "
                    f"({', '.join(p.parent.name for p in others)}) and none from this host")


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
        f"This report covers the experiments measured so far (profile `{profile}`). Every number "
        "in it is computed from the raw data under `data/raw/`; the seeds' published figures are "
        "quoted beside ours, with their source."
    )


def e3_markdown(h: dict, fit_df: pd.DataFrame, missing: list[str], confidence: float) -> str:
    """The E3 section's prose; every figure in it comes from ``h`` and ``fit_df``."""
    lines = [
        "## E3 — Scheduler overhead (H3)",
        "",
        f"Source: {seeds.E3_SOURCE}. Two apps — two port-less operators (`ops`) and a Tx → Rx "
        "ping (`ping`) — run with no work in `compute`, under the Greedy scheduler and the "
        f"EventBased scheduler with several worker threads. Each configuration was timed at "
        f"N = {', '.join(f'{n:,}' for n in h['iterations'])} iterations, {h['repetitions']} "
        f"repetition(s), {h['n_runs']} timed app runs in {h['n_cells']} subprocess cells.",
        "",
        f"**The seed's method** (whole app — constructor, compose, run, teardown — divided by N) "
        f"gives, at N = {h['n_max']:,}, {h['greedy_ops']:.1f} µs per iteration for Greedy without "
        f"messages (seed: ~10 µs) and {h['greedy_ping']:.1f} µs with a message (seed: ~17 µs).",
    ]
    if h["startup_share"]:
        lo, hi = h["startup_share"]
        lines += ["", f"**Beyond the seed**: a straight line through the whole-app time at each N "
                  f"separates a fixed start-up cost (intercept) from the steady per-iteration cost "
                  f"(slope, {confidence:.0%} CI in the table). At N = {h['n_max']:,}, start-up is "
                  f"{lo:.0%}–{hi:.0%} of the seed-method figure across configurations."]
    if missing:
        lines += ["", f"**Incomplete data**: {len(missing)} planned cell(s) are missing "
                  f"({', '.join(missing[:5])}{' …' if len(missing) > 5 else ''}); re-run `make study`."]
    return "\n".join(lines)


def e3_methods_markdown(h: dict, runs: pd.DataFrame) -> str:
    hosts = ", ".join(sorted(runs["host_id"].unique()))
    return (
        "### E3 methods\n\n"
        "Each cell is one subprocess (a fresh GXF context, a 32 MiB stack, a hard timeout): an "
        "untimed warm-up app, then one timed app per N in a seeded random order; cells themselves "
        "run in a seeded random order. Time is CLOCK_MONOTONIC throughout. *Seed method*: "
        "(end of `run()` − before the constructor) / N. *Per-iteration (fit)*: slope of "
        "whole-app time against N, least squares over every run and repetition, t-based CI. "
        "*Median compute interval*: median gap between consecutive `compute` starts of the lead "
        "operator (op1, or tx), averaged over repetitions at the largest N. Recording a time "
        "stamp adds about 0.1 µs per compute. "
        f"Host(s): `{hosts}`."
    )
