/* superopt.h - the public C API of libsuperopt: open, query and run ONNX models, optimize them with proven rules. */
#ifndef SUPEROPT_H
#define SUPEROPT_H

/* Conventions (in the style of Z3's C API):
   - Handles are opaque pointers with explicit lifetimes: every *_new / *_open that succeeds gives a
     handle the caller frees with the matching *_free / *_close (which accept NULL).
   - Every function that can fail returns a superopt_status: SUPEROPT_OK (0) or a code saying what
     happened. The message of a handle's last failure is read with superopt_session_error /
     superopt_config_error; a failure with no handle to hold it (superopt_session_open when it returns
     no session, superopt_optimize, superopt_config_new) leaves its message in the calling thread's
     superopt_last_error(). Messages are one line, name the file or tensor concerned, and stay valid
     until the next call on the same handle (thread).
   - Strings returned by the library are owned by the handle they came from and live as long as it.
   - Element types are ONNX's TensorProto codes (superopt_dtype); tensors are dense, row-major.
   Thread safety is stated per function: "any thread" means concurrent calls are safe; a session runs
   on one thread at a time (a concurrent run of the same session is refused with SUPEROPT_BUSY, not
   serialized); different sessions run concurrently. Options that set process-wide state say so. */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(SUPEROPT_BUILD) && defined(__GNUC__)
#define SUPEROPT_API __attribute__((visibility("default")))
#else
#define SUPEROPT_API
#endif

#define SUPEROPT_VERSION_MAJOR 0
#define SUPEROPT_VERSION_MINOR 6
#define SUPEROPT_VERSION_PATCH 0
#define SUPEROPT_VERSION_STRING "0.6.0"

typedef enum superopt_status {
    SUPEROPT_OK = 0,
    SUPEROPT_ERROR = 1,            /* failure without a more specific code (invalid model, internal error) */
    SUPEROPT_UNSUPPORTED = 2,      /* valid input the library does not handle: an operator, a dtype */
    SUPEROPT_PARSE_ERROR = 3,      /* malformed bytes or text: protobuf, rule files */
    SUPEROPT_LIMIT = 4,            /* over a limit: max_memory, sizes */
    SUPEROPT_IO_ERROR = 5,         /* a file could not be opened, read, written or renamed */
    SUPEROPT_INVALID_ARGUMENT = 6, /* a call the API does not allow: NULL handle, unknown option or value,
                                      wrong tensor name, dtype, shape or buffer size */
    SUPEROPT_BUSY = 7              /* the session is running on another thread */
} superopt_status;

typedef enum superopt_dtype {
    SUPEROPT_FLOAT32 = 1,
    SUPEROPT_INT32 = 6,
    SUPEROPT_INT64 = 7,
    SUPEROPT_BOOL = 9              /* one byte per element, 0 or 1 */
} superopt_dtype;

/* ---- version and errors ---- */

/* "MAJOR.MINOR.PATCH" of the library (may differ from the header's macros when linked dynamically).
   Any thread. */
SUPEROPT_API const char *superopt_version(void);
/* Name of a status code: "ok", "error", "unsupported", ... Any thread. */
SUPEROPT_API const char *superopt_status_name(superopt_status st);
/* Message of the calling thread's last failure that had no handle to hold it; "" if none. Any thread
   (each thread has its own). */
SUPEROPT_API const char *superopt_last_error(void);
/* Bytes of one element of dtype (bool: 1); 0 for a code that is not a superopt_dtype. Any thread. */
SUPEROPT_API size_t superopt_dtype_size(superopt_dtype t);
/* "float32", "int32", "int64", "bool"; NULL for other codes. Any thread. */
SUPEROPT_API const char *superopt_dtype_name(superopt_dtype t);

