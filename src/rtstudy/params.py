"""The study's parameters: ``params.yaml``, checked as a whole before anything is measured.

``params.yaml`` holds ``profile`` (which profile ``make study`` uses), one group
per registered experiment (its rules live in the experiment's own
``params.py``) and ``report``. :func:`validate` checks every group for every
profile, so a mistake stops the study before anything is measured, with a
message that names the key, the value and what is allowed.

A command calls :func:`read` once, at its start: the :class:`Params` it returns (every group
resolved for one profile, frozen) is what it hands down, to the notebook it runs, the sweep,
the report's sections. :func:`stage_config` is the same read, of one group.

A key whose value the frozen protocol fixes (an experiment's ``params.FROM_PROTOCOL``: E2's
late threshold) has one source, its criterion: it is resolved into its group, and refused in
``params.yaml``.
"""
from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from rtstudy import atomic, paths, protocol, registry
from rtstudy.machine import placement
from rtstudy.rules import (PROFILES, ParamError, Rule, check_group, choice, list_of,
                           no_cross_checks, number, resolve)
from rtstudy.sdks import sdk

__all__ = ["PROFILES", "ParamError", "Params", "REPORT", "CPUS", "SDK", "SESSION", "groups",
           "load", "read", "validate", "stage_config", "use_profile"]

REPORT = "report"
CPUS = "cpus"
SDK = "sdk"
# Not a group: the key under which a measuring stage hands its plan what the host state's
# sessions planned (rtstudy.data.sessions.plans: the closed ones' cells and the current one's),
# by which E2's fixes rotate.
SESSION = "session"

# Where every experiment places its threads (rtstudy.machine.placement): read by every measuring
# stage.
CPUS_SCHEMA: dict[str, Rule] = {key: Rule(placement.check_value) for key in placement.KEYS}

# The Holoscan SDK versions every measuring stage runs (rtstudy.sdks.sdk), each in its environment.
SDK_SCHEMA: dict[str, Rule] = {"versions": Rule(list_of(choice(*sdk.KNOWN)))}

# The report's group: the statistics every section uses.
REPORT_SCHEMA: dict[str, Rule] = {
    "confidence": Rule(number(0.5, 0.999)),
}


def groups() -> dict[str, tuple[dict[str, Rule], object]]:
    """Every group of ``params.yaml``: name → (rules, cross-checks), experiments first."""
    out = {e.name: (e.params.SCHEMA, e.params.cross_checks) for e in registry.every()}
    out[CPUS] = (CPUS_SCHEMA, no_cross_checks)
    out[SDK] = (SDK_SCHEMA, no_cross_checks)
    out[REPORT] = (REPORT_SCHEMA, no_cross_checks)
    return out


