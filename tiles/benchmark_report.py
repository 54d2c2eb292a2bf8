"""``perf_report``/``Benchmark``/``Mark``: sweep a benchmark function over x values and lines,
then print, save (CSV, PNG, results.html) and plot the table, as ``triton.testing`` does.

pandas and matplotlib are optional.  Without pandas the table is printed and written by
tiles itself (the same columns and CSV format) and ``return_df=True`` is an error that
says pandas is missing; without matplotlib there is no plot and stderr says why.  Plots
use the user's matplotlib backend (nothing is forced), so ``show_plots=True`` opens a
window wherever matplotlib can.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

TABLE_INDENT = 2


class Benchmark:
    """One sweep: rows are ``x_vals`` (for the ``x_names`` arguments), columns are ``line_vals``
    (for the ``line_arg`` argument) labelled ``line_names``; ``args`` are passed to every call."""

    def __init__(self, x_names: list[str], x_vals: list[Any], line_arg: str, line_vals: list[Any],
                 line_names: list[str], plot_name: str, args: dict[str, Any] | None = None,
                 xlabel: str = "", ylabel: str = "", x_log: bool = False, y_log: bool = False,
                 styles: list[tuple[str, str]] | None = None) -> None:
        self.x_names = list(x_names)
        self.x_vals = list(x_vals)
        self.line_arg = line_arg
        self.line_vals = list(line_vals)
        self.line_names = list(line_names)
        self.plot_name = plot_name
        self.args = dict(args or {})
        self.xlabel, self.ylabel = xlabel, ylabel
        self.x_log, self.y_log = x_log, y_log
        self.styles = styles


class Table:
    """A sweep's results: ``columns``/``rows`` as Triton's data frame has them (x values, then
    one column per line), plus the ``low``/``high`` values each line's function returned
    (None where it returned one number)."""

    def __init__(self, name: str, x_names: list[str], line_labels: list[str]) -> None:
        self.name = name
        self.x_names, self.line_labels = x_names, line_labels
        self.columns = [*x_names, *line_labels]
        self.rows: list[list[Any]] = []
        self.low: list[list[float | None]] = []
        self.high: list[list[float | None]] = []

    def add_diff_column(self) -> None:
        """Triton's ``diff_col``: with exactly two columns, a third one ``Diff`` = second - first."""
        if len(self.columns) == 2:
            self.columns.append("Diff")
            for row in self.rows:
                row.append(row[1] - row[0])

    def to_dataframe(self) -> Any:
        import pandas as pd
        return pd.DataFrame(self.rows, columns=self.columns)

    def to_string(self) -> str:
        """Like pandas' ``to_string()``: an index column, then right-aligned columns."""
        def cell(v: Any) -> str:
            if v is None:
                return "NaN"
            return f"{v:.6g}" if isinstance(v, float) and math.isfinite(v) else str(v)
        text = [["", *self.columns], *([str(i), *(cell(v) for v in r)] for i, r in enumerate(self.rows))]
        widths = [max(len(line[i]) for line in text) for i in range(len(text[0]))]
        return "\n".join((" " * TABLE_INDENT).join(v.rjust(w) for v, w in zip(line, widths)).rstrip()
                         for line in text)

    def write_csv(self, path: str, precision: int) -> None:
        """Pandas' ``to_csv(float_format=f"%.{precision}f", index=False)`` format."""
        def cell(v: Any) -> str:
            if v is None:
                return ""
            return f"{v:.{precision}f}" if isinstance(v, float) else str(v)
        with open(path, "w") as f:
            f.write(",".join(self.columns) + "\n")
            for row in self.rows:
                f.write(",".join(cell(v) for v in row) + "\n")


def _have(module: str) -> bool:
    import importlib.util
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # imported already, without a spec
        return True


def _split_result(result: Any, where: str) -> tuple[Any, Any, Any]:
    """A benchmark function's return: one number, or (value, low, high) as Triton takes it."""
    if isinstance(result, (list, tuple)):
        if len(result) != 3:
            raise ValueError(f"{where} returned {len(result)} values; return one number or "
                             "(value, min, max), e.g. do_bench(..., quantiles=[0.5, 0.2, 0.8])")
        return result[0], result[1], result[2]
    return result, None, None


