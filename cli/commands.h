/* commands.h - entry points of the superopt subcommands (cli/cmd_*.c, cli/bench.c), dispatched by cli/main.c. */
#ifndef SO_COMMANDS_H
#define SO_COMMANDS_H

/* At most this many --input-shape / --dim options on one command line. */
#define SO_CLI_MAX_PINS 128

/* Each takes the subcommand's argv (argv[0] is the subcommand name; for optimize argv[1] is the
   model) and returns the process exit status: 0 ok, 1 failure with a one-line message already
   printed on stderr, 2 usage error. */

/* `superopt MODEL.onnx [-o OUT.onnx] [--rules FILE] [--search backtrack|greedy|none] [--alpha A]
   [--budget N] [--work-limit N] [--time-limit S] [--cost measured|flops] [--report FILE.json] [--dot DIR]
   [--threads N] [--seed N] [-q] [--allow-unverified] [--no-reverse] [--cache-dir DIR]
   [--check-incremental] [--trace FILE] [--trace-path RULES]` (the last three: debugging, every
   incrementally matched graph is also matched from scratch and differences are counted in the
   report; the search's expanded graphs and a replayed rule sequence written to a trace, search/README.md
   "Tracing"): the options become a
   superopt_config, the work is superopt_optimize's (api/optimize.c). cli/cmd_opt.c.
   pins[0..n_pins): the command line's --input-shape ("s:NAME=D0,...") and --dim ("d:SYMBOL=N"). */
int so_optimize_main(int argc, char **argv, const char *const *pins, int n_pins);
/* `superopt run MODEL.onnx [...]` over a superopt_session (cli/cmd_run.c); pins as above. */
int so_run_main(int argc, char **argv, const char *const *pins, int n_pins);
/* `superopt generate ...` and `superopt rules merge ...` (cli/cmd_generate.c). */
int so_gen_main(int argc, char **argv);
int so_rules_main(int argc, char **argv);
/* `superopt verify FILE.rules [--json] [--timeout S] [--threads N] [--numeric N] [-w]` and
   `superopt verify --axioms` (cli/cmd_verify.c). */
int so_verify_main(int argc, char **argv);
/* `superopt bench [MODEL.onnx ...] [--json FILE] [--svg FILE] [options]` (argv[0] is "bench"; cli/bench.c).
   Runs per model the optimize command (as a subprocess of this executable) with --search none,
   greedy and backtrack; measures each result on our backend (`superopt run`, 1 and 2 threads)
   and under ONNX Runtime (`node tools/ort/ort_run.js`, the original and our results at 'all'),
   interleaving the variants in rounds; runs the ablations (rule size, alpha, budget sweep) on a
   few models. Prints a Markdown report on stdout; --json and --svg write files atomically.
   Options are documented in docs/BENCHMARKS.md and by `superopt bench --help`.
   Returns the exit status: 0 ok, 1 failure (one-line message on stderr; with results written
   when some runs failed), 2 usage. pins as above: every optimize, run and ONNX Runtime subprocess gets them
   (as --input-shape / --dim), the models loaded in this process through the library's pins. */
int so_bench_main(int argc, char **argv, const char *const *pins, int n_pins);

#endif
