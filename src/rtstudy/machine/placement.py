"""Where the study's threads run: the real-time CPUs and the housekeeping CPUs, from the host's state.

``params.yaml``'s ``cpus`` group says it for every experiment:

``realtime: auto``
    The CPUs a runtime shield holds (``rtstudy host apply``), else the CPUs
    isolated at boot (``isolcpus=``, or ``nohz_full=`` alone), else the last
    online CPU.
``housekeeping: auto``
    On a shielded or boot-isolated host every other online CPU; on an untuned
    host every online CPU, the real-time one included: there nothing keeps
    other work off it, and the seeds' contention is exactly that.

Either may be a CPU list instead (``"2-3"``), which overrides the host's state.
Loads, thread pools without a policy of their own and stress-ng run on the
housekeeping CPUs, and "loads per CPU" counts those. Each cell records where
every thread actually ran (read back, like its policies).
"""
from __future__ import annotations

from dataclasses import dataclass

from rtstudy.machine.kernelfs import CpuListError, format_cpu_list, parse_user_cpus
from rtstudy.machine.shield import of as shield_of

AUTO = "auto"
KEYS = ("realtime", "housekeeping")


@dataclass(frozen=True)
class Placement:
    """The CPUs of one host and parameter set.

    Attributes
    ----------
    realtime : tuple of int
        Where real-time threads are pinned (an experiment that pins one thread
        takes :attr:`rt_cpu`).
    housekeeping : tuple of int
        Where everything the study does not pin runs (loads, pools, stress-ng).
    source : str
        Why these CPUs: ``shield``, ``isolated``, ``nohz_full``, ``untuned`` or ``params``.
    online : tuple of int
        The host's online CPUs.
    """

    realtime: tuple[int, ...]
    housekeeping: tuple[int, ...]
    source: str
    online: tuple[int, ...]

    @property
    def rt_cpu(self) -> int:
        """The one CPU an experiment pins its single real-time thread to: the last real-time CPU."""
        return self.realtime[-1]

    @property
    def confines(self) -> bool:
        """Whether cells must be held to the housekeeping CPUs (they are not every online CPU)."""
        return set(self.housekeeping) != set(self.online)

    def describe(self) -> str:
        """One sentence for logs and the report."""
        why = {"shield": "the runtime shield's CPUs",
               "isolated": "the CPUs isolated at boot (isolcpus)",
               "nohz_full": "the CPUs given nohz_full at boot",
               "untuned": "the last CPU (nothing is isolated on this host)",
               "params": "as params.yaml's cpus group says"}[self.source]
        return (f"real-time threads on CPU {format_cpu_list(self.realtime)} ({why}); loads, "
                f"pools and stress-ng on CPU {format_cpu_list(self.housekeeping)}")


def _cpus(value, key: str, online: list[int]) -> list[int]:
    try:
        cpus = parse_user_cpus(str(value))
    except CpuListError as exc:
        raise ValueError(f"cpus.{key} = {value!r}: {exc}") from None
    off = [c for c in cpus if c not in online]
    if off:
        raise ValueError(f"cpus.{key} = {value!r} names CPU {format_cpu_list(off)}, which is not "
                         f"online on this host (online: {format_cpu_list(online)}); use `auto` or "
                         "a list of online CPUs")
    return cpus


def resolve(cfg: dict | None, fp: dict) -> Placement:
    """The placement that ``cfg`` (params.yaml's ``cpus`` group) gives on the host ``fp``.

    Parameters
    ----------
    cfg : dict or None
        ``realtime`` and ``housekeeping``, each ``auto`` or a CPU list; None: both ``auto``.
    fp : dict
        The host fingerprint (online CPUs, boot isolation, runtime shield).

    Returns
    -------
    Placement

    Raises
    ------
    ValueError
        A list that is malformed or names an offline CPU, or a housekeeping set
        left empty (every CPU real-time): the message says which and how to fix it.
    """
    cfg = cfg or {}
    online = list(fp["cpu"]["online"])
    isolation = fp.get("isolation") or {}
    shield = shield_of(fp)
    tuned = [c for c in (shield or {}).get("cpus", []) if c in online]
    source = "shield"
    if not tuned:
        tuned, source = [c for c in isolation.get("isolated") or [] if c in online], "isolated"
    if not tuned:
        tuned, source = [c for c in isolation.get("nohz_full") or [] if c in online], "nohz_full"
    # A host whose every CPU is isolated has none left to house the rest: treat it as untuned.
    if not tuned or set(tuned) == set(online):
        tuned, source = [], "untuned"
    rt_value = cfg.get("realtime", AUTO)
    hk_value = cfg.get("housekeeping", AUTO)
    if rt_value == AUTO:
        realtime = tuned or online[-1:]
    else:
        realtime, source = _cpus(rt_value, "realtime", online), "params"
    if hk_value == AUTO:
        housekeeping = [c for c in online if c not in realtime] if tuned else online
    else:
        housekeeping, source = _cpus(hk_value, "housekeeping", online), "params"
    if not housekeeping:
        raise ValueError(f"cpus: real-time CPUs {format_cpu_list(realtime)} leave no housekeeping "
                         f"CPU on this host (online: {format_cpu_list(online)}); name fewer "
                         "real-time CPUs or set cpus.housekeeping")
    return Placement(tuple(realtime), tuple(housekeeping), source, tuple(online))


def problems(cfg: dict | None, fp: dict) -> list[str]:
    """What is wrong with ``cfg`` on the host ``fp`` (empty when it resolves)."""
    try:
        resolve(cfg, fp)
    except ValueError as exc:
        return [str(exc)]
    return []


def overlap(cfg: dict | None) -> str | None:
    """A warning when ``cfg`` names real-time and housekeeping CPUs that share a CPU, else None.

    Only lists given explicitly are compared: ``housekeeping: auto`` on an untuned host
    includes the real-time CPU by design (that is the contention the seeds measured).
    """
    cfg = cfg or {}
    values = [cfg.get(key, AUTO) for key in KEYS]
    if AUTO in values or any(check_value(v) for v in values):
        return None
    shared = sorted(set(parse_user_cpus(str(values[0]))) & set(parse_user_cpus(str(values[1]))))
    if not shared:
        return None
    return (f"cpus.realtime ({values[0]}) and cpus.housekeeping ({values[1]}) share CPU "
            f"{format_cpu_list(shared)}: loads, thread pools and stress-ng will run beside the "
            "real-time threads there, so every experiment measures contention on its real-time "
            "CPU, as on an untuned host, whatever shield is in place; name disjoint lists (or "
            "`housekeeping: auto`) to keep them apart")


def check_value(value) -> str | None:
    """A params rule: ``auto`` or a CPU list (checked against the host only when measuring)."""
    if value == AUTO:
        return None
    try:
        parse_user_cpus(str(value))
    except CpuListError:
        return "'auto' or a CPU list such as '2-3' or '1,3'"
    return None
