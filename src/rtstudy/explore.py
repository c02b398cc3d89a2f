"""Looking at the data without measuring: one run, a condition's runs, two hosts overlaid, and
the widgets of ``notebooks/explore.ipynb`` that choose them.

Every figure is one function over what :mod:`rtstudy.data` returns, so a cell of the notebook
copies into any other::

    from rtstudy import data, explore
    name = data.EXPERIMENTS[1]                    # E2
    hosts = data.hosts()                          # every host with data, labelled readably
    tables = data.load(name)                      # the experiment's tables, every host
    p = explore.pick(name, tables, hosts)         # where to start: a run and a second host
    explore.run_figure(name, tables, p.host_id, p.condition, p.repetition, hosts)
    explore.condition_figure(name, tables, p.host_id, p.condition, hosts)
    explore.hosts_figure(name, tables, p.condition, p.host_ids, hosts)

A *condition* is a ``label`` of an experiment's tables (every factor but the repetition), a
*run* one ``repetition`` of it on one host. What is drawn of a run is the experiment's
``explore.VIEW`` (:class:`rtstudy.view.View`); the source's figure beside it, its
``explore.seed``. Nothing here measures: it reads data frames.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import ipywidgets as w
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
import pandas as pd
from IPython.display import display

from rtstudy import data, registry, viewplot
from rtstudy.report.figstyle import PALETTE, style
from rtstudy.view import View


@dataclass(frozen=True)
class Pick:
    """One run of one experiment, and the host to overlay it with (None: no other host)."""

    experiment: str
    host_id: str
    host_label: str
    condition: str
    repetition: int
    other_host_id: str | None = None
    other_host_label: str | None = None

    @property
    def host_ids(self) -> list[str]:
        """The run's host, then the other one if any: :func:`hosts_figure`'s ``host_ids``."""
        return [self.host_id] + ([self.other_host_id] if self.other_host_id else [])


def _view(experiment: str) -> View:
    return registry.get(experiment).explore.VIEW


def _rows(frame: pd.DataFrame, host_id: str | None = None, condition: str | None = None,
          repetition: int | None = None) -> pd.DataFrame:
    """The rows of ``frame`` of one host, condition and repetition (None: any)."""
    keep = pd.Series(True, index=frame.index)
    for column, value in (("host_id", host_id), ("label", condition), ("repetition", repetition)):
        if value is not None:
            if column not in frame:
                return frame.iloc[:0]
            keep &= frame[column] == value
    return frame[keep]


def _label(hosts: pd.DataFrame | None, host_id: str) -> str:
    """``host_id``'s readable label from :func:`rtstudy.data.hosts`'s table, else the id."""
    if hosts is None:
        return host_id
    match = hosts.loc[hosts["host_id"] == host_id, "label"]
    return str(match.iloc[0]) if len(match) else host_id


def _host_id(hosts: pd.DataFrame, host: str) -> str:
    """A host given by its id or its label, as an id; ValueError names the hosts there are."""
    match = hosts.loc[(hosts["host_id"] == host) | (hosts["label"] == host), "host_id"]
    if match.empty:
        raise ValueError(f"host {host!r}: expected a host id or label of data.hosts(): "
                         + "; ".join(hosts["label"]))
    return str(match.iloc[0])


def _hosts_with(observed: pd.DataFrame, hosts: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``hosts`` whose host has rows in ``observed``, in ``hosts``' order."""
    return hosts[hosts["host_id"].isin(set(observed.get("host_id", ())))]


def _runs(rows: pd.DataFrame, condition: str) -> list[int]:
    """The repetitions of ``condition`` among ``rows``, in order."""
    return sorted(int(r) for r in _rows(rows, condition=condition)["repetition"].unique())


def _untuned_first(with_data: pd.DataFrame) -> list[str]:
    """The host ids of ``with_data``, untuned first: the state the others are compared with."""
    return list(pd.concat([with_data[with_data["state"] == "untuned"],
                           with_data[with_data["state"] != "untuned"]])["host_id"])


def _condition(exp: registry.Experiment, tables: dict[str, pd.DataFrame], here: pd.DataFrame,
               condition: str | None, host_id: str) -> str:
    """``condition``, checked against those ``host_id`` ran (``here``, its rows); None: the
    experiment's ``default_condition``, else the first. ValueError names the ones there are."""
    conditions = sorted(here["label"].unique())
    if condition is None:
        condition = exp.explore.default_condition(tables)
        condition = condition if condition in conditions else conditions[0]
    if condition not in conditions:
        raise ValueError(f"condition {condition!r}: expected one that host {host_id} ran: "
                         + ", ".join(conditions))
    return condition


