/* bench.h - the bench command: search strategies, our backend and ONNX Runtime measured side by side. */
#ifndef SO_BENCH_H
#define SO_BENCH_H

/* `superopt bench [MODEL.onnx ...] [--json FILE] [--svg FILE] [options]` (argv[0] is "bench").
   Runs per model the optimize command (as a subprocess of this executable) with --search none,
   greedy and backtrack; measures each result on our backend (`superopt run`, 1 and 2 threads)
   and under ONNX Runtime (`node tools/ort/ort_run.js`, the original and our results at 'all'),
   interleaving the variants in rounds; runs the ablations (rule size, alpha, budget sweep) on a
   few models. Prints a Markdown report on stdout; --json and --svg write files atomically.
   Options are documented in docs/BENCHMARKS.md and by `superopt bench --help`.
   Returns the exit status: 0 ok, 1 failure (one-line message on stderr; with results written
   when some runs failed), 2 usage. */
int so_bench_main(int argc, char **argv);

#endif
