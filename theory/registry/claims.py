"""Registry entries E1-E6 and LAP: the empirical claims (statement, statistic, null model,
decision rule)."""

from __future__ import annotations

from ..formulas import claims as _FC
from ..formulas import walks as _FW
from ..statements import Claim, Threshold
from .common import E12_RULE, EFFECT_THRESHOLDS, NULL_RANDOM, SEED_A, SEED_B

#: the test module that evaluates the claims' formulas against the statistics their modules compute
_FORMULA_TESTS = "tests/paper_checks/test_claim_formulas.py"


def _by(test: str, *keys: str) -> dict[str, str]:
    return dict.fromkeys(keys, f"{_FORMULA_TESTS}::{test}")


CLAIMS: list[Claim] = [
    Claim(
        "E1",
        "Attention graphs converge to stable geometric operators in deeper layers",
        "effective attention graphs converge to stable geometric operators in deeper layers",
        statistic=(
            "per layer, the change of the head-averaged attention operator between consecutive layers "
            "(plain and sink-aware variants) summarised as the late-third / early-third ratio, and the "
            "late-third mean of level statistics (`paper_checks.measure.E1_STATS`)"
        ),
        null_model=NULL_RANDOM,
        decision_rule=E12_RULE,
        module="paper_checks.claims",
        source=SEED_A,
        tests=("tests/paper_checks/test_known_answers.py", "tests/paper_checks/test_inference.py"),
        thresholds=EFFECT_THRESHOLDS,
    ),
    Claim(
        "E2",
        "Learned transports self-organise into approximate scaled isometries",
        "learned transports self-organize into approximate scaled isometries",
        statistic=(
            "singular-value coefficient of variation of each head's $T_h$ and of $T_\\Sigma$, Procrustes defect "
            "over scales $s$ and orthogonal $Q$ «procrustes», data gain CV and the attention-weighted "
            "edge-transport defect (`paper_checks.measure.E2_STATS`); smaller supports the claim"
        ),
        null_model=NULL_RANDOM + "; plus spectrum-matched and flat-subspace baselines",
        decision_rule=E12_RULE,
        module="paper_checks.claims",
        source=SEED_A,
        tests=("tests/paper_checks/test_known_answers.py", "tests/paper_checks/test_stats.py", _FORMULA_TESTS),
        params={"procrustes": _FC.PROCRUSTES},
        evaluated_by=_by("test_e2_procrustes_defect_is_the_rendered_formula", "procrustes"),
        thresholds=EFFECT_THRESHOLDS,
    ),
    Claim(
        "E3",
        "E1 and E2 strengthen with scale",
        "E1 and E2 strengthen consistently with scale (the paper's models, from the smallest to the largest; encoder and decoder)",
        statistic=(
            "for consecutive sizes of one architecture kind, the claim-oriented effect of the larger model minus "
            "that of the smaller one"
        ),
        null_model="each model's own random-initialisation null; the difference interval comes from independent draws",
        decision_rule=(
            "'reproduced' if the difference interval lies above «side» and the larger model's own E1/E2 verdict is "
            "reproduced; 'not reproduced' if it lies below «side»; 'insufficient scale range' with fewer than "
            "«min_sizes» sizes; otherwise 'inconclusive' (`paper_checks.inference.decide_scale`)"
        ),
        module="paper_checks.claims",
        source=SEED_A,
        tests=("tests/paper_checks/test_inference.py",),
        thresholds={"side": Threshold(0), "min_sizes": Threshold(2)},
    ),
    Claim(
        "E4",
        "The same holds for encoders and decoders",
        "E1 and E2 hold for encoders and decoders alike",
        statistic="the per-model E1/E2 verdicts, per statistic, for every encoder and every decoder",
        null_model="as E1/E2 (per model)",
        decision_rule=(
            "'reproduced' iff reproduced for every encoder and every decoder; 'not reproduced' if any model's "
            "verdict is 'not reproduced'; 'inconclusive' otherwise or when a kind is missing "
            "(`paper_checks.inference.decide_both`)"
        ),
        module="paper_checks.claims",
        source=SEED_A,
        tests=("tests/paper_checks/test_inference.py",),
    ),
    Claim(
        "E5",
        "Each component controls which pattern is amplified",
        (
            "each component (positional encoding, multi-head attention, output-value geometry) controls which pattern is "
            "amplified, which stabilise, compete or coexist (clusters, stationary periodic, travelling waves, rotating waves, …)"
        ),
        statistic=(
            "agreement fraction between the linear prediction (symbol $M(k)$, T6) and the simulated onset pattern "
            "over a phase-diagram sweep (a cell agrees iff «agreement», $c$ the coarse classes, $k$ the wave numbers), "
            "with a Wilson «level» interval; per component, the fraction of cell pairs differing only in that component "
            "whose observed pattern differs"
        ),
        null_model="the same fraction computed on the predictions (what the linear theory alone implies)",
        decision_rule=(
            "agreement: 'reproduced' if the Wilson interval lies above «agreement_min», 'not reproduced' if below; "
            "components: 'reproduced' if the interval lies above «component_min», 'not reproduced' if below; "
            "otherwise 'inconclusive' (`paper_checks.e5.report`)"
        ),
        module="paper_checks.e5",
        source=SEED_B,
        tests=("tests/paper_checks/test_e5_phase.py", _FORMULA_TESTS),
        params={"agreement": _FC.AGREEMENT},
        evaluated_by=_by("test_e5_agreement_is_the_rendered_formula", "agreement"),
        thresholds={
            "level": Threshold("19/20", percent=True),
            "agreement_min": Threshold("4/5"),
            "component_min": Threshold("1/10"),
        },
    ),
    Claim(
        "E6",
        "Task-aligned positional encoding and initialisation act as a dynamical prior",
        (
            "task-aligned positional encoding + weight initialisation act as a dynamical prior: better data efficiency and "
            "faster optimisation (controlled sequence tasks; ConViT-style attention on images)"
        ),
        statistic=(
            "paired differences between the aligned arm and each baseline arm: optimiser steps to a loss "
            "threshold and test accuracy at small data sizes (cyclic-shift task; GPSA on the scikit-learn digits)"
        ),
        null_model="baseline arms (absolute PE, zero relative bias, misaligned prior) sharing seeds and data with the aligned arm",
        decision_rule=(
            "per baseline: 'reproduced' if the «level» paired t-interval of the effect lies above «side», "
            "'not reproduced' if its upper end is at most «side», 'inconclusive' otherwise "
            "(`paper_checks.e6.report.effect_verdict`)"
        ),
        module="paper_checks.e6",
        source=SEED_B,
        tests=("tests/paper_checks/test_e6_prior.py",),
        thresholds={"level": Threshold("19/20", percent=True), "side": Threshold(0)},
    ),
    # LAP (issue 13): the T3 hypotheses measured on real layers; added by the LAP check's branch
    Claim(
        "LAP",
        "Real attention layers and the Laplacian-reduction hypotheses",
        (
            "trained attention layers are closer to a random-walk connection Laplacian (T3: (a) stochastic, "
            "(b) reversible, (c) metric-compatible) than a random initialisation of the same architecture; and how "
            "far each layer is from a walk that satisfies the hypotheses"
        ),
        statistic=(
            "per layer and prompt, on the layer's real input $x$ (rows $x_i$), in T2's walk gauge «P», «O» where "
            "«g», with $\\pi$ stationary and $W$ the walk: each hypothesis's defect — (a) «stochastic»; (b) "
            "«detailed_balance»; the same for the blocks, gauge-free, «block_detailed_balance» ($\\pi'$ the stationary "
            "law of the block norms $N$ with rows normalised by $r$); (c) the $P$-weighted transpose asymmetry over the edges used both ways "
            "«transpose_symmetry», the orthogonality defect «orthogonality» and the scaled-isometry defect (CV of "
            "all $d$ squared singular values of $O_{ij}$) «scaled_isometry» — and each conclusion's status: «self_adjoint»; the "
            "Dirichlet identity on $x$, «dirichlet», since «dirichlet_split» for any $\\pi$-weighted walk; the "
            "spectral radius $\\rho(W)$ (T3.2 implies «radius»); the distances «distance» between the output "
            "«output» and the output $Y'$ of a walk $W'$ that satisfies the hypotheses: «W_rev» with «pi2» (its "
            "walk «P2» is stochastic, «rev_stochastic», and reversible w.r.t. $\\pi''$, «rev_balance», its "
            "transports satisfy «rev_transpose»; for stationary $\\pi$ it is the nearest $\\pi$-self-adjoint "
            "operator in the Hilbert–Schmidt norm of $\\ell^2(\\pi; \\mathbb{R}^d)$), and the best «involution_walk» "
            "over orthogonal involutions «involution» and scales «scale» (closed form «Q_star» from «eigen», «Z», "
            "«s_star»: a T5 connection Laplacian, so an upper bound on the distance to all scaled connection "
            "Laplacians); mean over layers; causal walks have no positive $\\pi$ (T4): $\\pi$-dependent defects "
            "undefined, the distances use the PageRank law (`paper_checks.laplacian_stats`)"
        ),
        null_model=NULL_RANDOM,
        decision_rule=(
            "direction: smaller = closer to a connection Laplacian; 'reproduced' if the «level» bootstrap "
            "interval of the effect (trained − null) lies below «side»; 'not reproduced' if above «side» or entirely "
            "within ±«equivalence» of |null|; otherwise 'inconclusive' (`paper_checks.inference.decide`); separately a "
            "status per statistic: 'holds' iff the trained interval lies at or below tol(float32, n) (the "
            "model computes softmax in float32; the spectral radius: «radius_status»)"
        ),
        module="paper_checks.laplacian_check",
        source=SEED_A,
        tests=("tests/paper_checks/test_laplacian_check.py", _FORMULA_TESTS),
        params={"P": _FW.DEF_P, "g": _FW.DEF_G, "O": _FW.DEF_O, **_FC.LAP},
        thresholds={k: EFFECT_THRESHOLDS[k] for k in ("level", "side", "equivalence")},
        evaluated_by={
            **_by(
                "test_lap_hypothesis_defects_are_the_rendered_formulas",
                "P",
                "g",
                "O",
                *(f.name for f in _FC.LAP_HYPOTHESES),
            ),
            **_by("test_lap_dirichlet_defect_is_the_rendered_formula", "dirichlet", "dirichlet_split"),
            **_by("test_lap_spectral_radius_is_the_rendered_formula", "radius", "radius_status"),
            **_by(
                "test_lap_reversible_walk_is_the_rendered_formula",
                "output",
                "distance",
                "pi2",
                "P2",
                "W_rev",
                "rev_transpose",
                "rev_stochastic",
                "rev_balance",
            ),
            **_by(
                "test_lap_involution_fit_is_the_rendered_formula",
                "involution_walk",
                "involution",
                "scale",
                "Z",
                "eigen",
                "Q_star",
                "s_star",
            ),
        },
    ),
]
