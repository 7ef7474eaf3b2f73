r"""Where each figure of a report goes and what its caption says (no plotting imports).

Every PNG the job writes is named ``<kind>_<model or variant>.png``; :func:`place` names the claim
whose section shows it and :func:`caption` gives the figure's title (the image's alt text) and one
line saying what to look at (shown under the image). A name of no known kind still gets a caption
(the file name), in a section of its own.
"""

from __future__ import annotations

__all__ = ["caption", "figure_file", "place", "safe_name"]


def safe_name(name: str) -> str:
    """``name`` as a file-name part: letters, digits, ``-``, ``_`` and ``.`` kept, the rest ``_``."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(name))


def figure_file(kind: str, model: str) -> str:
    """The file name of ``kind``'s figure (``e1``, ``e2``, ``lap``) of ``model``."""
    return f"{kind}_{safe_name(model)}.png"


#: file-name prefix → (claim whose section shows it, title, what to look at); ``{x}`` is the rest of
#: the name (the model, the dynamics or the data set)
KINDS: dict[str, tuple[str, str, str]] = {
    "e1_": (
        "E1",
        "E1 per-layer walk statistics of {x}, trained against random init",
        "look for the trained curves (blue plain, orange sink-aware) falling with depth and leaving the grey "
        "random-init bands (E1: the walk settles into a stable operator in deeper layers); a panel with "
        "text only is a statistic undefined for this model",
    ),
    "e2_": (
        "E2",
        "E2 transports of {x}: head defect, data-dependent gain defect, singular-value spectra",
        "look for the blue trained defects below the grey random-init ones and the spectra (right) flat "
        "near 1 (E2: transports near scaled isometries); the dashed baselines say whether the subspace "
        "(spectrum-matched) or the gains (flat) explain the data-dependent defect",
    ),
    "lap_": (
        "LAP",
        "LAP per layer for {x}: each T3 defect, trained against random init",
        "look for the blue trained curve below the grey random-init one (closer to a connection Laplacian) "
        "and for how far both stay from 0 (0 = the hypothesis holds; spectral radius: at most 1); a panel "
        "with text only is a statistic undefined for this model",
    ),
    "e5_phase_": (
        "E5",
        "E5 phase diagram, {x} dynamics: observed pattern per cell at onset and at saturation",
        "look for cells whose observed pattern differs from the linear prediction ('pred', outlined red) "
        "and for colours changing along a row or column: the component that changes there selects the "
        "pattern (E5)",
    ),
    "e6a_": (
        "E6",
        "E6(a) cyclic shift: held-out loss per Adam step and accuracy against data, per prior",
        "look for the aligned prior crossing the dotted loss threshold first and reaching the highest "
        "accuracy from the fewest sequences, the misaligned prior last (E6: a task-aligned prior speeds "
        "learning)",
    ),
    "e6b_": (
        "E6",
        "E6(b) gated positional self-attention on {x}: test accuracy per Adam step and against data",
        "look for convit_local (the locality prior) above the other arms in both panels (E6: an aligned "
        "prior learns faster and from fewer images)",
    ),
}


def _kind(fname: str) -> tuple[str, str] | None:
    stem = fname[:-4] if fname.lower().endswith(".png") else fname
    for prefix in sorted(KINDS, key=len, reverse=True):
        if stem.startswith(prefix):
            return prefix, stem[len(prefix) :]
    return None


def place(fname: str) -> str | None:
    """The claim whose section shows ``fname`` (None: a figure of no known kind)."""
    k = _kind(fname)
    return None if k is None else KINDS[k[0]][0]


def caption(fname: str, models=()) -> tuple[str, str]:
    """``(title, what to look at)`` of ``fname``, each one line without ``[``, ``]`` or line breaks
    (the title is the image's alt text). ``models``: the run's model names, so that a per-model figure
    names its model as typed (``synthetic:enc``, not the file name's ``synthetic_enc``)."""
    k = _kind(fname)
    if k is None:
        title, look = f"figure {fname}", "a figure of this run of no kind the report knows"
    else:
        prefix, rest = k
        typed = {safe_name(m): str(m) for m in models}
        x = typed.get(rest) or (rest.replace("_", " ") if prefix.startswith("e6") else rest)
        _, title, look = KINDS[prefix]
        title = title.format(x=x or "?")
    clean = str.maketrans({"[": "(", "]": ")", "\n": " ", "\r": " "})
    return title.translate(clean), look.translate(clean)
