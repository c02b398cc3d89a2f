"""notebooks/explore.ipynb measures nothing, headless and in JupyterLab.

Both run on the reference dataset, pulled offline into a copy of the checkout (``dvc pull -r
reference``, what ``make pull`` falls back to), with measuring forbidden in the copy's
processes (:data:`rtstudy.measure.harness.NO_MEASURE_ENV`: a sweep, cell or stage raises before it
starts) and ``data/raw`` compared file by file (path, size, modification time) before and
after: 0 cells run. The figures' functions are tested on the same data.
"""
from __future__ import annotations

import functools
import json
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import end_group, free_port, screenshot_path, wait_for_lab
from rtstudy import data, explore, params, registry, stage
from rtstudy.measure import harness
from rtstudy.report import browser

# With nothing measuring beside it (conftest.py's lock), as since its papermill run hung in the
# Explorer cell while the other worker measured; the cause, a reply left unread in papermill's
# socket, was found later (rtstudy.sdks.kernelspec, docs/install.md).
pytestmark = [pytest.mark.pipeline, pytest.mark.alone]

BIN = Path(sys.executable).parent
NOTEBOOK = Path("notebooks") / "explore.ipynb"
SCREENSHOT_MAX_BYTES = 300_000
START_TIMEOUT_S = 90
RUN_ALL_TIMEOUT_S = 180


