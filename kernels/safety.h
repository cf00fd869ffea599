/* safety.h - the numeric safety net before an optimized model is written: both graphs run on the same inputs at several scales and must agree element by element. */
#ifndef SO_SAFETY_H
#define SO_SAFETY_H

#include <stddef.h>
#include <stdint.h>

#include "../src/graph.h"

#define SO_SAFETY_RTOL 1e-4
#define SO_SAFETY_ATOL 1e-5
#define SO_SAFETY_MAX_SETS 6
/* slack per element in units of the output's noise floor (see so_safety_check) */
#define SO_SAFETY_NOISE_K 4.0

typedef struct so_safety_opts {
    int threads;
    uint64_t seed;
    const char *inputs_path; /* NULL, or raw little-endian inputs: every graph input back to back in graph
                                order, each in its own element type (as `run --inputs FILE`); checked as
                                one more set */
    int time_it;             /* also time both graphs on the first set (median of >= 5 runs, ~0.3 s) */
    int noise_always;        /* compute the noise floor on every set, not only where the strict
                                tolerance fails (the verdict is the same either way) */
} so_safety_opts;

typedef struct so_safety_result {
    int ran;             /* 0: the original graph cannot be executed here (why says why); nothing compared */
    int agree;           /* ran and every element of every output of every set agrees */
    int sets;            /* input sets compared */
    double worst;        /* largest |a-b| / (atol*s + rtol*|a|) over all elements (<= 1 passes); a
                            mismatch in Inf/NaN counts as infinity */
    double noise;        /* largest noise floor over outputs and the sets it was computed on
                            (absolute; see so_safety_check); meaningful only when noise_sets > 0 */
    int noise_sets;      /* sets whose noise floor was computed (lazy: where the strict tolerance failed) */
    int identical;       /* ran, and the optimized graph is the original program (same model, nodes,
                            attributes, weights and outputs; see so_safety_check): no set compared
                            (sets 0), agree 1, lat_after_ms = lat_before_ms */
    double lat_before_ms, lat_after_ms; /* time_it: medians; else -1 */
    char why[640];       /* !ran or !agree: one line (set, output, element, both values) */
} so_safety_result;

/* Runs `orig` and `opt` (same inputs and outputs, in order; integer inputs get the same values valid for
   their use in every set, so_feed_fill) on these input sets of the float inputs: uniform in
   [-1, 1) (seeded), the same times 1000 (large magnitudes), all-negative (-|u|), all zeros, and the
   inputs file when given. Element by element, with s the set's magnitude (1 or 1000):
   |a - b| <= SO_SAFETY_ATOL*s + SO_SAFETY_RTOL*|a| + SO_SAFETY_NOISE_K*noise_k (a: original), where
   noise_k, the noise floor of output k on that set, is the largest difference between the original
   run by its kernels and the original run once more by another kernel path (the next lower ISA level;
   the reference kernels at the scalar level): float rounding that any reassociating kernel shows on
   this output, zero where the computation is exact (so relu -> identity next to large values is still
   caught). The floor is computed lazily: a set is first compared with floors 0 (the strict tolerance),
   and only if an element fails is the original run on the other path and the set compared again with
   its floors; since the tolerance grows with the floor, the verdict is the one the floors always
   computed would give (o->noise_always computes them on every set). Each graph is planned once
   (so_exec_new) and that executor runs every set. When `opt` is the same program as `orig` (same
   model, the same nodes in the same order with the same operators, inputs, interned attributes,
   weight / input / opaque references and shapes, the same outputs: nothing was rewritten) and
   !o->noise_always, only the original runs, on the first set (and is timed): r->identical, sets 0,
   agree 1, lat_after = lat_before; comparing it with itself would compare the kernels with
   themselves. Levels are process-wide: the caller holds the API lock. Inf equal only to the same Inf
   and NaN only to NaN; int64 outputs bit for bit. Returns SO_ERR only when the inputs file cannot
   be read or memory is refused (message set); otherwise SO_OK with r filled. */
so_status so_safety_check(const so_graph *orig, const so_graph *opt, const so_safety_opts *o, so_safety_result *r);

/* The per-element test above on one pair of values (exposed for tests). */
int so_safety_close(float a, float b, double scale);

#endif
