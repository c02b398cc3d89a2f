"""E4's sweep plan: the jitter probe per CPU and load, and the rt-tests floor at E2's period.

The measuring side of E4 (a dependency of its DVC stage, with ``app.py`` and
``jitter_probe.c``); after the sweep it records the host audit beside the data.
"""
from __future__ import annotations

import gzip
import json
import platform
import shutil
from pathlib import Path
from typing import TypedDict

from rtstudy import atomic
from rtstudy.machine import audit, placement, tracefs
from rtstudy.measure import integrity
from rtstudy.measure.harness import Cell, with_drift_check
from rtstudy.policies import SCHED_DEADLINE, SCHED_FIFO

EXPERIMENT = "e4_host"
APP = "e4_floor"  # the name cells record (part of every cell id): never change it
MODULE = "rtstudy.experiments.e4_host.app"
AUDIT = "audit.json"  # the host audit, recorded beside the cells
# No Holoscan in E4's cells: measured once, in the study's venv (rtstudy.stage).
SDK_APIS = ()


def plan(cfg: dict, fp: dict, configs: dict) -> list[Cell]:
    """Jitter probe per CPU × load, and the rt-tests floor at E2's period × load.

    Parameters
    ----------
    cfg : dict
        E4's resolved parameters.
    fp : dict
        The host fingerprint (its online CPUs).
    configs : dict
        Every group's resolved parameters: the floor takes E2's ``fps`` and
        ``priority`` (``params.USES``) and ``cpus`` (:mod:`rtstudy.machine.placement`).
    """
    e2_cfg = configs["e2_rt_threads"]
    where = placement.resolve(configs.get("cpus"), fp)
    cpus = fp["cpu"]["online"] if cfg["jitter_cpus"] == "all" else cfg["jitter_cpus"]
    # stress-ng runs on the housekeeping CPUs: so many workers per CPU it may use.
    stress_workers = int(round(cfg["stress_load_factor"] * len(where.housekeeping)))
    interval_us = round(1e6 / e2_cfg["fps"])
    floor_cpu = where.rt_cpu
    cells = []
    for rep in range(cfg["repetitions"]):
        for load in cfg["loads"]:
            common = {"load": load, "stress_workers": stress_workers}
            for cpu in cpus:
                config = {**common, "kind": "jitter", "cpu": cpu, "seconds": cfg["jitter_seconds"],
                          "fifo_priority": cfg["jitter_fifo_priority"]}
                cells.append(Cell(EXPERIMENT, APP, f"jitter-cpu{cpu}-{load}", config, rep,
                                  cfg["jitter_seconds"] + cfg["timeout_margin_s"], module=MODULE))
            for tool in cfg["floor_tools"]:
                config = {**common, "kind": tool, "seconds": cfg["floor_seconds"],
                          "interval_us": interval_us, "priority": e2_cfg["priority"],
                          "histogram_us": cfg["histogram_us"],
                          # Pinned like E2's FIFO target: the placement's real-time CPU.
                          "cpu": floor_cpu if tool == "cyclictest" else None}
                cells.append(Cell(EXPERIMENT, APP, f"{tool}-{load}", config, rep,
                                  cfg["floor_seconds"] + cfg["timeout_margin_s"], module=MODULE))
    return with_drift_check(cells, cfg)


def realtime(cfg: dict) -> tuple[str, ...]:
    """The policies the preflight must find allowed."""
    needs = [SCHED_FIFO] if "cyclictest" in cfg["floor_tools"] or cfg["jitter_fifo_priority"] else []
    if "cyclicdeadline" in cfg["floor_tools"]:
        needs.append(SCHED_DEADLINE)
    return tuple(needs)


def host_problems(cfg: dict, fp: dict) -> list[str]:
    """What this host cannot run of ``cfg``: a missing tool or CPU, each with its fix."""
    problems = []
    tools = list(cfg["floor_tools"]) + (["stress-ng"] if "stress" in cfg["loads"] else [])
    for tool in tools:
        if shutil.which(tool) is None:
            pkg = "rt-tests" if tool.startswith("cyclic") else tool
            problems.append(f"e4_host needs {tool}: `sudo apt-get install {pkg}` (`make sysdeps` "
                            "installs it, as root), or remove it from e4_host.floor_tools / loads")
    if cfg["jitter_cpus"] != "all":
        unknown = sorted(set(cfg["jitter_cpus"]) - set(fp["cpu"]["online"]))
        if unknown:
            problems.append(f"e4_host.jitter_cpus names CPUs {unknown} that are not online "
                            f"(online: {fp['cpu']['online']})")
    return problems


def kernel_config(option: str) -> str | None:
    """``y``/``m``/``n`` for a kernel build option, or None when the config cannot be read."""
    for path in (Path("/proc/config.gz"), Path(f"/boot/config-{platform.release()}")):
        try:
            text = (gzip.open(path, "rt") if path.suffix == ".gz" else open(path)).read()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith(f"{option}="):
                return line.split("=", 1)[1]
        return "n"
    return None


class Osnoise(TypedDict):
    """Whether ``rtla osnoise`` can run here (:func:`osnoise_status`)."""

    available: bool
    why: str  # if not, exactly why ("" where it can)


def osnoise_status() -> Osnoise:
    """Whether ``rtla osnoise`` can run here, and if not, exactly why.

    Measuring it is left for hosts that have it; the study records the reason.
    """
    if kernel_config("CONFIG_OSNOISE_TRACER") == "n":
        return {"available": False, "why": "the kernel is built without CONFIG_OSNOISE_TRACER "
                "(no osnoise tracer to run)"}
    if shutil.which("rtla") is None:
        return {"available": False, "why": "rtla is not installed (Debian package rtla)"}
    tracers = Path(tracefs.TRACEFS) / "available_tracers"
    prepared: dict = {}
    try:
        # After a boot tracefs is not mounted: mounted for the reading, as for a trace.
        with tracefs.ready(prepared):
            have = "osnoise" in tracers.read_text()
    except OSError as exc:
        return {"available": False, "why": f"cannot read {tracers} ({exc.strerror}; tracefs "
                f"{prepared.get('tracefs', 'not prepared')})"}
    return {"available": have, "why": "" if have else "the kernel has no osnoise tracer"}


def after_sweep(directory: Path) -> None:
    """Record this host's audit (read-only, from /) and osnoise availability beside the data."""
    record = {**json.loads(audit.to_json(audit.audit())), "osnoise": osnoise_status()}
    atomic.write_text(Path(directory) / AUDIT, json.dumps(record, indent=2) + "\n")
    integrity.seal(directory, [AUDIT])
