"""Which fixes a session of a host state measures: the default profile has time for one fix
per session at the size a late-frame rate ratio needs, so the fixes rotate over sessions
(``params.yaml``: ``fixes``, ``fixes_per_session``), chosen from what the host state's sessions
planned (:func:`rtstudy.data.sessions.plans`), wherever they were measured.
"""
from __future__ import annotations

from rtstudy.experiments.e2_rt_threads.conditions import FIX_LIST

# Each rotating fix as a cell's configuration shows it, the one factor it changes from the
# headline point: key → value (None: the switch interval params.yaml gives; plan._fixes()).
FIX_FACTORS = {f.name: (f.factor, f.level) for f in FIX_LIST if f.rotates}


def fix_frames(cfg: dict) -> int:
    """Frames in a run of a fix or its baseline: the warm-up and ``fix_duration_s``."""
    return cfg["warmup_frames"] + int(cfg["fix_duration_s"] * cfg["fps"])


def fixes_measured(cfg: dict, cells: list[dict]) -> set[str]:
    """The fixes a session's plan (its ``plan.json`` cells) measured as its fixes: a cell with
    the fix's factor (any switch interval) at the fixes' size (``fix_duration_s``). The
    pinned loads of the ladder run shorter, so they do not count."""
    sized = fix_frames(cfg)
    found = set()
    for cell in cells:
        config = cell.get("config", {})
        if config.get("frames") != sized:
            continue
        found |= {fix for fix, (key, value) in FIX_FACTORS.items()
                  if key in config and value in (None, config[key])}
    return found


def session_fixes(cfg: dict, session: dict) -> list[str]:
    """The fixes a session of a host state measures.

    Every fix when ``fixes_per_session`` is 0 or covers them all. Else a session that has
    begun keeps the fixes its plan measures (``session["current"]``), and a new one takes the
    ``fixes_per_session`` fixes the closed sessions (``session["closed"]``) measured least
    often, in ``fixes``' order among equals: sessions add answers instead of repeating thin
    ones, whichever clone measured them, and a session merged from another clone keeps its
    own (:func:`rtstudy.data.sessions.plans`).
    """
    fixes, k = list(cfg["fixes"]), cfg["fixes_per_session"]
    if not k or k >= len(fixes):
        return fixes
    began = fixes_measured(cfg, session.get("current") or [])
    if began:
        return [f for f in fixes if f in began]
    done = [fixes_measured(cfg, cells) for cells in session.get("closed", [])]
    return sorted(fixes, key=lambda f: (sum(f in d for d in done), fixes.index(f)))[:k]
