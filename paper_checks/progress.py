r"""Progress of the job's long stages (E5's sweep, E6's training, the verdicts, the figures).

A stage takes ``progress(done, total, what)``, a plain callable (None: silent): :func:`ticker` turns
it into the ``tick(k, what)`` a stage's inner loops call; :func:`stage_bar` is the job's callable, a
``tqdm`` bar on stderr that appears when the stage starts, so the terminal never goes quiet for long.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

Progress = Callable[[int, int, str], None]

__all__ = ["Progress", "stage_bar", "ticker"]


def ticker(total: int, progress: Progress | None) -> Callable[[int, str], None]:
    """``tick(k, what)``: ``k`` more steps of ``total`` done (reported to ``progress``, if any; the
    total is reported at once, as 0 of ``total`` done)."""
    done = 0
    if progress is not None:
        progress(0, total, "")

    def tick(k: int = 1, what: str = "") -> None:
        nonlocal done
        done += int(k)
        if progress is not None:
            progress(done, total, what)

    return tick


class stage_bar:
    """A context manager: a ``tqdm`` bar named ``desc`` on stderr while the stage runs (nothing when
    ``enabled`` is false); ``as`` gives the stage's ``progress(done, total, what)`` callable (None
    when disabled). The bar is completed and closed when the stage ends."""

    def __init__(self, desc: str, enabled: bool, *, total: int | None = None, unit: str = "step"):
        self.desc, self.enabled, self.total, self.unit = desc, enabled, total, unit
        self.bar = None

    def __enter__(self) -> Progress | None:
        if not self.enabled:
            return None
        from tqdm import tqdm

        self.bar = tqdm(total=self.total, desc=self.desc, unit=self.unit, file=sys.stderr, dynamic_ncols=True)
        return self.update

    def update(self, done: int, total: int, what: str = "") -> None:
        bar = self.bar
        if bar is None:
            return
        if what:
            bar.set_postfix_str(what, refresh=False)
        if bar.total != total:  # the stage's total, known once it starts: shown at once
            bar.total = total
            bar.n = done
            bar.refresh()
        else:
            bar.update(done - bar.n)

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.bar is not None:
            if exc_type is None and self.bar.total is not None and self.bar.n < self.bar.total:
                self.bar.update(self.bar.total - self.bar.n)
            self.bar.close()
            self.bar = None
