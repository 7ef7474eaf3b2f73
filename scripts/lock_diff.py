"""Compares the installed distributions with a lock file (``name==version`` lines).

``python scripts/lock_diff.py requirements.lock`` prints every locked distribution whose installed version
differs (or that is missing) and every installed requirement of a locked distribution that the lock does
not name; exit 0 either way. ``--check`` makes any difference exit 1 (scripts/install.sh uses it after
installing the lock: the locked set must be installed exactly and be closed under its dependencies).
Local version labels (``2.13.0+cpu``) compare equal to the plain version.
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def read_lock(path: Path) -> dict[str, str]:
    pins: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep or not version:
            raise SystemExit(f"{path}: not a `name==version` line: {raw!r}")
        pins[canonicalize_name(name)] = version.strip()
    return pins


def installed() -> dict[str, metadata.Distribution]:
    return {canonicalize_name(d.metadata["Name"]): d for d in metadata.distributions()}


def differences(pins: dict[str, str]) -> list[str]:
    have = installed()
    out = []
    for name, version in sorted(pins.items()):
        dist = have.get(name)
        got = None if dist is None else dist.version.split("+", 1)[0]
        if got != version:
            out.append(f"{name}: locked {version}, installed {got or 'nothing'}")
    for name in sorted(pins):
        dist = have.get(name)
        for spec in (dist.requires or []) if dist is not None else []:
            req = Requirement(spec)
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            if canonicalize_name(req.name) not in pins:
                out.append(f"{name} requires {req.name}, which the lock does not name")
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [a for a in argv if a != "--check"] or ["requirements.lock"]
    diff = differences(read_lock(Path(paths[0])))
    for line in diff:
        print(line)
    print(f"{len(diff)} difference(s) from {paths[0]}")
    return 1 if (check and diff) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
