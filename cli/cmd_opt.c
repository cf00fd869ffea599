/* cmd_opt.c - the optimize command (superopt MODEL.onnx): its options turned into a superopt_config, then superopt_optimize (api/optimize.c) and its summary. */
#include "args.h"
#include "commands.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../api/superopt.h"
#include "../src/common.h"

static const char optimize_head[] = "usage: superopt MODEL.onnx [-o OUT.onnx] [-q]\n";
static const char optimize_tail[] =
    "  Optimizes MODEL.onnx with the proven rewrite rules (default: the installed rules/default.rules)\n"
    "  under the cost model, checks the result against the original on seeded inputs and writes\n"
    "  OUT.onnx (default MODEL.opt.onnx). --report writes the JSON report; -q prints nothing on success.\n"
    "  Every rule must be proved by this build's verifier (or found in its proof cache, --cache-dir);\n"
    "  --allow-unverified uses the others anyway. Both graphs run on four input sets (uniform, x1000,\n"
    "  all-negative, zeros; --inputs FILE adds raw float32 inputs) and must agree element by element;\n"
    "  a model that cannot be executed here is not written unless --allow-unchecked.\n"
    "  The options after -q are the library's (superopt_config_set, api/superopt.h: --time-limit is time_limit).\n";

static int usage(const char *msg) { return so_args_config_usage(optimize_head, SUPEROPT_SCOPE_OPTIMIZE, optimize_tail, msg); }

int so_optimize_main(int argc, char **argv, const char *const *pins, int n_pins)
{
    const char *model = NULL, *out = NULL;
    int quiet = 0;
    superopt_config *cfg = NULL;
    if (superopt_config_new(&cfg) != SUPEROPT_OK) {
        fprintf(stderr, "superopt: %s\n", superopt_last_error());
        return 1;
    }
    /* -o and -q are the command's; every other option is the library's, set into cfg as it is parsed
       (a refused value is a usage error, exit 2) */
    so_arg args[64] = {SO_ARG_FLAG_("-q", &quiet), SO_ARG_STR_("-o", &out)};
    int n_args = 2, n_pos, rc = 2;
    if (so_args_config_opts(args, &n_args, (int)SO_ARRAY_LEN(args) - 1, cfg, SUPEROPT_SCOPE_OPTIMIZE)) {
        fprintf(stderr, "superopt: internal error: too many library options for the command line\n");
        rc = 1;
        goto done;
    }
    args[n_args] = (so_arg)SO_ARG_END;
    int rc_args = so_args_parse(args, argc, argv, &model, 1, &n_pos, usage);
    if (rc_args) {
        rc = rc_args < 0 ? 0 : rc_args; /* -1: --help */
        goto done;
    }
    if (!model) {
        rc = usage("optimize: no model given");
        goto done;
    }
    if ((!quiet && isatty(2) && superopt_config_set(cfg, "progress", "1") != SUPEROPT_OK) || so_args_config_pins(cfg, pins, n_pins))
        goto done;
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
