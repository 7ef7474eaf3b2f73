"""THEOREMS.md is generated from the registry and guarded: a theory change must be rendered."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from theory import formulas as F
from theory import render
from theory.registry import CLAIMS, CONVENTIONS, THEOREMS, get

REPO = Path(__file__).resolve().parents[2]


def test_committed_theorems_md_matches_rendering():
    path = REPO / "THEOREMS.md"
    assert path.is_file(), "THEOREMS.md missing: run `python -m theory.render`"
    assert path.read_text(encoding="utf-8") == render.render_markdown(), (
        "THEOREMS.md differs from the registry: run `python -m theory.render` and commit the result"
    )


def test_markdown_contains_every_statement():
    md = render.render_markdown()
    for t in THEOREMS:
        assert f"## {t.id} — {t.title}" in md
        for h in t.hypotheses:
            assert h.text in md
            for w in h.witnesses:
                assert w.text in md
        for c in t.conclusions:
            assert c.text in md
        for note in t.notes:
            assert note in md
        assert t.source.claim in md
        assert t.derivation.__name__ in md
    for c in CLAIMS:
        assert f"## {c.id} — {c.title}" in md
        for part in ("statement", "statistic", "null_model", "decision_rule"):
            assert c.filled(part) in md
    for conv in CONVENTIONS:
        assert conv.text in md
    assert render.render_markdown() == md  # deterministic


def test_numbers_in_statements_come_from_their_params():
    """Editing a param changes the rendered statement (THEOREMS.md and the tests read one value)."""
    c = get("T3").conclusion("T3.spectrum")
    assert "$[0, 2]$" in c.text
    assert "$[0, 1]$" in c.with_params(hi=1).text
    md = render.render_markdown([get("T3").with_conclusion(c.with_params(hi=1))], claims=[])
    assert "$[0, 1]$" in md and "$[0, 2]$" not in md.split("(`T3.spectrum`)")[1].split("\n")[0]
    f = get("T6").conclusion("T6.fourier")
    assert "\\zeta^{m} {a}_{h,m}" in f.text
    assert "\\zeta^{- m} {a}_{h,m}" in f.with_params(fourier=f.params["fourier"].edited(rhs=F.fourier(-1).rhs)).text
    assert "0.662" in get("T2").conclusion("T2.counterexample").text


def test_check_mode_exit_codes(tmp_path, capsys):
    out = tmp_path / "T.md"
    assert render.main(["--output", str(out), "--check"]) == 1  # missing file
    assert "out of date" in capsys.readouterr().err
    assert render.main(["--output", str(out), "--latex", str(tmp_path / "t.tex")]) == 0
    assert out.read_text(encoding="utf-8") == render.render_markdown()
    assert (tmp_path / "t.tex").read_text(encoding="utf-8") == render.render_latex()
    assert render.main(["--output", str(out), "--check"]) == 0
    out.write_text(out.read_text(encoding="utf-8").replace("Dirichlet", "Dirichlett", 1), encoding="utf-8")
    capsys.readouterr()
    assert render.main(["--output", str(out), "--check"]) == 1
    assert "Dirichlett" in capsys.readouterr().out  # the diff is shown


def test_module_cli_checks_the_committed_file():
    r = subprocess.run(
        [sys.executable, "-m", "theory.render", "--check"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "up to date" in r.stdout


def test_latex_rendering_is_well_formed():
    tex = render.render_latex()
    assert tex.startswith("\\documentclass") and tex.rstrip().endswith("\\end{document}")
    for t in THEOREMS:
        env = "lemma" if t.kind == "lemma" else "theorem"
        assert f"\\begin{{{env}}}[{t.id}:" in tex
        body = render.theorem_latex(t)
        assert body.count("\\begin{") == body.count("\\end{")
        # braces balance once escaped braces are removed
        plain = body.replace("\\{", "").replace("\\}", "")
        assert plain.count("{") == plain.count("}"), t.id
        # no raw markdown left outside math
        text = re.sub(r"\$[^$]*\$", "", body)
        assert "**" not in text and "`" not in text and "_" not in text.replace("\\_", ""), t.id
    assert render.theorem_markdown(t).startswith(f"## {t.id} — ")


def test_latex_text_escaping():
    assert render.latex_text("a_b $x_i$ **b** `c_d` 50%") == r"a\_b $x_i$ \textbf{b} \texttt{c\_d} 50\%"
    with pytest.raises(ValueError, match="unbalanced"):
        render.latex_text("cost $x")


def test_formulas_are_rendered_from_the_expressions_the_oracles_evaluate():
    """A formula in THEOREMS.md is ``sympy.latex`` of the registry's expression: editing the
    expression (here T3's ½, T1's operand order, T4's premise) changes the rendered statement."""
    import sympy as sp

    from theory import formulas as F

    def line(theorem, cid):
        md = render.render_markdown([theorem], claims=[])
        return md.split(f"(`{cid}`)")[1].split("\n")[0]

    t3 = get("T3")
    c = t3.conclusion("T3.dirichlet")
    f = c.params["dirichlet"]
    assert f is F.DIRICHLET and sp.latex(f.rhs, long_frac_ratio=0) in line(t3, c.id)
    assert "\\frac{1}{2}" in line(t3, c.id)
    edited = f.edited(rhs=f.rhs.xreplace({sp.S.Half: sp.S.One}))
    assert "\\frac{1}{2}" not in line(t3.with_conclusion(c.with_params(dirichlet=edited)), c.id)
    t1 = get("T1")
    w = t1.conclusion("T1.walk")
    assert "\\left(A \\otimes T\\right)" in line(t1, w.id)
    swapped = w.params["stacked"].edited(rhs=sp.KroneckerProduct(F.T_m, F.A_m) * F.Vec(F.X_m.T))
    assert "\\left(T \\otimes A\\right)" in line(t1.with_conclusion(w.with_params(stacked=swapped)), w.id)
    t4 = get("T4")
    b = t4.conclusion("T4.criterion")
    assert " if ${M}_{a,b} = {M}_{b,a}$" in line(t4, b.id)
    dropped = b.with_params(
        balance=b.params["balance"].edited(premises=()), stationary=b.params["stationary"].edited(premises=())
    )
    assert " if ${M}_{a,b} = {M}_{b,a}$" not in line(t4.with_conclusion(dropped), b.id)
