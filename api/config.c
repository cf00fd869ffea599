/* config.c - superopt_config: "key" = "value" options for sessions and optimization, checked when set; version, status names, thread errors. */
#include "api_priv.h"

#include <assert.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/onnx_io.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* ---- the option table: every key superopt_config_set takes, declared once ----
   Each row: the public description (key, type, scope, value syntax, default, help: what
   superopt_config_option() returns, and what the command line builds its options and usage from, cli/args.c),
   then how the value is parsed and where it goes. A new option is one row here (plus its field in
   api_priv.h and its use); a new word of a choice is one word in its list. */
static const char *const searches[] = {"backtrack", "greedy", "none", "eqsat", NULL};
static const char *const costs[] = {"measured", "flops", NULL};
static const char *const layouts[] = {"auto", "nchwc", "none", "pass", NULL};

typedef enum parse_kind { P_BOOL, P_INT, P_DOUBLE, P_CHOICE, P_PATH, P_BYTES, P_SHAPE, P_DIM } parse_kind;

typedef struct opt {
    superopt_option pub;
    parse_kind parse;
    size_t off;                 /* the field of struct superopt_config (int, long long, double or char *) */
    long long ilo, ihi;         /* P_INT */
    double dlo, dhi;            /* P_DOUBLE */
    const char *const *choices; /* P_CHOICE: the field is the word's index */
    const char *want;           /* the message for a refused value: "expected ..." */
} opt;

#define F(field) offsetof(struct superopt_config, field)
#define S_BOTH SUPEROPT_SCOPE_BOTH
#define S_SESS SUPEROPT_SCOPE_SESSION
#define S_OPT SUPEROPT_SCOPE_OPTIMIZE
#define FLAG_(key, scope, def, help, field) {{key, SUPEROPT_OPTION_FLAG, scope, "0|1", def, help}, P_BOOL, F(field), 0, 0, 0, 0, NULL, NULL}
#define INT_(key, scope, meta, def, help, field, lo, hi, want) {{key, SUPEROPT_OPTION_INT, scope, meta, def, help}, P_INT, F(field), lo, hi, 0, 0, NULL, want}
#define NUM_(key, scope, meta, def, help, field, lo, hi, want) {{key, SUPEROPT_OPTION_NUMBER, scope, meta, def, help}, P_DOUBLE, F(field), 0, 0, lo, hi, NULL, want}
#define CHOICE_(key, scope, meta, def, help, field, words, want) {{key, SUPEROPT_OPTION_CHOICE, scope, meta, def, help}, P_CHOICE, F(field), 0, 0, 0, 0, words, want}
#define TEXT_(key, scope, meta, help, parse, field) {{key, SUPEROPT_OPTION_TEXT, scope, meta, NULL, help}, parse, F(field), 0, 0, 0, 0, NULL, NULL}

