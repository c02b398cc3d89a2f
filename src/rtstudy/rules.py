"""The parameter machinery every experiment uses: rules, profiles and group checks.

A ``params.yaml`` group is a mapping of keys, optionally with ``profiles``
(``smoke`` / ``default`` / ``seed``) whose entries override the group's keys.
Each experiment declares its group's :class:`Rule` per key (the sweep's keys from
:data:`SWEEP_SCHEMA`) and its cross-checks
(``rtstudy/experiments/<name>/params.py``); :func:`check_group` applies them for
every profile. :mod:`rtstudy.params` puts the groups together from the registry.
This module knows no experiment.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any, Callable

PROFILES = ("smoke", "default", "seed")


class ParamError(ValueError):
    """One or more parameters are wrong; the message lists each with its fix."""


@dataclass(frozen=True)
class Rule:
    """How to check one key: ``check(value)`` returns None or what was expected."""

    check: Callable[[Any], str | None]
    required: bool = True


def integer(lo: int | None = None, hi: int | None = None) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        expected = "an integer" + (f" >= {lo}" if lo is not None else "") + (
            f" and <= {hi}" if hi is not None else "")
        if isinstance(v, bool) or not isinstance(v, int):
            return expected
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            return expected
        return None
    return check


def number(lo: float | None = None, hi: float | None = None,
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


def boolean() -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        return None if isinstance(v, bool) else "true or false"
    return check


def choice(*allowed: str) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        return None if v in allowed else "one of " + ", ".join(repr(a) for a in allowed)
    return check


def list_of(item: Callable[[Any], str | None], min_len: int = 1,
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


# The keys every experiment's group has, for its sweep: each plan makes ``repetitions`` runs of a
# condition and lets a cell run ``timeout_margin_s`` past its expected length before stopping it;
# the stage runs the cells in an order seeded by ``order_seed``; ``drift_check`` asks the plan to
# run one condition again at the sweep's start and end
# (:func:`rtstudy.measure.harness.with_drift_check`).
SWEEP_SCHEMA: dict[str, Rule] = {
    "repetitions": Rule(integer(1, 1000)),
    "timeout_margin_s": Rule(number(1, 3600)),
    "order_seed": Rule(integer(0)),
    "drift_check": Rule(boolean()),
}


def resolve(group: dict, profile: str) -> dict[str, Any]:
    """A group's keys with its ``profiles[profile]`` overrides applied (no validation)."""
    resolved = {k: copy.deepcopy(v) for k, v in group.items() if k != "profiles"}
    resolved.update(copy.deepcopy((group.get("profiles") or {}).get(profile) or {}))
    return resolved


def expected(rule: Rule) -> str:
    """What ``rule`` accepts, in words."""
    return rule.check(object()) or "a value"


def check_group(name: str, group: Any, rules: dict[str, Rule],
                cross_checks: Callable[[dict], list[str]], errors: list[str]) -> None:
    """Append to ``errors`` every problem of group ``name`` for every profile.

    Parameters
    ----------
    name : str
        The group's key in ``params.yaml``.
    group : Any
        Its value as read from the file.
    rules : dict of str to Rule
        One rule per allowed key.
    cross_checks : callable
        ``cross_checks(resolved) -> list of str``: rules between keys, run for
        a profile only once each key is valid on its own; each message is
        prefixed with the group and profile.
    errors : list of str
        Where the problems go (a message already present is not repeated).
    """
    if not isinstance(group, dict):
        errors.append(f"{name}: expected a mapping of parameters, got {group!r}")
        return
    profiles = group.get("profiles") or {}
    if not isinstance(profiles, dict):
        errors.append(f"{name}.profiles: expected a mapping with keys among {', '.join(PROFILES)}, "
                      f"got {profiles!r}")
        return
    unknown = []
    for prof, overrides in profiles.items():
        if prof not in PROFILES:
            unknown.append(f"{name}.profiles.{prof}: unknown profile; allowed: {', '.join(PROFILES)}")
        elif not isinstance(overrides, dict):
            unknown.append(f"{name}.profiles.{prof}: expected a mapping of overrides, got {overrides!r}")
        else:
            unknown += [f"{name}.profiles.{prof}.{key}: unknown key; allowed keys: "
                        + ", ".join(sorted(rules)) for key in overrides if key not in rules]
    unknown += [f"{name}.{key}: unknown key; allowed keys: " + ", ".join(sorted(rules))
                for key in group if key != "profiles" and key not in rules]
    if unknown:
        errors.extend(unknown)
        return
    for prof in PROFILES:
        resolved = resolve(group, prof)
        for key, rule in rules.items():
            where = f"{name}.profiles.{prof}.{key}" if key in (profiles.get(prof) or {}) \
                else f"{name}.{key}"
            if key not in resolved:
                if rule.required:
                    errors.append(f"{where}: missing (profile {prof!r}); expected {expected(rule)}")
                continue
            problem = rule.check(resolved[key])
            if problem:
                message = f"{where} = {resolved[key]!r}: expected {problem}"
                if message not in errors:
                    errors.append(message)
        if all(k in resolved and not rule.check(resolved[k]) for k, rule in rules.items()):
            errors.extend(m for m in (f"{name} (profile {prof!r}): {e}" for e in cross_checks(resolved))
                          if m not in errors)


def no_cross_checks(cfg: dict) -> list[str]:
    """For a group whose keys are independent of each other."""
    return []
