"""``mutmut`` with one rule changed: functions decorated only with ``@contract(...)`` or ``@sized(...)``
(optionally under ``@classmethod``) are mutated.

mutmut 3 skips every decorated function (a decorator runs at definition time and may not tolerate a
copy). Nearly every public function of the toolkit carries ``@contract(...)`` (numerics/contracts/declarations.py:
argument validation), so unpatched mutmut would mutate only the undecorated helpers — graphs.py went
from 1002 mutants to 75 when the contracts landed. ``contract`` is safe to keep on mutmut's trampoline:
the trampoline keeps the decorator (validation runs once, before whichever mutant is active) and the
copies mutmut makes (``x_f__mutmut_orig``, ``x_f__mutmut_N``) are stripped of it, so the contract
registry is not filled with mutant names. Decorator arguments are never mutated (mutmut's own rule).

    python mutation/mutmut_entry.py run ...     # what `python -m mutmut run ...` would do
"""

from __future__ import annotations

import sys

import libcst as cst
from libcst.metadata import PositionProvider
from mutmut.mutation import file_mutation as fm

# decorator calls kept on the trampoline and stripped from the copies: ``@contract(...)`` (argument
# validation, numerics/contracts/declarations.py) and ``@sized(...)`` (the supported sizes of a theory derivation,
# theory/derivations/sizes.py: it registers the ranges once and checks the keyword sizes before calling
# whichever copy is active; both read the signature through functools.wraps' ``__wrapped__``)
KEPT_DECORATORS = frozenset({"contract", "sized"})


def is_contract(decorator: cst.Decorator) -> bool:
    d = decorator.decorator
    return isinstance(d, cst.Call) and isinstance(d.func, cst.Name) and d.func.value in KEPT_DECORATORS


_skip = fm.MutationVisitor._skip_node_and_children
_arrange = fm.function_trampoline_arrangement


def is_classmethod(decorator: cst.Decorator) -> bool:
    return isinstance(decorator.decorator, cst.Name) and decorator.decorator.value == "classmethod"


def _contract_only(node: cst.FunctionDef) -> bool:
    """``@contract(...)``, optionally under ``@classmethod`` (the constructors ``ConnectionWalk.from_mha``,
    ``from_factors``, ...: ``@classmethod`` outermost, then ``@contract``)."""
    decs = list(node.decorators)
    if decs and is_classmethod(decs[0]):
        decs = decs[1:]
    return bool(decs) and all(is_contract(d) for d in decs)


def _skip_node_and_children(self, node: cst.CSTNode) -> bool:
    if isinstance(node, cst.FunctionDef) and node.decorators and _contract_only(node):
        # mutmut's remaining function rules: `# pragma: no mutate` lines and never-mutate names
        position = self.get_metadata(PositionProvider, node, None)
        if position and position.start.line in self._ignored_node_lines:
            self.ignored_functions.add(node.name.value)
            return True
        return node.name.value in fm.NEVER_MUTATE_FUNCTION_NAMES
    return _skip(self, node)


def _function_trampoline_arrangement(function, mutants, class_name):
    decls, methods, assigns, names = _arrange(function, mutants, class_name)
    trampoline = methods[0]
    decs = list(trampoline.decorators)
    if len(decs) > 2 and is_classmethod(decs[0]) and not any(a.keyword for a in decs[-1].decorator.args):
        # mutmut passes is_classmethod=True only when @classmethod is the sole decorator; the trampoline
        # must drop ``cls`` and look the copies up on the class here as well
        flag = cst.Arg(cst.Name("True"), keyword=cst.Name("is_classmethod"))
        decs[-1] = decs[-1].with_changes(
            decorator=decs[-1].decorator.with_changes(args=[*decs[-1].decorator.args, flag])
        )
        trampoline = trampoline.with_changes(decorators=decs)
    copies = [m.with_changes(decorators=[d for d in m.decorators if not is_contract(d)]) for m in methods[1:]]
    return decls, [trampoline, *copies], assigns, names


fm.MutationVisitor._skip_node_and_children = _skip_node_and_children
fm.function_trampoline_arrangement = _function_trampoline_arrangement

if __name__ == "__main__":
    from mutmut.__main__ import cli

    sys.argv[0] = "mutmut"
    cli()