static const opt options[] = {
    INT_("threads", S_BOTH, "N", "1", "threads of the kernels (and of the search's measurements)", threads, 1, 256, "expected an integer in 1..256"),
    TEXT_("input_shape", S_BOTH, "NAME=D0,D1,...", "fixes the shape of graph input NAME (repeatable)", P_SHAPE, pins),
    TEXT_("dim", S_BOTH, "SYMBOL=N", "fixes the symbolic dimension SYMBOL (repeatable)", P_DIM, pins),
    {{"max_memory", SUPEROPT_OPTION_TEXT, S_BOTH, "BYTES", NULL, "caps the memory models hold (suffix K/M/G/T; process-wide)"}, P_BYTES, 0, 0, 0, 0, 0, NULL, "expected a byte count (e.g. 512M, 2G)"},
    FLAG_("reference", S_SESS, "0", "run the reference kernels only (slow; for checking)", reference),
    FLAG_("profile", S_SESS, "0", "time every kernel step", profile),
    FLAG_("hugepages", S_SESS, "0", "after loading, ask Linux to back the whole process heap (where small packed weights live) with huge pages (MADV_COLLAPSE): the host's heap too, so off in the library; superopt run sets it", hugepages),
    TEXT_("rules", S_OPT, "FILE", "the rule set (default: the installed rules/default.rules)", P_PATH, rules),
    CHOICE_("search", S_OPT, "backtrack|greedy|none|eqsat", "backtrack", "the search strategy (eqsat: equality saturation, search/README.md)", search, searches,
            "expected backtrack, greedy, none or eqsat"),
    NUM_("alpha", S_OPT, "A", "1.05", "keep graphs costing at most alpha x the best", alpha, 1.0, 100.0, "expected a number in [1, 100]"),
    INT_("budget", S_OPT, "N", "1000", "graphs the search may explore (0: no limit)", budget, 0, 1LL << 40, "expected an integer >= 0 (0: none)"),
    INT_("work_limit", S_OPT, "N", "20000000", "work units each search phase may spend (deterministic: the same costs give the same graph; 0: no limit)", work_limit, 0, 1LL << 50,
         "expected an integer >= 0 (0: none)"),
    NUM_("layout_retime_budget", S_OPT, "S", "2", "wall seconds the layout step may spend re-timing its decisions paired (then the cached prices decide; the report counts those in layout_paired_cut)", layout_retime_budget, 0.0, 1e7, "expected seconds >= 0"),
    NUM_("time_limit", S_OPT, "S", "8", "CPU seconds the search may take, a safety net behind work_limit (0: no limit)", time_limit, 0.0, 1e7, "expected seconds >= 0 (0: none)"),
    CHOICE_("cost", S_OPT, "measured|flops", "measured", "the cost model", cost, costs, "expected measured or flops"),
    CHOICE_("layout", S_OPT, "auto|nchwc|pass|none", "auto", "how the blocked-channel layout is chosen; none: standard ONNX for other runtimes, priced with the copies they make of our zero-copy concats/splits, and not written when it costs more FLOPs+bytes than the original", layout, layouts, "expected auto, nchwc, none or pass"),
    INT_("seed", S_OPT, "N", "1", "seed of the numeric check's inputs", seed, 0, 0x7fffffffL, "expected an integer >= 0"),
    FLAG_("reverse", S_OPT, "1", "also apply rules right to left", reverse),
    FLAG_("allow_unverified", S_OPT, "0", "use rules this build's verifier does not prove (warned)", allow_unverified),
    FLAG_("allow_unchecked", S_OPT, "0", "write a model that cannot be executed here, unchecked (warned)", allow_unchecked),
    TEXT_("inputs", S_OPT, "FILE", "raw float32 inputs added to the numeric check's input sets", P_PATH, inputs),
    FLAG_("check_noise", S_OPT, "0", "compute the numeric check's noise floor on every input set, not only where the strict tolerance fails (same verdict; the report's numeric_check_noise then always a number)", check_noise),
    FLAG_("check_incremental", S_OPT, "0", "also match every derived graph from scratch and count the differences (slow; tests)", check_incremental),
    TEXT_("cache_dir", S_BOTH, "DIR", "where measured costs, proofs and the executor's plan-time conv choices are cached (default: $XDG_CACHE_HOME/superopt or ~/.cache/superopt; \"\": none)", P_PATH, cache_dir),
    TEXT_("cost_table", S_OPT, "FILE", "measured costs from FILE only (made by this run if it does not exist; a table of another ISA level or CPU is refused): the same table gives the same output model", P_PATH, cost_table),
    TEXT_("report", S_OPT, "FILE.json", "write the JSON report (only when the model is written)", P_PATH, report),
    TEXT_("dot", S_OPT, "DIR", "write before/after Graphviz files", P_PATH, dot),
    TEXT_("trace", S_OPT, "FILE", "write one line per graph greedy and backtracking expand (cost, depth, rewrite path; search/README.md \"Tracing\")", P_PATH, trace),
    TEXT_("trace_path", S_OPT, "RULES", "replay rules (labels, e.g. 473-rev*32,506-rev), each at its cheapest match, before the search; steps in the trace and the summary", P_PATH, trace_path),
    FLAG_("progress", S_OPT, "0", "a progress line on stderr", progress),
};

static pthread_mutex_t api_mutex = PTHREAD_MUTEX_INITIALIZER;
void so_api_lock(void) { pthread_mutex_lock(&api_mutex); }
void so_api_unlock(void) { pthread_mutex_unlock(&api_mutex); }

static _Thread_local char last_err[1024];

const char *superopt_version(void)
{
    return STR(SUPEROPT_VERSION_MAJOR) "." STR(SUPEROPT_VERSION_MINOR) "." STR(SUPEROPT_VERSION_PATCH);
}

