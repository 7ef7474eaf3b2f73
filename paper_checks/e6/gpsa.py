"""E6(b): ConViT-style gated positional self-attention (GPSA) on image patches, trained as a batched
ensemble (see :mod:`paper_checks.e6` for the arms and the model)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from numerics.device import default_device
from numerics.threads import torch_threads
from paper_checks.e6.train import stack_members

ARMS_B = {
    # name: (gated positional attention?, locality strength α or None (random), abs PE std, V init)
    "convit_local": (True, 1.0, 0.02, "identity"),
    "gpsa_random": (True, None, 0.02, "standard"),
    "vit_abs_pe": (False, None, 0.02, "standard"),
    "gpsa_antilocal": (True, -1.0, 0.02, "identity"),
}
BASELINES_B = ("gpsa_random", "vit_abs_pe", "gpsa_antilocal")
_TRAINABLE_B = ("Wp", "bp", "P", "WQ", "WK", "WV", "WO", "vpos", "lam", "W1", "b1", "W2", "b2", "Wc", "bc")


@dataclass(frozen=True)
class GPSAConfig:
    """Configuration of E6(b). ``data_sizes`` = numbers of training images (None = all)."""

    d: int = 16
    heads: int = 4
    mlp: bool = True  # the block's MLP (GELU, width 2d) after the attention
    lr: float = 1e-2
    batch: int = 32
    steps: int = 150
    eval_every: int = 25
    acc_threshold: float = 0.8
    data_sizes: tuple = (60, 250)
    seeds: int = 5
    arms: tuple = tuple(ARMS_B)
    locality_distance: float = 1.0


def _gpsa_member_init(cfg: GPSAConfig, arm: str, seed: int, pdim: int, T: int, classes: int) -> dict:
    gated, alpha, abs_std, vinit = ARMS_B[arm]
    d, H = cfg.d, cfg.heads
    g = torch.Generator().manual_seed(60_013 * (seed + 1))

    def lin(i: int, o: int) -> torch.Tensor:  # nn.Linear's default init U(−1/√i, 1/√i)
        return (torch.rand(i, o, generator=g) * 2 - 1) / math.sqrt(i)

    p = dict(
        Wp=lin(pdim, d),
        bp=torch.zeros(d),
        WQ=lin(d, d),
        WK=lin(d, d),
        WV=lin(d, d),
        WO=lin(d, d),
        W1=lin(d, 2 * d),
        b1=torch.zeros(2 * d),
        W2=lin(2 * d, d),
        b2=torch.zeros(d),
        Wc=lin(d, classes),
        bc=torch.zeros(classes),
    )
    vpos_random = (torch.rand(H, 3, generator=g) * 2 - 1) / math.sqrt(3)
    g2 = torch.Generator().manual_seed(70_001 * (seed + 1))
    p["P"] = torch.randn(T, d, generator=g2) * abs_std if abs_std > 0 else torch.zeros(T, d)
    if vinit == "identity":
        p["WV"] = torch.eye(d)
    if alpha is None:
        p["vpos"] = vpos_random
    else:  # ConViT local init: heads on a kernel_size² grid of offsets around the query
        ks = round(math.sqrt(H))
        center = (ks - 1) / 2
        v = torch.zeros(H, 3)
        for h1 in range(ks):
            for h2 in range(ks):
                hh = h1 + ks * h2
                if hh >= H:
                    continue
                v[hh, 0] = 2 * (h1 - center) * cfg.locality_distance
                v[hh, 1] = 2 * (h2 - center) * cfg.locality_distance
                v[hh, 2] = -1.0
        p["vpos"] = alpha * v
    p["lam"] = torch.ones(H)
    p["mask_gate"] = torch.tensor(1.0 if gated else 0.0)
    p["mask_abs"] = torch.tensor(1.0 if abs_std > 0 else 0.0)
    return p


def _ln(x):
    return torch.nn.functional.layer_norm(x, x.shape[-1:])


def _gpsa_logits(p: dict, x: torch.Tensor, rel: torch.Tensor, H: int, mlp: bool = False) -> torch.Tensor:
    """x (G, B, T, pdim) → logits (G, B, classes). rel (T, T, 3) = (δx, δy, δx²+δy²)."""
    G, B, T, _ = x.shape
    h = (
        torch.einsum("gbtp,gpd->gbtd", x, p["Wp"])
        + p["bp"][:, None, None]
        + p["mask_abs"][:, None, None, None] * p["P"][:, None]
    )
    d = h.shape[-1]
    dh = d // H
    z = _ln(h)

    def split(t: torch.Tensor) -> torch.Tensor:  # (G, B, T, d) -> (G, B, H, T, dh)
        return t.reshape(G, B, T, H, dh).transpose(2, 3)

    q = split(torch.einsum("gbtd,gde->gbte", z, p["WQ"]))
    k = split(torch.einsum("gbtd,gde->gbte", z, p["WK"]))
    v = split(torch.einsum("gbtd,gde->gbte", z, p["WV"]))
    content = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh), dim=-1)
    pos = torch.softmax(torch.einsum("ijc,ghc->ghij", rel, p["vpos"]), dim=-1)  # (G,H,T,T)
    gate = (torch.sigmoid(p["lam"]) * p["mask_gate"][:, None])[:, None, :, None, None]  # (G,1,H,1,1)
    A = (1 - gate) * content + gate * pos[:, None]
    o = (A @ v).transpose(2, 3).reshape(G, B, T, d)
    h = h + torch.einsum("gbtd,gde->gbte", o, p["WO"])
    if mlp:
        m = torch.nn.functional.gelu(torch.einsum("gbtd,gde->gbte", _ln(h), p["W1"]) + p["b1"][:, None, None])
        h = h + torch.einsum("gbte,ged->gbtd", m, p["W2"]) + p["b2"][:, None, None]
    pooled = _ln(h).mean(2)
    return torch.einsum("gbd,gdc->gbc", pooled, p["Wc"]) + p["bc"][:, None]


def gpsa_work_units(cfg: GPSAConfig) -> int:
    """The steps :func:`train_gpsa` reports to its ``progress``: ``steps + 1`` (the last one evaluates)."""
    return cfg.steps + 1


def train_gpsa(cfg: GPSAConfig, data: dict, *, seeds=None, device=None, threads: int | None = 1, progress=None) -> dict:
    """``progress(k, what)``, when given, is called after every step (:func:`gpsa_work_units`)."""
    with torch_threads(threads):
        return _train_gpsa(cfg, data, seeds=seeds, device=device, progress=progress or (lambda k, what: None))


def _train_gpsa(cfg: GPSAConfig, data: dict, *, seeds=None, device=None, progress) -> dict:
    """Run E6(b) on ``data`` (from :func:`load_digits_tokens` / :func:`load_cifar10_tokens`).

    Members = arms × seeds × data sizes. Each member trains with Adam on minibatches of ``batch``
    images drawn from its first-N subset of a per-seed permutation of the training set (nested
    subsets). Returns {"accuracy": {arm: (S, K)} final test accuracy, "curves": {arm: (S, K, E)} test
    accuracy every ``eval_every`` steps, "steps": {arm: (S,)} first evaluated step with test accuracy
    ≥ acc_threshold at the largest N (inf if never), "seconds"}."""
    device = torch.device(device) if device is not None else default_device()
    seeds = list(range(cfg.seeds)) if seeds is None else list(seeds)
    arms = list(cfg.arms)
    ntr = data["x_train"].shape[0]
    Ns = [ntr if N is None else min(int(N), ntr) for N in cfg.data_sizes]
    A, S, K = len(arms), len(seeds), len(Ns)
    t0 = time.perf_counter()
    xtr = torch.as_tensor(data["x_train"], dtype=torch.float32, device=device)
    ytr = torch.as_tensor(data["y_train"], device=device)
    xte = torch.as_tensor(data["x_test"], dtype=torch.float32, device=device)
    yte = torch.as_tensor(data["y_test"], device=device)
    pos = torch.as_tensor(data["pos"], dtype=torch.float32, device=device)
    delta = pos[None, :, :] - pos[:, None, :]  # (T, T, 2): pos_j − pos_i
    rel = torch.cat([delta, (delta**2).sum(-1, keepdim=True)], -1)
    T, pdim = xtr.shape[1], xtr.shape[2]
    members = [(a, j, N) for a in arms for j in range(S) for N in Ns]
    p = stack_members(
        [_gpsa_member_init(cfg, a, seeds[j], pdim, T, data["classes"]) for a, j, _ in members], device, _TRAINABLE_B
    )
    perms = torch.stack(
        [torch.randperm(ntr, generator=torch.Generator().manual_seed(80_021 * (s + 1))) for s in seeds]
    ).to(device)
    sj = torch.tensor([j for _, j, _ in members], device=device)
    Nt = torch.tensor([N for _, _, N in members], device=device, dtype=torch.float32)
    bgen = torch.Generator(device="cpu").manual_seed(90_001)
    opt = torch.optim.Adam([p[k] for k in _TRAINABLE_B if cfg.mlp or k not in ("W1", "b1", "W2", "b2")], lr=cfg.lr)
    G = len(members)
    n_eval = cfg.steps // cfg.eval_every + 1
    curves = np.zeros((G, n_eval))

    def evaluate():
        accs = torch.zeros(G, device=device)
        with torch.no_grad():
            for s0 in range(0, xte.shape[0], 512):
                xb = xte[s0 : s0 + 512]
                lg = _gpsa_logits(p, xb[None].expand(G, *xb.shape), rel, cfg.heads, cfg.mlp)
                accs += (lg.argmax(-1) == yte[s0 : s0 + 512][None]).float().sum(-1)
        return (accs / xte.shape[0]).cpu().numpy()

    ei = 0
    for t in range(cfg.steps + 1):
        if t % cfg.eval_every == 0:
            curves[:, ei] = evaluate()
            ei += 1
        if t == cfg.steps:
            progress(1, f"E6(b) {data['name']}")
            break
        u = torch.rand(G, cfg.batch, generator=bgen).to(device)
        local = torch.minimum((u * Nt[:, None]).long(), (Nt[:, None] - 1).long())
        idx = perms[sj[:, None], local]
        xb, yb = xtr[idx], ytr[idx]
        opt.zero_grad(set_to_none=True)
        lg = _gpsa_logits(p, xb, rel, cfg.heads, cfg.mlp)
        loss = torch.nn.functional.cross_entropy(lg.reshape(-1, lg.shape[-1]), yb.reshape(-1), reduction="none")
        loss.reshape(G, -1).mean(-1).sum().backward()
        opt.step()
        progress(1, f"E6(b) {data['name']}")
    by_arm = curves[:, :ei].reshape(A, S, K, ei)
    eval_steps = np.arange(ei) * cfg.eval_every
    hit = by_arm[:, :, -1, :] >= cfg.acc_threshold
    steps = np.where(hit.any(-1), eval_steps[np.argmax(hit, -1)], np.inf)
    return {
        "arms": arms,
        "seeds": seeds,
        "data_sizes": Ns,
        "dataset": data["name"],
        "accuracy": {a: by_arm[i, :, :, -1] for i, a in enumerate(arms)},
        "curves": {a: by_arm[i] for i, a in enumerate(arms)},
        "eval_steps": eval_steps,
        "steps": {a: steps[i] for i, a in enumerate(arms)},
        "seconds": time.perf_counter() - t0,
        "config": cfg,
    }