def _other_host(hosts: pd.DataFrame, with_data: pd.DataFrame, observed: pd.DataFrame,
                host_id: str, condition: str, other_host: str | None) -> str | None:
    """The host to overlay on ``host_id``'s run, as :func:`pick`'s ``other_host`` says; None:
    no other host. ``with_data``: the hosts with rows in ``observed``."""
    if other_host is not None:
        other_id = _host_id(hosts, other_host) if other_host else None
        if other_id == host_id:
            raise ValueError(f"other host {other_host!r}: expected a host other than the run's")
        return other_id
    others = [h for h in _untuned_first(with_data)
              if h != host_id and len(_rows(observed, h, condition))]
    # The same machine in another state first (its CPU shielded beside it untuned: the same
    # CPU model and SDK), then other machines: like with like before anything else.
    known = with_data.set_index("host_id")
    others.sort(key=lambda h: [known.at[h, k] != known.at[host_id, k]
                               for k in ("cpu_model", "sdk")]
                + [known.at[h, "state"] == known.at[host_id, "state"]])
    return others[0] if others else None


def pick(experiment: str, tables: dict[str, pd.DataFrame], hosts: pd.DataFrame,
         host: str | None = None, condition: str | None = None, repetition: int | None = None,
         other_host: str | None = None) -> Pick:
    """A run to look at, and a second host to overlay: what is given, the rest by default.

    Parameters
    ----------
    experiment : str
        A registered experiment (:data:`rtstudy.data.EXPERIMENTS`).
    tables : dict of str to DataFrame
        :func:`rtstudy.data.load`'s tables of ``experiment``.
    hosts : DataFrame
        :func:`rtstudy.data.hosts`' table (the labels).
    host : str, optional
        A host id or label; None: the first untuned host with data, else the first by label.
    condition : str, optional
        A ``label`` of the run's table; None: the experiment's ``default_condition``, else
        the first.
    repetition : int, optional
        None: the condition's first run on ``host``.
    other_host : str, optional
        A host id or label to overlay, other than ``host``; ``""``: none; None: a host that
        has ``condition``, if any: the same machine in another state first (the same CPU
        model and SDK version), then the next in the order above.

    Returns
    -------
    Pick

    Raises
    ------
    ValueError
        A host, condition or repetition with no data; the message lists what there is.
    """
    exp = registry.get(experiment)
    observed = tables[exp.explore.VIEW.table]
    with_data = _hosts_with(observed, hosts)
    if with_data.empty:
        raise ValueError(f"no {experiment} data from any host of data.hosts()")
    host_id = _host_id(hosts, host) if host is not None else _untuned_first(with_data)[0]
    if host_id not in set(with_data["host_id"]):
        raise ValueError(f"host {host!r} has no {experiment} data; these have: "
                         + "; ".join(with_data["label"]))
    here = _rows(observed, host_id)
    condition = _condition(exp, tables, here, condition, host_id)
    runs = _runs(here, condition)
    repetition = runs[0] if repetition is None else int(repetition)
    if repetition not in runs:
        raise ValueError(f"repetition {repetition}: {condition} on host {host_id} has runs "
                         + ", ".join(map(str, runs)))
    other_id = _other_host(hosts, with_data, observed, host_id, condition, other_host)
    return Pick(experiment, host_id, _label(hosts, host_id), condition, repetition, other_id,
                _label(hosts, other_id) if other_id else None)


def run_figure(experiment: str, tables: dict[str, pd.DataFrame], host_id: str, condition: str,
               repetition: int, hosts: pd.DataFrame | None = None) -> plt.Figure:
    """One run: its time series and histogram, beside the source's published figure.

    Parameters
    ----------
    experiment : str
        A registered experiment.
    tables : dict of str to DataFrame
        :func:`rtstudy.data.load`'s tables of ``experiment``.
    host_id : str
        The host that measured the run.
    condition : str
        The run's ``label``.
    repetition : int
        Which run of the condition.
    hosts : DataFrame, optional
        :func:`rtstudy.data.hosts`' table, for the host's readable label.

    Returns
    -------
    matplotlib.figure.Figure
        Panels: the run over time (where its table has a time), its histogram (where one
        says something), the source's figure with the run on it.
    """
    exp = registry.get(experiment)
    view = exp.explore.VIEW
    run = {name: _rows(t, host_id, condition, repetition) for name, t in tables.items()}
    rows = run[view.table]
    if rows.empty:
        raise ValueError(f"no {view.table} of run {repetition} of {condition!r} from host "
                         f"{host_id}; explore.pick() lists what there is")
    style()
    panels = ["series"] * bool(view.time) + ["histogram"] * view.histogram + ["seed"]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.9 * len(panels) + 1.2, 3.3),
                             layout="constrained", squeeze=False,
                             width_ratios=[1.6 if p == "series" else 1 for p in panels])
    for ax, panel in zip(axes[0], panels):
        if panel == "series":
            viewplot.series(ax, rows, view)
            ax.set_title("the run")
        elif panel == "histogram":
            edges = viewplot.bins(rows, view)
            for k, (name, g) in enumerate(viewplot.series_groups(rows, view)):
                viewplot.histogram(ax, g, view, PALETTE[k % len(PALETTE)], str(name), edges=edges)
            ax.set_title("histogram")
        else:
            note = exp.explore.seed(ax, run)
            ax.set_title("beside the source's published figure")
            if note:
                ax.text(0.5, 0.02, note, transform=ax.transAxes, ha="center", fontsize="x-small")
            # Below the panel: the run's value may fall anywhere among the seed's.
            ax.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.2))
        if panel != "seed" and ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="x-small")
    fig.suptitle(f"{condition}, run {repetition} · {_label(hosts, host_id)}", fontsize="medium")
    plt.close(fig)  # returned, not shown twice by the inline backend
    return fig


