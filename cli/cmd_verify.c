/* cmd_verify.c - the verify command: command line over the verifier (verifier/verify.h). */
#include "args.h"
#include "commands.h"
#include "../src/json.h"
#include "../verifier/proofs.h"
#include "../verifier/verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ CLI */

static int verify_usage(const char *msg)
{
    if (msg) fprintf(stderr, "superopt verify: %s\n", msg);
    fprintf(msg ? stderr : stdout, "usage: superopt verify FILE.rules [--json] [--timeout S] [--threads N] [--numeric N] [--write] [--cache [--cache-dir DIR]]\n"
                    "       --cache: add the proved rules to this build's proof cache (rules/RULES.md); --cache-dir DIR: the cache\n"
                    "       folder (default $XDG_CACHE_HOME/superopt or ~/.cache/superopt); `make` writes build/proofs, the proof store read\n"
                    "       beside the executable\n"
                    "       superopt verify --axioms [--json] [--trials N] [--timeout S] [--markdown]\n");
    return 2;
}

int so_verify_main(int argc, char **argv)
{
    const char *path = NULL;
    int json = 0, write = 0, axioms = 0, md = 0, cache = 0;
    const char *cache_dir = NULL;
    long long threads = 2, numeric = 0, trials = 40;
    double timeout_s = 2.0;
    const so_arg opts[] = {
        SO_ARG_FLAG_("--json", &json),
        SO_ARG_FLAG_("--write", &write),
        SO_ARG_FLAG_("--cache", &cache),
        SO_ARG_STR_("--cache-dir", &cache_dir),
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
    /* every rule not proved: a counterexample search with the reference kernels; with a witness it
       is FALSE, without one UNKNOWN (unproved: possibly true). Both are failures (dropped). */
    int num_failed = 0, n_false = 0, n_unknown = 0;
    double tw = so_now();
    so_sbuf jr = {0}; /* --json: the per-rule results of the rules not proved */
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
        int found = 0;
        char *wt = NULL, *wj = NULL;
        if (r->status != SO_RULE_PROVED && so_verify_witness(r, &found, &wt, &wj) != SO_OK) found = 0;
        if (r->status != SO_RULE_PROVED) {
            n_false += found;
            n_unknown += !found;
            so_sbuf_printf(&jr, "%s{\"rule\": %d, \"line\": %d, \"result\": \"%s\", \"why\": ", jr.s ? ", " : "", (int)r->id,
                           (int)r->line, found ? "false" : "unknown");
            so_json_str(&jr, why[i]);
            so_sbuf_printf(&jr, ", \"witness\": %s}", found ? wj : "null");
        }
        FILE *f = json ? stderr : stdout;
        if (r->status == SO_RULE_PROVED) {
            if (!json) fprintf(f, "%s:%d: rule %d proved %.3f s\n", path, (int)r->line, (int)r->id, r->proof_seconds);
        } else if (found) {
            fprintf(f, "%s:%d: rule %d FALSE (solver: %s); %s\n", path, (int)r->line, (int)r->id, why[i], wt);
        } else {
            fprintf(f, "%s:%d: rule %d UNKNOWN (%s); no counterexample on small shapes: unproved, possibly true\n", path, (int)r->line,
                    (int)r->id, why[i]);
        }
        if (!nok) fprintf(f, "    numeric check failed: %s\n", nwhy);
        free(wt);
        free(wj);
        free(why[i]);
    }
    tw = so_now() - tw;
    free(why);
    if (json)
        printf("{\"rules\": %d, \"proved\": %d, \"failed\": %d, \"false\": %d, \"unknown\": %d, \"seconds\": %.3f, \"witness_seconds\": %.3f, "
               "\"not_proved\": [%s]}\n",
               sum.rules, sum.proved, sum.failed, n_false, n_unknown, sum.seconds, tw, jr.s ? jr.s : "");
    else
        printf("%s: %d rules, %d proved, %d failed (%d false with a witness, %d unknown)%s, %.2f s (+ %.2f s counterexample search)\n", path,
               sum.rules, sum.proved, sum.failed, n_false, n_unknown,
               numeric > 0 ? (num_failed ? " (numeric check failures above)" : ", numeric check passed") : "", sum.seconds, tw);
    free(jr.s);
    int rc = sum.failed ? 1 : 0;
    if (cache) { /* proofs bound to content: what this build proved, by digest */
        so_proof_cache pc;
        so_proof_cache_open(&pc, cache_dir);
        for (int i = 0; i < rs.n_rules; i++)
            if (rs.rules[i].status == SO_RULE_PROVED) so_proof_cache_add(&pc, so_proof_digest_of(&rs.rules[i]));
        if (!sum.failed && rs.has_text_hash) so_proof_cache_add(&pc, so_proof_file_digest(&rs));
        if (so_proof_cache_save(&pc) != SO_OK) {
            fprintf(stderr, "superopt: %s\n", so_error());
            rc = 1;
        }
        so_proof_cache_close(&pc);
    }
    if (write && so_rules_save(&rs, path) != SO_OK) {
        fprintf(stderr, "superopt: %s\n", so_error());
        rc = 1;
    }
    so_ruleset_free(&rs);
    return rc;
}
