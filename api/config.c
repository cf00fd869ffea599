/* config.c - superopt_config: "key" = "value" options for sessions and optimization, checked when set; version, status names, thread errors. */
#include "api_priv.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../src/onnx_io.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static const char *const searches[] = {"backtrack", "greedy", "none", "eqsat", NULL};
static const char *const costs[] = {"measured", "flops", NULL};
static const char *const layouts[] = {"auto", "nchwc", "none", "pass", NULL};

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

void so_api_config_defaults(struct superopt_config *c)
{
    memset(c, 0, sizeof *c);
    c->threads = 1;
    c->budget = 1000;
    c->seed = 1;
    c->alpha = 1.05;
    c->time_limit = 8.0;
    c->reverse = 1;
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

static int choice(const char *const *words, const char *v)
{
    for (int i = 0; words[i]; i++)
        if (!strcmp(words[i], v)) return i;
    return -1;
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
    long long n;
    double d;
    int k;
    struct flag {
        const char *key;
        int *dst;
    } flags[] = {{"reference", &c->reference}, {"profile", &c->profile}, {"reverse", &c->reverse},
                 {"allow_unverified", &c->allow_unverified}, {"allow_unchecked", &c->allow_unchecked},
                 {"check_incremental", &c->check_incremental},
                 {"progress", &c->progress}};
    for (size_t i = 0; i < SO_ARRAY_LEN(flags); i++)
        if (!strcmp(key, flags[i].key)) {
            if (so_parse_int(v, 0, 1, &n)) return bad(c, key, v, "expected 0 or 1");
            *flags[i].dst = (int)n;
            return SUPEROPT_OK;
        }
    if (!strcmp(key, "threads")) {
        if (so_parse_int(v, 1, 256, &n)) return bad(c, key, v, "expected an integer in 1..256");
        c->threads = n;
    } else if (!strcmp(key, "budget")) {
        if (so_parse_int(v, 0, 1LL << 40, &n)) return bad(c, key, v, "expected an integer >= 0 (0: none)");
        c->budget = n;
    } else if (!strcmp(key, "seed")) {
        if (so_parse_int(v, 0, 0x7fffffffL, &n)) return bad(c, key, v, "expected an integer >= 0");
        c->seed = n;
    } else if (!strcmp(key, "alpha")) {
        if (so_parse_double(v, 1.0, 100.0, &d)) return bad(c, key, v, "expected a number in [1, 100]");
        c->alpha = d;
    } else if (!strcmp(key, "time_limit")) {
        if (so_parse_double(v, 0.0, 1e7, &d)) return bad(c, key, v, "expected seconds >= 0 (0: none)");
        c->time_limit = d;
    } else if (!strcmp(key, "search")) {
        if ((k = choice(searches, v)) < 0) return bad(c, key, v, "expected backtrack, greedy, none or eqsat");
        c->search = k;
    } else if (!strcmp(key, "cost")) {
        if ((k = choice(costs, v)) < 0) return bad(c, key, v, "expected measured or flops");
        c->cost = k;
    } else if (!strcmp(key, "layout")) {
        if ((k = choice(layouts, v)) < 0) return bad(c, key, v, "expected auto, nchwc, none or pass");
        c->layout = k;
    } else if (!strcmp(key, "max_memory")) {
        size_t b;
        if (so_parse_bytes(v, &b)) return bad(c, key, v, "expected a byte count (e.g. 512M, 2G)");
        so_max_alloc_bytes = b; /* process-wide (documented in superopt.h) */
    } else if (!strcmp(key, "rules") || !strcmp(key, "report") || !strcmp(key, "dot") || !strcmp(key, "cache_dir")) {
        if (!v[0]) return bad(c, key, v, "expected a path");
        char **dst = key[0] == 'r' ? (key[2] == 'l' ? &c->rules : &c->report) : key[0] == 'd' ? &c->dot : &c->cache_dir;
        if (set_str(dst, v) != SUPEROPT_OK) return bad(c, key, v, "out of memory");
    } else if (!strcmp(key, "inputs") || !strcmp(key, "cost_table")) {
        if (!v[0]) return bad(c, key, v, "expected a path");
        if (set_str(key[0] == 'i' ? &c->inputs : &c->cost_table, v) != SUPEROPT_OK) return bad(c, key, v, "out of memory");
    } else if (!strcmp(key, "input_shape") || !strcmp(key, "dim")) {
        /* checked by the importer's own parser, under the lock that guards its pins */
        so_api_lock();
        so_onnx_pins_clear();
        so_status st = key[0] == 'i' ? so_onnx_pin_input(v) : so_onnx_pin_dim(v);
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
        p[0] = key[0] == 'i' ? 's' : 'd';
        p[1] = ':';
        memcpy(p + 2, v, len + 1);
        c->pins = np;
        c->pins[c->n_pins++] = p;
    } else {
        snprintf(c->err, sizeof c->err,
                 "unknown option '%s' (threads, input_shape, dim, max_memory, reference, profile, rules, search, alpha, budget, "
                 "time_limit, cost, layout, seed, reverse, allow_unverified, allow_unchecked, inputs, check_incremental, cache_dir, cost_table, report, dot, progress)",
                 key);
        return SUPEROPT_INVALID_ARGUMENT;
    }
    return SUPEROPT_OK;
}
