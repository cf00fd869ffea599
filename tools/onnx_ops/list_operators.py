#!/usr/bin/python3
"""list_operators.py - writes tools/onnx_ops/operators.txt: every ONNX operator with its since-versions.

Run once by hand (the file is checked in; `make operators` and `make test` read it, no Python needed):
    /usr/bin/python3 tools/onnx_ops/list_operators.py [ONNX_SOURCE_DIR] > tools/onnx_ops/operators.txt
The installed onnx package's onnx.defs (Debian's python3-onnx) is the authority for what it knows; Debian
ships onnx 1.12 (opsets up to 17), so operators and versions of later opsets are read from the schema
registrations of an ONNX source tree (onnx/defs/operator_sets*.h of a release, given as ONNX_SOURCE_DIR,
e.g. `git archive v1.22.0 onnx/defs | tar -x -C DIR`). Where both know an operator version they must
agree: the script fails otherwise.

Output: one line per operator, `domain<TAB>name<TAB>since-versions (comma-separated)<TAB>deprecated versions (comma-separated) or -`.
"""
import os
import re
import sys

import onnx
import onnx.defs

DOMAINS = {"": "ai.onnx", "ai.onnx": "ai.onnx", "ai.onnx.ml": "ai.onnx.ml",
           "ai.onnx.preview.training": "ai.onnx.preview.training", "ai.onnx.preview": "ai.onnx.preview"}


def from_installed():
    ops, dep = {}, {}
    for s in onnx.defs.get_all_schemas_with_history():
        key = (DOMAINS[s.domain], s.name)
        ops.setdefault(key, set()).add(s.since_version)
        if s.deprecated:
            dep.setdefault(key, set()).add(s.since_version)
    return ops, dep


def from_source(root):
    defs = os.path.join(root, "onnx", "defs")
    ops, dep = {}, {}
    pat = {"Onnx": "ai.onnx", "OnnxML": "ai.onnx.ml", "OnnxTraining": "ai.onnx.training",
           "OnnxPreview": "ai.onnx.preview.training"}
    for fn in sorted(os.listdir(defs)):
        if not (fn.startswith("operator_sets") and fn.endswith(".h")):
            continue
        text = open(os.path.join(defs, fn)).read()
        for dom, ver, name in re.findall(r"class ONNX_OPERATOR_SET_SCHEMA_CLASS_NAME\((\w+),\s*(\d+),\s*(\w+)\)", text):
            ops.setdefault((pat[dom], name), set()).add(int(ver))
        for ver, name in re.findall(r"class ONNX_PREVIEW_OPERATOR_SET_SCHEMA_CLASS_NAME\((\d+),\s*(\w+)\)", text):
            ops.setdefault(("preview", name), set()).add(int(ver))  # domain from its registration below
    # the preview class names' domains, and deprecations: a registration whose schema calls .Deprecate()
    macro_domain = {"": "ai.onnx", "ML_": "ai.onnx.ml", "TRAINING_": "ai.onnx.training", "PREVIEW_": "ai.onnx.preview",
                    "PREVIEW_TRAINING_": "ai.onnx.preview.training"}
    reg = re.compile(r"ONNX_(ML_|PREVIEW_TRAINING_|TRAINING_|PREVIEW_)?OPERATOR_SET_SCHEMA\(\s*(\w+),\s*(\d+),")
    for dirpath, _, files in os.walk(defs):
        for fn in files:
            if not fn.endswith(".cc"):
                continue
            text = open(os.path.join(dirpath, fn)).read()
            hits = list(reg.finditer(text))
            for i, m in enumerate(hits):
                end = hits[i + 1].start() if i + 1 < len(hits) else len(text)
                dom, name, ver = macro_domain[m.group(1) or ""], m.group(2), int(m.group(3))
                if ("preview", name) in ops and dom.startswith("ai.onnx.preview"):
                    ops.setdefault((dom, name), set()).update(ops[("preview", name)])
                if ".Deprecate()" in text[m.start():end]:
                    dep.setdefault((dom, name), set()).add(ver)
    for key in [k for k in ops if k[0] == "preview"]:
        if not any(k[1] == key[1] and k[0].startswith("ai.onnx.preview") for k in ops):
            sys.exit("list_operators.py: no registration gives the domain of %s" % key[1])
        del ops[key]
    return ops, dep


def main():
    ops, dep = from_installed()
    src = "onnx.defs of the installed onnx %s (opsets up to %d)" % (onnx.__version__, onnx.defs.onnx_opset_version())
    if len(sys.argv) > 1:
        sops, sdep = from_source(sys.argv[1])
        for key, vers in ops.items():  # both must agree on what the installed package knows
            newer = {v for v in sops.get(key, set()) if v <= max(vers)}
            if key[0] != "ai.onnx.preview.training" and newer != vers:
                sys.exit("list_operators.py: %s %s: installed onnx says %s, the source tree %s" % (key[0], key[1], sorted(vers), sorted(newer)))
        for key, vers in sops.items():
            ops.setdefault(key, set()).update(vers)
        for key, v in sdep.items():
            dep.setdefault(key, set()).update(v)
        src += " and the schema registrations of the ONNX source tree %s" % os.path.basename(os.path.abspath(sys.argv[1]))
    print("# operators.txt - every ONNX operator and the opset versions that (re)defined it, from %s." % src)
    print("# Written by tools/onnx_ops/list_operators.py (do not edit); read by tests/test_ops.c (make operators).")
    print("# domain\tname\tsince-versions\tdeprecated-versions")
    order = {"ai.onnx": 0, "ai.onnx.ml": 1, "ai.onnx.preview.training": 2, "ai.onnx.preview": 3, "ai.onnx.training": 4}
    for key in sorted(ops, key=lambda k: (order.get(k[0], 9), k[0], k[1])):
        d = dep.get(key)
        print("%s\t%s\t%s\t%s" % (key[0], key[1], ",".join(str(v) for v in sorted(ops[key])), ",".join(str(v) for v in sorted(d)) if d else "-"))


if __name__ == "__main__":
    main()
