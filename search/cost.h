/* cost.h - cost models for search: measured (each distinct operator configuration timed once on
   our kernels, cached on disk per machine and build) and flops (deterministic, for tests). */
#ifndef SO_COST_H
#define SO_COST_H

#include "../src/graph.h"
#include "../src/hmap.h"

typedef enum so_cost_kind { SO_COST_FLOPS = 0, SO_COST_MEASURED = 1 } so_cost_kind;

/* A cost model. Costs are milliseconds (measured) or estimated milliseconds (flops: FLOPs at
   10 GFLOP/s plus bytes moved at 5 GB/s). A graph's cost is the sum over its nodes of their
   cost as the executor runs them (so_cost_roles: epilogues fused into a producer and zero-copy
   concats cost nothing); sources, views and opaque nodes cost 0. Not thread-safe. */
typedef struct so_cost_model {
    int kind;                   /* so_cost_kind */
    int threads;                /* kernel threads used when measuring (part of the key) */
    so_hmap cache;              /* configuration key -> cost (double bits) */
    char *path;                 /* disk cache file (malloc'd) or NULL */
    int isa;                    /* so_isa the measurements are for (the level at so_cost_init) */
    int dirty;                  /* new measurements not yet saved */
    int64_t loaded, measured, failed; /* entries read from disk, timed now, timing failures */
    double measure_seconds;     /* wall time spent timing */
    double measure_cpu_seconds; /* CPU time of the calling thread spent timing (so_cpu_now): the
                                   searches' safety-net deadlines do not count it */
    const char *last_kernel;    /* the kernel the last timing ran (so_exec_timed.kernel; diagnostics) */
    int64_t timed_runs;         /* kernel runs the timer made (warm-ups included), all timings */
    double select_seconds, setup_seconds, flush_seconds, kernel_seconds; /* where the timer's wall
                                   time went (kernels/exec.h so_exec_timed), summed */
    int cold_weights;           /* measured: -1 (so_cost_init) decided at the first measurement
                                   from that graph's model: 1 when its weights total over 8 MB,
                                   then weights are flushed from the caches before each timed run
                                   (part of the key) */
    char *table;                /* --cost-table FILE (malloc'd) or NULL: the only source of measured
                                   costs (so_cost_table_load); the disk cache is then not used */
    int64_t table_loaded, table_new; /* entries read from the table, measured by this run */
    int64_t noisy;              /* disk-cache mode: timings this run took under contention
                                   (so_cost_contended): taken in rounds, never saved as quiet */
    so_hmap quality;            /* disk-cache mode: key -> how its cost was timed (cost.c Q_*: quiet,
                                   loaded, settled, loaded and not yet re-timed by this run) */
    double first_cpu_seconds, retime_cpu_seconds; /* CPU time of first timings, of re-timings */
    int64_t stale;              /* disk-cache entries read marked loaded (counted in loaded too):
                                   used, each timed once more at its first use (retimed) */
    int64_t retimed;            /* loaded entries this run timed once more (counted in measured) */
    int64_t malformed;          /* disk-cache lines dropped at so_cost_init (damaged, truncated,
                                   hand-edited: measured again); the caller may warn */
    int foreign;                /* 1: the disk cache's header is not this build's (another format
                                   version, or damaged): nothing read, the file will be rewritten */
    int copies;                 /* 1: standard-ONNX pricing (--layout none, output for other
                                   runtimes): the concats and splits our executor runs as zero-copy
                                   views (SO_COST_FREE) are priced as the copies other runtimes make
                                   (so_cost_node: the node timed as its own copy kernel, or its
                                   bytes under the flops model). Reshape-class views stay free:
                                   other runtimes alias those too. Set after so_cost_init. */
    int64_t picks_loaded;       /* disk-cache mode: the executor's conv choices read ("pick" entries), handed to
                                   the kernels at so_cost_init (kernels/nchwc.h so_nchwc_choice_put) */
    int64_t picks_new;          /* the kernels' choices so_cost_save added to the cache (made by this process) */
    int64_t paired;             /* so_cost_paired_ratio decisions timed (recorded ones not counted) */
    int64_t paired_timed;       /* their timings (one configuration once) */
    double paired_seconds;      /* their wall time (also counted in measure_seconds) */
    double paired_budget;       /* wall seconds so_cost_paired_ratio may time in all (session 24; so_cost_init: 2,
                                   optimize's layout_retime_budget); once spent, a decision not recorded is not
                                   timed (SO_PAIRED_CUT) */
    int64_t paired_cut;         /* decisions left to the cached prices because the budget was spent */
    /* Tests only (NULL in use): replaces the timer and the contention check of disk-cache mode:
       returns the time of what role runs for node i in *ms and sets *contended. */
    so_status (*time_hook)(void *ctx, const so_graph *g, int32_t i, int role, double *ms, int *contended);
    void *hook_ctx;
} so_cost_model;