class Mark:
    """A benchmark function with its sweeps (what ``perf_report`` returns); ``run()`` measures."""

    def __init__(self, fn: Callable[..., Any], benchmarks: Benchmark | list[Benchmark]) -> None:
        self.fn = fn
        self.benchmarks = benchmarks
        self.tables: list[Table] = []  # tiles only: the last run's tables, min and max included

    def _measure(self, bench: Benchmark, **kwargs: Any) -> Table:
        labels = [f"{name} ({bench.ylabel})" for name in bench.line_names]
        table = Table(bench.plot_name, list(bench.x_names), labels)
        for x in bench.x_vals:
            xs = list(x) if isinstance(x, (list, tuple)) else [x] * len(bench.x_names)
            if len(xs) != len(bench.x_names):
                raise ValueError(f"Benchmark {bench.plot_name!r}: x value {x!r} has {len(xs)} values for "
                                 f"{len(bench.x_names)} x_names {bench.x_names}")
            x_args = dict(zip(bench.x_names, xs))
            values, lows, highs = [], [], []
            for line in bench.line_vals:
                where = f"{getattr(self.fn, '__name__', 'the benchmark')}({x_args}, {bench.line_arg}={line!r})"
                value, low, high = _split_result(
                    self.fn(**x_args, **{bench.line_arg: line}, **bench.args, **kwargs), where)
                values.append(value)
                lows.append(low)
                highs.append(high)
            table.rows.append([*xs, *values])
            table.low.append(lows)
            table.high.append(highs)
        return table

    def run(self, show_plots: bool = False, print_data: bool = False, save_path: str = "",
            return_df: bool = False, **kwargs: Any) -> Any:
        """Measure every sweep; print the tables (``print_data``), write ``NAME.csv``, ``NAME.png``
        and ``results.html`` into ``save_path``, show the plots (``show_plots``).  Returns None,
        or with ``return_df`` the pandas DataFrame (a list of them for a list of benchmarks).
        ``diff_col`` and ``save_precision`` (default 6) are taken as Triton takes them; other
        keywords are passed to the benchmark function."""
        diff_col = bool(kwargs.pop("diff_col", False))
        save_precision = int(kwargs.pop("save_precision", 6))
        if return_df and not _have("pandas"):  # before measuring, not after
            raise ImportError("Mark.run(return_df=True) returns pandas DataFrames, and pandas is not "
                              "installed: `pip install pandas`, or leave return_df out (print_data=True "
                              "prints the table, save_path= writes CSV, Mark.tables keeps the results)")
        single = isinstance(self.benchmarks, Benchmark)
        benchmarks = [self.benchmarks] if isinstance(self.benchmarks, Benchmark) else list(self.benchmarks)
        self.tables = []
        pandas = _have("pandas")
        if save_path:
            os.makedirs(save_path, exist_ok=True)
        try:
            for bench in benchmarks:
                table = self._measure(bench, **kwargs)
                self.tables.append(table)
                if bench.plot_name and (show_plots or save_path):
                    _plot(bench, table, save_path, show_plots)
                if diff_col:
                    table.add_diff_column()
                if print_data:
                    print(bench.plot_name + ":")
                    print(table.to_dataframe().to_string() if pandas else table.to_string())
                if save_path:
                    csv = os.path.join(save_path, f"{bench.plot_name}.csv")
                    if pandas:
                        table.to_dataframe().to_csv(csv, float_format=f"%.{save_precision}f", index=False)
                    else:
                        table.write_csv(csv, save_precision)
        finally:
            if save_path:
                _write_html(save_path, [t.name for t in self.tables])
        if not return_df:
            return None
        frames = [t.to_dataframe() for t in self.tables]
        return frames[0] if single else frames


def perf_report(benchmarks: Benchmark | list[Benchmark]) -> Callable[[Callable[..., Any]], Mark]:
    """Decorator: ``@perf_report(Benchmark(...))`` turns a benchmark function into a ``Mark``."""
    return lambda fn: Mark(fn, benchmarks)


def _write_html(save_path: str, names: Sequence[str]) -> None:
    os.makedirs(save_path, exist_ok=True)
    with open(os.path.join(save_path, "results.html"), "w") as html:
        html.write("<html><body>\n")
        for name in names:
            html.write(f'<image src="{name}.png"/>\n')
        html.write("</body></html>\n")


def _plot(bench: Benchmark, table: Table, save_path: str, show: bool) -> None:
    """One line per column, a band between each line's min and max; saved, then shown."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"tiles.testing: matplotlib is not installed, so there is no plot for {bench.plot_name!r} "
              "(pip install matplotlib); the table is printed and saved as usual", file=sys.stderr)
        return
    fig, ax = plt.subplots()
    xs = [row[0] for row in table.rows]
    for i, label in enumerate(table.line_labels):
        color, style = bench.styles[i] if bench.styles else (None, None)
        column = len(table.x_names) + i
        ax.plot(xs, [row[column] for row in table.rows], label=label, color=color, ls=style)
        low, high = [r[i] for r in table.low], [r[i] for r in table.high]
        if all(v is not None for v in low + high):
            ax.fill_between(xs, low, high, alpha=0.15, color=color)
    ax.legend()
    ax.set_xlabel(bench.xlabel or bench.x_names[0])
    ax.set_ylabel(bench.ylabel)
    ax.set_xscale("log" if bench.x_log else "linear")
    ax.set_yscale("log" if bench.y_log else "linear")
    if save_path:
        os.makedirs(save_path, exist_ok=True)
        fig.savefig(os.path.join(save_path, f"{bench.plot_name}.png"))
    if show:
        plt.show()
    plt.close(fig)
