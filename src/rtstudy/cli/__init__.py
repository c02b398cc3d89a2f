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
    rtstudy protocol [--write]      print the frozen protocol (questions, yardsticks, criteria,
                                    words, sizes) with its version and hash; --write writes
                                    docs/protocol.md
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys

from rtstudy import params, paths, registry
from rtstudy.cli import data_commands, host_commands
from rtstudy.machine import host
from rtstudy.sdks import builds, sdk, sdkroot, sdkvenv


def _params_check(args) -> int:
    from rtstudy import stage
    from rtstudy.machine import placement

    every = params.read()
    shared = placement.overlap(every[params.CPUS])
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
                stage.preflight(name, every[name], fp, every[params.CPUS])
            except stage.PreflightError as exc:
                problems.append(str(exc))
        if problems:
            raise stage.PreflightError("\n\n".join(problems))
    print(f"params.yaml is valid (profile: {every.profile})"
          + ("; every stage's host checks pass here" if args.host else ""))
    return 0


def _params_show(args) -> int:
    every = params.read(args.profile)
    for stage in [args.stage] if args.stage else list(every):
        print(json.dumps({stage: every.group(stage)}, indent=2))
    return 0


def _params_use(args) -> int:
    params.use_profile(args.profile)
    print(f"params.yaml now uses profile {args.profile!r}; run `make study` to measure with it")
    return 0


def _run(args) -> int:
    from rtstudy import stage

    if args.stage not in registry.REGISTRY:
        raise params.ParamError(f"{args.stage!r} is not a measuring stage; allowed: "
                                + ", ".join(registry.REGISTRY))
    # params.yaml read and checked once, the host fingerprinted once: both handed down to
    # the notebook (its lab book records them) and from it to the sweep.
    configs = params.read(args.profile)
    cfg, fp = configs[args.stage], host.current()
    stage.preflight(args.stage, cfg, fp, configs[params.CPUS])
    stage.environments(args.stage, cfg, sys.stderr, configs[params.SDK])  # a root built first
    print(f"{args.stage}: profile {cfg['profile']}, host {fp['host_id']} -> "
          f"{paths.dataset_dir(args.stage, fp['host_id'], cfg['profile'])}", flush=True)
    out = stage.execute_notebook(stage.EXPERIMENT_NOTEBOOK, args.stage,
                                 {"experiment": args.stage, "profile": cfg["profile"],
                                  "progress": "terminal", "configs": configs.as_dict(),
                                  "here": fp})
    print(f"{args.stage}: done; lab book {out}")
    return 0


def _sdk_build(args) -> int:
    versions = args.versions or params.read()[params.SDK]["versions"]
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


def _add_params(sub) -> None:
    """Declare ``rtstudy params check | show | use`` on ``sub``, ``rtstudy``'s sub-parsers."""
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


def _add_sdk(sub) -> None:
    """Declare ``rtstudy sdk build | status`` on ``sub``, ``rtstudy``'s sub-parsers."""
    sd = sub.add_parser("sdk", help="the Holoscan SDK versions' environments")
    sdsub = sd.add_subparsers(dest="sdk_command", required=True)
    bd = sdsub.add_parser("build", help="build the Debian 13 root or venv of SDK versions that "
                          "need one")
    bd.add_argument("versions", nargs="*", help="default: params.yaml's sdk versions")
    bd.set_defaults(func=_sdk_build)
    sdsub.add_parser("status", help="where each known SDK version runs here").set_defaults(
        func=_sdk_status)


def _add_run(sub) -> None:
    """Declare ``rtstudy run STAGE`` on ``sub``, ``rtstudy``'s sub-parsers."""
    r = sub.add_parser("run", help="run a measuring stage (papermill)")
    r.add_argument("stage")
    r.add_argument("--profile", choices=params.PROFILES,
                   help="override params.yaml's profile for this run")
    r.set_defaults(func=_run)


def build_parser() -> argparse.ArgumentParser:
    """``rtstudy``'s parser: each group of sub-commands is declared beside its handlers, in the
    order ``rtstudy --help`` lists them."""
    parser = argparse.ArgumentParser(prog="rtstudy", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_add_params, host_commands.add_host, _add_sdk, data_commands.add_data,
                data_commands.add_session, _add_run, data_commands.add_plan,
                data_commands.add_report):
        add(sub)
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
            builds.BuildError, ReportError) as exc:
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