/* ---- options ----
   A config holds "key" = "value" options for superopt_session_open and superopt_optimize. Keys (the
   same table, with each key's type, default and help, is read by superopt_config_option below):
     both:     "threads" N (1..256, default 1)
               "input_shape" NAME=D0,D1,...  (repeatable) fixes the shape of graph input NAME
               "dim" SYMBOL=N                (repeatable) fixes the symbolic dimension SYMBOL
               "max_memory" BYTES (suffix K/M/G/T) caps the memory the models of the process hold:
                             process-wide, it applies from superopt_config_set on, to every session
     session:  "reference" 0|1   run the reference kernels only (slow; for checking)
               "profile" 0|1     time every kernel step (superopt_session_profile)
               "cache_dir" DIR   (also optimize's) the executor's plan-time conv choices are read from this
                             cost cache and the ones a plan makes added (default the user's cache, "" none):
                             every process on one cache plans the same kernels (search/cost.h "pick")
     optimize: "rules" FILE (default: the installed rule set, see superopt_optimize)
               "search" backtrack|greedy|none|eqsat   "alpha" A (1..100, default 1.05)
               "budget" N (graphs, 0 none, default 1000)
               "work_limit" N (work units per search phase, 0 none, default 20000000: deterministic,
                             so the same costs give the same graph whatever the machine's load)
               "time_limit" S (CPU seconds of the search, a safety net the report names when it
                             fires; 0 none, default 8)
               "cost" measured|flops   "layout" auto|nchwc|pass|none   "seed" N   "reverse" 0|1
               "allow_unverified" 0|1 (use rules this build's verifier does not prove; warned on stderr)
               "allow_unchecked" 0|1 (write a model that cannot be executed here, unchecked; warned on stderr)
               "inputs" FILE (raw float32 inputs added to the numeric check's input sets)
               "check_noise" 0|1 (the numeric check's noise floor on every input set, not only where
                             the strict tolerance fails: same verdict, a number in the report always)
               "check_incremental" 0|1   "cache_dir" DIR (measured costs and proofs; see rules/RULES.md)
               "layout_retime_budget" S (wall seconds the layout step may spend re-timing its decisions
                             paired, default 2; then the cached prices decide, and the report's
                             search_detail.layout_paired_cut counts those decisions; search/layout.h)
               "cost_table" FILE (measured costs from this table only: loaded if it exists, else measured
                             and written; same table, same output model; search/README.md "Cost tables")
               "report" FILE.json (also written, atomically, only when the model is)
               "dot" DIR (before/after Graphviz files)   "progress" 0|1 (a progress line on stderr)
               "trace" FILE (one line per graph greedy and backtracking expand: exact cost, depth,
                             rewrite path; search/README.md "Tracing")
               "trace_path" RULES (rule labels such as "473-rev*32,506-rev*5", replayed from the start
                             graph before the search, each step at its cheapest match; the costs in
                             the trace and the summary)
   A value is checked when it is set. A config is used by one thread at a time; sessions and
   optimizations copy what they need, so it may be freed or changed right after. */
typedef struct superopt_config superopt_config;

/* Any thread. On failure (out of memory only) *out is NULL and superopt_last_error() says why. */
SUPEROPT_API superopt_status superopt_config_new(superopt_config **out);
/* Sets key to value (repeatable keys add a value). An unknown key or a malformed value:
   SUPEROPT_INVALID_ARGUMENT, the config unchanged. One thread at a time per config. */
SUPEROPT_API superopt_status superopt_config_set(superopt_config *cfg, const char *key, const char *value);
/* Message of the config's last failure; "" if none. */
SUPEROPT_API const char *superopt_config_error(const superopt_config *cfg);
SUPEROPT_API void superopt_config_free(superopt_config *cfg);

/* The keys superopt_config_set takes, described for clients that present them (the superopt command
   line builds its options and usage from this table). */
typedef enum superopt_option_type {
    SUPEROPT_OPTION_FLAG,   /* "0" or "1" */
    SUPEROPT_OPTION_INT,    /* an integer in the option's range */
    SUPEROPT_OPTION_NUMBER, /* a decimal number in the option's range */
    SUPEROPT_OPTION_CHOICE, /* one of the words in value ("backtrack|greedy|none") */
    SUPEROPT_OPTION_TEXT    /* a path, a byte count or a shape; see value */
} superopt_option_type;
typedef enum superopt_option_scope {
    SUPEROPT_SCOPE_BOTH,     /* sessions and optimization */
    SUPEROPT_SCOPE_SESSION,  /* superopt_session_open only */
    SUPEROPT_SCOPE_OPTIMIZE  /* superopt_optimize only */
} superopt_option_scope;
typedef struct superopt_option {
    const char *key;           /* superopt_config_set's key: "time_limit" */
    superopt_option_type type;
    superopt_option_scope scope;
    const char *value;         /* the value's syntax for usage lines: "N", "S", "FILE", "measured|flops", "0|1" */
    const char *default_value; /* as superopt_config_set takes it; NULL: none (unset, or process-wide) */
    const char *help;          /* one line */
} superopt_option;
/* Option i (0, 1, ... in a fixed order), or NULL past the last. Static storage. Any thread. */
SUPEROPT_API const superopt_option *superopt_config_option(size_t i);

/* ---- sessions: a model loaded and planned for running ---- */
typedef struct superopt_session superopt_session;

/* Describes a graph input or output; pointers owned by the session. */
typedef struct superopt_tensor_info {
    const char *name;
    superopt_dtype dtype;
    int32_t rank;
    const int64_t *dims;   /* rank entries, all known (symbolic ones fixed by input_shape / dim) */
    size_t bytes;          /* product of dims times superopt_dtype_size(dtype) */
} superopt_tensor_info;

/* Loads the ONNX model at path (or len bytes at data; `name` is used in messages and for
   external-data files, relative to its folder), infers shapes, picks the kernels and plans memory
   once; cfg may be NULL. On success *out is a session the caller closes. On failure, *out is NULL
   and superopt_last_error() holds the message (it names the file). Any thread; loads are serialized
   internally (the importer's shape pins are process-wide). */
