/* optimize.h - the optimize command: superopt MODEL.onnx [options] -> a faster equivalent model. */
#ifndef SO_OPTIMIZE_H
#define SO_OPTIMIZE_H

/* `superopt MODEL.onnx [-o OUT.onnx] [--rules FILE] [--search backtrack|greedy|none] [--alpha A]
   [--budget N] [--time-limit S] [--cost measured|flops] [--report FILE.json] [--dot DIR]
   [--threads N] [--seed N] [-q] [--allow-unverified] [--no-reverse] [--cache-dir DIR]
   [--check-incremental]` (the last: debugging, every incrementally matched graph is also
   matched from scratch and differences are counted in the report).
   argv[1] is the model. Returns the exit status: 0 ok, 1 failure (one-line message on stderr),
   2 usage. */
int so_optimize_main(int argc, char **argv);

#endif
