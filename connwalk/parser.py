"""What the command-line front ends of :mod:`connwalk` share, all of it standard library only
(so that ``--help`` and every argument error answer without importing torch, SymPy or transformers):

* :class:`Parser`: argparse with a one-line usage error, exit 2;
* :class:`IntOption` / :class:`FloatOption` / :class:`OptionTable`: the declared bounds of the numeric
  options, checked before any heavy import (errors name the option as typed);
* :func:`readdress`: a library error re-addressed to what the user typed (an option, an environment
  variable, the command's target) instead of a library parameter or an internal field;
* :class:`Progress`: one line per stage on stderr when stderr is a terminal;
* :func:`preserved_state`: what an entry point changes in the process (torch threads, default dtype,
  RNG states, warning filters) restored on the way out;
* :func:`hypothesis_storage`: Hypothesis' storage directory kept out of the user's working directory
  while a command runs the kit.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import random
import re
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from numerics.errors import ConnwalkError, ParameterError

__all__ = [
    "Parser",
    "IntOption",
    "FloatOption",
    "OptionTable",
    "readdress",
    "is_environment_variable",
    "Progress",
    "hypothesis_storage",
    "preserved_state",
    "check_json_path",
]


class Parser(argparse.ArgumentParser):
    """argparse with a one-line usage error (``connwalk: error: argument --seed: ...``), exit 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


# ------------------------------------------------------------------ declared option bounds
@dataclass(frozen=True)
class IntOption:
    """An integer option in ``[lo, hi]`` (``None``: unbounded); ``optional``: ``None`` allowed."""

    lo: int | None = None
    hi: int | None = None
    optional: bool = False

    def check(self, name: str, value) -> None:
        if value is None and self.optional:
            return
        if isinstance(value, bool) or not isinstance(value, int):
            raise ParameterError(f"expected an integer, got {value!r}", argument=name)
        if self.lo is not None and value < self.lo:
            raise ParameterError(f"must be >= {self.lo}, got {value}", argument=name)
        if self.hi is not None and value > self.hi:
            raise ParameterError(f"must be <= {self.hi}, got {value}", argument=name)


@dataclass(frozen=True)
class FloatOption:
    """A finite real option, ``> lo`` (``closed``: ``>= lo``), optionally nonzero."""

    lo: float | None = None
    closed: bool = False
    nonzero: bool = False

    def check(self, name: str, value) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParameterError(f"expected a real number, got {value!r}", argument=name)
        if not math.isfinite(value):
            raise ParameterError(f"must be a finite number, got {value}", argument=name)
        if self.lo is not None and (value < self.lo or (value == self.lo and not self.closed)):
            raise ParameterError(f"must be {'>=' if self.closed else '>'} {self.lo}, got {value}", argument=name)
        if self.nonzero and value == 0:
            raise ParameterError("must be nonzero", argument=name)


class OptionTable:
    """The numeric options of one command (``--name`` → kind), checked in declaration order by
    :meth:`validate` before any work; ``after(values)`` checks rules between options."""

    def __init__(
        self, command: str, specs: dict[str, IntOption | FloatOption], *, after: Callable[[dict], None] | None = None
    ):
        self.command = command
        self.specs: dict[str, IntOption | FloatOption] = dict(specs)
        self.after = after

    def values(self, args: argparse.Namespace) -> dict:
        return {opt: getattr(args, opt[2:].replace("-", "_")) for opt in self.specs}

    def validate(self, values: dict) -> None:
        for opt, spec in self.specs.items():
            spec.check(opt, values[opt])
        if self.after is not None:
            self.after(values)


# ------------------------------------------------------------------ error addresses
_ENV = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$")


def is_environment_variable(name: str | None) -> bool:
    """An upper-case ``NAME_WITH_UNDERSCORES`` that is set in the environment or is one of connwalk's
    own (``CONNWALK_…``): what the user set, never an option (``W_O`` is a field, not a variable)."""
    if not name or not _ENV.match(name):
        return False
    return name in os.environ or name.startswith("CONNWALK_")


