"""THEOREMS.md's section for the statements registered outside connwalk (``connwalk theorems --render
PATH``): per statement its origin, hypotheses, conclusions (formulas rendered by ``sympy.latex``, the
predicate and tolerance rule), sharpness witnesses and notes — the very texts the gate checks."""

from __future__ import annotations

from collections.abc import Iterable


def statement_markdown(t, origin: str) -> str:
    """The Markdown section of one registered statement."""
    lines = [f"## {t.id} — {t.title}", "", f"*{t.kind.capitalize()}*, registered by {origin}.", ""]
    if t.hypotheses:
        lines += ["**Hypotheses**", ""]
        lines += [f"- **{h.name}** (`{h.id}`): {h.text}" for h in t.hypotheses]
        lines.append("")
    lines += ["**Conclusions**", ""]
    for k, c in enumerate(t.conclusions, 1):
        lines.append(f"{k}. (`{c.id}`) {c.text}")
        if c.predicate:
            rule = f"; tolerance: {c.tolerance_text}" if c.tolerance else ""
            lines.append(f"   - predicate `{c.predicate}`{rule}")
        if c.formulas:
            lines.append("   - formulas " + ", ".join(f"`{key}`: {f.markdown()}" for key, f in c.formulas.items()))
        if c.scope:
            lines.append(f"   - proof scope: **{c.scope}**")
    if t.sharpness:
        lines += ["", "**Sharpness**", ""]
        for sh in t.sharpness:
            what = "sharpness witness" if sh.sharp else "not sharp"
            lines.append(f"- {what} `{sh.id}` of `{sh.of}` (bound `{sh.bound}`, exact check `{sh.check}`): {sh.text}")
    if t.notes:
        lines += ["", "**Notes**", ""]
        lines += [f"- {note}" for note in t.notes]
    lines.append("")
    return "\n".join(lines)


def render_registered(records: Iterable) -> str:
    """The section for ``records`` (:class:`theory.registry.external.Registered`)."""
    records = list(records)
    head = [
        "# Registered statements",
        "",
        "Statements registered with connwalk's gate outside connwalk (`theory.api`; the entry-point group "
        "`connwalk.theorems` or `register()`), each checked by `connwalk theorems --check ID` and "
        "`pytest --theorem ID`.",
        "",
    ]
    if not records:
        head += ["(none registered)", ""]
    return "\n".join(head + [statement_markdown(r.theorem, r.origin) for r in records])
