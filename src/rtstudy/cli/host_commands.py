"""``rtstudy host …``: this host's fingerprint, preflight and read-only audit, and the CPU shield
that ``make study-tuned`` applies and always reverts (:mod:`rtstudy.machine.tuning`)."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from rtstudy import params, paths
from rtstudy.machine import host, shield
from rtstudy.measure import preflight

METHOD_HELP = ("how to keep other tasks off the CPUs: cpuset (a cgroup v1 cpuset without load "
               "balancing), affinity (every movable thread's affinity, as `tuna isolate`; any "
               "host), auto (cpuset where a cgroup v1 cpuset is writable, else affinity)")
REVERT_DEFAULT = "(default /var/lib/rtstudy/tuning-revert.json)"


def _host_fingerprint(args) -> int:
    record = host.write_fingerprint(Path(args.out) if args.out else None)
    print(f"host id {record['host_id']}; fingerprint in {args.out or paths.fingerprint_file()}")
    if not args.out:
        # The pipeline's first stage: the stages of this `dvc repro` are one session, the one
        # the current datasets hold when they are not closed yet (`make study` resumes it).
        from rtstudy.data import sessions
        from rtstudy.measure.harness import start_session

        profile = params.read().profile
        session = start_session(resume=sessions.open_ids(record["host_id"], profile))
        print(("resuming" if "resumed_utc" in session else "measuring") +
              f" session {session['id']}")
    return 0


def _host_check(args) -> int:
    fp = host.current()
    checks = preflight.preflight(fp, paths.data_dir() / "raw")
    checks += preflight.realtime_checks(fp) + [preflight.tools_check()]
    print(f"host id {fp['host_id']}: {fp['cpu']['count']} × {fp['cpu']['model']}, kernel "
          f"{fp['kernel']['release']} ({fp['kernel']['preempt_model']}), "
          f"sched_rt_runtime_us {fp['sched']['rt_runtime_us']}")
    print(preflight.format_checks(checks))
    return 1 if any(c.status == "FAIL" for c in checks) else 0


def _host_audit(args) -> int:
    from rtstudy.machine import audit

    items = audit.audit(Path(args.root))
    print(audit.to_json(items) if args.json else audit.format_table(items),
          end="" if args.json else "\n")
    failing = ("FAIL", "WARN") if args.strict else ("FAIL",)
    return 1 if any(i.status in failing for i in items) else 0


def _shield(args) -> str | None:
    """The shield method asked for on the command line, None with --no-shield."""
    return None if getattr(args, "no_shield", False) else args.method


def _revert_file(args) -> Path | None:
    """The record of previous values asked for with --revert-file; None: the default one."""
    return Path(args.revert_file) if args.revert_file else None


def _host_plan(args) -> int:
    from rtstudy.machine import tuning

    print(tuning.format_plan(tuning.plan(args.cpus, shield=_shield(args),
                                         rt_throttling=args.rt_throttling)))
    return 0


def _host_apply(args) -> int:
    from rtstudy.machine import tuning

    plan = tuning.plan(args.cpus, shield=_shield(args), rt_throttling=args.rt_throttling)
    for warning in plan.warnings:
        print(f"warning: {warning}")
    if args.yes:
        # What is about to change, before it changes.
        print("changing:\n" + "\n".join(f"  {c}" for c in plan.commands), flush=True)
    revert_file = _revert_file(args) or tuning.default_revert_file()
    steps = tuning.apply(plan, revert_file=revert_file, yes=args.yes,
                         tasks=[os.getpid()] if args.only_this_process else None)
    print(tuning.format_steps(steps))
    if revert_file.exists():
        again = f" --revert-file {revert_file}" if args.revert_file else ""
        print(f"previous values recorded in {revert_file}; undo with `rtstudy host revert{again}`")
    # EINVAL/EIO on some IRQs is normal (per-CPU and managed IRQs); anything else is a failure.
    failed = [s for s in steps if s.error and not s.target.startswith("/proc/irq/")]
    return 1 if failed else 0


def _host_study(args) -> int:
    from rtstudy.machine import tuning
    from rtstudy.measure import tuned

    cpus = args.cpus or tuned.default_cpus()
    if args.check:
        plan = tuned.check(cpus, args.method, _revert_file(args), args.rt_throttling)
        print(f"the shield can be applied: CPU {plan.cpu_list}, method {plan.shield} "
              f"(housekeeping CPU {tuning.format_cpu_list(plan.housekeeping)})")
        return 0
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    return tuned.run(cpus, command or ["dvc", "repro"], yes=args.yes, method=args.method,
                     revert_file=_revert_file(args), timeout_min=args.timeout_min,
                     only_this_process=args.only_this_process,
                     rt_throttling=args.rt_throttling)


def _host_revert(args) -> int:
    from rtstudy.machine import tuning

    revert_file = _revert_file(args) or tuning.default_revert_file()
    steps = tuning.revert(revert_file)
    print(tuning.format_steps(steps))
    print(f"reverted; the record is kept as {revert_file}.reverted")
    return 1 if any(s.error for s in steps) else 0


def _method_option(parser) -> None:
    """--method, on a parser or on a group of mutually exclusive options."""
    parser.add_argument("--method", choices=("auto", *shield.METHODS), default="auto",
                        help=METHOD_HELP)


def _rt_throttling_option(parser) -> None:
    from rtstudy.machine.tuning import RT_THROTTLING

    parser.add_argument("--rt-throttling", choices=RT_THROTTLING, default=RT_THROTTLING[0],
                        help="lift (default): kernel.sched_rt_runtime_us = -1 while tuned; keep: "
                             "leave it as it is (real-time threads throttled as untuned)")


def _shield_options(parser: argparse.ArgumentParser) -> None:
    _rt_throttling_option(parser)
    group = parser.add_mutually_exclusive_group()
    _method_option(group)
    group.add_argument("--no-shield", action="store_true",
                       help="leave out the shield (IRQs, sysctl, governor, idle states only)")


def add_host(sub) -> None:
    """Declare ``rtstudy host`` and its sub-commands on ``sub``, ``rtstudy``'s sub-parsers."""
    h = sub.add_parser("host", help="fingerprint and preflight of this host")
    hsub = h.add_subparsers(dest="action", required=True)
    fp = hsub.add_parser("fingerprint")
    fp.add_argument("--out", help="file to write (default data/host/fingerprint.json)")
    fp.set_defaults(func=_host_fingerprint)
    hsub.add_parser("check").set_defaults(func=_host_check)
    au = hsub.add_parser("audit", help="read-only audit of this host's real-time tuning (E4)")
    au.add_argument("--json", action="store_true", help="print JSON instead of a table")
    au.add_argument("--strict", action="store_true", help="exit 1 on WARN too, not only on FAIL")
    au.add_argument("--root", default="/",
                    help="read /proc and /sys under this directory instead of / (a copied host)")
    au.set_defaults(func=_host_audit)
    _add_shielding(hsub)


