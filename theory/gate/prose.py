"""No claim in prose (the rule of :mod:`theory.registry.assertions`): a statement's free text asserts
nothing by itself. Outside its ``$...$`` formulas, ``«placeholders»`` and ``code``, a text carries no
assertion word (:data:`theory.statements.ASSERTION_WORDS`: they come from an
:class:`~theory.statements.Assertion` placeholder, checked by structure) and no count, rate or number (a
number a statement asserts is a param cited as ``«name»``, checked by its oracle or its sharpness
witness). :func:`prose_problems` lists every such word of a statement's texts; the gate fails on one.
"""

from __future__ import annotations

import re

from ..statements import ASSERTION_WORDS

SPAN = re.compile(r"\$[^$]*\$")
PLACEHOLDER = re.compile(r"«[^»]*»")
WORDS = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in ASSERTION_WORDS) + r")\b", re.IGNORECASE)


def assertion_words(template: str) -> list[str]:
    """The assertion words of ``template`` outside its ``$...$`` spans and ``«placeholders»``."""
    return WORDS.findall(PLACEHOLDER.sub(" ", SPAN.sub(" ", template)))


#: number words: a count or a multiple typed in prose ("two", "twice", "halves", "doubles", "a hundred")
_NUMBER_WORDS = [
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "hundred",
    "hundreds",
    "thousand",
    "thousands",
    "million",
    "millions",
    "billion",
    "dozen",
    "twice",
    "thrice",
    "half",
    "halves",
    "halved",
    "halving",
    "double",
    "doubles",
    "doubled",
    "doubling",
    "triple",
    "triples",
    "tripled",
    "quadruple",
    "percent",
    "percentage",
]
#: rate words ("linear", "exponentially"), except where the word names a thing, not a rate ("linearly
#: independent", "the linear prediction", "linear-window fit", "quadratic form")
_RATE_WORDS = [
    "linear",
    "linearly",
    "quadratic",
    "quadratically",
    "cubic",
    "cubically",
    "exponential",
    "exponentially",
    "logarithmic",
    "logarithmically",
    "polynomial",
    "polynomially",
]
_NOT_A_RATE = [
    "independent",
    "independence",
    "dependent",
    "prediction",
    "predictions",
    "theory",
    "window",
    "combination",
    "combinations",
    "algebra",
    "span",
    "map",
    "maps",
    "form",
    "forms",
    "operator",
    "operators",
    "part",
    "term",
    "terms",
    "regime",
    "stability",
    "response",
    "layer",
    "layers",
    "system",
    "systems",
    "dynamics",
    "function",
    "functions",
]
#: "one" / "zero" where they state a count or a value ("dimension one", "at most one", "sums to zero")
_COUNT_ONE = (
    r"\b(?:dimension|rank|exactly|at\s+most|at\s+least|more\s+than|fewer\s+than|less\s+than|sums?\s+to|"
    r"summing\s+to|equal\s+to|equals|order)\s+(?:one|zero)\b"
)
_COUNTS = re.compile(
    r"(?<![\w./\\-])\d+(?:\.\d+)?(?![\w])"  # a numeral, not part of an identifier (T3, float32, (c1), T3.2)
    r"|(?<![\w./\\-])\d+(?:\.\d+)?[kKMBT]\b"  # a count with its magnitude: 124M, 8B parameters
    r"|%"
    r"|\b(?:" + "|".join(_NUMBER_WORDS) + r")\b"
    r"|\b(?:" + "|".join(_RATE_WORDS) + r")\b(?![\s-]+(?:" + "|".join(_NOT_A_RATE) + r")\b)"
    r"|\b[OΘΩ]\s*\("  # big-O: O(n), Θ(n log n)
    r"|\b\w+-?fold\b|\btimes\s+(?:as|faster|slower|larger|smaller|more|less|wider)\b"
    r"|" + _COUNT_ONE,
    re.IGNORECASE,
)
_CODE = re.compile(r"`[^`]*`")


def count_words(template: str) -> list[str]:
    """The numerals and the number or rate words (a count, a multiple, a rate, a percentage) of
    ``template`` outside its ``$...$`` spans, ``«placeholders»`` and ``code``: a number a statement
    asserts lives in a structured field an oracle checks (a param, a :class:`theory.statements.Threshold`,
    a sharpness witness's data) and is cited as ``«name»``."""
    prose = _CODE.sub(" ", PLACEHOLDER.sub(" ", SPAN.sub(" ", template)))
    return [m.group(0) for m in _COUNTS.finditer(prose)]


def theorem_texts(t) -> list[tuple[str, str]]:
    """``(where, template)`` of every text of the statement ``t`` the prose rule reads: title,
    hypotheses and their witnesses, conclusions and their tolerance rules, notes (their templates),
    sharpness witnesses (the source quote, the paper's own words, is left out)."""
    out = [(f"{t.id}.title", t.title)]
    for hyp in t.hypotheses:
        out.append((hyp.id, hyp.statement))
        out += [(w.id, w.statement) for w in hyp.witnesses]
    out += [(c.id, c.statement) for c in t.conclusions]
    out += [(f"{c.id}.tolerance", c.tolerance) for c in t.conclusions if c.tolerance]
    out += [(f"{t.id}.note{q}", getattr(note, "statement", note)) for q, note in enumerate(t.notes)]
    out += [(sh.id, sh.statement) for sh in t.sharpness]
    return out


def prose_problems(t) -> list[tuple[str, str, str]]:
    """``(where, word, rule)`` for every assertion word (``"assertion"``) and every count, rate or
    number (``"count"``) typed in the free text of the statement ``t``."""
    out = []
    for where, text in theorem_texts(t):
        out += [(where, w, "assertion") for w in assertion_words(text)]
        out += [(where, w, "count") for w in count_words(text)]
    return out
