"""``rtstudy``: the study's command line (what DVC stages and the Makefile call).

    rtstudy params check [--no-host] validate params.yaml (every profile), then every measuring
                                    stage's host checks here (CPUs, admission, tools)
    rtstudy params show [STAGE]     print the resolved parameters of the current profile
    rtstudy params use PROFILE      switch params.yaml to smoke | default | seed
    rtstudy host fingerprint        write data/host/fingerprint.json (stable; DVC dependency)
    rtstudy host check              preflight: what this host allows, with fixes
    rtstudy host audit [--json] [--strict] [--root DIR]
                                    read-only audit of the host's real-time tuning (E4)
    rtstudy host plan --cpus LIST [--method M | --no-shield]
                                    boot line and runtime commands that isolate LIST
    rtstudy host apply --cpus LIST --yes [--method M | --no-shield] [--revert-file F]
                                    shield LIST at run time, recording how to revert it
                                    (M: auto | cpuset | affinity)
    rtstudy host revert [--revert-file F]
                                    restore what apply changed
    rtstudy host study [--cpus LIST] [--method M] [--yes] [--timeout-min T] [-- COMMAND ...]
                                    shield, run COMMAND (dvc repro), always revert
    rtstudy sdk build [VERSION ...] build the Debian 13 root or venv of its own of each SDK
                                    version that needs one (default: params.yaml's sdk versions
                                    of its profile); skip with the reason where this host cannot
    rtstudy sdk status              each known SDK version: where it runs here, its root or venv
    rtstudy data hosts [--profile P] every host with data, with a readable label and its source
    rtstudy data import SOURCE [--name N] [--remote R] [--rev REV]
                                    bring a colleague's datasets in as data/imported/<name>/
                                    (SOURCE: a folder, a git repository, remote:NAME or a
                                    DVC remote's URL), tracked by data/imported/<name>.dvc
    rtstudy plan power [--profile P] [--host H]
                                    E2: frames per condition each late-frame comparison
                                    needs to decide at 80 % power, from the data
    rtstudy data verify [--profile P] check every cell of every dataset: sidecar, schema,
                                    checksums; names each damaged file
    rtstudy data schema [EXPERIMENT] [--markdown | --update-readme]
                                    the columns of the tables rtstudy.data.load returns
                                    (kind, unit, meaning); --update-readme regenerates
                                    data/README.md's copy
    rtstudy run STAGE               run a measuring stage's notebook with papermill
    rtstudy report                  execute the report notebook and render report/report.html
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from rtstudy import params, paths, registry
from rtstudy.machine import host, shield
from rtstudy.measure import preflight
from rtstudy.sdks import sdk, sdkroot, sdkvenv


def _params_check(args) -> int:
    from rtstudy import stage
    from rtstudy.machine import placement

    data = params.load()
    params.validate(data)
    shared = placement.overlap(params.stage_config(params.CPUS, None, data))
    if shared:
        print(f"rtstudy: warning: {shared}", file=sys.stderr)
    if args.host:
        # Every measuring stage's host-aware checks (CPUs, admission, tools, privileges) before
        # the first one measures: `make study` runs this first, so a stage that would refuse
        # stops the study before any cell of another stage is measured.
        fp = host.current()
        problems = []
        for name in registry.REGISTRY:
            try:
                stage.preflight(name, params.stage_config(name, None, data), fp)
            except stage.PreflightError as exc:
                problems.append(str(exc))
        if problems:
            raise stage.PreflightError("\n\n".join(problems))
    print(f"params.yaml is valid (profile: {data['profile']})"
          + ("; every stage's host checks pass here" if args.host else ""))
    return 0


def _params_show(args) -> int:
    data = params.load()
    stages = [args.stage] if args.stage else list(params.groups())
    for stage in stages:
        cfg = params.stage_config(stage, args.profile, data)
        print(json.dumps({stage: cfg}, indent=2))
    return 0


def _params_use(args) -> int:
    params.use_profile(args.profile)
    print(f"params.yaml now uses profile {args.profile!r}; run `make study` to measure with it")
    return 0


def _host_fingerprint(args) -> int:
    record = host.write_fingerprint(Path(args.out) if args.out else None)
    print(f"host id {record['host_id']}; fingerprint in {args.out or paths.fingerprint_file()}")
    if not args.out:
        # The pipeline's first stage: the stages of this `dvc repro` are one session, the one
        # the current datasets hold when they are not closed yet (`make study` resumes it).
        from rtstudy.data import sessions
        from rtstudy.measure.harness import start_session

        profile = params.load().get("profile")
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
    print(audit.to_json(items) if args.json else audit.format_table(items), end="" if args.json else "\n")
    failing = ("FAIL", "WARN") if args.strict else ("FAIL",)
    return 1 if any(i.status in failing for i in items) else 0


def _shield(args) -> str | None:
    """The shield method asked for on the command line, None with --no-shield."""
    return None if getattr(args, "no_shield", False) else args.method


def _host_plan(args) -> int:
    from rtstudy.machine import tuning

    print(tuning.format_plan(tuning.plan(args.cpus, shield=_shield(args))))
    return 0


def _host_apply(args) -> int:
    from rtstudy.machine import tuning

    plan = tuning.plan(args.cpus, shield=_shield(args))
    for warning in plan.warnings:
        print(f"warning: {warning}")
    if args.yes:
        # What is about to change, before it changes.
        print("changing:\n" + "\n".join(f"  {c}" for c in plan.commands), flush=True)
    revert_file = Path(args.revert_file) if args.revert_file else tuning.default_revert_file()
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
        plan = tuned.check(cpus, args.method,
                           Path(args.revert_file) if args.revert_file else None)
        print(f"the shield can be applied: CPU {plan.cpu_list}, method {plan.shield} "
              f"(housekeeping CPU {tuning.format_cpu_list(plan.housekeeping)})")
        return 0
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    return tuned.run(cpus, command or ["dvc", "repro"], yes=args.yes, method=args.method,
                     revert_file=Path(args.revert_file) if args.revert_file else None,
                     timeout_min=args.timeout_min, only_this_process=args.only_this_process)


def _host_revert(args) -> int:
    from rtstudy.machine import tuning

    revert_file = Path(args.revert_file) if args.revert_file else tuning.default_revert_file()
    steps = tuning.revert(revert_file)
    print(tuning.format_steps(steps))
    print(f"reverted; the record is kept as {revert_file}.reverted")
    return 1 if any(s.error for s in steps) else 0


def _run(args) -> int:
    from rtstudy import stage

    if args.stage not in registry.REGISTRY:
        raise params.ParamError(f"{args.stage!r} is not a measuring stage; allowed: "
                                + ", ".join(registry.REGISTRY))
    cfg = params.stage_config(args.stage, args.profile)
    fp = host.current()
    stage.preflight(args.stage, cfg, fp)
    stage.environments(args.stage, cfg, sys.stderr)  # a missing SDK root is built here, first
    print(f"{args.stage}: profile {cfg['profile']}, host {fp['host_id']} -> "
          f"{paths.dataset_dir(args.stage, fp['host_id'], cfg['profile'])}", flush=True)
    out = stage.execute_notebook(stage.EXPERIMENT_NOTEBOOK, args.stage,
                                 {"experiment": args.stage, "profile": cfg["profile"],
                                  "progress": "terminal"})
    print(f"{args.stage}: done; lab book {out}")
    return 0


def _sdk_build(args) -> int:
    versions = args.versions or params.stage_config(params.SDK)["versions"]
    for version in versions:
        cannot = sdk.problems([version])
        if cannot:
            print(f"Holoscan {version}: not built here: " + "; ".join(cannot))
            continue
        env = sdk.environment(version, build=True)
        print(f"Holoscan {version}: {env.name}" + (f" {env.folder}" if env.folder else ""))
    return 0


def _sdk_status(args) -> int:
    for version, known in sdk.KNOWN.items():
        if sdk.installed() == version:
            print(f"Holoscan {version}: this venv ({known.distribution})")
            continue
        if known.python:
            folder = sdkvenv.venv_path(version, known.python)
            made, kind, record = (sdkvenv.manifest(folder), f"Python {known.python} venv",
                                  sdkvenv.MANIFEST)
        elif known.api > 4:
            folder = sdkroot.root_path(version)
            made, kind, record = sdkroot.manifest(folder), "Debian 13 root", sdkroot.MANIFEST
        else:
            print(f"Holoscan {version}: not installed (the venv holds {sdk.installed()})")
            continue
        damaged = sdkroot.damage(folder, record)
        if made:
            where = (f"{kind} {folder}, built {made['built_utc']} (glibc {made['glibc']}, "
                     f"Python {made['python']})")
        elif damaged:
            where = f"{kind}, not usable: {damaged}; `make sdk` removes it and builds it again"
        else:
            where = f"{kind}, not built (`make sdk`): {folder}"
        print(f"Holoscan {version}: {where}")
    return 0


def _data_schema(args) -> int:
    from rtstudy import data

    if args.update_readme:
        readme = paths.data_dir() / "README.md"
        text = readme.read_text()
        try:
            new = data.with_schema_docs(text)
        except ValueError as exc:
            print(f"rtstudy: {readme}: {exc}", file=sys.stderr)
            return 2
        if new != text:
            readme.write_text(new)
        print(f"{readme}: the schema {'regenerated' if new != text else 'was up to date'}")
        return 0
    names = [args.experiment] if args.experiment else list(registry.REGISTRY)
    if args.markdown:
        print("\n\n".join(data.schema_markdown(name) for name in (None, *names)))
        return 0
    for name in names:
        for table, spec in data.schema(name).items():
            print(f"{name}.{table}: {spec.rows}")
            width = max(map(len, spec.columns))
            for column, c in spec.columns.items():
                print(f"  {column:<{width}}  {c.kind:<5}  {c.unit:<9}  {c.meaning}")
            print()
    return 0


def _verified(profile: str | None) -> int:
    """How many cells of ``profile`` were checked; :class:`DataError` naming every damaged
    file of every host and session at once (:func:`rtstudy.data.verify`)."""
    from rtstudy import data

    checked, damaged = data.verify(profile)
    if damaged:
        raise data.DataError(f"damaged data in {len(damaged)} cells or dataset folders (each is "
                             "listed):\n  - " + "\n  - ".join(damaged))
    return checked


def _data_verify(args) -> int:
    checked = _verified(args.profile)
    print(f"{checked} cells checked: every sample file is the one that was measured")
    return 0


def _plan_power(args) -> int:
    from rtstudy import data
    from rtstudy.inference.stats import CI
    from rtstudy.report.study import report_host

    profile = params.stage_config(params.REPORT, args.profile)["profile"]
    host_id = args.host or report_host(profile)
    ci = CI.from_params(params.stage_config(params.REPORT, profile))
    # Each experiment whose analysis plans its own size (`power_plan`): E2's late frames.
    for exp in registry.every():
        if hasattr(exp.analysis, "power_plan"):
            ds = data.load_dataset(exp.name, host_id, profile)
            print(exp.analysis.power_plan(ds, params.stage_config(exp.name, profile), ci,
                                          host_id))
    return 0


def _report(args) -> int:
    from rtstudy import stage
    from rtstudy.report.render import render_html, staged

    profile = params.stage_config(params.REPORT, args.profile)["profile"]
    # Every file of every host before the notebook runs: damage stops the report with report/
    # as it was, and names all of it in one message.
    _verified(profile)
    # Figures, plots, metrics and HTML are written into a staging folder and swapped in only
    # when all succeeded: a failed render leaves the last report whole.
    with staged():
        executed = stage.execute_notebook(stage.REPORT_NOTEBOOK, stage.REPORT_NOTEBOOK,
                                          {"profile": profile})
        render_html(executed)
    print(f"report: {paths.report_html()}")
    return 0


def _data_hosts(args) -> int:
    from rtstudy import data

    table = data.hosts(args.profile)
    if table.empty:
        print(f"no data for profile {data._resolve_profile(args.profile)!r}: `make study`, "
              "`make pull` or `rtstudy data import`")
        return 0
    for row in table.itertuples():
        print(f"{row.host_id}  {row.label}\n    {row.cpu_model}; {row.experiments}")
    return 0


def _session_new(args) -> int:
    from rtstudy.data import sessions

    closed = sessions.new(args.profile)
    if not closed:
        print("no measured dataset to close here: `make study` measures the first session")
        return 0
    for folder in closed:
        print(f"closed: {folder}")
    print(f"{len(closed)} dataset(s) closed; `make study` now measures a new session of this "
          "host state beside them")
    return 0


def _session_list(args) -> int:
    from rtstudy.data import sessions

    print(sessions.describe(args.profile))
    return 0


def _data_import(args) -> int:
    from rtstudy.data import sharing

    result = sharing.import_dataset(args.source, name=args.name, remote=args.remote,
                                    rev=args.rev)
    if not result.added:
        print(f"nothing new in {result.source.describe()}: every dataset it holds is here "
              "already; nothing changed")
        for (experiment, host_id, profile), why in sorted(result.skipped.items()):
            print(f"  = {experiment} of {host_id} ({profile}): {why}")
        return 0
    print(f"imported {result.source.describe()} as data/imported/{result.name}/:")
    for (experiment, host_id, profile), cells in sorted(result.added.items()):
        print(f"  + {experiment} of {host_id} ({profile}): {cells} cell(s)")
    for (experiment, host_id, profile), why in sorted(result.skipped.items()):
        print(f"  = {experiment} of {host_id} ({profile}): left as it is, {why}")
    relative = result.dvc_file.relative_to(paths.root())
    print(f"Tracked by {relative} (it records the source). Next: `make report` shows these hosts "
          f"beside yours; `git add {relative} {relative.parent}/.gitignore && git commit` and "
          "`make push` share them.")
    return 0


METHOD_HELP = ("how to keep other tasks off the CPUs: cpuset (a cgroup v1 cpuset without load "
               "balancing), affinity (every movable thread's affinity, as `tuna isolate`; any "
               "host), auto (cpuset where a cgroup v1 cpuset is writable, else affinity)")


def _shield_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--method", choices=("auto", *shield.METHODS), default="auto",
                       help=METHOD_HELP)
    group.add_argument("--no-shield", action="store_true",
                       help="leave out the shield (IRQs, sysctl, governor, idle states only)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rtstudy", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("params", help="check, show or switch parameters")
    psub = p.add_subparsers(dest="action", required=True)
    ck = psub.add_parser("check", help="validate params.yaml, then run every measuring "
                         "stage's host checks here (what `make study` runs first)")
    ck.add_argument("--no-host", dest="host", action="store_false",
                    help="validate the file only, not against this host")
    ck.set_defaults(func=_params_check)
    show = psub.add_parser("show")
    show.add_argument("stage", nargs="?")
    show.add_argument("--profile", choices=params.PROFILES)
    show.set_defaults(func=_params_show)
    use = psub.add_parser("use")
    use.add_argument("profile", choices=params.PROFILES)
    use.set_defaults(func=_params_use)

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
    ap.add_argument("--revert-file",
                    help="where to record the previous values (default /var/lib/rtstudy/tuning-revert.json)")
    ap.set_defaults(func=_host_apply)
    rv = hsub.add_parser("revert", help="restore what `rtstudy host apply` changed")
    rv.add_argument("--revert-file",
                    help="the record written by apply (default /var/lib/rtstudy/tuning-revert.json)")
    rv.set_defaults(func=_host_revert)
    st = hsub.add_parser("study", help="shield CPUs, run the study there (dvc repro), always "
                                       "revert (make study-tuned)")
    st.add_argument("--cpus", help="CPUs to shield (default: the last online CPU; never CPU 0)")
    st.add_argument("--yes", action="store_true", help="change the host without asking")
    st.add_argument("--method", choices=("auto", *shield.METHODS), default="auto",
                    help=METHOD_HELP)
    st.add_argument("--timeout-min", type=float, default=90,
                    help="stop the command after this many minutes (default 90); the host is "
                         "reverted either way")
    st.add_argument("--revert-file",
                    help="where to record the previous values (default /var/lib/rtstudy/tuning-revert.json)")
    st.add_argument("--only-this-process", action="store_true",
                    help="for tests: move only this command's processes off the shield, no other")
    st.add_argument("--check", action="store_true",
                    help="only check that the shield can be applied (changes nothing)")
    st.add_argument("command", nargs=argparse.REMAINDER,
                    help="what to run shielded, after `--` (default: dvc repro)")
    st.set_defaults(func=_host_study)

    sd = sub.add_parser("sdk", help="the Holoscan SDK versions' environments")
    sdsub = sd.add_subparsers(dest="sdk_command", required=True)
    bd = sdsub.add_parser("build", help="build the Debian 13 root or venv of SDK versions that "
                          "need one")
    bd.add_argument("versions", nargs="*", help="default: params.yaml's sdk versions")
    bd.set_defaults(func=_sdk_build)
    sdsub.add_parser("status", help="where each known SDK version runs here").set_defaults(
        func=_sdk_status)

    dt = sub.add_parser("data", help="the datasets: list hosts, import a colleague's, "
                        "their tables' schema")
    dtsub = dt.add_subparsers(dest="data_command", required=True)
    hs = dtsub.add_parser("hosts", help="every host with data, with a readable label")
    hs.add_argument("--profile", choices=params.PROFILES)
    hs.set_defaults(func=_data_hosts)
    im = dtsub.add_parser("import", help="bring a colleague's datasets in beside yours, "
                          "as data/imported/<name>/ with its own .dvc file")
    im.add_argument("source", help="a folder holding datasets, a git repository (URL or clone), "
                    "remote:NAME (one of this checkout's DVC remotes) or a DVC remote's URL")
    im.add_argument("--name", help="the imported dataset's name (default: the source's "
                    "hostnames); importing again under one name refreshes it")
    im.add_argument("--remote", help="for a git source: the DVC remote of this checkout that "
                    "holds its data (default: the repository's own default remote)")
    im.add_argument("--rev", help="for a git source: the branch, tag or commit to read")
    im.set_defaults(func=_data_import)
    vf = dtsub.add_parser("verify", help="check every cell of every dataset (sidecars, schema, "
                          "checksums): names each damaged file")
    vf.add_argument("--profile", choices=params.PROFILES)
    vf.set_defaults(func=_data_verify)
    sc = dtsub.add_parser("schema", help="the columns of the tables rtstudy.data.load returns: "
                          "kind, unit, meaning")
    sc.add_argument("experiment", nargs="?", choices=registry.REGISTRY,
                    help="one experiment (default: every one)")
    how = sc.add_mutually_exclusive_group()
    how.add_argument("--markdown", action="store_true",
                     help="print Markdown tables, as data/README.md shows them")
    how.add_argument("--update-readme", action="store_true",
                     help="regenerate data/README.md's schema blocks from the code")
    sc.set_defaults(func=_data_schema)

    se = sub.add_parser("session", help="measuring sessions: list them, or close the current "
                        "one so that `make study` measures a new one beside it")
    sesub = se.add_subparsers(dest="session_command", required=True)
    for name, func, text in (("new", _session_new, "close every dataset's current session "
                              "(data/raw/<experiment>/<host>/<profile>/sessions/<session>/)"),
                             ("list", _session_list, "every session of every dataset")):
        one = sesub.add_parser(name, help=text)
        one.add_argument("--profile", choices=params.PROFILES)
        one.set_defaults(func=func)

    r = sub.add_parser("run", help="run a measuring stage (papermill)")
    r.add_argument("stage")
    r.add_argument("--profile", choices=params.PROFILES,
                   help="override params.yaml's profile for this run")
    r.set_defaults(func=_run)

    pl = sub.add_parser("plan", help="size the study from its own data")
    plsub = pl.add_subparsers(dest="plan_command", required=True)
    pw = plsub.add_parser("power", help="E2: the frames per condition each late-frame "
                          "comparison needs to decide at 80 %% power, from a host's data")
    pw.add_argument("--profile", choices=params.PROFILES)
    pw.add_argument("--host", help="the host id to plan from (default: the report's host)")
    pw.set_defaults(func=_plan_power)

    rep = sub.add_parser("report", help="render report/report.html from the data present")
    rep.add_argument("--profile", choices=params.PROFILES)
    rep.set_defaults(func=_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    from rtstudy.data import DataError
    from rtstudy.machine.tuning import TuningError
    from rtstudy.measure.harness import SweepError
    from rtstudy.report.render import ReportError
    from rtstudy.stage import PreflightError

    args = build_parser().parse_args(argv)
    try:
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, where it is caught, not at exit
        return code
    except (params.ParamError, PreflightError, SweepError, DataError, TuningError, sdk.SdkError,
            sdkroot.RootError, ReportError) as exc:
        print(f"rtstudy: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader stopped early (`rtstudy session list | head`): nothing left to say. Point
        # stdout at /dev/null so that Python's flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        # The harness has killed the running cell and removed its partial files. The
        # notebook client's abandoned task would add a traceback at exit: keep it quiet.
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        print("rtstudy: interrupted; completed cells are kept, and the next run resumes where "
              "this one stopped", file=sys.stderr)
        return 130
    except Exception as exc:
        # papermill wraps a notebook's exception; show the notebook's own message.
        if type(exc).__name__ == "PapermillExecutionError":
            print(f"rtstudy: the notebook failed: {exc.ename}: {exc.evalue}\n"
                  f"  the executed notebook in {paths.executed_dir()} has the traceback",
                  file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    raise SystemExit(main())
