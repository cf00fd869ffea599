#!/usr/bin/python3
"""mutate_models.py - hostile-model corpus: seeded mutations (truncations, bit flips, byte runs,
protobuf field swaps and out-of-range values) of the real exports in data/, each fed to
`superopt inspect` and `superopt run`. Every run must exit 0, or exit 1 with a one-line message
naming the file; never a signal, never more than 1 s of CPU or 1 GB of memory.

usage: mutate_models.py [--superopt PATH] [--count N] [--seed S] [--keep DIR] [--list]
Prints one line per failure and ends with "mutate: N passed, N failed". Deterministic: the same
seed gives the same mutants (their SHA-256 prefixes are printed with --list)."""
import argparse
import copy
import hashlib
import os
import random
import resource
import subprocess
import sys
import tempfile

CPU_LIMIT_S = 1.0        # CPU seconds per command (user + system)
MEM_LIMIT = 1 << 30      # address space per command (bytes), as `ulimit -v 1048576`
WALL_LIMIT_S = 20.0      # wall clock per command: a hang, not a slow machine
MODELS = ["deepandwide", "lstm2", "nasrnn", "bert2", "squeezenet", "resnet_small"]
EXTREME_INTS = [0, -1, 1, 2, 3, 7, 64, 1 << 31, (1 << 31) - 1, -(1 << 31), 1 << 40, (1 << 63) - 1, -(1 << 63)]


# ---------------- byte-level mutations ----------------

def m_truncate(rng, b, _p):
    n = rng.randrange(0, len(b))
    return b[:n], f"truncate to {n} of {len(b)} bytes"


def m_bitflip(rng, b, _p):
    x = bytearray(b)
    k = rng.choice([1, 2, 4, 8, 32])
    for _ in range(k):
        i = rng.randrange(len(x))
        x[i] ^= 1 << rng.randrange(8)
    return bytes(x), f"flip {k} bits"


def m_header_flip(rng, b, _p):
    """Bit flips in the first 4 KiB: tags, lengths and small fields live there."""
    x = bytearray(b)
    lim = min(len(x), 4096)
    for _ in range(rng.choice([1, 2, 3])):
        i = rng.randrange(lim)
        x[i] ^= 1 << rng.randrange(8)
    return bytes(x), "flip bits in the first 4 KiB"


def m_byterun(rng, b, _p):
    x = bytearray(b)
    i = rng.randrange(len(x))
    n = rng.choice([1, 4, 16, 256])
    v = rng.choice([0x00, 0xff, 0x7f, 0x80])
    x[i:i + n] = bytes([v]) * min(n, len(x) - i)
    return bytes(x), f"overwrite {n} bytes at {i} with {v:#x}"


def m_splice(rng, b, _p):
    """Duplicate or delete a chunk: shifts every later field."""
    i = rng.randrange(len(b))
    n = rng.randrange(1, 64)
    if rng.random() < 0.5:
        return b[:i] + b[i:i + n] + b[i:], f"duplicate {n} bytes at {i}"
    return b[:i] + b[i + n:], f"delete {n} bytes at {i}"


BYTE_MUTATIONS = [m_truncate, m_bitflip, m_header_flip, m_byterun, m_splice]


# ---------------- protobuf-level mutations (onnx) ----------------

def _nodes(m):
    return list(m.graph.node)


def s_swap_op_types(rng, m):
    ns = _nodes(m)
    a, b = rng.sample(range(len(ns)), 2)
    ns[a].op_type, ns[b].op_type = ns[b].op_type, ns[a].op_type
    return f"swap op_type of nodes {a} and {b}"


def s_swap_inputs(rng, m):
    ns = [n for n in _nodes(m) if len(n.input) >= 1]
    a, b = rng.sample(range(len(ns)), 2)
    ia, ib = list(ns[a].input), list(ns[b].input)
    del ns[a].input[:]
    del ns[b].input[:]
    ns[a].input.extend(ib)
    ns[b].input.extend(ia)
    return "swap input lists of two nodes"