def readdress(
    exc: ConnwalkError,
    options: dict[str, str],
    *,
    fallback: str | None = None,
    prefix: str = "",
    fields: dict[str, str] | None = None,
):
    """``exc`` addressed to what the user typed (same type): a library parameter in ``options`` →
    that option; an environment variable → itself (it is what the user set); an option or the
    ``fallback`` itself → unchanged; any other name (an internal field such as ``A`` or ``W_O``) →
    ``fallback``, the message after ``prefix`` (e.g. the target as typed) and what the field is in
    words (``fields``; else the field in parentheses); without a fallback, ``exc`` unchanged."""
    arg = exc.argument
    if arg is None or arg == fallback or (arg not in options and (arg in options.values() or arg.startswith("-"))):
        return exc  # already what the user typed (an option, the target) or no address at all
    msg = str(exc)
    if arg and msg.startswith(f"{arg}: "):
        msg = msg[len(arg) + 2 :]
    if arg in options:
        new, text = options[arg], msg
    elif is_environment_variable(arg):
        return exc
    elif fallback is not None:
        desc = (fields or {}).get(arg)
        new, text = fallback, (f"{prefix}{desc}: {msg}" if desc else f"{prefix}{msg} (in {arg})")
    else:
        return exc
    try:
        out = type(exc)(text, argument=new)
    except TypeError:  # a subclass with another constructor: keep the family
        out = ConnwalkError(text, argument=new)
    return out


# ------------------------------------------------------------------ progress
class Progress:
    """What a command is doing, on stderr, while it works: stage lines (``connwalk conform: [ 0.0 s]
    loading torch …``) and one live status line rewritten in place (:meth:`status`; while
    :meth:`live` runs, a ticker rewrites it every second with the elapsed time, so a long step is never
    silent). Shown when ``enabled`` and stderr is a terminal (a CI log or a captured stderr keeps the
    one-line error contract), or always with ``force``."""

    def __init__(self, prog: str, enabled: bool = True, *, force: bool = False, stream=None):
        self.prog = prog
        self.stream = stream if stream is not None else sys.stderr
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.enabled = enabled and (tty or force)
        self.t0 = time.perf_counter()
        self._lock = threading.Lock()
        self._status: str | None = None
        self._shown = False  # a live line is on the screen (not yet ended by a newline)

    def _line(self, message: str) -> str:
        return f"{self.prog}: [{time.perf_counter() - self.t0:5.1f} s] {message}"

    def __call__(self, message: str) -> None:
        """A stage line (ends the live line first)."""
        if not self.enabled:
            return
        with self._lock:
            if self._shown:
                self.stream.write("\n")
                self._shown = False
            self.stream.write(self._line(message) + "\n")
            self.stream.flush()

    def status(self, message: str) -> None:
        """Set (and show) the live status line."""
        self._status = message
        self._show()

    def _show(self) -> None:
        if not self.enabled or self._status is None:
            return
        with self._lock:
            self.stream.write("\r\x1b[K" + self._line(self._status))
            self.stream.flush()
            self._shown = True

    @contextlib.contextmanager
    def live(self, every: float = 1.0) -> Iterator[None]:
        """Rewrite the status line every ``every`` seconds while the body runs; end it afterwards."""
        if not self.enabled:
            yield
            return
        stop = threading.Event()

        def tick():
            while not stop.wait(every):
                self._show()

        t = threading.Thread(target=tick, name="connwalk-progress", daemon=True)
        t.start()
        try:
            yield
        finally:
            stop.set()
            t.join()
            with self._lock:
                if self._shown:
                    self.stream.write("\n")
                    self.stream.flush()
                    self._shown = False
            self._status = None


