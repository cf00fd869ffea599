/* cmd_generate.c - the generate and rules merge commands: command lines over the rule generator (rules/gen.h). */
#include "args.h"
#include "commands.h"
#include "../rules/gen.h"
#include "../rules/gen_mpi.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

/* ---------------- CLI ---------------- */

static int usage_gen(FILE *f)
{
    fprintf(f, "usage: superopt generate [--max-ops N] [-o FILE.rules] [--threads N] [--shard I/N] [--seed N]\n"
                    "                         [--json FILE] [--no-verify] [--no-float] [--proof-times] [--timeout S] [-q] [--resume] [--mpi]\n");
    return 2;
}

static int gen_usage(const char *msg)
{
    if (msg) fprintf(stderr, "superopt generate: %s\n", msg);
    return usage_gen(msg ? stderr : stdout); /* no message: --help */
}

int so_gen_main(int argc, char **argv)
{
    so_gen_options o;
    so_gen_options_default(&o);
    const char *outp = "rules/generated.rules", *json = NULL;
    int mpi = 0, mpi_rank = 0; /* --mpi: rules/gen_mpi.h (shard per rank, merged at rank 0, which writes) */
    long long max_ops = o.max_ops, threads = o.threads, seed = (long long)o.seed;
    const char *shard = NULL;
    int no_verify = 0, no_float = 0;
    const so_arg args[] = {
        SO_ARG_INT_("--max-ops", &max_ops, 1, GEN_MAX_OPS, NULL),
        SO_ARG_STR_("-o", &outp),
        SO_ARG_INT_("--threads", &threads, 1, 256, NULL),
        SO_ARG_INT_("--seed", &seed, 0, INT64_MAX, NULL),
        SO_ARG_STR_("--shard", &shard),
        SO_ARG_STR_("--json", &json),
        SO_ARG_DOUBLE_("--timeout", &o.timeout_s, 1e-9, 1e9, "--timeout needs seconds > 0"),
        SO_ARG_STR_("--failed", &o.failed_path),
        SO_ARG_FLAG_("--no-verify", &no_verify),
        SO_ARG_FLAG_("--no-float", &no_float),
        SO_ARG_FLAG_("--proof-times", &o.proof_times),
        SO_ARG_FLAG_("-q", &o.quiet),
        SO_ARG_FLAG_("--resume", &o.resume),
        SO_ARG_FLAG_("--mpi", &mpi),
        SO_ARG_END,
    };
    int n_pos, rc_args = so_args_parse(args, argc, argv, NULL, 0, &n_pos, gen_usage);
    if (rc_args) return rc_args < 0 ? 0 : rc_args; /* -1: --help */
    o.max_ops = (int)max_ops;
    o.threads = (int)threads;
    o.seed = (uint64_t)seed;
    if (no_verify) o.verify = 0;
    if (no_float) o.float_test = 0;
    if (shard) {
        int si, sn;
        char c;
        if (sscanf(shard, "%d/%d%c", &si, &sn, &c) != 2 || sn < 1 || si < 0 || si >= sn) return gen_usage("--shard needs I/N with 0 <= I < N");
        o.shard_i = si;
        o.shard_n = sn;
    }
    char ckpt_path[4096 + 8];
    snprintf(ckpt_path, sizeof ckpt_path, "%s.ckpt", outp);
    o.ckpt_path = ckpt_path;
    so_ruleset rs;
    so_gen_stats st;
    if ((mpi ? so_gen_mpi_run(&o, &rs, &st, &mpi_rank) : so_gen_run(&o, &rs, &st)) != SO_OK) {
        fprintf(stderr, "superopt generate: %s\n", so_error());
        return 1;
    }
    if (mpi_rank != 0) return so_gen_mpi_finish(0);
    int rc = 0;
    if (so_rules_save(&rs, outp) != SO_OK) {
        fprintf(stderr, "superopt generate: %s\n", so_error());
        rc = 1;
    } else {
        remove(ckpt_path); /* done: the checkpoint is no longer needed (absent if never written) */
    }
    if (mpi) rc = so_gen_mpi_finish(rc);
    fprintf(stderr,
            "generate: %lld graphs, %lld candidates, %lld after trivial, %lld after renaming, %lld after common subgraph"
            ", %lld generalised, %lld after float re-test, %lld proved, %lld after subsumption = %lld rules -> %s (%.1f s)\n",
            (long long)st.graphs, (long long)st.candidates, (long long)st.after_trivial, (long long)st.after_renaming,
            (long long)st.after_common_subgraph, (long long)st.after_generalise, (long long)st.after_float,
            (long long)st.proved, (long long)st.after_subsumed, (long long)st.rules, outp, st.seconds);
    if (json) {
        so_atomic ja;
        if (so_atomic_open(&ja, json, "w") != SO_OK) {
            fprintf(stderr, "superopt generate: %s\n", so_error());
            rc = 1;
        } else {
            FILE *f = ja.f;
            fprintf(f,
                    "{\"graphs\": %lld, \"kept\": %lld, \"bucketed\": %lld, \"classes\": %lld, \"collisions\": %lld, \"candidates\": %lld, "
                    "\"after_trivial\": %lld, \"after_renaming\": %lld, \"after_common_subgraph\": %lld, "
                    "\"in_shard\": %lld, \"after_generalise\": %lld, \"after_subsumed\": %lld, \"after_float\": %lld, \"proved\": %lld, "
                    "\"rules\": %lld, \"enum_seconds\": %.3f, \"bucket_seconds\": %.3f, \"float_seconds\": %.3f, "
                    "\"verify_seconds\": %.3f, \"seconds\": %.3f}\n",
                    (long long)st.graphs, (long long)st.kept, (long long)st.bucketed, (long long)st.classes, (long long)st.collisions,
                    (long long)st.candidates, (long long)st.after_trivial, (long long)st.after_renaming,
                    (long long)st.after_common_subgraph, (long long)st.in_shard, (long long)st.after_generalise, (long long)st.after_subsumed,
                    (long long)st.after_float, (long long)st.proved, (long long)st.rules, st.enum_seconds,
                    st.bucket_seconds, st.float_seconds, st.verify_seconds, st.seconds);
            if (so_atomic_commit(&ja, json, 1) != SO_OK) {
                fprintf(stderr, "superopt generate: %s\n", so_error());
                rc = 1;
            }
        }
    }
    so_ruleset_free(&rs);
    return rc;
}