def s_reverse_inputs(rng, m):
    ns = [n for n in _nodes(m) if len(n.input) >= 2]
    if not ns:
        return s_swap_op_types(rng, m)
    n = rng.choice(ns)
    ins = list(n.input)[::-1]
    del n.input[:]
    n.input.extend(ins)
    return f"reverse inputs of a {n.op_type}"


def s_attr_extreme(rng, m):
    cands = [(n, a) for n in _nodes(m) for a in n.attribute if a.type in (2, 7)]  # INT, INTS
    if not cands:
        return s_swap_op_types(rng, m)
    n, a = rng.choice(cands)
    v = rng.choice(EXTREME_INTS)
    if a.type == 2:
        a.i = v
    elif a.ints:
        a.ints[rng.randrange(len(a.ints))] = v
    else:
        a.ints.append(v)
    return f"{n.op_type}.{a.name} := {v}"


def s_attr_long_list(rng, m):
    cands = [(n, a) for n in _nodes(m) for a in n.attribute if a.type == 7]
    if not cands:
        return s_attr_extreme(rng, m)
    n, a = rng.choice(cands)
    k = rng.choice([0, 1, 9, 33, 100000])
    del a.ints[:]
    a.ints.extend(rng.randrange(-3, 5) for _ in range(k))
    return f"{n.op_type}.{a.name} := list of {k} ints"


def s_drop_attr(rng, m):
    cands = [n for n in _nodes(m) if len(n.attribute)]
    if not cands:
        return s_swap_op_types(rng, m)
    n = rng.choice(cands)
    i = rng.randrange(len(n.attribute))
    name = n.attribute[i].name
    del n.attribute[i]
    return f"drop {n.op_type}.{name}"


def s_init_dims(rng, m):
    inits = list(m.graph.initializer)
    if not inits:
        return s_input_dims(rng, m)
    t = rng.choice(inits)
    if t.dims and rng.random() < 0.7:
        t.dims[rng.randrange(len(t.dims))] = rng.choice(EXTREME_INTS)
    else:
        t.dims.append(rng.choice([1, 2, 1 << 20]))
    return f"initializer '{t.name}' dims := {list(t.dims)}"


def s_init_dtype(rng, m):
    inits = list(m.graph.initializer)
    if not inits:
        return s_input_dims(rng, m)
    t = rng.choice(inits)
    t.data_type = rng.choice([0, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 16, 99])
    return f"initializer '{t.name}' data_type := {t.data_type}"


def s_init_truncate_data(rng, m):
    inits = [t for t in m.graph.initializer if len(t.raw_data) > 1]
    if not inits:
        return s_init_dims(rng, m)
    t = rng.choice(inits)
    t.raw_data = t.raw_data[:rng.randrange(len(t.raw_data))]
    return f"initializer '{t.name}' raw_data truncated"


def s_init_swap_names(rng, m):
    inits = list(m.graph.initializer)
    if len(inits) < 2:
        return s_init_dims(rng, m)
    a, b = rng.sample(inits, 2)
    a.name, b.name = b.name, a.name
    return f"swap initializer names '{a.name}' and '{b.name}'"


def s_init_drop(rng, m):
    inits = m.graph.initializer
    if not len(inits):
        return s_drop_node(rng, m)
    i = rng.randrange(len(inits))
    name = inits[i].name
    del inits[i]
    return f"drop initializer '{name}'"


def s_external(rng, m):
    inits = list(m.graph.initializer)
    if not inits:
        return s_input_dims(rng, m)
    t = rng.choice(inits)
    t.data_location = 1
    del t.external_data[:]
    loc = rng.choice(["weights.bin", "../../etc/passwd", "/etc/passwd", "", "."])
    e = t.external_data.add()
    e.key, e.value = "location", loc
    if rng.random() < 0.5:
        e = t.external_data.add()
        e.key, e.value = "offset", rng.choice(["0", "-5", "999999999999", "x"])
    return f"initializer '{t.name}' external data at '{loc}'"


