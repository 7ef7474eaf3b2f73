"""E6 — task-aligned positional encoding + initialisation as a controllable dynamical prior (Seed B).

Claim (THEOREMS.md E6): choosing the positional encoding and the weight initialisation so that the
forward dynamics already amplify the pattern the task needs makes learning faster (fewer optimiser
steps to a loss threshold) and more data-efficient (higher test accuracy from few examples).

Two experiments, both small enough for 2 CPU cores, both trained as *batched ensembles* (every
parameter carries a leading member axis ``G = arms × seeds × data sizes``, so one Adam step trains all
members at once; Adam is elementwise and the loss is a sum of per-member losses, so members are
independent — exactly as if each were trained alone).

E6(a) — cyclic shift on a ring (``y_i = x_{(i+s) mod n}``, one-hot symbols, ``n`` tokens).
    Model: one attention layer, no residual, token embedding ``E`` (V×d), optional learned absolute
    PE ``P`` (n×d), optional relative bias ``b_h(m)`` (``S^h_ij += b_h((j−i) mod n)``), heads
    ``A^h = softmax(q kᵀ/√d_h + bias)``, output ``Σ_h A^h H W_V^h W_O^h`` (row layout; the transport is
    ``T = (Σ_h W_V^h W_O^h)ᵀ``), readout ``U`` (d×V), cross-entropy.

    Dispersion analysis (THEOREMS.md T6, one layer ``x ← A x T``): with ``T = I`` the layer's symbol is
    ``â(k) = Σ_m a(m) e^{+2πikm/n}`` and a Fourier mode advances by ``arg â(k)`` per layer, i.e. the
    pattern moves at ``c(k) = −n·arg â(k)/(2πk)`` tokens per layer, damped by ``|â(k)|``. The task
    ``y_i = x_{i+s}`` moves every pattern at velocity ``−s`` without damping. The *aligned prior*
    is the kernel (peak ``m0``, Gaussian width ``w`` on the ring) whose predicted velocity at
    ``k = 1`` matches ``−s`` (:func:`choose_prior_kernel`), used as the initial relative bias
    ``b(m) = log a(m)``, together with the identity transport ``W_V W_O = I`` (eigenvalue 1: no
    rotation, no damping of the k=0 mode). Arms:

    ============== ==================================================================================
    aligned        relative bias = log of the dispersion-chosen kernel (velocity −s) + identity OV init
    aligned_pe     same relative bias, standard OV init (ablation: PE without the init)
    abs_pe_0.02    learned absolute PE, N(0, 0.02²) (GPT-2/BERT scale), standard init, no relative bias
    abs_pe_1       learned absolute PE, N(0, 1) (torch ``nn.Embedding`` default), standard init
    rel_zero       zero-initialised relative bias (T5-style), standard init
    misaligned     relative bias = kernel with the opposite velocity (+s) + identity OV init
    ============== ==================================================================================

    Shared parameters (embedding, readout, W_Q, W_K and the standard-init W_V, W_O) are drawn from
    the same seed in every arm, and every arm of a seed sees the same data: comparisons are paired.

E6(b) — ConViT-style gated positional self-attention (GPSA) on scikit-learn's bundled 8×8 digits
    (offline; 2×2 patches → 16 tokens), or on a local CIFAR-10 directory (python pickle format,
    4×4 patches → 64 tokens) when ``cifar_dir`` is given. One pre-norm block (GPSA + MLP) + mean pool +
    linear head. GPSA head h: ``A^h = (1−σ(λ_h)) softmax(q kᵀ/√d_h) + σ(λ_h) softmax(r_ij·v_h)`` with
    ``r_ij = (δx, δy, δx²+δy²)``, ``δ = pos_j − pos_i``. As in ConViT every arm also keeps a
    learned absolute PE (N(0, 0.02²)) added to the patch embedding. ConViT's local init
    ``v_h = α(2Δ_h,x, 2Δ_h,y, −1)`` (score ``−α‖δ−Δ_h‖²`` + const), ``λ_h = 1``, ``W_V = I``. Arms:
    ``convit_local`` (α = 1, the aligned prior), ``gpsa_random`` (nn.Linear-default random ``v_h``,
    standard W_V), ``vit_abs_pe`` (no positional gate: plain attention + absolute PE, DeiT-style),
    ``gpsa_antilocal`` (α = −1: attends away from the neighbourhood, a misaligned prior, ``W_V = I``).

Statistics (paired over seeds; 95% t-intervals of the mean paired difference,
:func:`paper_checks.inference.paired_interval`):
    * ``log2_steps_ratio_vs_<baseline>`` = mean_s log2((steps_base + 1)/(steps_aligned + 1)); runs
      that never reach the threshold are censored at ``max_steps + 1`` (the effect is then a lower
      bound on the true effect when the baseline is censored).
    * ``acc_auc_diff_vs_<baseline>`` = mean over the data-size grid of test-accuracy(aligned) −
      test-accuracy(baseline) (area between the accuracy-vs-N curves on the grid).
    Decision rule per baseline: "reproduced" if the 95% interval of the effect lies above 0, "not
    reproduced" if it lies at or below 0 (the prior is no better), "inconclusive" otherwise.

Modules: :mod:`~paper_checks.e6.prior` (dispersion analysis), :mod:`~paper_checks.e6.shift` (E6(a)),
:mod:`~paper_checks.e6.gpsa` (E6(b)), :mod:`~paper_checks.e6.data` (image tokens),
:mod:`~paper_checks.e6.train` (ensemble helpers), :mod:`~paper_checks.e6.report` (rows, plots, :func:`run`).
"""

from paper_checks.e6.data import load_cifar10_tokens, load_digits_tokens, patchify
from paper_checks.e6.gpsa import ARMS_B, BASELINES_B, GPSAConfig, train_gpsa
from paper_checks.e6.prior import choose_prior_kernel, kernel_symbol, kernel_velocity, ring_kernel
from paper_checks.e6.report import CLAIM, RULE, SCALES, configs, effect_verdict, run
from paper_checks.e6.shift import ARMS_A, BASELINES_A, ShiftTaskConfig, train_shift_task
from paper_checks.e6.train import steps_to_threshold
from paper_checks.inference import paired_interval

__all__ = [
    "ARMS_A",
    "ARMS_B",
    "BASELINES_A",
    "BASELINES_B",
    "CLAIM",
    "RULE",
    "SCALES",
    "GPSAConfig",
    "ShiftTaskConfig",
    "choose_prior_kernel",
    "configs",
    "effect_verdict",
    "kernel_symbol",
    "kernel_velocity",
    "load_cifar10_tokens",
    "load_digits_tokens",
    "paired_interval",
    "patchify",
    "ring_kernel",
    "run",
    "steps_to_threshold",
    "train_gpsa",
    "train_shift_task",
]