def condition_figure(experiment: str, tables: dict[str, pd.DataFrame], host_id: str,
                     condition: str, hosts: pd.DataFrame | None = None) -> plt.Figure:
    """Every run of one condition on one host, side by side on shared axes.

    Parameters
    ----------
    experiment, tables, host_id, condition, hosts
        As :func:`run_figure`.

    Returns
    -------
    matplotlib.figure.Figure
        One panel per repetition: its time series, or its histogram where the table has no time.
    """
    view = _view(experiment)
    rows = _rows(tables[view.table], host_id, condition)
    runs = sorted(int(r) for r in rows["repetition"].unique())
    if not runs:
        raise ValueError(f"no run of {condition!r} from host {host_id}")
    style()
    fig, axes = plt.subplots(1, len(runs), figsize=(min(2.6 * len(runs), 12.0) + 0.8, 2.9),
                             layout="constrained", squeeze=False, sharex=True, sharey=True)
    for ax, repetition in zip(axes[0], runs):
        g = rows[rows["repetition"] == repetition]
        if view.time:
            viewplot.series(ax, g, view)
        else:
            viewplot.histogram(ax, g, view, PALETTE[0])
        ax.set_title(f"run {repetition}", fontsize="small")
        ax.set_xlabel("")
        if ax is not axes[0][0]:
            ax.set_ylabel("")
    fig.supxlabel(view.time_label if view.time else view.value_label, fontsize="medium")
    if axes[0][0].get_legend_handles_labels()[0]:
        axes[0][0].legend(fontsize="x-small")
    fig.suptitle(f"{condition}: its {len(runs)} run(s) side by side · {_label(hosts, host_id)}",
                 fontsize="medium")
    plt.close(fig)
    return fig


def hosts_figure(experiment: str, tables: dict[str, pd.DataFrame], condition: str,
                 host_ids: list[str], hosts: pd.DataFrame | None = None) -> plt.Figure:
    """One condition on several hosts, overlaid: a run of each over time, and the histogram of
    all their runs as a share of observations.

    Parameters
    ----------
    experiment, tables, condition, hosts
        As :func:`run_figure`.
    host_ids : list of str
        The hosts to overlay, in colour order (:attr:`Pick.host_ids`).

    Returns
    -------
    matplotlib.figure.Figure
        A host without ``condition`` is named in the title, not drawn.
    """
    view = _view(experiment)
    observed = tables[view.table]
    present = {h: _rows(observed, h, condition) for h in host_ids}
    missing = [h for h, rows in present.items() if rows.empty]
    present = {h: rows for h, rows in present.items() if len(rows)}
    if not present:
        raise ValueError(f"no run of {condition!r} from hosts {host_ids}")
    style()
    panels = ["series"] * bool(view.time) + ["histogram"] * view.histogram
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels) + 1.0, 3.3),
                             layout="constrained", squeeze=False)
    edges = viewplot.bins(pd.concat(present.values()), view)
    for k, (host_id, rows) in enumerate(present.items()):
        color = PALETTE[k % len(PALETTE)]
        for ax, panel in zip(axes[0], panels):
            if panel == "series":
                first = rows["repetition"].min()
                viewplot.series(ax, rows[rows["repetition"] == first], view, color)
                ax.set_title(f"run {first} of each host, over time")
            else:
                viewplot.histogram(ax, rows, view, color, share=True, edges=edges)
                ax.set_title("every run of each host")
    # One entry per host (its colour), then one per series of a run (its line style).
    handles = [Line2D([], [], color=PALETTE[k % len(PALETTE)], lw=2) for k in range(len(present))]
    labels = [_label(hosts, h) for h in present]
    if view.series and view.time:
        names = sorted(pd.concat(present.values())[view.series].unique())
        styles = viewplot.LINESTYLES
        handles += [Line2D([], [], color="#404040", ls=styles[k % len(styles)])
                    for k in range(len(names))]
        labels += [str(n) for n in names]
    fig.legend(handles, labels, loc="outside lower center", fontsize="small")
    title = f"{condition}, hosts overlaid"
    if missing:
        title += " (no such run from " + ", ".join(_label(hosts, h) for h in missing) + ")"
    fig.suptitle(title, fontsize="medium")
    plt.close(fig)
    return fig