def _add_shielding(hsub) -> None:
    """Declare ``rtstudy host plan | apply | revert | study`` on ``hsub``, the host
    sub-parsers."""
    pl = hsub.add_parser("plan", help="what isolating CPUs takes: boot line and runtime commands")
    pl.add_argument("--cpus", required=True, help="CPUs to isolate, e.g. 2-3 or 1,3")
    _shield_options(pl)
    pl.set_defaults(func=_host_plan)
    ap = hsub.add_parser("apply", help="apply a plan's runtime settings (needs --yes), "
                                       "recording first how to revert them")
    ap.add_argument("--cpus", required=True, help="CPUs to isolate, e.g. 2-3 or 1,3")
    ap.add_argument("--yes", action="store_true", help="really change this host's settings")
    _shield_options(ap)
    ap.add_argument("--only-this-process", action="store_true",
                    help="for tests: move only this command's own process off the shield")
    ap.add_argument("--revert-file", help=f"where to record the previous values {REVERT_DEFAULT}")
    ap.set_defaults(func=_host_apply)
    rv = hsub.add_parser("revert", help="restore what `rtstudy host apply` changed")
    rv.add_argument("--revert-file", help=f"the record written by apply {REVERT_DEFAULT}")
    rv.set_defaults(func=_host_revert)
    st = hsub.add_parser("study", help="shield CPUs, run the study there (dvc repro), always "
                                       "revert (make study-tuned)")
    st.add_argument("--cpus", help="CPUs to shield (default: the last online CPU; never CPU 0)")
    st.add_argument("--yes", action="store_true", help="change the host without asking")
    _method_option(st)
    _rt_throttling_option(st)
    st.add_argument("--timeout-min", type=float, default=90,
                    help="stop the command after this many minutes (default 90); the host is "
                         "reverted either way")
    st.add_argument("--revert-file", help=f"where to record the previous values {REVERT_DEFAULT}")
    st.add_argument("--only-this-process", action="store_true",
                    help="for tests: move only this command's processes off the shield, no other")
    st.add_argument("--check", action="store_true",
                    help="only check that the shield can be applied (changes nothing)")
    st.add_argument("command", nargs=argparse.REMAINDER,
                    help="what to run shielded, after `--` (default: dvc repro)")
    st.set_defaults(func=_host_study)