const char *superopt_status_name(superopt_status st)
{
    switch (st) {
    case SUPEROPT_OK: return "ok";
    case SUPEROPT_ERROR: return "error";
    case SUPEROPT_UNSUPPORTED: return "unsupported";
    case SUPEROPT_PARSE_ERROR: return "parse error";
    case SUPEROPT_LIMIT: return "over a limit";
    case SUPEROPT_IO_ERROR: return "i/o error";
    case SUPEROPT_INVALID_ARGUMENT: return "invalid argument";
    case SUPEROPT_BUSY: return "busy";
    }
    return "unknown status";
}

const char *superopt_last_error(void) { return last_err; }

size_t superopt_dtype_size(superopt_dtype t)
{
    switch (t) {
    case SUPEROPT_FLOAT32:
    case SUPEROPT_INT32: return 4;
    case SUPEROPT_INT64: return 8;
    case SUPEROPT_BOOL: return 1;
    }
    return 0;
}

const char *superopt_dtype_name(superopt_dtype t)
{
    switch (t) {
    case SUPEROPT_FLOAT32: return "float32";
    case SUPEROPT_INT32: return "int32";
    case SUPEROPT_INT64: return "int64";
    case SUPEROPT_BOOL: return "bool";
    }
    return NULL;
}

superopt_status so_api_status(so_status st)
{
    switch (st) {
    case SO_OK: return SUPEROPT_OK;
    case SO_ERR_UNSUPPORTED: return SUPEROPT_UNSUPPORTED;
    case SO_ERR_PARSE: return SUPEROPT_PARSE_ERROR;
    case SO_ERR_LIMIT: return SUPEROPT_LIMIT;
    case SO_ERR_IO: return SUPEROPT_IO_ERROR;
    default: return SUPEROPT_ERROR;
    }
}

superopt_status so_api_fail_thread(superopt_status code)
{
    snprintf(last_err, sizeof last_err, "%s", so_error());
    return code;
}

superopt_status superopt_config_new(superopt_config **out)
{
    if (!out) {
        snprintf(last_err, sizeof last_err, "superopt_config_new: out is NULL");
        return SUPEROPT_INVALID_ARGUMENT;
    }
    *out = calloc(1, sizeof **out);
    if (!*out) {
        snprintf(last_err, sizeof last_err, "superopt_config_new: out of memory");
        return SUPEROPT_LIMIT;
    }
    so_api_config_defaults(*out);
    return SUPEROPT_OK;
}

void superopt_config_free(superopt_config *cfg)
{
    if (!cfg) return;
    free(cfg->rules);
    free(cfg->report);
    free(cfg->dot);
    free(cfg->cache_dir);
    free(cfg->inputs);
    free(cfg->cost_table);
    free(cfg->trace);
    free(cfg->trace_path);
    for (int i = 0; i < cfg->n_pins; i++) free(cfg->pins[i]);
    free(cfg->pins);
    free(cfg);
}

const char *superopt_config_error(const superopt_config *cfg) { return cfg ? cfg->err : "config is NULL"; }

static superopt_status bad(superopt_config *c, const char *key, const char *value, const char *want)
{
    snprintf(c->err, sizeof c->err, "option %s=%s: %s", key, value, want);
    return SUPEROPT_INVALID_ARGUMENT;
}

static superopt_status set_str(char **dst, const char *v)
{
    char *s = strdup(v);
    if (!s) return SUPEROPT_LIMIT;
    free(*dst);
    *dst = s;
    return SUPEROPT_OK;
}

so_status so_api_pins_apply(const struct superopt_config *c)
{
    so_onnx_pins_clear();
    for (int i = 0; c && i < c->n_pins; i++) {
        const char *p = c->pins[i];
        if ((p[0] == 's' ? so_onnx_pin_input(p + 2) : so_onnx_pin_dim(p + 2)) != SO_OK) return SO_ERR;
    }
    return SO_OK;
}

/* "input_shape" / "dim": checked by the importer's own parser, under the lock that guards its pins, then kept as
   "s:NAME=D0,..." / "d:SYMBOL=N" in the order given. */