def run(args: list, cwd: Path, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, f"{args} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def run_or_dump_stacks(args: list, cwd: Path, env: dict, timeout: float = 300) -> None:
    """Run ``args`` (a Python that starts an rtstudy kernel and registers faulthandler for
    SIGUSR1); past ``timeout``, ask it and each kernel for their threads' stacks (SIGUSR1; the
    kernels': rtstudy.sdks.kernelspec's faulthandler) and fail with them, its own first."""
    import psutil

    proc = subprocess.Popen([str(a) for a in args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kernels = [p for p in psutil.Process(proc.pid).children(recursive=True)
                   if "ipykernel_launcher" in " ".join(p.cmdline())]
        # The client first: on 2026-12-07 a hang showed the kernel idle, the wait papermill's.
        proc.send_signal(signal.SIGUSR1)
        time.sleep(1)
        for kernel in kernels:
            kernel.send_signal(signal.SIGUSR1)
        time.sleep(3)
        end_group(proc)
        out, err = proc.communicate()
        first = min([i for i in (err.find("Current thread"), err.find("Thread 0x")) if i >= 0] or [0])
        pytest.fail(f"{args[0]} hung for {timeout:.0f} s; its stacks, then those of "
                    f"{len(kernels)} kernel(s), follow:\n{err[first:first + 40000]}")
    assert proc.returncode == 0, f"{args} failed:\n{out[-3000:]}\n{err[-3000:]}"


def raw_files(project: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``data/raw``: relative path → (size in bytes, mtime in ns)."""
    raw = project / "data" / "raw"
    return {p.relative_to(raw).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(raw.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def reference(reference_project):
    """conftest.py's copy of the checkout holding the reference dataset, where nothing may be
    measured: ``(project, env, profile)``, ``profile`` being the reference's, which params.yaml
    chooses."""
    dest, env = reference_project
    profiles = {p.name for p in (dest / "data" / "raw").glob("*/*/*") if p.is_dir()}
    assert len(profiles) == 1, f"the reference holds profiles {profiles}, expected one"
    profile = profiles.pop()
    assert params.load(dest / "params.yaml")["profile"] == profile
    return dest, dict(env, **{harness.NO_MEASURE_ENV: "1"}), profile


@pytest.fixture(scope="module")
def loaded(reference):
    """``loaded(name)``: the reference's tables of experiment ``name``, loaded once per module
    (E2's take some 20 s); the tests only read them."""
    project, _, profile = reference
    return functools.cache(lambda name: data.load(name, profile, root=project / "data"))


def test_measuring_is_refused_where_the_variable_is_set(monkeypatch, tmp_path):
    for allowed in ("", "0"):
        monkeypatch.setenv(harness.NO_MEASURE_ENV, allowed)
        harness.refuse_if_measuring_is_off("nothing")
    monkeypatch.setenv(harness.NO_MEASURE_ENV, "1")
    with pytest.raises(harness.MeasuringRefused, match=harness.NO_MEASURE_ENV):
        harness.run_sweep([], tmp_path / "sweep", None, order_seed=0)
    assert not (tmp_path / "sweep").exists()
    name = registry.REGISTRY[0]
    with pytest.raises(harness.MeasuringRefused, match=f"stage {name}"):
        every = params.read("smoke")
        stage.run_experiment(name, every[name], "terminal", every)


def test_the_study_executes_notebooks_over_unix_sockets_of_their_own(tmp_path):
    """stage.execute_notebook's kernel manager: the kernel listens on Unix sockets in a private
    folder, removed after, so two notebooks started at once cannot be handed one TCP port."""
    notebook = tmp_path / "probe.ipynb"
    notebook.write_text(json.dumps({
        "cells": [{"cell_type": "code", "id": "probe", "metadata": {}, "outputs": [],
                   "execution_count": None,
                   "source": ["import json; from ipykernel import get_connection_info; "
                              "print(get_connection_info())"]}],
        "metadata": {"kernelspec": {"name": "rtstudy", "display_name": "rtstudy",
                                    "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5}))
    out = tmp_path / "out.ipynb"
    run([BIN / "python", "-c", "import sys, papermill; papermill.execute_notebook(sys.argv[1], "
         "sys.argv[2], kernel_name='rtstudy', progress_bar=False, "
         "kernel_manager_class='rtstudy.sdks.kernelspec.IpcKernelManager')", notebook, out],
        tmp_path, None, timeout=120)
    info = json.loads("".join(json.loads(out.read_text())["cells"][0]["outputs"][0]["text"]))
    assert info["transport"] == "ipc" and "/rtstudy-kernel-" in info["ip"], info
    assert not Path(info["ip"]).parent.exists(), "the kernel's socket folder was left behind"


def outputs(notebook: dict, call: str) -> list[dict]:
    """The outputs of the one code cell whose source holds ``call``."""
    cells = [c for c in notebook["cells"]
             if c["cell_type"] == "code" and call in "".join(c["source"])]
    assert len(cells) == 1, f"{len(cells)} cells call {call}"
    return cells[0]["outputs"]


def test_explore_runs_headless_shows_the_headline_run_and_two_host_states_and_measures_nothing(
        reference, tmp_path):
    project, env, profile = reference
    before = raw_files(project)
    assert before, "the reference pull brought no data"
    out = tmp_path / "explore.ipynb"
    # papermill as the study runs notebooks (its kernel manager, whose client rereads its
    # sockets: a reply left unread once hung this run in the Explorer cell). Should a run hang
    # again, it fails with every thread's stack, the client's and the kernel's.
    run_or_dump_stacks([BIN / "python", "-c", "import faulthandler, signal, sys, papermill; "
                        "faulthandler.register(signal.SIGUSR1, all_threads=True); "
                        "papermill.execute_notebook("
                        "sys.argv[1], sys.argv[2], cwd=sys.argv[3], kernel_name='rtstudy', "
                        "progress_bar=False, kernel_manager_class='rtstudy.sdks.kernelspec.IpcKernelManager')",
                        project / NOTEBOOK, out, project / "notebooks"], project, env)
    assert raw_files(project) == before, "data/raw changed: explore.ipynb measured something"
    notebook = json.loads(out.read_text())
    errors = [o for c in notebook["cells"] for o in c.get("outputs", [])
              if o["output_type"] == "error"]
    assert not errors, errors
    # The defaults: E2's headline run (H2's headline point, the seed's real-time policy, its
    # first run) on one host, overlaid with the same machine in the reference's other state.
    hosts = data.hosts(profile, root=project / "data")
    tables = data.load("e2_rt_threads", profile, root=project / "data")
    expected = registry.get("e2_rt_threads").explore.default_condition(tables)
    assert expected and "SCHED_DEADLINE" in expected, expected
    shown = "".join(outputs(notebook, "explore.pick(")[0]["data"]["text/plain"])
    chosen = dict(re.findall(r"(\w+)='([^']*)'", shown))
    assert chosen["experiment"] == "e2_rt_threads" and chosen["condition"] == expected, shown
    runs = tables["frames"]
    first = runs.loc[(runs["host_id"] == chosen["host_id"]) & (runs["label"] == expected),
                     "repetition"].min()
    assert f"repetition={first}," in shown, shown
    states = hosts.set_index("host_id")["state"]
    # Untuned and shielded (of several hosts, SDKs and throttling states): an overlay exists.
    assert "untuned" in set(states) and any(s.startswith("shielded") for s in states), hosts
    assert states[chosen["host_id"]] == "untuned", shown
    assert states[chosen["other_host_id"]] != "untuned", shown  # the other state overlaid
    # ... of the same machine: its CPU model and SDK, so the overlay compares like with like.
    described = hosts.set_index("host_id")
    for same in ("cpu_model", "sdk"):
        assert described.at[chosen["host_id"], same] == described.at[chosen["other_host_id"], same]
    for call in ("explore.run_figure(", "explore.condition_figure(", "explore.hosts_figure("):
        assert any("image/png" in o.get("data", {}) for o in outputs(notebook, call)), call
    widget = outputs(notebook, "explore.Explorer(")
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in widget)


@pytest.mark.parametrize("name", registry.REGISTRY)
def test_every_experiment_draws_its_three_figures_from_the_reference(reference, loaded, name):
    project, _, profile = reference
    hosts = data.hosts(profile, root=project / "data")
    tables = loaded(name)
    # The reference holds a dataset of every experiment, its tables as declared (data/README.md).
    problems = data.schema_problems(name, tables)
    assert not problems, "\n".join(problems)
    p = explore.pick(name, tables, hosts)
    assert p.other_host_id and p.other_host_id != p.host_id
    figures = [explore.run_figure(name, tables, p.host_id, p.condition, p.repetition, hosts),
               explore.condition_figure(name, tables, p.host_id, p.condition, hosts),
               explore.hosts_figure(name, tables, p.condition, p.host_ids, hosts)]
    for fig in figures:
        assert fig.axes and all(ax.has_data() for ax in fig.axes if ax.get_visible())
    # The run's figure: its panels and the source's figure, titled with the host's label.
    assert p.host_label in figures[0].get_suptitle()
    assert figures[0].axes[-1].get_title() == "beside the source's published figure"


def test_pick_names_what_there_is_when_a_choice_has_no_data(reference, loaded):
    project, _, profile = reference
    hosts = data.hosts(profile, root=project / "data")
    name = registry.REGISTRY[0]
    tables = loaded(name)
    with pytest.raises(ValueError, match="expected a host id or label"):
        explore.pick(name, tables, hosts, host="no-such-host")
    with pytest.raises(ValueError, match="expected one that host"):
        explore.pick(name, tables, hosts, condition="no-such-condition")
    p = explore.pick(name, tables, hosts)
    with pytest.raises(ValueError, match="has runs"):
        explore.pick(name, tables, hosts, repetition=10_000)
    # A host by its label is the same host; "" overlays none.
    assert explore.pick(name, tables, hosts, host=p.host_label).host_id == p.host_id
    assert explore.pick(name, tables, hosts, other_host="").host_ids == [p.host_id]


def test_a_choice_keeps_the_others_that_still_hold_and_defaults_the_rest(reference, loaded):
    project, _, profile = reference
    root = project / "data"
    hosts = data.hosts(profile, root=root)
    ex = explore.Explorer(profile, root)
    c = ex.choices
    first, second = registry.REGISTRY[:2]
    assert c["experiment"].value == first and c["other_host"].value
    c["other_host"].value = ""  # no overlay
    c["condition"].value = [o for o in c["condition"].options if o != c["condition"].value][0]
    assert c["other_host"].value == "", "a new condition dropped the reader's 'none'"
    c["experiment"].value = second
    tables = loaded(second)
    expected = explore.pick(second, tables, hosts, other_host="")
    assert c["condition"].value == expected.condition
    assert c["repetition"].value == expected.repetition
    assert (c["host"].value, c["other_host"].value) == (expected.host_id, "")
    # Every choice offered has data: the hosts with data for the experiment (not those that
    # measured only another one), by their labels; the condition's runs.
    observed = tables[registry.get(second).explore.VIEW.table]
    with_data = hosts[hosts["host_id"].isin(set(observed["host_id"]))]
    assert {h for _, h in c["host"].options} == set(with_data["host_id"])
    assert [label for label, _ in c["host"].options] == list(with_data["label"])



@pytest.fixture()
def lab(reference, tmp_path):
    """``make lab`` in the reference copy on a free port with a token: ``(url of explore.ipynb,
    project)``. The app is exposed to the page (``window.jupyterapp``) so the test can run
    the notebook's cells as the Run menu does. The process group ends on teardown."""
    project, env, _ = reference
    port, token = free_port(), secrets.token_urlsafe(24)
    config = tmp_path / "jupyter-config"
    config.mkdir()
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"LabApp": {"expose_app_in_browser": True}}))
    # JupyterLab's settings and workspaces in the test's folder, not the user's; no news
    # notification over the screenshot.
    settings = tmp_path / "lab-settings"
    (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
     ).write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    env = dict(env, JUPYTER_TOKEN=token, JUPYTER_CONFIG_DIR=str(config),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "jupyter-runtime"),
               JUPYTERLAB_SETTINGS_DIR=str(settings),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "lab-workspaces"))
    for name in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
        env.pop(name, None)
    venv = Path(sys.prefix)
    log = tmp_path / "lab.log"
    with open(log, "w") as out:
        # The copy has no venv of its own: this one, taken as set up (-o its stamp).
        proc = subprocess.Popen(["make", "--no-print-directory", "-o", f"{venv}/.rtstudy-installed",
                                 "lab", f"VENV={venv}", f"LAB_PORT={port}"],
                                cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        wait_for_lab(proc, log, port, token, START_TIMEOUT_S)
        url = f"http://127.0.0.1:{port}/lab/tree/{NOTEBOOK.as_posix()}?token={token}"
        assert url in log.read_text(), "make lab does not print explore.ipynb's URL"
        yield url, project
    finally:
        end_group(proc)


# JupyterLab's notebook panel of explore.ipynb, once open (headless, no widget has the focus,
# so it is found among the main area's widgets rather than as the current one).
PANEL = ("(window.jupyterapp && Array.from(window.jupyterapp.shell.widgets('main'))"
         ".find(w => w.context && w.context.path.endsWith('explore.ipynb')))")
IDLE = f"(() => {{ const w = {PANEL}; const k = w && w.sessionContext.session" \
       " && w.sessionContext.session.kernel; return !!k && k.status === 'idle'; })()"
# Every code cell ran (an execution count each), the kernel is idle again, and the widgets'
# outputs hold the three figures.
DONE = (f"(() => {{ const w = {PANEL}; if (!w) return false;"
        " const code = w.content.widgets.filter(c => c.model.type === 'code');"
        " return code.every(c => c.model.executionCount !== null)"
        " && w.sessionContext.session.kernel.status === 'idle'"
        " && document.querySelectorAll('.widget-output img').length >= 3; })()")
ERRORS = (f"(() => {{ const w = {PANEL}; return w.content.widgets"
          " .filter(c => c.model.type === 'code')"
          " .flatMap(c => c.model.outputs.toJSON())"
          " .filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue); })()")
COUNT = "document.querySelectorAll({!r}).length"


def test_explore_renders_its_widgets_in_jupyterlab_and_measures_nothing(lab, tmp_path):
    try:
        browser.find_chromium()
    except browser.BrowserError as exc:
        pytest.skip(str(exc))
    url, project = lab
    before = raw_files(project)
    with browser.Browser(width=1400, height=1250) as page:
        page.open(url)
        page.wait_until(IDLE, START_TIMEOUT_S)
        # Run > Run All Cells, on the notebook made current first.
        page.evaluate(f"window.jupyterapp.shell.activateById({PANEL}.id), true")
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells'), true")
        page.wait_until(DONE, RUN_ALL_TIMEOUT_S)
        assert page.evaluate(ERRORS) == []
        # The five choices and the widgets' area, drawn by the widget manager in the page.
        assert page.evaluate(COUNT.format(".jupyter-widgets .widget-dropdown")) == 5
        assert page.evaluate(COUNT.format(".jupyter-widgets.widget-output")) >= 3
        # The screenshot: the widgets and the run's figure, without the side bar.
        page.evaluate("window.jupyterapp.shell.collapseLeft(), true")
        page.evaluate(f"{PANEL}.content.widgets.at(-1).node.scrollIntoView(), true")
        time.sleep(1)  # the scroll and the re-layout settle
        shot = page.screenshot(screenshot_path("explore.png", tmp_path))
        # A choice redraws: the next condition, picked as a reader would, changes the run's figure.
        page.evaluate("(() => { window.shown = document.querySelector('.widget-output img').src;"
                      " const s = document.querySelectorAll('.widget-dropdown select')[1];"
                      " s.selectedIndex = (s.selectedIndex + 1) % s.options.length;"
                      " s.dispatchEvent(new Event('change', {bubbles: true})); return true; })()")
        page.wait_until("(() => { const i = document.querySelector('.widget-output img');"
                        " return !!i && i.src !== window.shown; })()", RUN_ALL_TIMEOUT_S)
        errors = page.console_errors()
    assert raw_files(project) == before, "data/raw changed: the notebook measured something"
    assert errors == [], errors
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert 10_000 < shot.stat().st_size < SCREENSHOT_MAX_BYTES
