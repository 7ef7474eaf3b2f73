"""One small valid call per public entry point (float64, n=4, d=3, H=2), for the bad-input matrix.

``EXAMPLES[name] = (call, make)``: ``make()`` returns fresh valid keyword arguments and
``call(**kwargs)`` invokes the entry point with them; the keyword names are the names the caller
uses (the entry point's parameter names), so a refusal must start with ``"<name>:"``.
"""

from __future__ import annotations

import math

import torch

F64 = torch.float64
N, D, H = 4, 3, 2


def _g(seed=0):
    return torch.Generator().manual_seed(seed)


def stoch(n=N, H_=None, seed=0):
    shape = (n, n) if H_ is None else (H_, n, n)
    A = torch.rand(*shape, generator=_g(seed), dtype=F64) + 0.1
    return A / A.sum(-1, keepdim=True)


def sym_stoch(n=N, seed=0):
    """Reversible (symmetric, doubly stochastic) walk matrix."""
    S = torch.rand(n, n, generator=_g(seed), dtype=F64) + 0.1
    S = S + S.T
    for _ in range(200):  # Sinkhorn on a symmetric matrix keeps it symmetric in the limit
        S = S / S.sum(-1, keepdim=True)
        S = (S + S.T) / 2
    return S / S.sum(-1, keepdim=True)


def rnd(*shape, seed=1):
    return torch.randn(*shape, generator=_g(seed), dtype=F64)


def orth(d=D, seed=2):
    Q, _ = torch.linalg.qr(rnd(d, d, seed=seed))
    return Q


def mha_walk():
    from numerics.walk import ConnectionWalk

    return ConnectionWalk.from_mha(stoch(H_=H), rnd(H, D, D))


def rev_walk():
    from numerics.walk import ConnectionWalk

    return ConnectionWalk.from_sha(sym_stoch(), orth())


def weights():
    from numerics.attention import AttentionWeights

    dh = 2
    return AttentionWeights(
        rnd(H * dh, D, seed=3), rnd(H * dh, D, seed=4), rnd(H * dh, D, seed=5), rnd(D, H * dh, seed=6), n_heads=H
    )


def kernels(n=8):
    from numerics.patterns.symbols import gaussian_kernel

    return torch.stack([gaussian_kernel(n, 1.0, 1.5), gaussian_kernel(n, -1.0, 1.0)])


def transports():
    return torch.stack(
        [torch.diag(torch.tensor([1.0, -0.5], dtype=F64)), torch.tensor([[0.2, -0.3], [0.3, 0.1]], dtype=F64)]
    )


def dyn():
    from numerics.patterns.simulate import MHADynamics

    return MHADynamics(transports(), kernels=kernels())


def X0():
    from numerics.patterns.simulate import perturbed_homogeneous

    return perturbed_homogeneous(8, 2, torch.tensor([1.0, 0.0], dtype=F64), 1e-3, generator=_g(7))


def traj():
    n, T = 8, 24
    t = torch.arange(T, dtype=F64) * 0.1
    i = torch.arange(n, dtype=F64)
    ph = 2 * math.pi * 1 * i[None, :] / n - 0.7 * t[:, None]
    X = torch.stack([1 + 0.1 * torch.cos(ph), 0.1 * torch.sin(ph)], -1)
    return t, X


def _walk_call(method, self_name="walk"):
    def call(**kw):
        return getattr(kw.pop(self_name), method)(**kw)

    return call


def _M():
    return rnd(D, D, seed=8)


def _triangle():
    X = rnd(N, D, seed=9)
    M = _M()
    A = torch.softmax(0.5 * X @ M @ X.T, -1)
    return {"A": A, "X": X, "M": M, "scale": 0.5}


def _J():
    from numerics.patterns.symbols import linear_operator

    return linear_operator(kernels(), transports())


