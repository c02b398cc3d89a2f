"""The "SDK versions compared" section's data: one machine state's datasets, one per SDK version.

Each SDK version runs in an environment of its own and its data gets a host id of
its own (:mod:`rtstudy.sdks.sdk`). Two host ids belong to one machine state when their
fingerprints are the same but for the versions and the ``sdk`` record: the same
machine, kernel, isolation and shield, measured with two SDKs.
"""
from __future__ import annotations

import pandas as pd

from rtstudy.sdks import sdk

# What may differ between two SDK environments of one machine state.
SDK_KEYS = ("host_id", "versions", "sdk")


def machine_state(fp: dict | None) -> str:
    """A key equal for fingerprints that differ only in their SDK environment."""
    if not fp:
        return ""
    return repr(sorted((k, repr(v)) for k, v in fp.items() if k not in SDK_KEYS))


def label(fp: dict | None) -> str:
    """``Holoscan 5.0.0 (Debian 13 root)``: a dataset's SDK version and environment."""
    if not fp:
        return "Holoscan ? (fingerprint not recorded)"
    env = fp.get("sdk", {}).get("environment", "venv")
    # The study's venv, the Debian 13 root, or a venv of its own ("python3.11-venv").
    where = {"venv": "venv", "debian13-root": "Debian 13 root"}.get(env, env.replace("-", " "))
    return f"Holoscan {sdk.version_of(fp)} ({where})"


def _built(state: dict) -> str:
    """When a host state's SDK environment was built (ISO 8601 UTC; empty for the study's venv)."""
    return (state["fp"].get("sdk") or {}).get("built_utc") or ""


def groups(states: list[dict], shown: str) -> list[dict]:
    """The SDK versions measured on the shown host's machine state, in version order.

    Parameters
    ----------
    states : list of dict
        :meth:`rtstudy.report.study.Study.host_states` (``host_id``, ``fp``, ``verdicts``,
        ``over``).
    shown : str
        The host id the report's sections show.

    Returns
    -------
    list of dict
        The shown host and, per other SDK version measured on its machine state, the host
        state of its newest build: ``host_id``, ``version``, ``label``,
        ``verdicts`` (over its sessions where it has several, as the summary judges them);
        sorted by SDK version.
    """
    mine = next((st for st in states if st["host_id"] == shown), None)
    if mine is None:
        return []
    key = machine_state(mine["fp"])
    same = [st for st in states if st["fp"] and machine_state(st["fp"]) == key]
    # One environment per version: a root or venv built again is a host state of its own (its
    # build time is in the fingerprint); the shown host speaks for its version, the newest
    # build for each other one.
    by_version = {sdk.version_of(st["fp"]): st for st in sorted(same, key=_built)}
    if mine["fp"]:
        by_version[sdk.version_of(mine["fp"])] = mine
    same = list(by_version.values())
    rows = [{"host_id": st["host_id"], "version": sdk.version_of(st["fp"]),
             "label": label(st["fp"]),
             "verdicts": {c: st.get("over", {}).get(c, v) for c, v in st["verdicts"].items()}}
            for st in same]
    return sorted(rows, key=lambda r: tuple(int(x) if x.isdigit() else 0
                                            for x in r["version"].split(".")))


def verdict_table(rows: list[dict]) -> pd.DataFrame:
    """Each claim's verdict per SDK version ("—": not measured with that version)."""
    claims = dict.fromkeys(c for r in rows for c in r["verdicts"])
    return pd.DataFrame([{"claim": claim, **{r["label"]: r["verdicts"].get(claim, "—")
                                             for r in rows}} for claim in claims])


def headline_table(by_host: pd.DataFrame, rows: list[dict]) -> pd.DataFrame:
    """The cross-host headline table (one column per host id) with SDK labels as columns,
    only the shown machine state's host ids, and rows measured with at least one of them."""
    names = {r["host_id"]: r["label"] for r in rows}
    if by_host.empty:
        return by_host
    wide = by_host.set_index(["experiment", "quantity"])
    kept = wide[[c for c in wide.columns if c in names]].rename(columns=names)
    return kept[(kept != "—").any(axis=1)].reset_index().rename_axis(columns=None)
