"""The study's parameters: ``params.yaml``, checked as a whole before anything is measured.

``params.yaml`` holds ``profile`` (which profile ``make study`` uses), one group
per registered experiment (its rules live in the experiment's own
``params.py``) and ``report``. :func:`validate` checks every group for every
profile, so a mistake stops the study before anything is measured, with a
message that names the key, the value and what is allowed;
:func:`stage_config` resolves one group for one profile.
"""
from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import yaml

from rtstudy import atomic, paths, registry
from rtstudy.machine import placement
from rtstudy.rules import (PROFILES, ParamError, Rule, check_group, choice, list_of,
                           no_cross_checks, number, resolve)
from rtstudy.sdks import sdk

__all__ = ["PROFILES", "ParamError", "REPORT", "CPUS", "SDK", "SESSION", "groups", "load", "validate", "stage_config",
           "use_profile", "configs"]

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
    for name, (rules, cross) in known.items():
        if name not in data:
            errors.append(f"{name}: parameter group missing")
        else:
            check_group(name, data[name], rules, cross, errors)
    if errors:
        raise ParamError("invalid parameters in params.yaml:\n  - " + "\n  - ".join(errors))


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
    data = load() if data is None else data
    validate(data)
    if stage not in groups():
        raise ParamError(f"unknown stage {stage!r}; allowed: {', '.join(sorted(groups()))}")
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
    atomic.write_text(path, new)


def configs(profile: str | None = None, data: dict | None = None) -> dict[str, dict]:
    """Every group resolved for ``profile`` (as :func:`stage_config` gives each), keyed by group."""
    data = load() if data is None else data
    validate(data)
    profile = profile or data["profile"]
    if profile not in PROFILES:
        raise ParamError(f"profile = {profile!r}: expected one of {', '.join(PROFILES)}")
    return {name: {**resolve(data[name], profile), "profile": profile} for name in groups()}