/* Initialises a model. For SO_COST_MEASURED, cache_dir NULL means $XDG_CACHE_HOME/superopt
   (or ~/.cache/superopt); "" disables the disk cache. The file is
   cost-<key>.tsv where key hashes the CPU model, core count, the running executable and the
   kernels' ISA level (kernels/isa.h), and the file's header must repeat that key, so a cache
   from another machine, build or level is never used. Format (text):
     # superopt cost cache v4 cpu=... cores=... exe=... isa=... onednn=...
     <16 hex digits: configuration key>\t<ms, %.17g>\t<quiet|loaded|settled>
     <16 hex digits: conv choice key>\t<pick + 1>\tpick
   Every entry is used. "pick" entries are the executor's plan-time conv choices (kernels/nchwc.h
   so_nchwc_choice_*): so_cost_init hands them to the kernels (cm->picks_loaded), which then plan those convs
   without timing them; so_cost_save adds the choices the process made since (cm->picks_new), and of two
   processes' choices for one key the merge keeps the first saved, so every process on one cache picks the
   same kernels. (A cost table holds no choices: table mode times them as before.) "loaded" ones (timed under contention, so_cost_contended) are counted in
   stale and timed once more at their first use (SO_COST_LOADED_ROUNDS). A header that differs (another
   format version, a damaged file) sets cm->foreign and nothing is read; lines that are not entries
   (truncated, damaged: a time not finite, positive and below an hour) are dropped and counted in
   cm->malformed; neither is an error (the configurations are measured again). A FIFO or device at the
   path is refused (SO_ERR). SO_ERR also when SUPEROPT_ISA is invalid. */
so_status so_cost_init(so_cost_model *cm, so_cost_kind kind, int threads, const char *cache_dir);
/* Writes the disk cache when this run measured something: under an exclusive lock (flock on the
   directory's "cost.lock"), the file is read again and merged with this run's entries (a quiet entry over a
   settled over a loaded one; of two quiet the one already on disk, of two others the lower), then
   written atomically (temporary file + rename): concurrent runs lose no entries and a reader never
   sees a partial file. In table mode, the table instead (so_cost_table_save). */
so_status so_cost_save(so_cost_model *cm);
/* Disk-cache mode: enters the kernels' conv choices this cache has not recorded yet as "pick" entries
   (cm->picks_new counts them); so_cost_save calls it (a report written before the save calls it first). */
void so_cost_take_picks(so_cost_model *cm);
/* Pruning the disk cache directory (session 20): every build writes a file of its own (the key hashes the
   executable), so a directory collects one per build ever run. so_cost_save, under the directory's lock
   ("<dir>/cost.lock", one per directory), removes the files of other builds that nobody used for
   SO_COST_PRUNE_DAYS (modification time: each save rewrites a file, and so_cost_init touches a file it reads
   that is over a day old), with them the per-file lock files of sessions up to 19 ("cost-<key>.tsv.lock")
   and the temporaries of killed runs ("cost-<key>.tsv.tmp.<pid>") of the same age. */
#ifndef SO_COST_PRUNE_DAYS
#define SO_COST_PRUNE_DAYS 30
#endif
/* Removes from dir the regular files named cost-<16 hex digits>.tsv, cost-<16 hex>.tsv.lock and
   cost-<16 hex>.tsv.tmp.<digits> whose modification time is at least max_age seconds old, except the file
   keep (a path; its last component is compared; NULL: none). Nothing else in dir is touched (the proof
   cache shares it). Returns how many were removed. The caller holds the directory's lock. */
int so_cost_prune(const char *dir, const char *keep, double max_age);

