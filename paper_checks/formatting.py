"""Number formatting of the report's tables (:mod:`paper_checks.report` and the sections it
renders, e.g. :func:`paper_checks.laplacian_check.report_section`): below both, so that neither
imports the other for it."""

from __future__ import annotations

import math

__all__ = ["fmt", "fmt_sig", "fmt_ci", "md_cell", "md_row", "md_rule"]


def fmt(x, digits: int = 3) -> str:
    if x is None:
        return "—"
    if isinstance(x, float) and not math.isfinite(x):
        return "—"
    ax = abs(x)
    if ax != 0 and (ax < 1e-3 or ax >= 1e4):
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}f}"


def fmt_sig(x, sig: int | None = None) -> str:
    """``x`` to ``sig`` significant digits (the accuracy of the solver that computed it); plain
    :func:`fmt` when ``sig`` is None."""
    if sig is None or x is None or (isinstance(x, float) and not math.isfinite(x)):
        return fmt(x)
    return f"{x:.{sig}g}"


def fmt_ci(ci, sig: int | None = None) -> str:
    return "—" if ci is None else f"[{fmt_sig(ci[0], sig)}, {fmt_sig(ci[1], sig)}]"


def md_cell(x) -> str:
    """``x`` as the text of one Markdown table cell: every ``|`` escaped (``\\|``; GitHub-flavoured
    Markdown splits cells at every unescaped pipe, code spans included) and line breaks made spaces."""
    text = " ".join(str(x).split("\n"))
    return text.replace("\\|", "|").replace("|", "\\|")


def md_row(cells) -> str:
    """One Markdown table row of ``cells`` (each through :func:`md_cell`)."""
    return "| " + " | ".join(md_cell(c) for c in cells) + " |"


def md_rule(n: int) -> str:
    """The delimiter row under a header of ``n`` cells."""
    return "|" + "---|" * n