SUPEROPT_API superopt_status superopt_session_open(const char *path, const superopt_config *cfg, superopt_session **out);
SUPEROPT_API superopt_status superopt_session_open_bytes(const void *data, size_t len, const char *name,
                                                        const superopt_config *cfg, superopt_session **out);
/* Number of graph inputs / outputs (0 for NULL). Any thread. */
SUPEROPT_API size_t superopt_session_input_count(const superopt_session *s);
SUPEROPT_API size_t superopt_session_output_count(const superopt_session *s);
/* Fills *info for input / output i (graph order). i out of range: SUPEROPT_INVALID_ARGUMENT. Any thread. */
SUPEROPT_API superopt_status superopt_session_input_info(superopt_session *s, size_t i, superopt_tensor_info *info);
SUPEROPT_API superopt_status superopt_session_output_info(superopt_session *s, size_t i, superopt_tensor_info *info);

/* A caller-owned tensor handed to superopt_session_run. */
typedef struct superopt_tensor {
    const char *name;      /* the graph input/output name; NULL: the one at this array position */
    superopt_dtype dtype;  /* must equal the graph's */
    int32_t rank;          /* with dims: must equal the graph's shape. Outputs may give dims NULL */
    const int64_t *dims;   /* (then only bytes is checked) */
    void *data;            /* inputs: read (never written); outputs: written */
    size_t bytes;          /* size of the buffer at data: at least superopt_tensor_info.bytes */
} superopt_tensor;

/* Runs the model once: every graph input given exactly once in inputs[0..n_inputs) (any order, by
   name), and any subset of the outputs requested in outputs[0..n_outputs), written into the
   caller's buffers. Allocates nothing (the session planned its memory at open). A wrong name,
   dtype, shape or buffer size, a missing or repeated input: SUPEROPT_INVALID_ARGUMENT naming the
   tensor, nothing run. One thread at a time per session: a run that starts while the same session
   runs on another thread returns SUPEROPT_BUSY (the other run is not disturbed). Different
   sessions run concurrently. */
SUPEROPT_API superopt_status superopt_session_run(superopt_session *s, const superopt_tensor *inputs, size_t n_inputs,
                                                  superopt_tensor *outputs, size_t n_outputs);
/* JSON object about the session: {"model", "nodes", "isa", "threads", "peak_activation_bytes",
   "weight_bytes", "wait_runs", "short_spin_runs"} (the last two process-wide: runs at >= 2 threads whose wait policy
   adapted, and those after which libgomp's short spin was in force: kernels/wait.h); with "profile" 1 also the per-kernel timing table as text under "profile".
   Owned by the session, valid until the next call on it. Same thread rule as superopt_session_run (NULL
   with SUPEROPT_BUSY's message in superopt_last_error() while the session runs on another thread). */
SUPEROPT_API const char *superopt_session_stats(superopt_session *s);
/* Message of the session's last failure; "" if none. Read it on the thread that made the failing call
   (SUPEROPT_BUSY's message is in that thread's superopt_last_error(), not here). */
SUPEROPT_API const char *superopt_session_error(const superopt_session *s);
/* Frees the session and everything it owns; NULL is a no-op. Not while it runs. A closed session is
   freed memory: the C API cannot detect its later use (the Python Session raises superopt.Error). */
SUPEROPT_API void superopt_session_close(superopt_session *s);

/* ---- optimization ---- */
typedef struct superopt_report superopt_report;

/* Optimizes the ONNX model at src into dst (NULL: src with ".onnx" replaced by ".opt.onnx"):
   canonicalises it, searches with the rule set's proven rewrites under the cost model, chooses the
   layout, checks the result numerically against the original on seeded inputs (relative error
   <= 1e-4, else nothing is written) and writes dst atomically. The rules: cfg "rules", else
   $SUPEROPT_RULES, else rules/default.rules in the working directory, else the rule set installed
   with the library (LIBDIR/../share/superopt/default.rules, or ../rules/default.rules next to a
   build's library or executable). On success *report (if report is not NULL) receives a report the
   caller frees. On failure nothing is written and superopt_last_error() holds the message. Any
   thread; optimizations are serialized internally (the shape pins and the measured-cost cache are
   process-wide). */
SUPEROPT_API superopt_status superopt_optimize(const char *src, const char *dst, const superopt_config *cfg,
                                               superopt_report **report);
/* The report as one JSON object (model, output, rules, cost_before/after, latency_before/after_ms,
   speedup, rules_applied, ...: what `superopt MODEL.onnx --report FILE` writes). Owned by the report. */
SUPEROPT_API const char *superopt_report_json(const superopt_report *r);
/* The same as a few lines of text for people (what `superopt MODEL.onnx` prints). Owned by the report. */
SUPEROPT_API const char *superopt_report_text(const superopt_report *r);
SUPEROPT_API void superopt_report_free(superopt_report *r);

#ifdef __cplusplus
}
#endif

#endif