def from_protocol() -> dict[str, dict[str, Any]]:
    """Each group's keys whose value the frozen protocol fixes: group → key → value."""
    return {e.name: dict(getattr(e.params, "FROM_PROTOCOL", {})) for e in registry.every()}


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, refusing a key given twice in one mapping (plain YAML keeps the
    last silently: `fps: 0` then `fps: 60` would pass as valid)."""

    def construct_mapping(self, node, deep=False):
        seen: dict = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} given twice (lines {seen[key] + 1} and "
                    f"{key_node.start_mark.line + 1}): keep one", key_node.start_mark)
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep)


# The text last parsed and its mapping. Many callers of one command ask for the parameters (a
# report about 6 times, a measuring stage about 3); the file is read each time, so an edit
# between two calls is seen, but its text is parsed once.
_parsed: tuple[str, dict] | None = None


def load(path: Path | None = None) -> dict[str, Any]:
    """Read ``params.yaml`` (or ``path``) as a mapping; syntax errors name the file and line.

    Returns a fresh copy each call: a caller may change it without changing another's.
    """
    global _parsed
    path = path or paths.params_file()
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ParamError(f"{path}: parameter file not found. Run from a checkout of rtstudy "
                         "(or set RTSTUDY_ROOT to one).") from None
    if _parsed is None or _parsed[0] != text:
        try:
            data = yaml.load(text, Loader=_UniqueKeyLoader)
        except yaml.YAMLError as exc:
            raise ParamError(f"{path}: not valid YAML: {exc}") from None
        if not isinstance(data, dict):
            raise ParamError(f"{path}: expected a mapping of parameter groups, got "
                             f"{type(data).__name__}")
        _parsed = (text, data)
    return copy.deepcopy(_parsed[1])


def validate(data: dict) -> None:
    """Check a whole parameter mapping; raise :class:`ParamError` listing every problem."""
    errors: list[str] = []
    known = groups()
    profile = data.get("profile")
    if profile not in PROFILES:
        errors.append(f"profile = {profile!r}: expected one of {', '.join(PROFILES)} "
                      "(choose with `make profile P=NAME`)")
    for key in data:
        if key != "profile" and key not in known:
            errors.append(f"{key}: unknown parameter group; allowed: profile, "
                          + ", ".join(sorted(known)))
    fixed = from_protocol()
    for name, (rules, cross) in known.items():
        if name not in data:
            errors.append(f"{name}: parameter group missing")
            continue
        own = fixed.get(name, {})
        errors += [f"{name}.{key}: not a parameter but protocol v{protocol.VERSION}'s criterion "
                   f"({own[key]!r}), which every verdict is judged by: remove it from "
                   "params.yaml; a new value is a new protocol version (docs/protocol.md)"
                   for key in _set_keys(data[name]) if key in own]
        check_group(name, _without(data[name], own), rules,
                    lambda cfg, cross=cross, own=own: cross({**cfg, **own}), errors)
    if errors:
        raise ParamError("invalid parameters in params.yaml:\n  - " + "\n  - ".join(errors))


def _set_keys(group: Any) -> set[str]:
    """The keys a group sets, in itself or in one of its profiles."""
    if not isinstance(group, dict):
        return set()
    profiles = group.get("profiles")
    overrides = profiles.values() if isinstance(profiles, dict) else ()
    return {k for k in group if k != "profiles"}.union(
        *(o for o in overrides if isinstance(o, dict)))


def _without(group: Any, keys: Mapping[str, Any]) -> Any:
    """``group`` without ``keys``, in itself and in its profiles (each refused on its own)."""
    if not keys or not isinstance(group, dict):
        return group
    out = {k: v for k, v in group.items() if k not in keys}
    if isinstance(group.get("profiles"), dict):
        out["profiles"] = {p: ({k: v for k, v in o.items() if k not in keys}
                               if isinstance(o, dict) else o)
                           for p, o in group["profiles"].items()}
    return out


@dataclass(frozen=True, eq=False)
class Params(Mapping):
    """``params.yaml`` read and checked once, every group resolved for one profile.

    What a command reads at its start and hands down. A mapping group → its parameters; each
    lookup returns a fresh copy, so no reader's change reaches another.

    Attributes
    ----------
    profile : str
        The profile every group is resolved for.
    """

    profile: str
    _groups: Mapping[str, Mapping[str, Any]]

    def __getitem__(self, group: str) -> dict[str, Any]:
        return copy.deepcopy(dict(self._groups[group]))  # KeyError where none, as a mapping

    def group(self, name: str) -> dict[str, Any]:
        """Group ``name``, or :class:`ParamError` naming the groups there are."""
        if name not in self._groups:
            raise ParamError(f"unknown stage {name!r}; allowed: {', '.join(sorted(self._groups))}")
        return self[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._groups)

    def __len__(self) -> int:
        return len(self._groups)

    def as_dict(self) -> dict[str, dict[str, Any]]:
        """Every group as plain dicts (what a notebook's parameters can carry)."""
        return {group: self[group] for group in self}


def read(profile: str | None = None, data: dict | None = None) -> Params:
    """``params.yaml`` (or an already loaded ``data``), checked and resolved for ``profile``.

    Parameters
    ----------
    profile : str, optional
        ``smoke``, ``default`` or ``seed``; None uses ``params.yaml``'s ``profile``.
    data : dict, optional
        An already loaded parameter mapping; None reads ``params.yaml``.

    Raises
    ------
    ParamError
        Naming every problem of the file, or an unknown profile.
    """
    data = load() if data is None else data
    validate(data)
    profile = profile or data["profile"]
    if profile not in PROFILES:
        raise ParamError(f"profile = {profile!r}: expected one of {', '.join(PROFILES)}")
    fixed = from_protocol()
    return Params(profile, MappingProxyType({
        name: MappingProxyType({**resolve(data[name], profile), **fixed.get(name, {}),
                                "profile": profile})
        for name in groups()}))


def stage_config(stage: str, profile: str | None = None, data: dict | None = None
                 ) -> dict[str, Any]:
    """The validated parameters of ``stage`` for ``profile`` (default: the file's profile).

    Parameters
    ----------
    stage : str
        A group of ``params.yaml`` (a registered experiment or ``report``).
    profile : str, optional
        ``smoke``, ``default`` or ``seed``; None uses ``params.yaml``'s ``profile``.
    data : dict, optional
        An already loaded parameter mapping; None reads ``params.yaml``.

    Returns
    -------
    dict
        The group's keys with the profile's overrides applied, plus ``profile``.
    """
    return read(profile, data).group(stage)


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
    atomic.write_text(path, new)