def s_input_dims(rng, m):
    ins = [i for i in m.graph.input if i.type.tensor_type.shape.dim]
    i = rng.choice(ins)
    dims = i.type.tensor_type.shape.dim
    d = dims[rng.randrange(len(dims))]
    r = rng.random()
    if r < 0.7:
        d.dim_value = rng.choice(EXTREME_INTS)
    elif r < 0.85:
        d.dim_param = "N"
    else:
        dims.add().dim_value = rng.choice([1, 3])
    return f"input '{i.name}' dims changed"


def s_input_type(rng, m):
    i = rng.choice(list(m.graph.input))
    i.type.tensor_type.elem_type = rng.choice([0, 2, 6, 7, 8, 9, 10, 11, 99])
    return f"input '{i.name}' elem_type := {i.type.tensor_type.elem_type}"


def s_drop_node(rng, m):
    i = rng.randrange(len(m.graph.node))
    op = m.graph.node[i].op_type
    del m.graph.node[i]
    return f"drop node {i} ({op})"


def s_cycle(rng, m):
    ns = [n for n in _nodes(m) if len(n.input) and len(n.output)]
    n = rng.choice(ns)
    later = ns[ns.index(n):]
    src = rng.choice(later)
    n.input[0] = src.output[0]
    return f"{n.op_type} reads a later output (cycle)"


def s_dup_output(rng, m):
    ns = _nodes(m)
    a, b = rng.sample(range(len(ns)), 2)
    ns[b].output[0] = ns[a].output[0]
    return f"nodes {a} and {b} produce the same tensor"


def s_shuffle_nodes(rng, m):
    ns = [copy.deepcopy(n) for n in m.graph.node]
    rng.shuffle(ns)
    del m.graph.node[:]
    m.graph.node.extend(ns)
    return "shuffle node order"


def s_opset(rng, m):
    v = rng.choice([1, 6, 7, 9, 99, -1])
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = v
    return f"opset := {v}"


def s_unknown_op(rng, m):
    n = rng.choice(_nodes(m))
    n.op_type = rng.choice(["FancyOp", "Loop", "If", "Scan", "NonZero", ""])
    if rng.random() < 0.3:
        n.domain = "com.example"
    return f"node op_type := '{n.op_type}'"


def s_output_name(rng, m):
    o = rng.choice(list(m.graph.output))
    o.name = rng.choice(["", "nowhere", m.graph.input[0].name])
    return f"graph output renamed '{o.name}'"


STRUCT_MUTATIONS = [s_swap_op_types, s_swap_inputs, s_reverse_inputs, s_attr_extreme, s_attr_long_list, s_drop_attr,
                    s_init_dims, s_init_dtype, s_init_truncate_data, s_init_swap_names, s_init_drop, s_external,
                    s_input_dims, s_input_type, s_drop_node, s_cycle, s_dup_output, s_shuffle_nodes, s_opset,
                    s_unknown_op, s_output_name]


# ---------------- corpus ----------------

