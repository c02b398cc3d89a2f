"""The commands over the datasets: ``rtstudy data …`` (hosts, import, verify, schema),
``rtstudy session …``, ``rtstudy plan power`` and ``rtstudy report``."""
from __future__ import annotations

import sys

from rtstudy import params, paths, registry


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


def _verified(profile: str | None) -> int:
    """How many cells of ``profile`` were checked; :class:`DataError` naming every damaged
    file, missing or added cell of every host and session at once (:func:`rtstudy.data.verify`).
    A dataset nothing vouches for is named on stderr, not refused."""
    from rtstudy import data

    checked, damaged, unvouched = data.verify(profile)
    if damaged:
        raise data.DataError(f"damaged data in {len(damaged)} cells, files or dataset folders "
                             "(each is listed):\n  - " + "\n  - ".join(damaged))
    for folder in unvouched:
        print(f"NOTE: {folder}: no seal, and dvc.lock records none of its files: nothing "
              "vouches for it (measured before seals, never committed with `dvc commit`)",
              file=sys.stderr)
    return checked


def _data_verify(args) -> int:
    checked = _verified(args.profile)
    print(f"{checked} cells checked: every dataset holds the cells and files that were "
          "measured, each as it was measured")
    return 0


def _data_published(args) -> int:
    from rtstudy.data import sharing
    missing = sharing.unpublished(repair=args.repair)
    if not missing:
        print("data/reference/ holds every file of dvc.lock's raw data: commit it with dvc.lock")
        return 0
    print(f"data/reference/ lacks {len(missing)} file(s) of dvc.lock's raw data, e.g.:",
          *missing[:5], sep="\n  ", file=sys.stderr)
    print("Fix: " + ("removed the incomplete directory objects; push again: "
                     if args.repair else "") + "make publish-reference", file=sys.stderr)
    return 1


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


def _plan_power(args) -> int:
    from rtstudy import data
    from rtstudy.inference.stats import CI
    from rtstudy.report.study import report_host

    every = params.read(args.profile)
    host_id = args.host or report_host(every.profile)
    ci = CI.from_params(every[params.REPORT])
    # Each experiment whose analysis plans its own size (`power_plan`): E2's late frames.
    for exp in registry.every():
        if hasattr(exp.analysis, "power_plan"):
            cfg = every[exp.name]
            ds = data.load_dataset(exp.name, host_id, every.profile, cfg=cfg)
            print(exp.analysis.power_plan(ds, cfg, ci, host_id))
    return 0


def _report(args) -> int:
    from rtstudy import stage
    from rtstudy.report import figstyle
    from rtstudy.report.render import ReportError, render_html, staged

    every = params.read(args.profile)  # read once, handed down to the notebook
    profile = every.profile
    try:
        figstyle.formats()  # a wrong $RTSTUDY_FIGURE_FORMATS, named before minutes of rendering
    except ValueError as exc:
        raise ReportError(f"{exc}; nothing was rendered") from None
    # Every file of every host before the notebook runs: damage stops the report with report/
    # as it was, and names all of it in one message.
    _verified(profile)
    # Figures, plots, metrics and HTML are written into a staging folder and swapped in only
    # when all succeeded: a failed render leaves the last report whole.
    with staged():
        executed = stage.execute_notebook(stage.REPORT_NOTEBOOK, stage.REPORT_NOTEBOOK,
                                          {"profile": profile, "configs": every.as_dict()})
        render_html(executed)
    print(f"report: {paths.report_html()}")
    return 0


def add_data(sub) -> None:
    """Declare ``rtstudy data`` and its sub-commands on ``sub``, ``rtstudy``'s sub-parsers."""
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
    pb = dtsub.add_parser("published", help="check that data/reference/ holds every file of "
                          "dvc.lock's raw data (make publish-reference runs it)")
    pb.add_argument("--repair", action="store_true",
                    help="remove each incomplete directory object, so the next push sends its "
                    "files")
    pb.set_defaults(func=_data_published)
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


def add_session(sub) -> None:
    """Declare ``rtstudy session new | list`` on ``sub``, ``rtstudy``'s sub-parsers."""
    se = sub.add_parser("session", help="measuring sessions: list them, or close the current "
                        "one so that `make study` measures a new one beside it")
    sesub = se.add_subparsers(dest="session_command", required=True)
    for name, func, text in (("new", _session_new, "close every dataset's current session "
                              "(data/raw/<experiment>/<host>/<profile>/sessions/<session>/)"),
                             ("list", _session_list, "every session of every dataset")):
        one = sesub.add_parser(name, help=text)
        one.add_argument("--profile", choices=params.PROFILES)
        one.set_defaults(func=func)


def add_plan(sub) -> None:
    """Declare ``rtstudy plan power`` on ``sub``, ``rtstudy``'s sub-parsers."""
    pl = sub.add_parser("plan", help="size the study from its own data")
    plsub = pl.add_subparsers(dest="plan_command", required=True)
    pw = plsub.add_parser("power", help="E2: the frames per condition each late-frame "
                          "comparison needs to decide at 80 %% power, from a host's data")
    pw.add_argument("--profile", choices=params.PROFILES)
    pw.add_argument("--host", help="the host id to plan from (default: the report's host)")
    pw.set_defaults(func=_plan_power)


def _protocol(args) -> int:
    from rtstudy import protocol
    from rtstudy.report import preregistration

    text, now = preregistration.document(), preregistration.digest()
    frozen = protocol.FROZEN[protocol.VERSION]
    if now != frozen.sha256:
        print(f"rtstudy: the protocol's text hashes to {now}, not to v{protocol.VERSION}'s frozen "
              f"{frozen.sha256}: a criterion, word or size changed since its freeze. Freeze it "
              "as a new version (rtstudy.protocol.FROZEN) instead of editing this one",
              file=sys.stderr)
        return 2
    if args.write:
        paths.protocol_file().write_text(text)
        print(f"{paths.protocol_file()}: protocol v{protocol.VERSION} written")
        return 0
    print(text, end="")
    return 0


def add_report(sub) -> None:
    """Declare ``rtstudy report`` on ``sub``, ``rtstudy``'s sub-parsers."""
    rep = sub.add_parser("report", help="render report/report.html from the data present")
    rep.add_argument("--profile", choices=params.PROFILES)
    rep.set_defaults(func=_report)
    pro = sub.add_parser("protocol", help="print the frozen protocol with its version and hash")
    pro.add_argument("--write", action="store_true", help="write it to docs/protocol.md")
    pro.set_defaults(func=_protocol)