/* Reproducible measured costs: a cost table (--cost-table FILE) is the only source of a measured
   model's costs (call after so_cost_init with cache_dir "" so no disk cache is read). If path
   exists it is loaded; it must be a table for this machine's ISA level, CPU model, and oneDNN use
   (threads and cold weights are part of every key), else SO_ERR with one line "PATH: cost table is for ..., this run is
   ...". If it does not exist, the configurations this run needs are measured and
   so_cost_table_save writes it. Format (text, one entry per line, sorted by key):
     # superopt cost table v1
     # isa=avx512 cpu=<model name> onednn=1 rounds=3 statistic=median-of-round-lower-quartiles
     <16 hex digits: configuration key (so_cost_config)>\t<ms, %.17g>
   Table and build share only the key, so a table survives rebuilds that do not change what a
   configuration key hashes (attribute and shape layouts). */
so_status so_cost_table_load(so_cost_model *cm, const char *path);
/* Table mode: a configuration missing from the table is timed in SO_COST_TABLE_ROUNDS rounds (each
   round's value is so_exec_time_node's lower quartile of its runs) and its entry is the median of
   the rounds. so_cost_graph times all the missing configurations of a graph together, the rounds
   interleaved (every round times each once, the order rotated by one per round); so_cost_node
   (one node, for search previews) times its rounds back to back. The value a run uses is the value
   it writes, so a run that made the table and a run that reads it find the same graph. */
#define SO_COST_TABLE_ROUNDS 3
/* Disk-cache mode: a configuration is timed once (so_exec_time_node's lower quartile of its runs)
   when the machine was quiet during that timing; when it was contended (so_cost_contended), it is
   timed again, back to back, until its two lowest rounds agree within SO_COST_LOADED_AGREE or it
   has SO_COST_LOADED_ROUNDS rounds (and while the run's re-timings have taken no more CPU time than
   its first timings); its value is the lowest round's (other processes only ever add time), saved
   marked "loaded". A later run uses a loaded entry, but times it once more (the same way) at its first
   use: a quiet timing replaces it (saved quiet); a contended one replaces it only when lower, and the
   entry is saved "settled", which no run times again. So a price moves only toward the quiet value,
   at most once, and from the run after a configuration's first timing on, every run on that cache
   prices it the same (the same graph, the same cost). */
#define SO_COST_LOADED_ROUNDS 5
#define SO_COST_LOADED_AGREE 0.05
/* 1 if a timing was contended: between the two snapshots (so_cost_probe) this process was
   preempted (an involuntary context switch, getrusage), or at either snapshot more threads were
   runnable on the machine than it has CPUs (/proc/stat procs_running, which counts this
   process's own running threads). */
typedef struct so_cost_probe {
    long nivcsw;     /* involuntary context switches of this process */
    int running;     /* runnable threads on the machine (-1: unknown) */
} so_cost_probe;
void so_cost_probe_now(so_cost_probe *p);
int so_cost_contended(const so_cost_probe *before, const so_cost_probe *after, long cpus);
/* Writes the whole table atomically, sorted by key (no-op when nothing was measured). */
so_status so_cost_table_save(so_cost_model *cm);
void so_cost_free(so_cost_model *cm);

/* 1 if node i is a conv whose bias input is a per-channel f32 weight: the executor adds it in
   the conv's epilogue pass, as it does a fused batchnorm's scale and shift. */
int so_cost_conv_bias_epilogue(const so_graph *g, int32_t i);
/* Key of node i's configuration: op, attributes (a relu/clip epilogue dropped), input shapes and
   which inputs are weights (an epilogue conv bias dropped), output shapes, thread count. */
uint64_t so_cost_node_key(const so_graph *g, int32_t i, int threads);
/* Cost of node i (measured once per configuration, then cached). */
double so_cost_node(so_cost_model *cm, const so_graph *g, int32_t i);
/* How the executor runs a node (kernels/exec.c + kernels/fast.c), for a fusion-aware cost. */
typedef enum so_cost_role {
    SO_COST_STEP = 0,   /* its own kernel call */
    SO_COST_FUSED = 1,  /* absorbed into a producer's epilogue (bias, batchnorm, activation,
                           residual add after a conv/matmul/gemm) */
    SO_COST_FREE = 2,   /* no work: sources, views, opaque nodes, zero-copy concats and splits */
    SO_COST_INNER = 3,  /* absorbed into a fused kernel that still computes it (attention, GELU,
                           pad+avgpool): flops model, its arithmetic alone (FLOPs at the flops
                           model's rate), no kernel call or memory round trip of its own;
                           measured, 0 (its head's timing includes it) */
    SO_COST_HEAD = 4,   /* heads such a fused kernel: measured, the whole kernel timed as the
                           executor runs it (kernels/exec.h so_exec_time_step); flops model, its own
                           arithmetic plus the kernel's launch and the bytes it reads and writes */
} so_cost_role;

