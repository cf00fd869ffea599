#!/usr/bin/env python3
# shape_sharing.py - counts the operators of src/ops.def whose import shape (src/shape.c shape_<op>) and rule shape
# (rules/rule_shape.c sym_<op>, which the rule checker and the verifier run) call one so_dims_* rule; lists the others.
# Usage: tools/shape_sharing.py [ROOT]   (a reading of the source text: helpers and #define aliases are followed)
import re, sys
root = sys.argv[1] if len(sys.argv) > 1 else "."
ops = re.findall(r'^X\(\s*\w+\s*,\s*(\w+)', open(root + '/src/ops.def').read(), re.M)
def funcs(src):
    out = {}
    for m in re.finditer(r'^(?:static )?[\w ]+?\**\s*\b(\w+)\([^;{}/]*?\)\s*\{', src, re.M):
        i, depth = m.end(), 1
        while depth and i < len(src):
            depth += {'{': 1, '}': -1}.get(src[i], 0); i += 1
        out.setdefault(m.group(1), src[m.end():i - 1])
    alias = dict(re.findall(r'^#define (\w+) (\w+)\s*$', src, re.M))
    return out, alias
def rules_of(name, fs, alias, seen=None):
    seen = seen or set()
    while name in alias: name = alias[name]
    if name in seen or name not in fs: return set()
    seen.add(name)
    body = fs[name]
    r = set(re.findall(r'\b(so_dims_\w+)\(', body)) - {'so_dims_str'}
    for callee in re.findall(r'\b(\w+)\(', body):
        if callee in fs and callee != name: r |= rules_of(callee, fs, alias, seen)
    return r
sf, sa = funcs(open(root + '/src/shape.c').read())
rf, ra = funcs(open(root + '/rules/rule_shape.c').read())
shared, only = [], []
for op in ops:
    a = rules_of('shape_' + op, sf, sa); b = rules_of('sym_' + op, rf, ra)
    (shared if a & b else only).append(op)
print(len(shared), 'of', len(ops), 'operators share one so_dims_* rule between shape_<op> and sym_<op>')
print('not shared:', ' '.join(only))
