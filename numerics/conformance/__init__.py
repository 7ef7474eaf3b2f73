"""The conformance kit: is *this* attention module the connection walk it claims (THEOREMS.md T2)?
Where to look to support a new attention family.

One public face; the chain inside runs one way: :mod:`~numerics.conformance.protocol` (a drawn input, an
extraction, the ``Adapter`` base) → :mod:`~numerics.conformance.hf_returned` (HF modules that return their
probabilities) → :mod:`~numerics.conformance.hf_capture` (capture through transformers' attention interface)
→ :mod:`~numerics.conformance.torch_capture` (any PyTorch attention observed beneath the libraries by a
``TorchFunctionMode``) → :mod:`~numerics.conformance.torch_adapter` (its adapter, and the fallback of
``adapter_for``) → :mod:`~numerics.conformance.hf` (stand-alone HF attention modules) → :mod:`~numerics.conformance.adapters`
(torch MHA, the ``connwalk_attention`` protocol, whole models) → :mod:`~numerics.conformance.checks` (T2's
hypotheses and identity, T3/T5 hypotheses per draw) → :mod:`~numerics.conformance.observed` (the module
behind an adapter that reports its output and A, run and compared with the report) → :mod:`~numerics.conformance.bounds` (the kit's
arguments and a given draw refused before any draw runs; a caller's signals) → :mod:`~numerics.conformance.kit`
(:func:`check_attention`, :func:`assert_conforms`, reports) → this face."""

from __future__ import annotations

from numerics.conformance import hf, hf_capture, kit, torch_adapter, torch_capture
from numerics.conformance.hf import *  # noqa: F403
from numerics.conformance.hf_capture import *  # noqa: F403
from numerics.conformance.kit import *  # noqa: F403
from numerics.conformance.torch_adapter import *  # noqa: F403
from numerics.conformance.torch_capture import *  # noqa: F403

#: the face: the public names of ``kit``, ``hf``, ``hf_capture``, ``torch_capture``, ``torch_adapter``
#: (first occurrence kept)
__all__ = list(
    dict.fromkeys([*kit.__all__, *hf.__all__, *hf_capture.__all__, *torch_capture.__all__, *torch_adapter.__all__])
)