# ------------------------------------------------------------------ process state
@contextlib.contextmanager
def preserved_state(*, imported_only: bool = False) -> Iterator[None]:
    """Run the body and restore what commands change in the process: torch's intra-op thread count,
    default dtype, grad mode and CPU RNG state, numpy's and Python's global RNG states, and the
    warning filters. torch and numpy are imported here (enter it after the arguments have been
    checked: the body needs them anyway); ``imported_only``: only the state of those of the two that
    are imported already (nothing heavy is imported; for a wrapper around argument checking)."""
    np: Any
    torch: Any
    if imported_only:
        np = sys.modules.get("numpy")
        torch = sys.modules.get("torch")
    else:
        import numpy as np
        import torch
    saved = {}
    if torch is not None and hasattr(torch, "get_num_threads"):
        saved["torch"] = (
            torch.get_num_threads(),
            torch.get_default_dtype(),
            torch.random.get_rng_state(),
            torch.is_grad_enabled(),
        )
    if np is not None and hasattr(np, "random"):
        saved["numpy"] = np.random.get_state()  # noqa: NPY002 (the global state is what is kept)
    py_rng = random.getstate()
    try:
        with warnings.catch_warnings():
            yield
    finally:
        if "torch" in saved:
            threads, dtype, rng, grad = saved["torch"]
            if torch.get_num_threads() != threads:
                torch.set_num_threads(threads)
            torch.set_default_dtype(dtype)
            torch.random.set_rng_state(rng)
            torch.set_grad_enabled(grad)
        if "numpy" in saved:
            np.random.set_state(saved["numpy"])  # noqa: NPY002
        random.setstate(py_rng)


def check_json_path(path: str | None, example: str = "report.json") -> None:
    """``--json PATH`` must name a file that can be written: its directory exists and is writable
    (tried with a temporary file, removed at once), the path is not a directory, an existing file is
    writable. Nothing is left behind."""
    if path is None:
        return
    if not isinstance(path, str) or not path.strip():
        raise ParameterError(f"expected a file path, got {path!r}", argument="--json")
    if os.path.isdir(path):
        raise ParameterError(f"{path!r} is a directory; give a file path such as {path}/{example}", argument="--json")
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.exists(parent) and not os.path.isdir(parent):
        raise ParameterError(f"{parent!r} is not a directory", argument="--json")
    if not os.path.isdir(parent):
        raise ParameterError(f"the directory {parent!r} does not exist (create it first)", argument="--json")
    try:
        if os.path.exists(path):
            with open(path, "a"):
                pass
        else:
            fd, probe = tempfile.mkstemp(dir=parent, prefix=".connwalk-probe-")
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise ParameterError(f"cannot write {path!r}: {exc.strerror or exc}", argument="--json") from None


#: where a command keeps Hypothesis' storage (its cache of local constants) unless
#: ``$HYPOTHESIS_STORAGE_DIRECTORY`` says: under ``$XDG_CACHE_HOME`` (default ``~/.cache``)
HYPOTHESIS_CACHE = ("connwalk", "hypothesis")


@contextlib.contextmanager
def hypothesis_storage() -> Iterator[None]:
    """Run the body with Hypothesis' storage directory away from the working directory: Hypothesis
    writes a cache of the literal constants of the local modules it imports (``.hypothesis/constants/``)
    under its storage directory, by default ``./.hypothesis`` of the working directory it was imported
    in, even with no example database (the kit keeps none). ``$HYPOTHESIS_STORAGE_DIRECTORY``, when set,
    is left to Hypothesis; else the body uses ``$XDG_CACHE_HOME/connwalk/hypothesis`` (default
    ``~/.cache/...``), and the setting it found is restored after it."""
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        yield
        return
    from hypothesis import configuration

    previous = vars(configuration).get("__hypothesis_home_directory")  # None: not resolved yet
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    configuration.set_hypothesis_home_dir(os.path.join(cache, *HYPOTHESIS_CACHE))
    try:
        yield
    finally:
        configuration.set_hypothesis_home_dir(previous)
