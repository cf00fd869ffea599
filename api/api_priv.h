/* api_priv.h - what the modules of api/ share behind the public header: the config's fields, the process-wide lock, error hand-over. */
#ifndef SO_API_PRIV_H
#define SO_API_PRIV_H

#define SUPEROPT_BUILD 1
#include "superopt.h"

#include "../src/common.h"

/* The parsed options of a superopt_config (api/config.c). Strings are malloc'd and owned by it. */
struct superopt_config {
    long long threads, budget, seed, work_limit;
    int reference, profile, hugepages;
    int search, cost, layout; /* indexes into so_api_searches / costs / layouts */
    int reverse, allow_unverified, allow_unchecked, check_incremental, check_noise, progress;
    double alpha, time_limit, layout_retime_budget;
    char *rules, *report, *dot, *cache_dir, *inputs, *cost_table, *trace, *trace_path;
    char **pins; /* "s:NAME=D0,..." (input_shape) or "d:SYMBOL=N" (dim), in the order given */
    int n_pins;
    char err[1024];
};

/* The defaults of every key (superopt_config_new's, and a NULL config's). */
void so_api_config_defaults(struct superopt_config *c);

/* Serializes the API calls that touch process-wide importer state (shape pins, the
   measured-cost cache): superopt_session_open*, superopt_optimize, pin validation. */
void so_api_lock(void);
void so_api_unlock(void);

/* Under the lock: forgets the importer's pins and applies the config's (NULL: none). */
so_status so_api_pins_apply(const struct superopt_config *c);

/* Maps an internal so_status to the public code (same numbers for the shared ones). */
superopt_status so_api_status(so_status st);
/* Copies the thread's so_error() message to superopt_last_error() and returns code. */
superopt_status so_api_fail_thread(superopt_status code);

#endif
