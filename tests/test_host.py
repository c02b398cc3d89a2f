"""The host fingerprint is stable and complete; the preflight names problems and fixes."""
from __future__ import annotations

import json
import re

from rtstudy.machine import host, kernelfs
from rtstudy.measure import preflight


def test_fingerprint_is_byte_identical_across_calls():
    assert host.canonical(host.fingerprint()) == host.canonical(host.fingerprint())


def test_fingerprint_holds_what_dvc_must_react_to(fingerprint):
    for key in ("kernel", "cmdline", "cpu", "isolation", "governors", "sched", "realtime", "versions"):
        assert key in fingerprint
    assert set(fingerprint["realtime"]) == {"SCHED_FIFO", "SCHED_RR", "SCHED_DEADLINE",
                                            "SCHED_DEADLINE pinned"}
    assert fingerprint["versions"]["holoscan-cu12"] == "4.6.0"
    assert fingerprint["cpu"]["count"] >= 1


def test_fingerprint_has_no_timestamps_or_load_figures(fingerprint):
    text = json.dumps(fingerprint).lower()
    for word in ("time", "date", "uptime", "loadavg", "load_avg"):
        assert f'"{word}' not in text


def test_host_id_is_short_and_follows_the_content(fingerprint):
    fp = {k: v for k, v in fingerprint.items() if k != "host_id"}
    assert re.fullmatch(r"[A-Za-z0-9_.-]+-[0-9a-f]{8}", host.host_id(fp))
    changed = dict(fp, sched={**fp["sched"], "rt_runtime_us": -1})
    assert host.host_id(changed) != host.host_id(fp)


def test_write_fingerprint_does_not_touch_an_unchanged_file(tmp_path):
    out = tmp_path / "fp.json"
    host.write_fingerprint(out)
    first = out.stat().st_mtime_ns
    host.write_fingerprint(out)
    assert out.stat().st_mtime_ns == first


def test_parse_cpu_list():
    assert kernelfs.parse_cpu_list("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert kernelfs.parse_cpu_list("") == [] and kernelfs.parse_cpu_list(None) == []


def test_unwritable_data_directory_fails_with_a_fix(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    check = preflight.writable_check(blocker / "raw")
    assert check.status == "FAIL" and "not writable" in check.detail and check.fix


def test_preflight_reports_holoscan_and_refusals_with_fixes(fingerprint, tmp_path):
    checks = preflight.preflight(fingerprint, tmp_path, need_realtime=("SCHED_DEADLINE pinned",))
    by_name = {c.name: c for c in checks}
    assert by_name["holoscan import"].status == "PASS"
    pinned = by_name["SCHED_DEADLINE pinned"]
    if fingerprint["realtime"]["SCHED_DEADLINE pinned"] != "ok":
        assert pinned.status == "WARN" and "sched_rt_runtime_us" in pinned.fix
    assert "fix:" in preflight.format_checks(checks) or all(c.status == "PASS" for c in checks)


def test_no_fix_puts_a_capability_on_the_shared_interpreter():
    from rtstudy.measure.preflight import REALTIME_FIX

    for policy, fix in REALTIME_FIX.items():
        assert "setcap cap_sys_nice" not in fix, policy
    for policy in ("SCHED_FIFO", "SCHED_RR", "SCHED_DEADLINE"):
        fix = REALTIME_FIX[policy]
        # The capability reaches the measuring command only, after a set-up without it; the
        # whole study as root comes last.
        assert "AmbientCapabilities=CAP_SYS_NICE dvc repro" in fix
        assert "not pip" in fix and "`make setup sdk` as yourself" in fix
        assert "make study" not in fix.split("last,")[0] and "sudo make study" not in fix
    assert REALTIME_FIX["SCHED_FIFO"].index("rtprio") < REALTIME_FIX["SCHED_FIFO"].index(
        "systemd-run")


def test_a_suggested_host_change_names_its_revert(fingerprint):
    from rtstudy.measure import preflight

    fp = {**fingerprint, "realtime": {**fingerprint["realtime"], "SCHED_DEADLINE pinned": "EPERM"},
          "sched": {**fingerprint["sched"], "rt_runtime_us": 950000}}
    (pinned,) = [c for c in preflight.realtime_checks(fp) if c.name == "SCHED_DEADLINE pinned"]
    assert "revert: `sysctl -w kernel.sched_rt_runtime_us=950000`" in pinned.fix