/* Fills role[0..g->n_nodes) with each node's so_cost_role: the executor's fusion decisions,
   asked of the kernels (kernels/fuse.h so_fuse_decide), and its zero-copy concat and split
   (exec.c concat_in_place, split_in_place). The graph
   must be topologically sorted with shapes inferred. */
void so_cost_roles(const so_graph *g, uint8_t *role);
/* Same, with pinned[i] != 0 marking nodes whose outputs also have users outside g (so nothing
   after them is fused); pinned may be NULL. */
void so_cost_roles_pinned(const so_graph *g, const uint8_t *pinned, uint8_t *role);
/* 1 if node i is a view only in our executor (a zero-copy concat or split, role FREE) that other
   runtimes copy: what cm->copies prices. */
int so_cost_view_copy(const so_graph *g, int32_t i);
/* Cost of node i in the given role: STEP its measured cost; FREE 0 (with cm->copies, a
   so_cost_view_copy node its cost as a copy, so_cost_node); FUSED 0 for the cheap
   epilogues (bias, batchnorm, residual add, relu, clip) and the node's measured cost for
   transcendental activations (sigmoid, tanh), which the epilogue computes the same way; HEAD and
   INNER as described there. A HEAD's cost depends on the nodes its kernel absorbs, not on its
   inputs alone: incremental costing must not copy it from a parent graph. */
double so_cost_node_role(so_cost_model *cm, const so_graph *g, int32_t i, int role);
/* Fusion-aware cost of g: the sum of so_cost_node_role over its nodes. */
double so_cost_graph(so_cost_model *cm, const so_graph *g);
/* Times what node i runs in role now (measured models: the node alone, or for SO_COST_HEAD the
   fused kernel it heads; the test hook when set), without reading or writing the cache: *ms.
   Sources, views and opaque nodes: 0. */
so_status so_cost_time_node(so_cost_model *cm, const so_graph *g, int32_t i, int role, double *ms);
/* The cache key of what node i runs in role (its configuration key, or for SO_COST_HEAD its
   kernel's: the fusion kind and every computed node's key), cold or warm weights. */
uint64_t so_cost_config(so_cost_model *cm, const so_graph *g, int32_t i, int role);
/* Confirmation timings (search.c confirm_best: backtracking's best re-timed against greedy's graph) kept
   beside the prices: the value recorded for key (a so_cost_side key, or a paired decision's) in *ms, 1 if there is one.
   Stored under a key of their own (never a price: so_cost_node and the reports do not see them), saved and
   merged with the disk cache like a quiet entry (kept from the first run that recorded it), so that every later
   run on that cache confirms or vetoes the same graphs the same way. */
int so_cost_confirm_get(so_cost_model *cm, uint64_t key, double *ms);
void so_cost_confirm_put(so_cost_model *cm, uint64_t key, double ms);
/* One configuration a graph runs, as the graph comparisons below see it: key (so_cost_config hashed with the role:
   also what their recorded timings are kept under, so_cost_confirm_put), one node that runs it, the role (what is
   timed), its price (so_cost_node_role), and how many more times this side runs it than the other. */
typedef struct so_cost_side {
    uint64_t key;
    int32_t node, count;
    int role;
    double ms;
} so_cost_side;
/* The multiset difference of the priced configurations of graphs a and b (configurations costing 0 left out): *oa
   (*ka of them) those a runs more often than b, *ob (*kb) the other way, sorted by key, malloc'd (caller frees).
   The one list the graph comparisons read: so_cost_graph_diff, so_cost_paired_ratio and the search's confirmation
   of backtracking against greedy (search/search.c). Measures what the model has not timed yet, as so_cost_graph
   does. */
