"""The study's parameters: ``params.yaml``, its profiles, and every input check.

``params.yaml`` holds one group per DVC stage. A group may carry a
``profiles`` mapping (``smoke`` / ``default`` / ``seed``) whose entries override
the group's own keys; the top-level ``profile`` key chooses which one applies.
:func:`stage_config` resolves a group for a profile. :func:`validate` checks the
whole file, for every profile, so a mistake stops the study before anything is
measured, with a message that names the key, the value and what is allowed.
"""
from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

from rtstudy import paths

PROFILES = ("smoke", "default", "seed")


class ParamError(ValueError):
    """One or more parameters are wrong; the message lists each with its fix."""


@dataclass(frozen=True)
class Rule:
    """How to check one key: ``check(value)`` returns None or what was expected."""

    check: Callable[[Any], str | None]
    required: bool = True


def _int(lo: int | None = None, hi: int | None = None) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        expected = "an integer" + (f" >= {lo}" if lo is not None else "") + (
            f" and <= {hi}" if hi is not None else "")
        if isinstance(v, bool) or not isinstance(v, int):
            return expected
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            return expected
        return None
    return check


def _number(lo: float | None = None, hi: float | None = None,
            lo_open: bool = False) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        bound = ""
        if lo is not None:
            bound += f" {'>' if lo_open else '>='} {lo}"
        if hi is not None:
            bound += f" and <= {hi}"
        expected = "a number" + bound
        # NaN passes every comparison and inf every lower bound; YAML writes them as .nan / .inf.
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            return expected
        if lo is not None and (v <= lo if lo_open else v < lo):
            return expected
        if hi is not None and v > hi:
            return expected
        return None
    return check


def _choice(*allowed: str) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        return None if v in allowed else "one of " + ", ".join(repr(a) for a in allowed)
    return check


def _list_of(item: Callable[[Any], str | None], min_len: int = 1,
             unique: bool = True) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        if not isinstance(v, list) or len(v) < min_len:
            return f"a list of at least {min_len} item(s)"
        for x in v:
            problem = item(x)
            if problem:
                return f"a list whose items are each {problem} (bad item: {x!r})"
        if unique and len({repr(x) for x in v}) != len(v):
            return "a list without repeated items"
        return None
    return check


# One schema per params.yaml group. Adding an experiment adds its group here.
SCHEMA: dict[str, dict[str, Rule]] = {
    "e3_overhead": {
        "apps": Rule(_list_of(_choice("ops", "ping"))),
        "schedulers": Rule(_list_of(_choice("greedy", "event_based"))),
        "event_based_workers": Rule(_list_of(_int(1, 64))),
        "stop_on_deadlock_timeout_ms": Rule(_int(0, 10_000)),
        "iterations": Rule(_list_of(_int(2, 10_000_000))),
        "warmup_iterations": Rule(_int(0, 1_000_000)),
        "repetitions": Rule(_int(1, 1000)),
        "max_duration_ms": Rule(_int(1000, 3_600_000)),
        "timeout_margin_s": Rule(_number(1, 3600)),
        "order_seed": Rule(_int(0)),
    },
    "e1_async_buffer": {
        "buffers": Rule(_list_of(_choice("default", "async"))),
        "scenarios": Rule(_list_of(_choice("S1", "S2"))),
        "policies": Rule(_list_of(_choice("deadline", "none"))),
        "work_models": Rule(_list_of(_choice("native", "python"))),
        "fixed_period_ms": Rule(_int(5, 1000)),
        "periods_ms": Rule(_list_of(_int(5, 1000))),
        "rx_period_ms": Rule(_int(2, 1000)),
        "tx1_work_ms": Rule(_number(0, 500)),
        "tx2_work_ms": Rule(_number(0, 500)),
        "rx_work_ms": Rule(_number(0, 500)),
        "tx1_runtime_ms": Rule(_number(0, 1000, lo_open=True)),
        "tx2_runtime_ms": Rule(_number(0, 1000, lo_open=True)),
        "rx_runtime_ms": Rule(_number(0, 1000, lo_open=True)),
        "pin": Rule(_choice("auto", "always", "never")),
        "messages": Rule(_int(10, 1_000_000)),
        "discard_head": Rule(_int(0)),
        "discard_tail": Rule(_int(0)),
        "repetitions": Rule(_int(1, 1000)),
        "timeout_margin_s": Rule(_number(1, 3600)),
        "order_seed": Rule(_int(0)),
    },
    "e2_rt_threads": {
        "policies": Rule(_list_of(_choice("normal", "normal_dedicated", "SCHED_FIFO", "SCHED_RR",
                                          "SCHED_DEADLINE"))),
        "fps": Rule(_int(1, 1000)),
        "duration_s": Rule(_number(0.5, 3600)),
        "warmup_frames": Rule(_int(0)),
        "load_factors": Rule(_list_of(_number(0, 16))),
        "load_work_ms": Rule(_number(0, 1000, lo_open=True)),
        "load_work_models": Rule(_list_of(_choice("native", "python"))),
        "target_work_iterations": Rule(_int(0, 100_000_000)),
        "priority": Rule(_int(1, 99)),
        "deadline_runtime_fraction": Rule(_number(0, 1, lo_open=True)),
        "late_threshold_ms": Rule(_number(0)),
        "pin": Rule(_choice("auto", "always", "never")),
        "repetitions": Rule(_int(1, 1000)),
        "timeout_margin_s": Rule(_number(1, 3600)),
        "order_seed": Rule(_int(0)),
    },
    "e4_host": {
        "jitter_seconds": Rule(_number(0.1, 600)),
        "jitter_cpus": Rule(lambda v: None if v == "all" else _list_of(_int(0, 4095))(v)),
        "jitter_fifo_priority": Rule(_int(0, 99)),
        "loads": Rule(_list_of(_choice("idle", "stress"))),
        "stress_load_factor": Rule(_number(0.5, 16)),
        "floor_tools": Rule(_list_of(_choice("cyclictest", "cyclicdeadline"), min_len=0)),
        "floor_seconds": Rule(_int(1, 3600)),
        "histogram_us": Rule(_int(10, 1_000_000)),
        "repetitions": Rule(_int(1, 1000)),
        "timeout_margin_s": Rule(_number(1, 3600)),
        "order_seed": Rule(_int(0)),
    },
    "report": {
        "confidence": Rule(_number(0.5, 0.999)),
        "bootstrap_resamples": Rule(_int(100, 1_000_000)),
        "random_seed": Rule(_int(0)),
    },
}