def mutants(data_dir, count, seed):
    """Yields (name, bytes, description): count mutants spread over MODELS, half byte-level, half structural."""
    import onnx  # only needed here; the module is in python3-onnx
    originals = {m: open(os.path.join(data_dir, m + ".onnx"), "rb").read() for m in MODELS}
    protos = {}
    for k in range(count):
        model = MODELS[(k // 2) % len(MODELS)]
        rng = random.Random(f"{seed}:{k}")
        b = originals[model]
        if k % 2 == 0:
            f = rng.choice(BYTE_MUTATIONS)
            out, desc = f(rng, b, None)
        else:
            if model not in protos:
                protos[model] = onnx.load_from_string(b)
            m = copy.deepcopy(protos[model])
            f = rng.choice(STRUCT_MUTATIONS)
            desc = f(rng, m)
            out = m.SerializeToString()
        yield f"{k:03d}-{model}-{f.__name__}", out, desc


SANITIZED = False  # an ASan build reserves terabytes of address space and runs several times slower


def limit_child():
    if not SANITIZED:
        resource.setrlimit(resource.RLIMIT_AS, (MEM_LIMIT, MEM_LIMIT))
    cpu = int(CPU_LIMIT_S * (10 if SANITIZED else 1)) + 2  # hard stop well past the measured limit
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run_one(cmd, path):
    """Runs cmd; returns (problem or None, cpu seconds, max rss bytes, exit status)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=WALL_LIMIT_S, preexec_fn=limit_child, env=env)
    except subprocess.TimeoutExpired:
        return f"hung (> {WALL_LIMIT_S:.0f} s wall)", WALL_LIMIT_S, 0, None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rss = after.ru_maxrss * 1024
    err = p.stderr.decode("utf-8", "replace")
    lines = [ln for ln in err.split("\n") if ln]
    if p.returncode < 0:
        return f"killed by signal {-p.returncode}; stderr: {err.strip()[:300]}", cpu, rss, p.returncode
    if p.returncode not in (0, 1):
        return f"exit {p.returncode}; stderr: {err.strip()[:300]}", cpu, rss, p.returncode
    if p.returncode == 1:
        if len(lines) != 1:
            return f"exit 1 with {len(lines)} stderr lines: {err.strip()[:300]}", cpu, rss, p.returncode
        if path not in lines[0]:
            return f"error message does not name the file: {lines[0][:300]}", cpu, rss, p.returncode
    if cpu > CPU_LIMIT_S * (10 if SANITIZED else 1):
        return f"took {cpu:.2f} s of CPU (limit {CPU_LIMIT_S} s)", cpu, rss, p.returncode
    return None, cpu, rss, p.returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--superopt", default=os.path.join(os.environ.get("BUILD", "build"), "superopt"))
    ap.add_argument("--data", default="data")
    ap.add_argument("--count", type=int, default=240)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", help="directory to copy failing mutants into")
    ap.add_argument("--list", action="store_true", help="print every mutant with its SHA-256 prefix")
    args = ap.parse_args()
    global SANITIZED
    with open(args.superopt, "rb") as f:
        SANITIZED = b"__asan_init" in f.read()

    passed = failed = 0
    outcomes = {0: 0, 1: 0}
    max_cpu, max_rss = 0.0, 0
    with tempfile.TemporaryDirectory(prefix="so_mutants_") as tmp:
        for name, data, desc in mutants(args.data, args.count, args.seed):
            path = os.path.join(tmp, name + ".onnx")
            with open(path, "wb") as f:
                f.write(data)
            if args.list:
                print(f"{name} {hashlib.sha256(data).hexdigest()[:16]} {desc}", flush=True)
            bad = []
            for cmd in ([args.superopt, "inspect", path],
                        [args.superopt, "run", path, "--iters", "1", "--warmup", "0", "--max-memory", "512M"]):
                problem, cpu, rss, rc = run_one(cmd, path)
                if rc in outcomes:
                    outcomes[rc] += 1
                max_cpu, max_rss = max(max_cpu, cpu), max(max_rss, rss)
                if problem:
                    bad.append(f"{cmd[1]}: {problem}")
            if bad:
                failed += 1
                print(f"FAIL - {name} ({desc}): " + "; ".join(bad))
                if args.keep:
                    os.makedirs(args.keep, exist_ok=True)
                    with open(os.path.join(args.keep, name + ".onnx"), "wb") as f:
                        f.write(data)
            else:
                passed += 1
            os.unlink(path)
    print(f"mutate: {args.count} mutants of {len(MODELS)} models (seed {args.seed}"
          f"{', ASan build: no memory limit, 10x CPU limit' if SANITIZED else ''}); max {max_cpu:.2f} s CPU, "
          f"max {max_rss / 2**20:.0f} MiB RSS per command; {outcomes[0]} commands exited 0, {outcomes[1]} gave a clean error")
    print(f"mutate: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