void so_cost_side_diff(so_cost_model *cm, const so_graph *a, const so_graph *b, so_cost_side **oa, int32_t *ka, so_cost_side **ob,
                       int32_t *kb);
/* What differs between the prices of graphs a and b (so_cost_side_diff, each side's configurations weighted by
   count): *da and *db are the sums of what is left in a and in b, so cost(a) - *da = cost(b) - *db (the common
   part). */
void so_cost_graph_diff(so_cost_model *cm, const so_graph *a, const so_graph *b, double *da, double *db);
/* The relative measurement noise of one measured configuration between two independent timings
   under load (the layout decisions' margin, api/optimize.c): a change priced by the measured model
   is taken only when the nodes it changes cost less than (1 - SO_COST_NOISE) of the nodes it
   replaces (so_cost_clearly_lower). How it was measured: docs/BENCHMARKS.md "layout margin". */
#ifndef SO_COST_NOISE /* -DSO_COST_NOISE=0: any gain, as before session 15 (experiments) */
#define SO_COST_NOISE 0.25
#endif
/* 1 when replacing nodes costing d_old by nodes costing d_new (so_cost_graph_diff) is a gain
   beyond the measurement noise: d_new < d_old * (1 - SO_COST_NOISE). */
int so_cost_clearly_lower(double d_new, double d_old);
/* Paired re-timing (session 23, the layout decisions of search/layout.c): how a compares with b when what differs
   between them is timed again now, both sides side by side, instead of comparing the prices in the cache, each
   timed once at the moment it was first needed (on a loaded VM whose speed swings up to 1.7x within minutes, a
   price can be 2-4x the configuration's in-model time, session 22). The configurations one graph runs more often
   than the other (so_cost_side_diff; shared ones cancel) are timed once per round
   on each side, weighted by how many more times that side runs them, the sides interleaved (a b, b a, a b, ...:
   a trend in the machine's speed weighs on both alike), SO_COST_PAIRED_MIN_ROUNDS rounds, and more up to
   SO_COST_PAIRED_ROUNDS while the rounds' ratios time(a) / time(b) fall on both sides of the caller's threshold (the
   ratio its decision turns on); *ratio is a's sum over b's of each configuration at its fastest over the rounds
   (as the search's confirmations: load only adds time, and at load 7-9 the kernel selection inside a timing was
   misled in some rounds, the same configuration timing 1.5 or 6.5 ms, so the median of the rounds' ratios still
   flipped such decisions run to run). Like the search's confirmations (so_cost_confirm_put) the result is recorded
   beside the prices under a key of its own (the two differences' keys and counts) and saved with the disk cache:
   a later run on that cache that reaches the same two graphs takes the recorded ratio without timing, so
   repeated runs on one cache decide the same way. The prices themselves are not changed. *how: SO_PAIRED_SAME
   (nothing to time: both differences empty, *ratio 1, or one side empty, *ratio 0 when a's is, +inf when b's
   is), SO_PAIRED_RECORDED, SO_PAIRED_TIMED. SO_ERR when a side could not be timed (*ratio 1, not recorded).
   Timings go through so_cost_time_node (the test hook when set). Callers in cost-table mode do not call it:
   there prices are already medians of interleaved rounds (so_cost_table_load). */
#define SO_COST_PAIRED_ROUNDS 5
#define SO_COST_PAIRED_MIN_ROUNDS 3
/* SO_PAIRED_CUT (session 24): cm->paired_budget was spent before this decision (not recorded): nothing timed, *ratio
   NaN, SO_OK, cm->paired_cut counted; the caller decides by the cached prices. The budget also stops extra rounds
   beyond SO_COST_PAIRED_MIN_ROUNDS. */
enum { SO_PAIRED_SAME = 0, SO_PAIRED_RECORDED = 1, SO_PAIRED_TIMED = 2, SO_PAIRED_CUT = 3 };
#define SO_COST_PAIRED_BUDGET 2.0
so_status so_cost_paired_ratio(so_cost_model *cm, const so_graph *a, const so_graph *b, double threshold, double *ratio, int *how);
/* Sum of the isolated node costs (so_cost_node), ignoring fusion. */
double so_cost_graph_unfused(so_cost_model *cm, const so_graph *g);
/* Deterministic flops-model cost of node i (also the fallback when timing fails). */
double so_cost_flops_node(const so_graph *g, int32_t i);

#endif
