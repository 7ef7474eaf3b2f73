"""The conventions every statement, derivation and test uses (rendered first in THEOREMS.md): each
formula is a SymPy expression (:mod:`theory.formulas.walks`, :mod:`theory.formulas`), the very object
the named oracle evaluates or the named statement cites."""

from __future__ import annotations

from .. import formulas as _F
from ..formulas import walks as _FW
from ..statements import Convention

CONVENTIONS: tuple[Convention, ...] = (
    Convention(
        "Tokens are the rows of «X» (row $i$ is $x_i^\\top$, «x_i»): a vector field on the token-position graph.",
        {"X": _FW.SHAPE_X, "x_i": _FW.SHAPE_TOKEN},
        ("t1_walk",),
    ),
    Convention(
        "Stacking is **token-major**: «stacking» (`X.reshape(-1)`), «entry»; so block $(i,j)$ of an operator «W» acts from token $j$ to token $i$. Feature-major stacking turns «kron» into «kron_feature» (L1: «token_major» but «feature_major»); mixing the stackings is the classic silent bug.",
        {
            "stacking": _FW.STACKING,
            "entry": _FW.STACK_ENTRY,
            "W": _FW.SHAPE_W,
            "kron": _FW.KRON_AT,
            "kron_feature": _FW.KRON_TA,
            "token_major": _F.L1_TOKEN_MAJOR,
            "feature_major": _F.L1_FEATURE_MAJOR,
        },
        ("t1_walk", "walk_dirichlet", "walk_spectrum_interval"),
    ),
    Convention(
        "A **connection walk** has a walk matrix «nonneg» and transports «O_ij»: «walk»; its matrix «W» has the blocks «block»; the generator is «generator» («Delta»).",
        {
            "nonneg": _FW.WALK_NONNEG,
            "O_ij": _FW.SHAPE_O,
            "walk": _FW.WALK,
            "W": _FW.SHAPE_W,
            "block": _FW.WALK_BLOCK,
            "generator": _FW.GENERATOR,
            "Delta": _FW.GENERATOR_MATRIX,
        },
        ("heads_stochastic", "walk_spectrum_interval"),
        unevaluated="the formulas `walk`, `generator`, `Delta` by `tests/theory/test_formulas_walks.py::test_dense_walk_is_the_conventions_walk` against the dense $W$",
    ),
    Convention(
        "Transports act on **column vectors**. With torch `nn.Linear` weights (out × in: «W_V», «W_O») the single-head transport is «layout»; in row-vector code (`Y = A X W_v W_o`) the transport is the transpose of the row-vector product.",
        {"W_V": _FW.SHAPE_W_V, "W_O": _FW.SHAPE_W_O, "layout": _FW.LAYOUT},
        ("t1_transport_layout",),
    ),
    Convention(
        "Attention $A(X)$ depends on the input: softmax attention is «softmax» ($\\mu$: the mask; without one «no_mask»); every identity is a factorisation, the walk taken at the input it multiplies, not linearity in $X$.",
        {"softmax": _FW.SOFTMAX, "no_mask": _FW.NO_MASK},
        ("t1_same_input", "t4_symmetric_reversible"),
    ),
    Convention(
        "Biases: with row-stochastic $A$, value and output biases give the token-independent offset «bias» added to every output: «bias_output».",
        {"bias": _FW.BIAS, "bias_output": _FW.BIAS_OUTPUT},
        unevaluated="evaluated by `tests/theory/test_formulas_walks.py::test_bias_formulas_give_the_biased_layer_output` against a biased layer computed literally",
    ),
    Convention(
        "Multi-head attention: «B», «P», «g», «O».",
        {"B": _FW.DEF_B, "P": _FW.DEF_P, "g": _FW.DEF_G, "O": _FW.DEF_O},
        ("t2_gated_walk",),
    ),
    Convention(
        "Inner product «pi_inner»; Fourier modes on a ring of $n$ tokens «mode», written «zeta» in T6.",
        {"pi_inner": _FW.PI_INNER, "mode": _FW.FOURIER_MODE, "zeta": _FW.ZETA},
        ("walk_dirichlet",),
        unevaluated="the modes by `tests/theory/test_formulas_walks.py::test_fourier_modes_diagonalise_the_ring_shift`",
    ),
)
