#!/usr/bin/env python3
"""lockstep.py - times several persistent model servers in short alternating batches, so a ratio compares runs that saw the same machine state.

Usage: lockstep.py [--rounds R] [--iters N] [--min-cycles C] [--batch-ms MS] [--batch-warmup W] [-v] LABEL=CMD ...
Each CMD is a shell command (run by `exec`: env VAR=VALUE to set the environment) starting a server that speaks the --serve protocol of `superopt run`,
tools/ort/ort_run.js and bench/torch_run.py: it loads and plans its model, does its warmup, prints one JSON line
with "ready", then answers each stdin line 'run K W' (W untimed runs, then K timed ones) with one JSON line
{"times_ms": [...], "median_ms": ..., "min_ms": ...} until 'quit'. Server start, load, plan and warmup are not timed.

Measurement: after all servers are ready, each is asked for 3 runs to estimate its run time t_i; its batch is
K_i = round(MS / t_i) timed runs (1..1000; MS default 80), after W untimed runs (default 1) that re-warm its caches
after the other servers' batches and absorb the other server's worker threads still spinning after its batch (our
OpenMP threads spin ~6 ms, GOMP_SPINCOUNT 200000; ORT's and PyTorch's shorter), so no side pays for the other's. A cycle runs one batch of
every server back to back; a round is C cycles, C = max(--min-cycles (default 8), ceil(N / K_0)), N = --iters
(timed runs of the first server per round, default 0). The order of the servers runs through all permutations,
one per cycle (A B, B A, ... / A B C, A C B, B A C, ...), so each is equally often first and last. The machine flips
between speed states for seconds at a time; a cycle lasts a few hundred ms, so the two batches of a pair nearly
always share a state, where separate processes per round (the old mode of tests/bench_kernels.sh and bench/ab.sh)
each sample their own.

Figures, for every server i against the first (the reference, label 0): a cycle's ratio is the median of 0's batch
over the median of i's batch; a round's ratio is the median of its cycles' ratios; the figure is the median over
rounds. Per server and round also the median of its batch medians and the fastest run. Output: one JSON line on stdout
{"labels", "k", "warm", "cycles", "rounds", "per_round_ms", "per_round_min_ms", "per_round_ratio", "ratio", "ms",
"min_ms", "cycle_ratio_iqr"} (dicts keyed by label; ratio and per_round_ratio only for labels after the first);
-v prints every round on stderr. Exit status 0; 1 when a server fails or answers an error (its stderr's last
lines are printed); 2 on a usage error.
"""

import argparse
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile


