"""Reference data the statements carry: counterexamples and their stated numbers, in exact form.

One home for each number: the registry (:mod:`theory.registry`) uses these dicts as the params of
its conclusions (so THEOREMS.md and the oracles read them), and the symbolic derivations
(:mod:`theory.derivations`) recompute them from the same data. Entries are ints or ``"p/q"``
strings (exact); ``*_exact`` strings are SymPy expressions; rounded values carry their number of
decimals. Standard library only.
"""

from __future__ import annotations

#: T2: no constant transport although both heads are softmax-realisable (n = d = H = 2)
T2_COUNTEREXAMPLE: dict = {
    "A1": [["9/10", "1/10"], ["2/10", "8/10"]],
    "A2": [["1/2", "1/2"], ["1/2", "1/2"]],
    "T1": [[1, 0], [0, 1]],
    "T2": [[0, -1], [1, 0]],
    "B11": [["9/10", "-1/2"], ["1/2", "9/10"]],
    "B12": [["1/10", "-1/2"], ["1/2", "1/10"]],
    "miss_exact": "sqrt(2)*sqrt(5 - sqrt(17))/2",
    "miss": 0.662,
    "digits": 3,
}

#: T3: drop orthogonality but keep O_ji = O_ij^{-1} (3-cycle, weights 1/2): everything fails
T3_INVERSE_TRANSPORTS: dict = {
    "O12": [[1, "3/2"], [0, 1]],
    "O23": [[1, 0], [0, 1]],
    "O31": [[2, 0], [0, "1/2"]],
    "weight": "1/2",
    "negative_eigenvalue": -0.0268,
    "digits": 4,
}

#: T6 reference case Ex1 (one head, ring of n tokens): the wrapped Gaussian kernel (centre, width), the
#: transport, the symbol's selection and growth (rounded to ``sigma_digits``), the phase velocity
#: (``velocity_digits``) and the simulation that reproduces them (RK4 step ``dt``, perturbation)
T6_EX1: dict = {
    "n": 64,
    "centre": 4,
    "width": "3/2",
    "T": [[1, 0], [0, -3]],
    "k_star": 7,
    "sigma_re": 0.62926,
    "sigma_im": 0.67486,
    "sigma_digits": 5,
    "velocity": 0.982,
    "velocity_digits": 3,
    "dt": 0.01,
    "perturbation": 1e-10,
}

#: T6 reference case Ex3 (two heads, non-commuting transports): the symbol selects ``k_star``, a
#: per-head guess ``k_naive``
T6_EX3: dict = {
    "n": 64,
    "centres": [7, -4],
    "width": "3/2",
    "T": [[[-1, -3], [3, 0]], [[-1, -1], [3, -1]]],
    "k_star": 6,
    "k_naive": 3,
}

#: T3's instance witnesses: the exact values their texts state about their data (``spectrum``: every
#: eigenvalue of Δ once, SymPy strings where irrational or complex; the forms at the probe ``x`` the
#: instance carries)
T3_WITNESS_FACTS: dict = {
    "T3.a.w1": {"spectrum": [-1, 3], "form": -1, "dirichlet": 0, "correction": -1},
    "T3.b.w1": {"spectrum": [0, "3/2 + sqrt(3)*I/2", "3/2 - sqrt(3)*I/2"]},
    "T3.c1.w1": {"spectrum": [-1, 3]},
    "T3.c2.w1": {"spectrum": ["2/5 + 4*I/5", "2/5 - 4*I/5", "8/5 + 4*I/5", "8/5 - 4*I/5"]},
}

#: T3's weaker form needs a positive stationary π: without one the kernel is not the parallel sections
#: (``P`` stochastic with ``π = (1, 0)``, ``d = 1``, every transport 1 but ``O_22 = -1``)
T3_KERNEL_WITHOUT_POSITIVE_PI: dict = {"P": [[1, 0], ["1/2", "1/2"]], "O": [[[[1]], [[1]]], [[[1]], [[-1]]]]}
