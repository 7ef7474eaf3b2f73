"""Sharpness witnesses: for every interval, inequality and dimension the registry states, exact data
on which the bound is attained (:class:`theory.statements.Sharpness`), checked exactly by
:mod:`theory.oracles.sharpness` against the bound as the statement states it (its params): widening
a bound (``SCALED_HI = 1 + 2 s``, ``hi = 3``, ``|z - 1| ≤ 2``, ``rank ≤ 2 d_h``, ``n ≥ 3`` for the
causal mask) makes the witness miss the stated end and ``pytest --theorem <id>`` fail
(``tests/theory/test_sharpness.py``). A bound that is not sharp says so (``sharp=False``) and its
witness shows the best constant found.
"""

from __future__ import annotations

from ..statements import Sharpness

_SWAP = [[0, 1], [1, 0]]
_HALF = [["1/2", "1/2"], ["1/2", "1/2"]]

SHARPNESS: dict[str, tuple[Sharpness, ...]] = {
    "T2": (
        Sharpness(
            "T2.note0.sharp",
            "T2.note0",
            "rank",
            "the rank bound is attained: $W_{V} = «W_V»$, $W_{O} = «W_O»$ (full-rank projections, $d_h = «d_h»$) "
            "have a transport of rank exactly $d_h$",
            {"kind": "heads", "W_V": [[1, 0, 0], [0, 1, 0]], "W_O": [[1, 0], [0, 1], [0, 0]], "d_h": 2},
            "rank_attained",
        ),
        Sharpness(
            "T2.note0.narrow.sharp",
            "T2.note0",
            "narrow",
            "the width bound is the best one: at $d = «d»$ the full-width head $W_{V} = «W_V»$, $W_{O} = «W_O»$ "
            "(the first width the bound leaves out) is orthogonal, so a bound admitting it would make the note false",
            {"kind": "heads", "d": 2, "W_V": [[1, 0], [0, 1]], "W_O": [[1, 0], [0, 1]]},
            "narrow_sharp",
        ),
    ),
    "T3": (
        Sharpness(
            "T3.spectrum.sharp",
            "T3.spectrum",
            "lo,hi",
            "both ends are attained: the swap walk $P = «P»$ with $O = «O[0][1]»$ has the spectrum of "
            "$\\Delta$ exactly the ends (the constant section and the alternating one)",
            {"kind": "walk", "P": _SWAP, "O": [[[[1]], [[1]]], [[[1]], [[1]]]]},
            "spectrum_ends",
        ),
        Sharpness(
            "T3.scaled.sharp",
            "T3.scaled",
            "scaled_spectrum",
            "both ends are attained for every scale: the swap walk $P = «P»$ with the transports $s$ times "
            "$Q = «Q[0][1]»$, at $s = «s»$ and at $s = «s2»$, has the spectrum of $\\Delta$ exactly the ends",
            {"kind": "walk", "P": _SWAP, "Q": [[[[1]], [[1]]], [[[1]], [[1]]]], "s": "1/2", "s2": 3},
            "spectrum_ends",
        ),
        Sharpness(
            "T3.flat.sharp",
            "T3.flat",
            "kernel_dim",
            "the kernel dimension is attained exactly: the irreducible walk $P = «P»$ with the flat connection of "
            "the frames $R_1 = «R[0]»$, $R_2 = «R[1]»$ has a kernel of that dimension",
            {
                "kind": "flat",
                "P": [["1/2", "1/2"], ["1/4", "3/4"]],
                "R": [[[1, 0], [0, 1]], [["3/5", "-4/5"], ["4/5", "3/5"]]],
            },
            "kernel_dim",
        ),
        Sharpness(
            "T3.note0.sharp",
            "T3.note0",
            "disk",
            "the disk is attained on its boundary: the directed cycle $P = «P»$ with $O = «O[0][1]»$ (stochastic, "
            "orthogonal, uniform stationary $\\pi$, not reversible) has every eigenvalue of $\\Delta$ at the radius",
            {"kind": "walk", "P": [[0, 1, 0], [0, 0, 1], [1, 0, 0]], "O": [[[[1]]] * 3] * 3},
            "disk_boundary",
        ),
    ),
    "T4": (
        Sharpness(
            "T4.causal.sharp",
            "T4.causal",
            "size",
            "the size bound is the best one: one token fewer than the smallest size it admits, the causal "
            "support is symmetric (a single token: reversible, its one weight balanced by any positive $\\pi$), at that size it is not",
            {"kind": "causal"},
            "size_sharp",
        ),
        Sharpness(
            "T4.softmax.not_sharp",
            "T4.softmax",
            "size",
            "not sharp: below the size bound every T4 conclusion still holds (any pair of tokens is affinely "
            "collinear, so every softmax attention on a pair is reversible), e.g. $X = «X»$, $M = «M»$ "
            "(not symmetric); the bound is where the criterion has content: at its smallest size $X = «X_at»$, "
            "$M = «M_at»$ gives a non-reversible attention; the best constant found for the conclusions is one token",
            {
                "kind": "softmax",
                "X": [[1, 0], [0, 2]],
                "M": [[1, 2], [0, 1]],
                "X_at": [[1, 0], [0, 1], [1, 1]],
                "M_at": [[0, 1], [-1, 0]],
            },
            "size_not_needed",
            sharp=False,
        ),
    ),
    "T5": (
        Sharpness(
            "T5.laplacian.sharp",
            "T5.laplacian",
            "lo,hi",
            "both ends are attained: $A = «A»$ with $T = «T»$ (the eigenvalue $\\lambda = «lam»$ of $A$ against "
            "each eigenvalue of $T$) has the spectrum of $\\Delta$ reaching both ends",
            {"kind": "sha", "A": _HALF, "T": [[1, 0], [0, -1]], "lam": 1},
            "spectrum_ends",
        ),
        Sharpness(
            "T5.non_orthogonal.sharp",
            "T5.non_orthogonal",
            "lo,hi",
            "both ends are attained by a non-orthogonal involution: $A = «A»$, $T = «T»$",
            {"kind": "sha", "A": _HALF, "T": [[1, 1], [0, -1]]},
            "spectrum_ends",
        ),
    ),
    "T6": (
        Sharpness(
            "T6.note1.sharp",
            "T6.note1",
            "dominant",
            "the growth bound is attained away from the constant mode: one head with the kernel $a = «a»$ (offsets "
            "from the token on the ring) and $T = «T»$ grows at the wavenumber $k = «k»$ exactly as fast as at the "
            "constant mode",
            {"kind": "symbol", "a": ["1/2", 0, "1/2", 0], "T": [[2, 0], [0, -1]], "k": 2},
            "dominant_attained",
        ),
    ),
}