def load(path: Path | None = None) -> dict:
    """Read ``params.yaml`` (or ``path``) as a mapping; syntax errors name the file and line."""
    path = path or paths.params_file()
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ParamError(f"{path}: parameter file not found. Run from a checkout of rtstudy "
                         "(or set RTSTUDY_ROOT to one).") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ParamError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise ParamError(f"{path}: expected a mapping of parameter groups, got {type(data).__name__}")
    return data


def resolve(group: dict, profile: str) -> dict:
    """A group's keys with its ``profiles[profile]`` overrides applied (no validation)."""
    resolved = {k: copy.deepcopy(v) for k, v in group.items() if k != "profiles"}
    resolved.update(copy.deepcopy((group.get("profiles") or {}).get(profile) or {}))
    return resolved


def _check_group(name: str, group: Any, errors: list[str]) -> None:
    if not isinstance(group, dict):
        errors.append(f"{name}: expected a mapping of parameters, got {group!r}")
        return
    rules = SCHEMA[name]
    profiles = group.get("profiles") or {}
    if not isinstance(profiles, dict):
        errors.append(f"{name}.profiles: expected a mapping with keys among {', '.join(PROFILES)}, "
                      f"got {profiles!r}")
        return
    for prof, overrides in profiles.items():
        if prof not in PROFILES:
            errors.append(f"{name}.profiles.{prof}: unknown profile; allowed: {', '.join(PROFILES)}")
        elif not isinstance(overrides, dict):
            errors.append(f"{name}.profiles.{prof}: expected a mapping of overrides, got {overrides!r}")
        else:
            for key in overrides:
                if key not in rules:
                    errors.append(f"{name}.profiles.{prof}.{key}: unknown key; allowed keys: "
                                  + ", ".join(sorted(rules)))
    for key in group:
        if key != "profiles" and key not in rules:
            errors.append(f"{name}.{key}: unknown key; allowed keys: " + ", ".join(sorted(rules)))
    if any(e.startswith(f"{name}.") and "unknown" in e for e in errors):
        return
    for prof in PROFILES:
        resolved = resolve(group, prof)
        for key, rule in rules.items():
            where = f"{name}.profiles.{prof}.{key}" if key in (profiles.get(prof) or {}) \
                else f"{name}.{key}"
            if key not in resolved:
                if rule.required:
                    errors.append(f"{where}: missing (profile {prof!r}); expected {_expected(rule)}")
                continue
            problem = rule.check(resolved[key])
            if problem:
                message = f"{where} = {resolved[key]!r}: expected {problem}"
                if message not in errors:
                    errors.append(message)
        if all(k in resolved and not rule.check(resolved[k]) for k, rule in rules.items()):
            errors.extend(e for e in _cross_checks(name, resolved, prof) if e not in errors)


