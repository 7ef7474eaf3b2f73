"""Compare two `connwalk paper-checks` results.json files (behaviour-preservation check of a refactor):
per (claim, model) the bit-identical rows and the largest absolute difference of any number, per field
the largest difference, verdict changes and non-numeric differences. Usage:

    python scripts/compare_results.py BEFORE/results.json AFTER/results.json
"""

import json
import math
import sys
from collections import defaultdict
from pathlib import Path


def walk(a, b, path, out):
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None or isinstance(a, str) or isinstance(b, str):
        if a != b:
            out["nonnum"].append((path, a, b))
        return
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if math.isnan(a) and math.isnan(b):
            return
        if (math.isnan(a) or math.isnan(b)) or ((math.isinf(a) or math.isinf(b)) and a != b):
            out["nonnum"].append((path, a, b))
            return
        d = abs(a - b) if not (math.isinf(a) and a == b) else 0.0
        out["num"][path] = max(out["num"].get(path, 0.0), d)
        return
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out["nonnum"].append((path + "[len]", len(a), len(b)))
            return
        for x, y in zip(a, b):
            walk(x, y, path + "[]", out)
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out["nonnum"].append(
                    (path + "." + k, "<missing>" if k not in a else "present", "<missing>" if k not in b else "present")
                )
                continue
            walk(a[k], b[k], path + "." + k, out)
        return
    out["nonnum"].append((path, type(a).__name__, type(b).__name__))


def key(r):
    return (r["claim"], r["model"], r["statistic"])


def main(pa, pb, skip=("seconds", "pngs")):
    A, B = (json.loads(Path(p).read_text()) for p in (pa, pb))
    ra, rb = {key(r): r for r in A["rows"]}, {key(r): r for r in B["rows"]}
    print(
        f"rows: before {len(ra)}, after {len(rb)}; only before {sorted(set(ra) - set(rb))}; only after {sorted(set(rb) - set(ra))}"
    )
    per_claim = defaultdict(lambda: {"rows": 0, "identical": 0, "max": 0.0, "field": "", "verdict_changes": []})
    field_max = defaultdict(float)
    nonnum = []
    for k in sorted(set(ra) & set(rb)):
        a, b = dict(ra[k]), dict(rb[k])
        for ex in (a, b):
            ex["extra"] = {kk: v for kk, v in ex.get("extra", {}).items() if kk not in skip}
        out = {"num": {}, "nonnum": []}
        walk(a, b, "", out)
        c = per_claim[k[0] + " " + k[1]]
        c["rows"] += 1
        mx = max(out["num"].values(), default=0.0)
        if mx == 0.0 and not out["nonnum"]:
            c["identical"] += 1
        if mx > c["max"]:
            c["max"], c["field"] = mx, f"{k[2]}{max(out['num'], key=out['num'].get)}"
        for p, d in out["num"].items():
            field_max[p] = max(field_max[p], d)
        if a["verdict"] != b["verdict"]:
            c["verdict_changes"].append((k[2], a["verdict"], b["verdict"]))
        nonnum += [(k, *x) for x in out["nonnum"]]
    print("\nper claim/model: rows, bit-identical rows, max |difference| over all numbers (where)")
    for cm, c in sorted(per_claim.items()):
        print(f"  {cm:55s} {c['rows']:3d} {c['identical']:3d}  max {c['max']:.3e}  {c['field']}")
        for v in c["verdict_changes"]:
            print(f"      VERDICT CHANGED: {v}")
    print("\nper field (max over rows):")
    for p, d in sorted(field_max.items(), key=lambda t: -t[1]):
        if d > 0:
            print(f"  {p:60s} {d:.3e}")
    print(f"\nnon-numeric differences: {len(nonnum)}")
    for x in nonnum[:40]:
        print("  ", x)
    print("\nverdicts section identical:", A.get("verdicts") == B.get("verdicts"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
