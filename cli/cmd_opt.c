/* cmd_opt.c - the optimize command (superopt MODEL.onnx): its options turned into a superopt_config, then superopt_optimize (api/optimize.c) and its summary. */
#include "args.h"
#include "commands.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../api/superopt.h"

static const char optimize_usage[] =
    "usage: superopt MODEL.onnx [-o OUT.onnx] [--rules FILE] [--search backtrack|greedy|none|eqsat]\n"
    "         [--alpha A] [--budget N] [--time-limit S] [--cost measured|flops]\n"
    "         [--report FILE.json] [--dot DIR] [--threads N] [--seed N] [-q] [--allow-unverified]\n"
    "         [--no-reverse] [--cache-dir DIR] [--check-incremental] [--layout auto|nchwc|pass|none]\n"
    "         [--inputs FILE] [--allow-unchecked] [--cost-table FILE]\n"
    "  Optimizes MODEL.onnx with the proven rewrite rules (default: the installed rules/default.rules)\n"
    "  under the cost model, checks the result against the original on seeded inputs and writes\n"
    "  OUT.onnx (default MODEL.opt.onnx). --report writes the JSON report; -q prints nothing on success.\n"
    "  Every rule must be proved by this build's verifier (or found in its proof cache, --cache-dir);\n"
    "  --allow-unverified uses the others anyway. Both graphs run on four input sets (uniform, x1000,\n"
    "  all-negative, zeros; --inputs FILE adds raw float32 inputs) and must agree element by element;\n"
    "  a model that cannot be executed here is not written unless --allow-unchecked.\n"
    "  --cost-table FILE: measured costs from FILE only (made by this run if it does not exist; a table of\n"
    "  another ISA level or CPU is refused): the same table gives the same output model.\n";

static int usage(const char *msg) { return so_args_usage(optimize_usage, msg); }


int so_optimize_main(int argc, char **argv, const char *const *pins, int n_pins)
{
    const char *model = NULL, *out = NULL, *rules = NULL, *report = NULL, *dot = NULL, *cache_dir = NULL, *inputs = NULL, *cost_table = NULL;
    const char *search = NULL, *cost = NULL, *layout = NULL, *alpha = NULL, *time_limit = NULL, *budget = NULL, *threads = NULL,
               *seed = NULL;
    int quiet = 0, allow_unverified = 0, allow_unchecked = 0, no_reverse = 0, check_incremental = 0;
    const so_arg args[] = {
        SO_ARG_FLAG_("-q", &quiet),
        SO_ARG_FLAG_("--allow-unverified", &allow_unverified),
        SO_ARG_FLAG_("--allow-unchecked", &allow_unchecked),
        SO_ARG_STR_("--inputs", &inputs),
        SO_ARG_FLAG_("--no-reverse", &no_reverse),
        SO_ARG_FLAG_("--check-incremental", &check_incremental),
        SO_ARG_STR_("-o", &out),
        SO_ARG_STR_("--rules", &rules),
        SO_ARG_STR_("--report", &report),
        SO_ARG_STR_("--dot", &dot),
        SO_ARG_STR_("--cache-dir", &cache_dir),
        SO_ARG_STR_("--cost-table", &cost_table),
        SO_ARG_STR_("--layout", &layout),
        SO_ARG_STR_("--search", &search),
        SO_ARG_STR_("--cost", &cost),
        SO_ARG_STR_("--alpha", &alpha),
        SO_ARG_STR_("--time-limit", &time_limit),
        SO_ARG_STR_("--budget", &budget),
        SO_ARG_STR_("--threads", &threads),
        SO_ARG_STR_("--seed", &seed),
        SO_ARG_END,
    };
    int n_pos, rc_args = so_args_parse(args, argc, argv, &model, 1, &n_pos, usage);
    if (rc_args) return rc_args < 0 ? 0 : rc_args; /* -1: --help */
    if (!model) return usage("optimize: no model given");

    superopt_config *cfg = NULL;
    if (superopt_config_new(&cfg) != SUPEROPT_OK) {
        fprintf(stderr, "superopt: %s\n", superopt_last_error());
        return 1;
    }
    /* the options in the library's words; a bad value is a usage error (exit 2) */
    const struct {
        const char *key, *value;
    } kv[] = {{"rules", rules}, {"report", report}, {"dot", dot}, {"cache_dir", cache_dir}, {"cost_table", cost_table}, {"layout", layout}, {"search", search},
              {"cost", cost}, {"alpha", alpha}, {"time_limit", time_limit}, {"budget", budget}, {"threads", threads}, {"seed", seed},
              {"allow_unverified", allow_unverified ? "1" : NULL}, {"allow_unchecked", allow_unchecked ? "1" : NULL},
              {"inputs", inputs}, {"reverse", no_reverse ? "0" : NULL},
              {"check_incremental", check_incremental ? "1" : NULL}, {"progress", !quiet && isatty(2) ? "1" : NULL}};
    int rc = 2;
    for (size_t i = 0; i < sizeof kv / sizeof kv[0]; i++)
        if (so_args_config_set(cfg, kv[i].key, kv[i].value)) goto done;
    if (so_args_config_pins(cfg, pins, n_pins)) goto done;
    superopt_report *r = NULL;
    if (superopt_optimize(model, out, cfg, &r) != SUPEROPT_OK) {
        fprintf(stderr, "superopt: %s\n", superopt_last_error());
        rc = 1;
        goto done;
    }
    if (!quiet) fputs(superopt_report_text(r), stderr);
    superopt_report_free(r);
    rc = 0;
done:
    superopt_config_free(cfg);
    return rc;
}
