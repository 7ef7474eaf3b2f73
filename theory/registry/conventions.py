"""The conventions every statement, derivation and test uses (rendered first in THEOREMS.md): each
formula is a SymPy expression (:mod:`theory.formulas.walks`, :mod:`theory.formulas`), the very object
the named oracle evaluates or the named statement cites."""

from __future__ import annotations

from .. import formulas as _F
from ..formulas import walks as _FW
from ..statements import Convention

CONVENTIONS: tuple[Convention, ...] = (
    Convention(
        "Tokens are the rows of «X» (row $i$ is $x_i^\\top$, $x_i \\in \\mathbb{R}^d$): a vector field on the token-position graph.",
        {"X": _FW.SHAPE_X},
        unevaluated="a shape: every oracle reads $n$, $d$ from the instance's arrays",
    ),
    Convention(
        "Stacking is **token-major**: «stacking» (`X.reshape(-1)`), «entry»; so block $(i,j)$ of an $nd\\times nd$ operator acts from token $j$ to token $i$. Feature-major stacking turns $A\\otimes T$ into $T\\otimes A$ (L1: «token_major» but «feature_major»); mixing the two is the classic silent bug.",
        {
            "stacking": _FW.STACKING,
            "entry": _FW.STACK_ENTRY,
            "token_major": _F.L1_TOKEN_MAJOR,
            "feature_major": _F.L1_FEATURE_MAJOR,
        },
        ("t1_walk",),
    ),
    Convention(
        "A **connection walk** has a walk matrix «nonneg» and $d\\times d$ transports $O_{ij}$: «walk»; its $nd\\times nd$ matrix has the blocks «block»; the generator is «generator» ($\\Delta = I - W$).",
        {"nonneg": _FW.WALK_NONNEG, "walk": _FW.WALK, "block": _FW.WALK_BLOCK, "generator": _FW.GENERATOR},
        unevaluated="the oracles' dense $W$ (`dense_walk`) is checked against these expressions in `tests/theory/test_formulas_walks.py`",
    ),
    Convention(
        "Transports act on **column vectors**. With torch `nn.Linear` weights (out $\\times$ in; $W_V$: $d_h\\times d$, $W_O$: $d\\times d_h$) the single-head transport is «layout»; in row-vector code (`Y = A X W_v W_o`) the transport is the transpose of the row-vector product.",
        {"layout": _FW.LAYOUT},
        ("t1_transport_layout",),
    ),
    Convention(
        "Attention $A = A(X)$ depends on the input: softmax attention is «softmax» ($\\mu$: the mask, $0$ without one); every identity is a factorisation, the walk taken at the input it multiplies, not linearity in $X$.",
        {"softmax": _FW.SOFTMAX},
        ("t1_same_input", "t4_symmetric_reversible"),
    ),
    Convention(
        "Biases: with row-stochastic $A$, value and output biases give the token-independent offset «bias» added to every output: «bias_output».",
        {"bias": _FW.BIAS, "bias_output": _FW.BIAS_OUTPUT},
        unevaluated="the conformance kit (`numerics.conformance`) measures the offset of real modules",
    ),
    Convention(
        "Multi-head attention: «B», «P», «g», «O».",
        {"B": _FW.DEF_B, "P": _FW.DEF_P, "g": _FW.DEF_G, "O": _FW.DEF_O},
        ("t2_gated_walk",),
    ),
    Convention(
        "Inner product «pi_inner»; Fourier modes on a ring of $n$ tokens «mode».",
        {"pi_inner": _FW.PI_INNER, "mode": _FW.FOURIER_MODE},
        unevaluated="the oracles' π inner product (`pi_inner_product`) is checked against it in `tests/theory/test_formulas_walks.py`; T6's formula writes the mode as $\\zeta^j$, $\\zeta = e^{2\\pi i k/n}$",
    ),
)
