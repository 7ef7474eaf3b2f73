"""The :class:`Theorem` record of the registry (statement, hypotheses, conclusions, derivation,
links to its tests) and its :class:`Source` (which seed claim it formalises)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from . import derivations as _dv
from .errors import UnsupportedSizeError
from .statements import Conclusion, Hypothesis
from .symbolic import Derivation


@dataclass(frozen=True)
class Source:
    seed: str
    claim: str
    section: str


@dataclass(frozen=True)
class Theorem:
    id: str
    title: str
    kind: str  # "theorem" | "lemma"
    source: Source
    hypotheses: tuple[Hypothesis, ...]
    conclusions: tuple[Conclusion, ...]
    derivation: Callable[..., Derivation]
    lemmas: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    symbolic_tests: tuple[str, ...] = ()
    certificate_tests: tuple[str, ...] = ()
    numeric_tests: tuple[str, ...] = ()
    necessity_tests: tuple[str, ...] = ()
    #: sharpness witnesses of the bounds its statements state (:class:`theory.statements.Sharpness`)
    sharpness: tuple = ()
    extra: dict = field(default_factory=dict, compare=False)
    #: the derivation for symbolic sizes (``theory.derivations.general.general_<id>``), if any
    general: Callable[..., Derivation] | None = field(default=None, compare=False)

    def derive_general(self) -> Derivation:
        """Run the derivation for symbolic sizes on this entry's own formulas (an edited formula is
        what gets proved); :class:`ValueError` when the theorem has none."""
        if self.general is None:
            raise ValueError(f"{self.id}: no derivation for symbolic sizes (see its conclusions' scope)")
        return self.general(self)

    @property
    def general_steps(self) -> tuple[tuple[str, ...], ...]:
        """The outline of :meth:`derive_general` (:data:`theory.steps.GENERAL_STEPS`)."""
        from .steps import GENERAL_STEPS

        return GENERAL_STEPS.get(self.id, ())

    @property
    def supported_sizes(self) -> dict[str, tuple[int, int]]:
        """Size parameter -> inclusive (min, max) the symbolic derivation accepts."""
        return dict(_dv.SIZES.get(self.id, {}))

    @property
    def steps(self) -> tuple[tuple[str, ...], ...]:
        """The derivation's outline at its default sizes: ``(kind, step name[, detail])`` in order
        (:data:`theory.steps.STEPS`; kinds ``"zero"``, ``"witness"``, ``"numeric"``)."""
        from .steps import STEPS

        return STEPS.get(self.id, ())

    @property
    def default_sizes(self) -> dict[str, int]:
        sig = inspect.signature(self.derivation)
        return {k: p.default for k, p in sig.parameters.items() if k in self.supported_sizes}

    def derive(self, **sizes: int) -> Derivation:
        """Run the symbolic derivation (exact). Unknown size names or out-of-range sizes raise
        :class:`~theory.errors.UnsupportedSizeError` listing the supported ranges."""
        supported = self.supported_sizes
        for k, v in sizes.items():
            if k not in supported:
                raise UnsupportedSizeError(self.id, k, v, supported)
        return self.derivation(**sizes)

    def hypothesis(self, hid: str) -> Hypothesis:
        for h in self.hypotheses:
            if h.id == hid:
                return h
        raise KeyError(f"{self.id}: no hypothesis {hid!r}; known: {[h.id for h in self.hypotheses]}")

    def conclusion(self, cid: str) -> Conclusion:
        for c in self.conclusions:
            if c.id == cid:
                return c
        raise KeyError(f"{self.id}: no conclusion {cid!r}; known: {[c.id for c in self.conclusions]}")

    def without(self, hid: str) -> Theorem:
        """The statement with hypothesis ``hid`` removed (a statement mutant)."""
        self.hypothesis(hid)
        return replace(self, hypotheses=tuple(h for h in self.hypotheses if h.id != hid))

    def with_conclusion(self, c: Conclusion) -> Theorem:
        """The statement with the conclusion of the same id replaced by ``c``."""
        self.conclusion(c.id)
        return replace(self, conclusions=tuple(c if x.id == c.id else x for x in self.conclusions))

    @property
    def hypothesis_ids(self) -> frozenset[str]:
        return frozenset(h.id for h in self.hypotheses)