class Server:
    """One server process: its label, its pipes, its stderr file."""

    def __init__(self, label, cmd):
        self.label, self.cmd = label, cmd
        self.err = tempfile.TemporaryFile()
        self.p = subprocess.Popen(["/bin/sh", "-c", "exec " + cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=self.err, text=True, bufsize=1)

    def fail(self, why):
        self.err.seek(0)
        tail = self.err.read().decode(errors="replace").strip().splitlines()[-3:]
        raise RuntimeError("%s (%s): %s%s" % (self.label, self.cmd, why, "".join("\n  " + x for x in tail)))

    def reply(self):
        line = self.p.stdout.readline()
        if not line:
            self.fail("exited (status %s) without an answer" % self.p.wait())
        try:
            r = json.loads(line)
        except ValueError:
            self.fail("answered no JSON: %s" % line.strip()[:100])
        if "error" in r:
            self.fail("error: %s" % r["error"])
        return r

    def batch(self, k, w):
        try:
            self.p.stdin.write("run %d %d\n" % (k, w))
            self.p.stdin.flush()
        except BrokenPipeError:
            self.fail("exited (status %s)" % self.p.wait())
        r = self.reply()
        if "median_ms" not in r or len(r.get("times_ms", [])) != k:
            self.fail("answered without %d times: %s" % (k, json.dumps(r)[:100]))
        return r

    def close(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.close()
        except (BrokenPipeError, ValueError):
            pass
        try:
            rc = self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
        self.err.close()
        return rc


def iqr(v):
    if len(v) < 2:
        return 0.0
    q = statistics.quantiles(v, n=4, method="inclusive")
    return q[2] - q[0]


def measure(servers, rounds, iters, min_cycles, batch_ms, batch_warmup, verbose):
    for s in servers:
        r = s.reply()
        if not r.get("ready"):
            s.fail("first line is not ready: %s" % json.dumps(r)[:100])
    est = [max(s.batch(3, 0)["median_ms"], 1e-6) for s in servers]
    ks = [max(1, min(1000, int(round(batch_ms / t)))) for t in est]
    warm = [batch_warmup] * len(servers)
    cycles = max(min_cycles, math.ceil(iters / ks[0]) if iters else 0)
    n = len(servers)
    perms = list(itertools.permutations(range(n)))
    labels = [s.label for s in servers]
    out = {"labels": labels, "k": dict(zip(labels, ks)), "warm": dict(zip(labels, warm)), "cycles": cycles,
           "rounds": rounds, "est_ms": dict(zip(labels, est)),
           "per_round_ms": {x: [] for x in labels}, "per_round_min_ms": {x: [] for x in labels},
           "per_round_ratio": {x: [] for x in labels[1:]}, "cycle_ratio_iqr": {x: [] for x in labels[1:]}}
    for r in range(rounds):
        meds = [[] for _ in servers]
        mins = [math.inf] * n
        for c in range(cycles):
            for i in perms[(r * cycles + c) % len(perms)]:
                b = servers[i].batch(ks[i], warm[i])
                meds[i].append(b["median_ms"])
                mins[i] = min(mins[i], b["min_ms"])
        for i, x in enumerate(labels):
            out["per_round_ms"][x].append(round(statistics.median(meds[i]), 6))
            out["per_round_min_ms"][x].append(round(mins[i], 6))
        line = []
        for i, x in enumerate(labels[1:], 1):
            cr = [a / b for a, b in zip(meds[0], meds[i])]
            out["per_round_ratio"][x].append(round(statistics.median(cr), 4))
            out["cycle_ratio_iqr"][x].append(round(iqr(cr), 4))
            line.append("%s/%s %.3f (cycles %.3f-%.3f)" % (labels[0], x, statistics.median(cr), min(cr), max(cr)))
        if verbose:
            print("  round %d: %s; %s" % (r, ", ".join("%s %.4f ms" % (x, out["per_round_ms"][x][-1]) for x in labels),
                                          "; ".join(line)), file=sys.stderr, flush=True)
    out["ms"] = {x: statistics.median(out["per_round_ms"][x]) for x in labels}
    out["min_ms"] = {x: min(out["per_round_min_ms"][x]) for x in labels}
    out["ratio"] = {x: statistics.median(out["per_round_ratio"][x]) for x in labels[1:]}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--iters", type=int, default=0)
    ap.add_argument("--min-cycles", type=int, default=8)
    ap.add_argument("--batch-ms", type=float, default=80.0)
    ap.add_argument("--batch-warmup", type=int, default=1)
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("servers", nargs="+", metavar="LABEL=CMD")
    a = ap.parse_args(argv)
    if a.rounds < 1 or a.iters < 0 or a.min_cycles < 1 or a.batch_ms <= 0 or a.batch_warmup < 0:
        ap.error("--rounds and --min-cycles need >= 1, --iters and --batch-warmup >= 0, --batch-ms > 0")
    specs = []
    for s in a.servers:
        label, eq, cmd = s.partition("=")
        if not eq or not label or not cmd or label in [x for x, _ in specs]:
            ap.error("'%s': need LABEL=CMD with a label of its own" % s[:60])
        specs.append((label, cmd))
    if len(specs) < 2:
        ap.error("need at least two servers")
    servers = []
    rc = 0
    try:
        for label, cmd in specs:
            servers.append(Server(label, cmd))
        out = measure(servers, a.rounds, a.iters, a.min_cycles, a.batch_ms, a.batch_warmup, a.verbose)
        print(json.dumps(out), flush=True)
    except RuntimeError as e:
        print("lockstep.py: %s" % e, file=sys.stderr)
        rc = 1
    finally:
        for s in servers:
            if s.close() not in (0, None) and rc == 0:
                print("lockstep.py: %s exited non-zero" % s.label, file=sys.stderr)
                rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
