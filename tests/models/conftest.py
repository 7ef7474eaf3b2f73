"""Session fixtures for the model-adapter tests: a temporary model cache (``CONNWALK_CACHE``) and the
real checkpoints, each loaded once per session (SmolLM2's GGUF is dequantised once, ~15–30 s)."""

from __future__ import annotations

import os

import pytest
import torch


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory):
    """A fresh cache directory for this session, exported as ``CONNWALK_CACHE``."""
    from numerics.models.cache import ENV

    path = tmp_path_factory.mktemp("connwalk-cache")
    old = os.environ.get(ENV)
    os.environ[ENV] = str(path)
    yield path
    if old is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = old


def _load(name, dtype):
    from numerics.models.registry import load

    return load(name, dtype=dtype, device="cpu")


@pytest.fixture(scope="session")
def minilm32(model_cache):
    return _load("minilm", torch.float32)


@pytest.fixture(scope="session")
def minilm64(model_cache):
    return _load("minilm", torch.float64)


@pytest.fixture(scope="session")
def smollm_cold(model_cache):
    """SmolLM2 loaded through the empty session cache: the cold path (GGUF → dequantise → cache)."""
    import time

    from numerics.models.registry import load_gguf_dir, resolve

    _, gguf = resolve("smollm2-135m")
    t = time.perf_counter()
    path, info = load_gguf_dir(gguf)
    return {"gguf": gguf, "path": path, "info": info, "seconds": time.perf_counter() - t}


@pytest.fixture(scope="session")
def smollm32(smollm_cold):
    return _load("smollm2-135m", torch.float32)


@pytest.fixture(scope="session")
def smollm64(smollm_cold):
    return _load("smollm2-135m", torch.float64)