static int usage_rules(FILE *f)
{
    fprintf(f, "usage: superopt rules merge A.rules B.rules ... -o OUT.rules\n"
               "  Merges the shards of a generated rule set (superopt generate --shard) into OUT.rules.\n");
    return f == stdout ? 0 : 2; /* stdout: --help */
}

int so_rules_main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return usage_rules(stdout);
    if (argc < 2 || strcmp(argv[1], "merge") != 0) return usage_rules(stderr);
    const char *outp = NULL;
    so_ruleset all;
    memset(&all, 0, sizeof all);
    int n_files = 0, rc = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "-o")) {
            if (i + 1 >= argc) return usage_rules(stderr);
            outp = argv[++i];
            continue;
        }
        so_ruleset rs;
        if (so_rules_load(argv[i], &rs) != SO_OK) {
            fprintf(stderr, "superopt rules merge: %s\n", so_error());
            so_ruleset_free(&all);
            return 1;
        }
        if (n_files++ == 0) memcpy(all.header, rs.header, sizeof all.header);
        for (int k = 0; k < rs.n_rules; k++) so_ruleset_push(&all, &rs.rules[k]);
        so_ruleset_free(&rs);
    }
    if (!outp || n_files == 0) {
        so_ruleset_free(&all);
        return usage_rules(stderr);
    }
    so_gen_merge(&all);
    int32_t w = all.n_rules;
    if (so_rules_save(&all, outp) != SO_OK) {
        fprintf(stderr, "superopt rules merge: %s\n", so_error());
        rc = 1;
    } else {
        fprintf(stderr, "rules merge: %d files, %d rules -> %s\n", n_files, (int)w, outp);
    }
    so_ruleset_free(&all);
    return rc;
}
