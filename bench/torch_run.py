#!/usr/bin/env python3
"""Times a model of data/export_models.py in PyTorch eager (inference mode), for same-run comparisons.

Usage: torch_run.py NAME [--iters N] [--warmup N] [--threads N] [--json] [--serve]
NAME is a model name of data/export_models.py (the file's stem in data/ or data/full/). The model is
built exactly as the exporter builds it (same seeds, eval mode) and run on the same seeded inputs
under torch.inference_mode(), intra-op threads = --threads, inter-op threads 1.
--json prints one line {"median_ms": ..., "min_ms": ..., "iters": ..., "threads": ...}, as
`superopt run --json` and tools/ort/ort_run.js do. --serve (bench/lockstep.py): after building the model
and the --warmup runs print {"ready": true, ...}, then answer each stdin line 'run K [W]' (W untimed runs,
then K timed) with one line {"times_ms": [...], "median_ms": ..., "min_ms": ...} (a bad line: {"error": ...},
serving on) until 'quit' or end of input; --iters is not used. Exit status 0, 1 on failure, 2 on usage error.
"""

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "data"))


SERVE_MAX_K = 100000


def serve(run):
    """--serve's loop (protocol in the module doc): run() is one inference; returns the exit status."""
    import json
    import re
    print(json.dumps({"ready": True, "pid": os.getpid()}), flush=True)
    for raw in sys.stdin:
        line = raw.strip()
        if line == "quit":
            break
        if not line:
            continue
        m = re.fullmatch(r"run +(\d+)(?: +(\d+))?", line) if len(line) <= 256 else None
        k, w = (int(m.group(1)), int(m.group(2) or 0)) if m else (0, 0)
        if not m or not 1 <= k <= SERVE_MAX_K or w > SERVE_MAX_K:
            print(json.dumps({"error": "bad command (expected 'run K [W]' with 1 <= K <= %d, 0 <= W <= %d, or 'quit'): %s"
                              % (SERVE_MAX_K, SERVE_MAX_K, line[:60])}), flush=True)
            continue
        for _ in range(w):
            run()
        times = []
        for _ in range(k):
            t0 = time.perf_counter()
            run()
            times.append((time.perf_counter() - t0) * 1e3)
        print(json.dumps({"times_ms": [round(x, 6) for x in times], "median_ms": round(statistics.median(times), 6),
                          "min_ms": round(min(times), 6)}), flush=True)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("name")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--serve", action="store_true")
    a = ap.parse_args(argv)
    if a.iters < 1 or a.warmup < 0 or a.threads < 1:
        ap.error("--iters and --threads need >= 1, --warmup >= 0")

    import torch
    import export_models as em
    torch.set_num_threads(a.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    name = os.path.basename(a.name)
    name = name[:-5] if name.endswith(".onnx") else name
    if name not in em.MODELS:
        print("torch_run.py: %s: unknown model (known: %s)" % (name, ", ".join(em.MODELS)),
              file=sys.stderr)
        return 1
    spec = em.MODELS[name]
    torch.manual_seed(em.name_seed(em.WEIGHT_SEED, name))
    model = spec.build()
    gen = torch.Generator().manual_seed(em.name_seed(em.WEIGHT_SEED, name) + 1)
    em.randomize_norm_params(model, gen)
    model.eval()
    gen = torch.Generator().manual_seed(em.name_seed(em.INPUT_SEED, name))
    inputs = tuple(torch.rand(s, generator=gen, dtype=torch.float32) * 2 - 1 for s in spec.inputs)
    if a.serve:
        with torch.inference_mode():
            for _ in range(a.warmup):
                model(*inputs)
            return serve(lambda: model(*inputs))
    times = []
    with torch.inference_mode():
        for i in range(a.warmup + a.iters):
            t0 = time.perf_counter()
            model(*inputs)
            t1 = time.perf_counter()
            if i >= a.warmup:
                times.append((t1 - t0) * 1e3)
    med, mn = statistics.median(times), min(times)
    if a.json:
        print('{"median_ms": %.6f, "min_ms": %.6f, "iters": %d, "threads": %d}'
              % (med, mn, a.iters, a.threads))
    else:
        print("%s: median %.3f ms, min %.3f ms over %d runs, %d thread(s)"
              % (name, med, mn, a.iters, a.threads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