class Explorer:
    """The widgets of ``notebooks/explore.ipynb``: choose experiment, host, condition, run and
    a host to overlay; the three figures follow each choice. Tables load once per experiment.

    Parameters
    ----------
    profile : str, optional
        ``smoke``, ``default`` or ``seed``; None uses ``params.yaml``'s profile.
    root : Path, optional
        A data folder (:func:`rtstudy.data.sources`); None is this checkout's ``data/``.
    start : Pick, optional
        The choice shown first; None: :func:`pick`'s defaults for the first experiment with data.

    Attributes
    ----------
    box : ipywidgets.VBox
        What the notebook displays: the choices, then the figures.
    """

    KEYS = ("experiment", "host", "condition", "repetition", "other_host")

    def __init__(self, profile: str | None = None, root: Path | None = None,
                 start: Pick | None = None):
        self.profile, self.root = profile, root
        self.hosts = data.hosts(profile, root)
        self._tables: dict[str, dict[str, pd.DataFrame]] = {}
        measured = [e for e in data.EXPERIMENTS
                    if self.hosts["experiments"].str.contains(e, regex=False).any()]
        wide = w.Layout(width="46em")
        text = {"description_width": "7em"}
        self.choices = {
            "experiment": w.Dropdown(options=measured, description="experiment", style=text),
            "host": w.Dropdown(description="host", layout=wide, style=text),
            "condition": w.Dropdown(description="condition", layout=w.Layout(width="30em"),
                                    style=text),
            "repetition": w.Dropdown(description="run", style=text),
            "other_host": w.Dropdown(description="overlay host", layout=wide, style=text),
        }
        self.figures = [w.Output(), w.Output(), w.Output()]
        self._quiet = False
        c = self.choices
        self.box = w.VBox([w.HBox([c["experiment"], c["condition"], c["repetition"]]),
                           c["host"], c["other_host"], *self.figures])
        self.show(start or pick(measured[0], self.tables(measured[0]), self.hosts))
        for key, widget in c.items():
            widget.observe(lambda change, key=key: self._changed(key), names="value")

    def tables(self, experiment: str) -> dict[str, pd.DataFrame]:
        """:func:`rtstudy.data.load`'s tables of ``experiment``, loaded once."""
        if experiment not in self._tables:
            self._tables[experiment] = data.load(experiment, self.profile, root=self.root)
        return self._tables[experiment]

    def _changed(self, key: str) -> None:
        """Keep the choices up to ``key``; after it, keep each one still valid, else its default."""
        if self._quiet:
            return
        values = {k: self.choices[k].value for k in self.KEYS}
        experiment = values.pop("experiment")
        tables = self.tables(experiment)
        upstream = self.KEYS.index(key)
        kept = {k: values[k] for k in self.KEYS[1:upstream + 1]}
        for k in self.KEYS[upstream + 1:]:
            try:
                pick(experiment, tables, self.hosts, **kept, **{k: values[k]})
                kept[k] = values[k]
            except ValueError:
                pass  # not there for the new choice: its default
        self.show(pick(experiment, tables, self.hosts, **kept))

    def show(self, p: Pick) -> None:
        """Set the choices to ``p`` (and the options they offer), then draw its figures."""
        tables = self.tables(p.experiment)
        observed = tables[_view(p.experiment).table]
        with_data = _hosts_with(observed, self.hosts)
        here = _rows(observed, p.host_id)
        runs = _runs(here, p.condition)
        options = {
            "experiment": (self.choices["experiment"].options, p.experiment),
            "host": (list(zip(with_data["label"], with_data["host_id"])), p.host_id),
            "condition": (sorted(here["label"].unique()), p.condition),
            "repetition": ([(f"run {r}", r) for r in runs], p.repetition),
            "other_host": ([("none", "")] + [(lab, h) for lab, h in zip(with_data["label"],
                                                                        with_data["host_id"])
                                             if h != p.host_id], p.other_host_id or ""),
        }
        self._quiet = True
        try:
            for key, (offered, value) in options.items():
                self.choices[key].options = offered
                self.choices[key].value = value
        finally:
            self._quiet = False
        drawn = (run_figure(p.experiment, tables, p.host_id, p.condition, p.repetition, self.hosts),
                 condition_figure(p.experiment, tables, p.host_id, p.condition, self.hosts),
                 hosts_figure(p.experiment, tables, p.condition, p.host_ids, self.hosts))
        for out, fig in zip(self.figures, drawn):
            out.clear_output(wait=True)
            with out:
                display(fig)
