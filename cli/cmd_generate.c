/* cmd_generate.c - the generate and rules merge commands: command lines over the rule generator (rules/gen.h). */
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

static int usage_gen(void)
{
    fprintf(stderr, "usage: superopt generate [--max-ops N] [-o FILE.rules] [--threads N] [--shard I/N] [--seed N]\n"
                    "                         [--json FILE] [--no-verify] [--no-float] [--proof-times] [--timeout S] [-q] [--resume] [--mpi]\n");
    return 2;
}

int so_gen_main(int argc, char **argv)
{
    so_gen_options o;
    so_gen_options_default(&o);
    const char *outp = "rules/generated.rules", *json = NULL;
    int mpi = 0, mpi_rank = 0; /* --mpi: rules/gen_mpi.h (shard per rank, merged at rank 0, which writes) */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long long v;
        if (!strcmp(a, "--max-ops") && i + 1 < argc) {
            if (so_parse_int(argv[++i], 1, GEN_MAX_OPS, &v)) return usage_gen();
            o.max_ops = (int)v;
        } else if (!strcmp(a, "-o") && i + 1 < argc) {
            outp = argv[++i];
        } else if (!strcmp(a, "--threads") && i + 1 < argc) {
            if (so_parse_int(argv[++i], 1, 256, &v)) return usage_gen();
            o.threads = (int)v;
        } else if (!strcmp(a, "--seed") && i + 1 < argc) {
            if (so_parse_int(argv[++i], 0, INT64_MAX, &v)) return usage_gen();
            o.seed = (uint64_t)v;
        } else if (!strcmp(a, "--shard") && i + 1 < argc) {
            int si, sn;
            char c;
            if (sscanf(argv[++i], "%d/%d%c", &si, &sn, &c) != 2 || sn < 1 || si < 0 || si >= sn) return usage_gen();
            o.shard_i = si;
            o.shard_n = sn;
        } else if (!strcmp(a, "--json") && i + 1 < argc) {
            json = argv[++i];
        } else if (!strcmp(a, "--timeout") && i + 1 < argc) {
            o.timeout_s = atof(argv[++i]);
            if (o.timeout_s <= 0) return usage_gen();
        } else if (!strcmp(a, "--failed") && i + 1 < argc) {
            o.failed_path = argv[++i];
        } else if (!strcmp(a, "--no-verify")) {
            o.verify = 0;
        } else if (!strcmp(a, "--no-float")) {
            o.float_test = 0;
        } else if (!strcmp(a, "--proof-times")) {
            o.proof_times = 1;
        } else if (!strcmp(a, "-q")) {
            o.quiet = 1;
        } else if (!strcmp(a, "--resume")) {
            o.resume = 1;
        } else if (!strcmp(a, "--mpi")) {
            mpi = 1;
        } else {
            return usage_gen();
        }
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


static int usage_rules(void)
{
    fprintf(stderr, "usage: superopt rules merge A.rules B.rules ... -o OUT.rules\n");
    return 2;
}

int so_rules_main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "merge") != 0) return usage_rules();
    const char *outp = NULL;
    so_ruleset all;
    memset(&all, 0, sizeof all);
    int n_files = 0, rc = 0;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "-o")) {
            if (i + 1 >= argc) return usage_rules();
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
        return usage_rules();
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
