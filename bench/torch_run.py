#!/usr/bin/env python3
"""Times a model of data/export_models.py in PyTorch eager (inference mode), for same-run comparisons.

Usage: torch_run.py NAME [--iters N] [--warmup N] [--threads N] [--json]
NAME is a model name of data/export_models.py (the file's stem in data/ or data/full/). The model is
built exactly as the exporter builds it (same seeds, eval mode) and run on the same seeded inputs
under torch.inference_mode(), intra-op threads = --threads, inter-op threads 1.
--json prints one line {"median_ms": ..., "min_ms": ..., "iters": ..., "threads": ...}, as
`superopt run --json` and tools/ort/ort_run.js do. Exit status 0, 1 on failure, 2 on usage error.
"""

import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "data"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("name")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true")
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
