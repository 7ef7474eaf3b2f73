"""A witness's text is bound to its data: the data parts are placeholders filled from the witness's
``instance`` (``sympy.latex``), and a matrix still typed in a text must be one of the instance's."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from theory import render
from theory.registry import THEOREMS, get
from theory.statements import Witness, fill_data, latex_data, typed_data


def _witness(tid: str, wid: str) -> Witness:
    for h in get(tid).hypotheses:
        for w in h.witnesses:
            if w.id == wid:
                return w
    raise KeyError(wid)


def _with_witness(tid: str, w: Witness):
    """The entry ``tid`` with the witness of the same id replaced by ``w``."""
    t = get(tid)
    hyps = tuple(replace(h, witnesses=tuple(w if x.id == w.id else x for x in h.witnesses)) for h in t.hypotheses)
    return replace(t, hypotheses=hyps)


def _line(theorem, wid: str) -> str:
    md = render.render_markdown([theorem], claims=[])
    return md.split(f"necessity witness `{wid}`")[1].split("\n")[0]


def _exact(v):
    if isinstance(v, list):
        return [_exact(x) for x in v]
    return Fraction(v)


def _parts(v):
    """Every matrix inside nested instance data (a 2-level list of numbers), as Fractions."""
    if isinstance(v, list) and v and isinstance(v[0], list) and v[0] and not isinstance(v[0][0], list):
        yield _exact(v)
    elif isinstance(v, list):
        for x in v:
            yield from _parts(x)


def typed_mismatches(w: Witness) -> list:
    """The matrices typed in ``w``'s rendered text that are none of its instance's matrices."""
    data = [p for k, v in (w.instance or {}).items() if k != "kind" for p in _parts(v)]
    return [m for m in typed_data(w.text) if m not in data]


def _instance_witnesses():
    return [w for t in THEOREMS for h in t.hypotheses for w in h.witnesses if w.instance is not None]


def test_editing_a_witness_data_changes_its_rendered_text():
    w = _witness("T1", "T1.transport.w1")
    before = _line(get("T1"), w.id)
    assert latex_data([[1, 0], [3, 1]]) in before  # W_O as the instance holds it
    edited = w.with_data(W_O=[[1, 0], [2, 1]])
    after = _line(_with_witness("T1", edited), w.id)
    assert latex_data([[1, 0], [2, 1]]) in after and latex_data([[1, 0], [3, 1]]) not in after
    w2 = _witness("T2", "T2.convention.w1")
    assert "A^2_{12} = \\frac{1}{2}" in w2.text
    assert "A^2_{12} = \\frac{1}{3}" in w2.with_data(As=[w2.instance["As"][0], [["2/3", "1/3"], ["1/2", "1/2"]]]).text


def test_data_placeholders_render_exact_values():
    inst = {"P": [[0, 2], [2, 0]], "O": [[[[1]], [[1]]], [[[1]], [[1]]]], "pi": ["1/2", "1/2"]}
    assert fill_data("«pi»", inst) == "\\left(\\frac{1}{2}, \\frac{1}{2}\\right)"
    assert fill_data("«O[0][1]»", inst) == "1"  # a 1x1 block shown as its entry
    assert fill_data("«P»", inst) == "\\left[\\begin{matrix}0 & 2\\\\2 & 0\\end{matrix}\\right]"
    with pytest.raises(KeyError, match="cites «M»"):
        fill_data("«M»", inst)
    with pytest.raises(TypeError, match="exact"):
        latex_data([[0.5]])


def test_typed_matrices_in_witness_texts_are_the_instance_data():
    """A matrix still typed in a witness's text (e.g. T3.a.w1's ``P=[[0,2],[2,0]]``) must be one of
    the matrices of its instance: a typed number that contradicts the data fails here."""
    for w in _instance_witnesses():
        assert typed_mismatches(w) == [], (w.id, w.text)
    # every instance witness renders its data now (none types a matrix); the check above stays for a
    # matrix typed again, and test_a_typed_number_contradicting_the_data_is_caught shows it can fail
    assert {w.id for w in _instance_witnesses()} <= set(RENDERED)


def test_a_typed_number_contradicting_the_data_is_caught():
    w = Witness("X.w1", "$P=[[0,2],[2,0]]$: spec $\\{-1,3\\}$", instance={"kind": "walk", "P": [[0, 2], [2, 0]]})
    assert typed_mismatches(w) == []
    bad = replace(w, statement="$P=[[0,1],[2,0]]$: spec $\\{-1,3\\}$")
    assert typed_mismatches(bad) == [[[0, 1], [2, 0]]]
    frac = Witness(
        "X.w2", "$R = [[\\frac35,-\\frac45],[\\frac45,\\frac35]]$", instance={"R": [["3/5", "-4/5"], ["4/5", "3/5"]]}
    )
    assert typed_mismatches(frac) == []
    assert typed_mismatches(replace(frac, statement="$R = [[\\frac35,\\frac45],[\\frac45,\\frac35]]$"))
    with pytest.raises(ValueError):
        typed_data("$[[a, 1], [0, 1]]$")  # a typed entry that is not a number cannot be checked


#: witnesses whose data is rendered from the instance (no matrix typed in their text)
RENDERED = (
    "T1.factorisation.w1",
    "T1.transport.w1",
    "T2.heads.w1",
    "T2.convention.w1",
    "T3.a.w1",
    "T3.b.w1",
    "T3.c1.w1",
    "T3.c2.w1",
    "T4.softmax.w1",
    "T5.softmax.w1",
    "T5.reversible.w1",
    "T5.involution.w1",
    "T5.involution.w2",
    "T6.H3.w1",
)


@pytest.mark.parametrize("wid", RENDERED)
def test_converted_witnesses_render_their_data(wid):
    w = _witness(wid.split(".")[0], wid)
    assert "«" in w.statement and typed_data(w.statement) == [], w.statement
    assert "«" not in w.text


def test_a_note_renders_its_case_data():
    """A note's numbers are placeholders filled from its params (T6's reference cases: theory.cases),
    so editing the case data changes the text THEOREMS.md shows; the template keeps the placeholders."""
    from theory.cases import T6_EX1
    from theory.statements import Note

    ex1 = get("T6").notes[2]
    assert isinstance(ex1, Note) and "«k_star»" in ex1.statement and "«k_star»" not in ex1
    assert f"k^* = {T6_EX1['k_star']}$" in ex1 and f"c = {T6_EX1['velocity']}$" in ex1
    edited = Note(ex1.statement, {**ex1.params, "k_star": 8, "velocity": 0.5})
    assert "k^* = 8$" in edited and "c = 0.5$" in edited and f"k^* = {T6_EX1['k_star']}$" not in edited
    assert ex1 in render.render_markdown()
    with pytest.raises(KeyError, match="cites «k_star»"):
        Note(ex1.statement, {k: v for k, v in ex1.params.items() if k != "k_star"})