def _cross_checks(name: str, cfg: dict, prof: str) -> list[str]:
    """Rules between keys of one resolved group (run after each key is valid on its own)."""
    errors = []
    where = f"{name} (profile {prof!r})"
    if name == "e1_async_buffer":
        for op, periods in (("tx1", cfg["periods_ms"] + [cfg["fixed_period_ms"]]),
                            ("tx2", cfg["periods_ms"] + [cfg["fixed_period_ms"]]),
                            ("rx", [cfg["rx_period_ms"]])):
            runtime, work = cfg[f"{op}_runtime_ms"], cfg[f"{op}_work_ms"]
            if runtime >= min(periods):
                errors.append(f"{where}: {op}_runtime_ms = {runtime} must be below the shortest "
                              f"{op} period ({min(periods)} ms): SCHED_DEADLINE needs "
                              "runtime < deadline = period")
            if runtime <= work:
                errors.append(f"{where}: {op}_runtime_ms = {runtime} must exceed {op}_work_ms = "
                              f"{work}, or every tick overruns its reservation")
        if cfg["discard_head"] + cfg["discard_tail"] >= cfg["messages"]:
            errors.append(f"{where}: discard_head + discard_tail = "
                          f"{cfg['discard_head'] + cfg['discard_tail']} must be below messages = "
                          f"{cfg['messages']}")
    if name == "e2_rt_threads":
        if "SCHED_DEADLINE" in cfg["policies"] and cfg["deadline_runtime_fraction"] >= 1:
            errors.append(f"{where}: deadline_runtime_fraction = {cfg['deadline_runtime_fraction']} "
                          "makes the SCHED_DEADLINE runtime >= the period; it must be below 1")
        if "normal" not in cfg["policies"]:
            errors.append(f"{where}: policies must include 'normal', the baseline every policy is "
                          "compared with")
        if cfg["warmup_frames"] + 2 > cfg["duration_s"] * cfg["fps"] + cfg["warmup_frames"] - 1:
            errors.append(f"{where}: duration_s = {cfg['duration_s']} at fps = {cfg['fps']} "
                          "leaves fewer than 3 frames")
    return errors


def _expected(rule: Rule) -> str:
    return rule.check(object()) or "a value"


def validate(data: dict) -> None:
    """Check a whole parameter mapping; raise :class:`ParamError` listing every problem."""
    errors: list[str] = []
    profile = data.get("profile")
    if profile not in PROFILES:
        errors.append(f"profile = {profile!r}: expected one of {', '.join(PROFILES)} "
                      "(choose with `make profile P=NAME`)")
    for key in data:
        if key != "profile" and key not in SCHEMA:
            errors.append(f"{key}: unknown parameter group; allowed: profile, "
                          + ", ".join(sorted(SCHEMA)))
    for name in SCHEMA:
        if name not in data:
            errors.append(f"{name}: parameter group missing")
        else:
            _check_group(name, data[name], errors)
    if errors:
        raise ParamError("invalid parameters in params.yaml:\n  - " + "\n  - ".join(errors))


def stage_config(stage: str, profile: str | None = None, data: dict | None = None) -> dict:
    """The validated parameters of ``stage`` for ``profile`` (default: the file's profile).

    Parameters
    ----------
    stage : str
        A group of ``params.yaml`` (a key of :data:`SCHEMA`).
    profile : str, optional
        ``smoke``, ``default`` or ``seed``; None uses ``params.yaml``'s ``profile``.
    data : dict, optional
        An already loaded parameter mapping; None reads ``params.yaml``.

    Returns
    -------
    dict
        The group's keys with the profile's overrides applied, plus ``profile``.
    """
    data = load() if data is None else data
    validate(data)
    if stage not in SCHEMA:
        raise ParamError(f"unknown stage {stage!r}; allowed: {', '.join(sorted(SCHEMA))}")
    profile = profile or data["profile"]
    if profile not in PROFILES:
        raise ParamError(f"profile = {profile!r}: expected one of {', '.join(PROFILES)}")
    config = resolve(data[stage], profile)
    config["profile"] = profile
    return config


def use_profile(profile: str, path: Path | None = None) -> None:
    """Set ``profile:`` in ``params.yaml``, keeping the file's comments and layout."""
    if profile not in PROFILES:
        raise ParamError(f"profile = {profile!r}: expected one of {', '.join(PROFILES)}")
    path = path or paths.params_file()
    text = path.read_text()
    new, count = re.subn(r"(?m)^profile:.*$", f"profile: {profile}", text)
    if count != 1:
        raise ParamError(f"{path}: expected exactly one top-level `profile:` line, found {count}")
    validate(yaml.safe_load(new))
    path.write_text(new)
