/* cmd_verify.c - the verify command: command line over the verifier (verifier/verify.h). */
#include "args.h"
#include "commands.h"
#include "../verifier/verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ CLI */

static int verify_usage(const char *msg)
{
    if (msg) fprintf(stderr, "superopt verify: %s\n", msg);
    fprintf(msg ? stderr : stdout, "usage: superopt verify FILE.rules [--json] [--timeout S] [--threads N] [--numeric N] [--write]\n"
                    "       superopt verify --axioms [--json] [--trials N] [--timeout S] [--markdown]\n");
    return 2;
}

int so_verify_main(int argc, char **argv)
{
    const char *path = NULL;
    int json = 0, write = 0, axioms = 0, md = 0;
    long long threads = 2, numeric = 0, trials = 40;
    double timeout_s = 2.0;
    const so_arg opts[] = {
        SO_ARG_FLAG_("--json", &json),
        SO_ARG_FLAG_("--write", &write),
        SO_ARG_FLAG_("-w", &write),
        SO_ARG_FLAG_("--axioms", &axioms),
        SO_ARG_FLAG_("--markdown", &md),
        SO_ARG_DOUBLE_("--timeout", &timeout_s, 0, 1e6, "--timeout needs seconds in [0, 1e6]"),
        SO_ARG_INT_("--threads", &threads, 1, 256, "--threads needs an integer in 1..256"),
        SO_ARG_INT_("--numeric", &numeric, 0, 1000000, "--numeric needs a number of trials >= 0"),
        SO_ARG_INT_("--trials", &trials, 0, 1000000, "--trials needs a number >= 0"),
        SO_ARG_END,
    };
    int n_pos, rc_args = so_args_parse(opts, argc, argv, &path, 1, &n_pos, verify_usage);
    if (rc_args) return rc_args < 0 ? 0 : rc_args; /* -1: --help */
    if (axioms) return so_verify_axiom_report(json, (int)trials, timeout_s > 0 ? SO_MIN(timeout_s, 2.0) : 1.0, md);
    if (!path) return verify_usage("missing FILE.rules");
    so_ruleset rs = {0};
    if (so_rules_load(path, &rs) != SO_OK) {
        fprintf(stderr, "superopt: %s\n", so_error());
        return 1;
    }
    so_verify_summary sum;
    char **why = NULL;
    if (so_verify_ruleset(&rs, (int)threads, timeout_s, &sum, &why) != SO_OK) {
        fprintf(stderr, "superopt: %s: %s\n", path, so_error());
        so_ruleset_free(&rs);
        return 1;
    }
    int num_failed = 0;
    for (int i = 0; i < rs.n_rules; i++) {
        so_rule *r = &rs.rules[i];
        char nwhy[200] = "";
        int nok = 1;
        if (numeric > 0) {
            if (so_verify_numeric(r, (int)numeric, 1, &nok, nwhy, sizeof nwhy) != SO_OK) {
                nok = 0;
                snprintf(nwhy, sizeof nwhy, "%s", so_error());
            }
            if (!nok) {
                num_failed++;
                if (r->status == SO_RULE_PROVED) {
                    /* a proof contradicted by the kernels: never accept it */
                    r->status = SO_RULE_FAILED;
                    sum.proved--;
                    sum.failed++;
                }
            }
        }
        FILE *f = json ? stderr : stdout;
        if (!json || r->status != SO_RULE_PROVED)
            fprintf(f, "%s:%d: rule %d %s %.3f s%s%s%s%s\n", path, (int)r->line, (int)r->id, r->status == SO_RULE_PROVED ? "proved" : "FAILED",
                    r->proof_seconds, r->status == SO_RULE_PROVED ? "" : " (", r->status == SO_RULE_PROVED ? "" : why[i],
                    r->status == SO_RULE_PROVED ? "" : ")", nok ? "" : " numeric check failed: ");
        if (!nok) fprintf(f, "    %s\n", nwhy);
        free(why[i]);
    }
    free(why);
    if (json)
        printf("{\"rules\": %d, \"proved\": %d, \"failed\": %d, \"seconds\": %.3f}\n", sum.rules, sum.proved, sum.failed, sum.seconds);
    else
        printf("%s: %d rules, %d proved, %d failed%s, %.2f s\n", path, sum.rules, sum.proved, sum.failed,
               numeric > 0 ? (num_failed ? " (numeric check failures above)" : ", numeric check passed") : "", sum.seconds);
    int rc = sum.failed ? 1 : 0;
    if (write && so_rules_save(&rs, path) != SO_OK) {
        fprintf(stderr, "superopt: %s\n", so_error());
        rc = 1;
    }
    so_ruleset_free(&rs);
    return rc;
}
