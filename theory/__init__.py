"""connwalk theory: SymPy statements and derivations of THEORY.md's theorems (no torch here)."""