def _examples():
    from numerics import attention as at
    from numerics import graphs as gr
    from numerics import laplacian as lp
    from numerics import markov as mk
    from numerics import spectra as sp
    from numerics.patterns import classify as cl
    from numerics.patterns import simulate as sm
    from numerics.patterns import symbols as pt
    from numerics.walk import ConnectionWalk as CW
    from numerics.walk import kron_feature_major, kron_token_major

    E = {}
    E["numerics.walk.ConnectionWalk.from_sha"] = (CW.from_sha, lambda: {"A": stoch(), "T": rnd(D, D)})
    E["numerics.walk.ConnectionWalk.from_mha"] = (CW.from_mha, lambda: {"A": stoch(H_=H), "T": rnd(H, D, D)})
    E["numerics.walk.ConnectionWalk.from_factors"] = (
        CW.from_factors,
        lambda: {"A": stoch(H_=H), "W_O": rnd(H, D, 2), "W_V": rnd(H, 2, D, seed=2)},
    )
    E["numerics.walk.ConnectionWalk.from_edges"] = (CW.from_edges, lambda: {"P": stoch(), "O": rnd(N, N, D, D)})
    E["numerics.walk.ConnectionWalk.from_blocks"] = (CW.from_blocks, lambda: {"B": rnd(N, N, D, D)})
    E["numerics.walk.ConnectionWalk.apply"] = (_walk_call("apply"), lambda: {"walk": mha_walk(), "X": rnd(N, D)})
    E["numerics.walk.ConnectionWalk.to_dense"] = (_walk_call("to_dense"), lambda: {"walk": mha_walk()})
    E["numerics.walk.ConnectionWalk.blocks"] = (_walk_call("blocks"), lambda: {"walk": mha_walk()})
    E["numerics.walk.ConnectionWalk.gates"] = (_walk_call("gates"), lambda: {"walk": mha_walk()})
    E["numerics.walk.ConnectionWalk.edge_transport"] = (
        _walk_call("edge_transport"),
        lambda: {"walk": mha_walk(), "i": 1, "j": 2},
    )
    E["numerics.walk.ConnectionWalk.edge_transports"] = (_walk_call("edge_transports"), lambda: {"walk": mha_walk()})
    E["numerics.walk.ConnectionWalk.constant_transport"] = (
        _walk_call("constant_transport"),
        lambda: {"walk": mha_walk(), "rtol": 1e-8},
    )
    E["numerics.walk.ConnectionWalk.nearest_kronecker"] = (
        _walk_call("nearest_kronecker"),
        lambda: {"walk": mha_walk()},
    )
    E["numerics.walk.ConnectionWalk.to"] = (_walk_call("to"), lambda: {"walk": mha_walk(), "dtype": torch.float32})
    E["numerics.walk.kron_token_major"] = (kron_token_major, lambda: {"A": stoch(), "T": rnd(D, D)})
    E["numerics.walk.kron_feature_major"] = (kron_feature_major, lambda: {"A": stoch(), "T": rnd(D, D)})
    # attention
    E["numerics.attention.AttentionWeights"] = (
        at.AttentionWeights,
        lambda: {
            "W_Q": rnd(4, D, seed=3),
            "W_K": rnd(4, D, seed=4),
            "W_V": rnd(4, D, seed=5),
            "W_O": rnd(D, 4, seed=6),
            "n_heads": H,
        },
    )
    E["numerics.attention.AttentionWeights.from_torch_mha"] = (
        at.AttentionWeights.from_torch_mha,
        lambda: {"mha": torch.nn.MultiheadAttention(4, 2).double()},
    )
    E["numerics.attention.AttentionWeights.to"] = (
        _walk_call("to", "w"),
        lambda: {"w": weights(), "dtype": torch.float32},
    )
    E["numerics.attention.kv_head_map"] = (at.kv_head_map, lambda: {"n_heads": 4, "n_kv_heads": 2})
    E["numerics.attention.head_factors"] = (at.head_factors, lambda: {"w": weights()})
    E["numerics.attention.head_transports"] = (at.head_transports, lambda: {"w": weights()})
    E["numerics.attention.bias_offset"] = (at.bias_offset, lambda: {"w": weights()})
    E["numerics.attention.attention_probs"] = (
        at.attention_probs,
        lambda: {
            "X": rnd(N, D),
            "w": weights(),
            "key_padding_mask": torch.tensor([False, False, True, False]),
            "attn_bias": rnd(H, N, N, seed=11),
        },
    )
    E["numerics.attention.walk_from_weights"] = (
        at.walk_from_weights,
        lambda: {"X": rnd(N, D), "w": weights(), "attn_bias": rnd(H, N, N, seed=11)},
    )
    # laplacian
    E["numerics.laplacian.diagnose"] = (lp.diagnose, lambda: {"walk": rev_walk(), "probes": 2, "max_dense": 64})
    E["numerics.markov.stationary_info"] = (mk.stationary_info, lambda: {"P": stoch()})
    E["numerics.markov.stationary_distribution"] = (mk.stationary_distribution, lambda: {"P": stoch()})
    E["numerics.laplacian.generator_dense"] = (lp.generator_dense, lambda: {"walk": mha_walk()})
    E["numerics.laplacian.as_walk"] = (lp.as_walk, lambda: {"walk": rnd(N, N, D, D)})
    E["numerics.markov.reachability"] = (mk.reachability, lambda: {"support": stoch() > 0.2})
    E["numerics.markov.communicating_classes"] = (mk.communicating_classes, lambda: {"support": stoch() > 0.2})
    E["numerics.markov.weak_components"] = (mk.weak_components, lambda: {"support": stoch() > 0.2})
    E["numerics.laplacian.pi_inner"] = (
        lp.pi_inner,
        lambda: {"x": rnd(N, D), "y": rnd(N, D, seed=2), "pi": torch.full((N,), 1 / N, dtype=F64)},
    )
    E["numerics.laplacian.dirichlet_energy"] = (
        lp.dirichlet_energy,
        lambda: {"P": stoch(), "O": rnd(N, N, D, D), "pi": torch.full((N,), 1 / N, dtype=F64), "x": rnd(N, D, seed=3)},
    )
    E["numerics.laplacian.format_spectrum"] = (
        lp.format_spectrum,
        lambda: {"ev": torch.tensor([0.0, 1 + 0.5j, 1 - 0.5j], dtype=torch.complex128)},
    )
    # markov (moved from numerics.laplacian, still re-exported there)
    E["numerics.markov.classes_from_reachability"] = (
        mk.classes_from_reachability,
        lambda: {"R": mk.reachability(stoch() > 0.2)},
    )
    E["numerics.markov.period"] = (mk.period, lambda: {"support": stoch() > 0.2})
    E["numerics.markov.perron_solve"] = (mk.perron_solve, lambda: {"P": stoch(H_=2), "rho": torch.ones(2, dtype=F64)})
    E["numerics.laplacian.parallel_constraints"] = (
        lp.parallel_constraints,
        lambda: {"O": rnd(N, N, D, D), "support": stoch() > 0.2},
    )
    # graphs
    E["numerics.graphs.to_networkx"] = (gr.to_networkx, lambda: {"walk": mha_walk()})
    E["numerics.graphs.is_irreducible"] = (gr.is_irreducible, lambda: {"walk": stoch()})
    E["numerics.graphs.is_aperiodic"] = (gr.is_aperiodic, lambda: {"walk": stoch()})
    E["numerics.graphs.period"] = (gr.period, lambda: {"walk": stoch()})
    E["numerics.graphs.closed_classes"] = (gr.closed_classes, lambda: {"walk": stoch()})
    E["numerics.graphs.stationary_distribution"] = (gr.stationary_distribution, lambda: {"walk": stoch()})
    E["numerics.graphs.is_reversible"] = (gr.is_reversible, lambda: {"walk": rev_walk()})
    E["numerics.graphs.holonomies"] = (gr.holonomies, lambda: {"walk": rev_walk()})
    E["numerics.graphs.kolmogorov_cycles"] = (gr.kolmogorov_cycles, lambda: {"G": gr.to_networkx(sym_stoch())})
    E["numerics.graphs.softmax_triangle_identity"] = (gr.softmax_triangle_identity, _triangle)
    E["numerics.graphs.reversible_by_span"] = (gr.reversible_by_span, lambda: {"X": rnd(N, D), "M": _M()})
    # spectra
    E["numerics.spectra.select"] = (sp.select, lambda: {"walk": mha_walk(), "index": None})
    E["numerics.spectra.dense_eigenvalues"] = (sp.dense_eigenvalues, lambda: {"walk": mha_walk()})
    E["numerics.spectra.symmetrized_dense"] = (
        sp.symmetrized_dense,
        lambda: {"walk": rev_walk(), "pi": torch.full((N,), 1 / N, dtype=F64)},
    )
    E["numerics.spectra.generator_operator"] = (
        sp.generator_operator,
        lambda: {"walk": rev_walk(), "pi": torch.full((N,), 1 / N, dtype=F64)},
    )
    E["numerics.spectra.pi_symmetry_residual"] = (
        sp.pi_symmetry_residual,
        lambda: {"walk": rev_walk(), "pi": torch.full((N,), 1 / N, dtype=F64), "probes": 2},
    )
    E["numerics.spectra.extreme_eigenvalues"] = (
        sp.extreme_eigenvalues,
        lambda: {"walk": rev_walk(), "k": 2, "which": "BE", "pi": torch.full((N,), 1 / N, dtype=F64)},
    )
    # patterns
    E["numerics.patterns.symbols.gaussian_kernel"] = (pt.gaussian_kernel, lambda: {"n": 8, "center": 1.0, "width": 1.5})
    E["numerics.patterns.symbols.kernel_from_bias"] = (pt.kernel_from_bias, lambda: {"bias": rnd(H, 8)})
    E["numerics.patterns.symbols.circulant"] = (pt.circulant, lambda: {"kernels": kernels()})
    E["numerics.patterns.symbols.validate_kernels"] = (pt.validate_kernels, lambda: {"kernels": kernels()})
    E["numerics.patterns.symbols.validate_transports"] = (
        pt.validate_transports,
        lambda: {"transports": transports(), "H": 2},
    )
    E["numerics.patterns.symbols.signed_wavenumbers"] = (pt.signed_wavenumbers, lambda: {"n": 8})
    E["numerics.patterns.symbols.kernel_hat"] = (pt.kernel_hat, lambda: {"kernels": kernels()})
    E["numerics.patterns.symbols.symbol"] = (pt.symbol, lambda: {"kernels": kernels(), "transports": transports()})
    E["numerics.patterns.symbols.dispersion"] = (
        pt.dispersion,
        lambda: {"kernels": kernels(), "transports": transports()},
    )
    E["numerics.patterns.symbols.predict_pattern"] = (
        pt.predict_pattern,
        lambda: {"kernels": kernels(), "transports": transports()},
    )
    E["numerics.patterns.symbols.naive_per_head_growth"] = (
        pt.naive_per_head_growth,
        lambda: {"kernels": kernels(), "transports": transports()},
    )
    E["numerics.patterns.symbols.linear_operator"] = (
        pt.linear_operator,
        lambda: {"attention": kernels(), "transports": transports()},
    )
    E["numerics.patterns.symbols.predict_from_operator"] = (
        pt.predict_from_operator,
        lambda: {"J": _J(), "n": 8, "d": 2},
    )
    E["numerics.patterns.symbols.polarisation"] = (
        pt.polarisation,
        lambda: {"v": torch.tensor([1.0, 1j], dtype=torch.complex128)},
    )
    E["numerics.patterns.symbols.transient_growth"] = (
        pt.transient_growth,
        lambda: {"J": _J(), "times": torch.linspace(0, 1, 5, dtype=F64)},
    )
    E["numerics.patterns.symbols.discrete_selection"] = (
        pt.discrete_selection,
        lambda: {"kernels": kernels(), "transports": transports(), "eta": 0.5, "layers": 5},
    )
    E["numerics.patterns.symbols.canonical_pattern"] = (
        pt.canonical_pattern,
        lambda: {"k": 7, "sigma": 0.1 - 0.2j, "n": 8},
    )
    E["numerics.patterns.symbols.distinct_patterns"] = (
        pt.distinct_patterns,
        lambda: {"ks": [1, 7], "sig": [0.1 + 0.2j, 0.1 - 0.2j], "n": 8, "tie_tol": 1e-9},
    )
    E["numerics.patterns.symbols.prenorm_layer_steps"] = (pt.prenorm_layer_steps, lambda: {"eta": 0.5, "layers": 4})
    E["numerics.patterns.symbols.postnorm_layer_step"] = (pt.postnorm_layer_step, lambda: {"eta": 0.5})
    E["numerics.patterns.symbols.effective_time"] = (
        pt.effective_time,
        lambda: {"scheme": "prenorm", "eta": 0.5, "layers": 5},
    )
    # simulate
    E["numerics.patterns.simulate.MHADynamics"] = (
        sm.MHADynamics,
        lambda: {"transports": transports(), "kernels": kernels()},
    )
    E["numerics.patterns.simulate.MHADynamics.velocity"] = (
        _walk_call("velocity", "dyn"),
        lambda: {"dyn": dyn(), "X": X0()},
    )
    for m in ("scores", "attention", "mha", "sphere_velocity"):
        E[f"numerics.patterns.simulate.MHADynamics.{m}"] = (_walk_call(m, "dyn"), lambda: {"dyn": dyn(), "X": X0()})
    E["numerics.patterns.simulate.MHADynamics.jacobian"] = (
        _walk_call("jacobian", "dyn"),
        lambda: {"dyn": dyn(), "X": X0()},
    )
    E["numerics.patterns.simulate.MHADynamics.base_attention"] = (
        _walk_call("base_attention", "dyn"),
        lambda: {"dyn": dyn(), "x_star": torch.tensor([1.0, 0.0], dtype=F64)},
    )
    E["numerics.patterns.simulate.simulate_flow"] = (
        sm.simulate_flow,
        lambda: {"dyn": dyn(), "X0": X0(), "t_final": 0.1, "dt": 0.05},
    )
    E["numerics.patterns.simulate.simulate_stack"] = (
        sm.simulate_stack,
        lambda: {"dyn": dyn(), "X0": X0(), "layers": 3, "eta": 0.5, "warn": False},
    )
    E["numerics.patterns.simulate.check_rk4_step"] = (sm.check_rk4_step, lambda: {"dyn": dyn(), "X0": X0(), "dt": 0.05})
    E["numerics.patterns.simulate.perturbed_homogeneous"] = (
        sm.perturbed_homogeneous,
        lambda: {"n": 8, "d": 2, "x_star": torch.tensor([1.0, 0.0], dtype=F64), "eps": 1e-3, "generator": _g(5)},
    )
    E["numerics.patterns.simulate.sphere_project"] = (sm.sphere_project, lambda: {"X": X0()})
    E["numerics.patterns.simulate.layer_norm"] = (sm.layer_norm, lambda: {"X": X0()})
    E["numerics.patterns.simulate.sinusoidal_pe"] = (sm.sinusoidal_pe, lambda: {"n": 8, "d": 4})
    E["numerics.patterns.simulate.BatchedDynamics"] = (sm.BatchedDynamics, lambda: {"dyns": [dyn(), dyn()]})
    for m in ("mha", "sphere_velocity"):
        E[f"numerics.patterns.simulate.BatchedDynamics.{m}"] = (
            _walk_call(m, "bd"),
            lambda: {"bd": sm.BatchedDynamics([dyn(), dyn()]), "X": torch.stack([X0(), X0()])},
        )
    E["numerics.patterns.simulate.simulate_cells"] = (
        sm.simulate_cells,
        lambda: {
            "bd": sm.BatchedDynamics([dyn(), dyn()]),
            "X0": torch.stack([X0(), X0()]),
            "dynamics": "sphere",
            "steps": 2,
            "dt": 0.05,
        },
    )
    E["numerics.patterns.simulate.rk4_amplification"] = (
        sm.rk4_amplification,
        lambda: {"z": torch.tensor([-0.1 + 0.2j], dtype=torch.complex128)},
    )
    # classify
    E["numerics.patterns.classify.spatial_modes"] = (cl.spatial_modes, lambda: {"states": traj()[1]})
    E["numerics.patterns.classify.space_time_spectrum"] = (
        cl.space_time_spectrum,
        lambda: dict(zip(("times", "states"), traj())),
    )
    E["numerics.patterns.classify.hankel_dmd"] = (
        cl.hankel_dmd,
        lambda: {"times": traj()[0], "series": torch.fft.fft(traj()[1], dim=-2)[:, 1]},
    )
    E["numerics.patterns.classify.measure_mode"] = (
        cl.measure_mode,
        lambda: {**dict(zip(("times", "states"), traj())), "k": 1},
    )
    E["numerics.patterns.classify.classify_trajectory"] = (
        cl.classify_trajectory,
        lambda: dict(zip(("times", "states"), traj())),
    )
    return E


EXAMPLES = _examples()