static superopt_status add_pin(superopt_config *c, const char *key, const char *v, int shape)
{
    so_api_lock();
    so_onnx_pins_clear();
    so_status st = shape ? so_onnx_pin_input(v) : so_onnx_pin_dim(v);
    so_onnx_pins_clear();
    so_api_unlock();
    if (st != SO_OK) {
        snprintf(c->err, sizeof c->err, "option %s: %s", key, so_error());
        return SUPEROPT_INVALID_ARGUMENT;
    }
    size_t len = strlen(v);
    char *p = malloc(len + 3), **np = realloc(c->pins, (size_t)(c->n_pins + 1) * sizeof *np);
    if (!p || !np) {
        free(p);
        if (np) c->pins = np;
        return bad(c, key, v, "out of memory");
    }
    p[0] = shape ? 's' : 'd';
    p[1] = ':';
    memcpy(p + 2, v, len + 1);
    c->pins = np;
    c->pins[c->n_pins++] = p;
    return SUPEROPT_OK;
}

/* Parses v as option o into config c (the value checked first; the config unchanged on a refusal). */
static superopt_status set_opt(superopt_config *c, const opt *o, const char *v)
{
    const char *key = o->pub.key;
    char *field = (char *)c + o->off;
    long long n;
    double d;
    switch (o->parse) {
    case P_BOOL:
        if (so_parse_int(v, 0, 1, &n)) return bad(c, key, v, "expected 0 or 1");
        *(int *)field = (int)n;
        return SUPEROPT_OK;
    case P_INT:
        if (so_parse_int(v, o->ilo, o->ihi, &n)) return bad(c, key, v, o->want);
        *(long long *)field = n;
        return SUPEROPT_OK;
    case P_DOUBLE:
        if (so_parse_double(v, o->dlo, o->dhi, &d)) return bad(c, key, v, o->want);
        *(double *)field = d;
        return SUPEROPT_OK;
    case P_CHOICE:
        for (int k = 0; o->choices[k]; k++)
            if (!strcmp(o->choices[k], v)) {
                *(int *)field = k;
                return SUPEROPT_OK;
            }
        return bad(c, key, v, o->want);
    case P_PATH:
        if (!v[0]) return bad(c, key, v, "expected a path");
        if (set_str((char **)field, v) != SUPEROPT_OK) return bad(c, key, v, "out of memory");
        return SUPEROPT_OK;
    case P_BYTES: {
        size_t b;
        if (so_parse_bytes(v, &b)) return bad(c, key, v, o->want);
        so_max_alloc_bytes = b; /* process-wide (documented in superopt.h) */
        return SUPEROPT_OK;
    }
    case P_SHAPE:
    case P_DIM: return add_pin(c, key, v, o->parse == P_SHAPE);
    }
    return bad(c, key, v, "internal error: unknown option kind");
}

const superopt_option *superopt_config_option(size_t i) { return i < SO_ARRAY_LEN(options) ? &options[i].pub : NULL; }

void so_api_config_defaults(struct superopt_config *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < SO_ARRAY_LEN(options); i++)
        if (options[i].pub.default_value && options[i].parse != P_BYTES) {
            superopt_status st = set_opt(c, &options[i], options[i].pub.default_value);
            assert(st == SUPEROPT_OK); /* the table's defaults parse (tests/test_api.c checks each) */
            (void)st;
        }
    c->err[0] = 0;
}

superopt_status superopt_config_set(superopt_config *c, const char *key, const char *v)
{
    if (!c) {
        snprintf(last_err, sizeof last_err, "superopt_config_set: config is NULL");
        return SUPEROPT_INVALID_ARGUMENT;
    }
    if (!key || !v) {
        snprintf(c->err, sizeof c->err, "superopt_config_set: key and value must not be NULL");
        return SUPEROPT_INVALID_ARGUMENT;
    }
    c->err[0] = 0;
    for (size_t i = 0; i < SO_ARRAY_LEN(options); i++)
        if (!strcmp(key, options[i].pub.key)) return set_opt(c, &options[i], v);
    int len = snprintf(c->err, sizeof c->err, "unknown option '%.200s' (", key);
    for (size_t i = 0; i < SO_ARRAY_LEN(options) && len > 0 && (size_t)len < sizeof c->err; i++)
        len += snprintf(c->err + len, sizeof c->err - (size_t)len, "%s%s", i ? ", " : "", options[i].pub.key);
    if (len > 0 && (size_t)len < sizeof c->err) snprintf(c->err + len, sizeof c->err - (size_t)len, ")");
    return SUPEROPT_INVALID_ARGUMENT;
}
