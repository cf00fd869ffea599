/* gen_mpi.c - `superopt generate --mpi`: shard RANK/SIZE per MPI rank, rules sent to rank 0 and merged there. */
#include "gen_mpi.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_LEN = 1, TAG_RULES = 2, TAG_STATS = 3 };

static int g_rank, g_size;
static char g_ckpt[4096 + 64]; /* this rank's checkpoint ("" if none) */

/* One line naming the rank, then every rank is ended (mpirun reports the abort and exits non-zero). */
static void die(const char *what, const char *msg)
{
    fprintf(stderr, "superopt generate: rank %d of %d: %s%s\n", g_rank, g_size, what, msg);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1); /* not reached */
}

static void check(int mrc, const char *what)
{
    if (mrc == MPI_SUCCESS) return;
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(mrc, s, &n) != MPI_SUCCESS) snprintf(s, sizeof s, "error %d", mrc);
    die(what, s);
}

/* The rules in the rule-file text format (so_rule_format, one blank line apart), malloc'd. */
static char *format_rules(const so_ruleset *rs, size_t *len)
{
    size_t n = 0, cap = 4096;
    char *t = so_xmalloc(cap);
    for (int32_t i = 0; i < rs->n_rules; i++) {
        char *s = so_rule_format(&rs->rules[i]);
        size_t k = strlen(s);
        while (n + k + 2 > cap) {
            cap *= 2;
            t = so_xrealloc(t, cap);
        }
        memcpy(t + n, s, k);
        n += k;
        t[n++] = '\n';
        free(s);
    }
    t[n] = 0;
    *len = n;
    return t;
}

/* Adds the rules of one shard's text to all (rank r for messages). */
static void add_shard(so_ruleset *all, const char *text, size_t len, int r)
{
    char name[64];
    snprintf(name, sizeof name, "rules of rank %d", r);
    so_ruleset rs;
    if (so_rules_parse(name, text, len, &rs) != SO_OK) die("", so_error());
    for (int32_t k = 0; k < rs.n_rules; k++) so_ruleset_push(all, &rs.rules[k]);
    so_ruleset_free(&rs);
}

/* Counts add up over the shards (each enumerates every graph: graphs is rank 0's); stage times
   are the slowest rank's. */
static void add_stats(so_gen_stats *a, const so_gen_stats *b)
{
    a->kept += b->kept;
    a->bucketed += b->bucketed;
    a->classes += b->classes;
    a->collisions += b->collisions;
    a->candidates += b->candidates;
    a->after_trivial += b->after_trivial;
    a->after_renaming += b->after_renaming;
    a->after_common_subgraph += b->after_common_subgraph;
    a->in_shard += b->in_shard;
    a->after_generalise += b->after_generalise;
    a->after_float += b->after_float;
    a->proved += b->proved;
#define MAXT(f) a->f = a->f > b->f ? a->f : b->f
    MAXT(enum_seconds);
    MAXT(bucket_seconds);
    MAXT(float_seconds);
    MAXT(verify_seconds);
#undef MAXT
}

so_status so_gen_mpi_run(const so_gen_options *o, so_ruleset *out, so_gen_stats *st, int *rank)
{
    memset(out, 0, sizeof *out);
    memset(st, 0, sizeof *st);
    *rank = 0;
    if (o->shard_n > 1) {
        so_errorf("--mpi shards by rank: it cannot be combined with --shard");
        return SO_ERR;
    }
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
        so_errorf("--mpi: MPI_Init failed");
        return SO_ERR;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    *rank = g_rank;
    double t0 = so_now();

    so_gen_options lo = *o;
    lo.shard_i = g_rank;
    lo.shard_n = g_size;
    g_ckpt[0] = 0;
    if (o->ckpt_path) {
        snprintf(g_ckpt, sizeof g_ckpt, "%s.%dof%d", o->ckpt_path, g_rank, g_size);
        lo.ckpt_path = g_ckpt;
    }
    char failed[4096 + 64];
    if (o->failed_path && g_size > 1) {
        snprintf(failed, sizeof failed, "%s.%dof%d", o->failed_path, g_rank, g_size);
        lo.failed_path = failed;
    }
    if (g_rank != 0) lo.quiet = 1; /* one progress line: rank 0's */
    so_ruleset rs;
    so_gen_stats ls;
    if (so_gen_run(&lo, &rs, &ls) != SO_OK) die("", so_error());
    size_t len;
    char *text = format_rules(&rs, &len);
    if (len > INT_MAX) die("", "this shard's rules exceed 2 GB of text: run with more ranks");
    int n = (int)len;
    if (g_rank != 0) {
        check(MPI_Send(&n, 1, MPI_INT, 0, TAG_LEN, MPI_COMM_WORLD), "MPI_Send: ");
        check(MPI_Send(text, n, MPI_CHAR, 0, TAG_RULES, MPI_COMM_WORLD), "MPI_Send: ");
        check(MPI_Send(&ls, (int)sizeof ls, MPI_BYTE, 0, TAG_STATS, MPI_COMM_WORLD), "MPI_Send: ");
        free(text);
        so_ruleset_free(&rs);
        return SO_OK;
    }
    /* rank 0: its own shard, then every other rank's in rank order; merged as `rules merge` does */
    so_ruleset all;
    memset(&all, 0, sizeof all);
    memcpy(all.header, rs.header, sizeof all.header);
    add_shard(&all, text, len, 0);
    free(text);
    so_ruleset_free(&rs);
    *st = ls;
    for (int r = 1; r < g_size; r++) {
        int m = 0;
        check(MPI_Recv(&m, 1, MPI_INT, r, TAG_LEN, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv: ");
        if (m < 0) die("", "negative message length");
        char *buf = so_xmalloc((size_t)m + 1);
        check(MPI_Recv(buf, m, MPI_CHAR, r, TAG_RULES, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv: ");
        buf[m] = 0;
        add_shard(&all, buf, (size_t)m, r);
        free(buf);
        so_gen_stats rst;
        check(MPI_Recv(&rst, (int)sizeof rst, MPI_BYTE, r, TAG_STATS, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
              "MPI_Recv: ");
        add_stats(st, &rst);
    }
    so_gen_merge(&all);
    st->after_subsumed = all.n_rules;
    st->rules = all.n_rules;
    st->seconds = so_now() - t0;
    *out = all;
    return SO_OK;
}

int so_gen_mpi_finish(int rc)
{
    check(MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast: ");
    if (rc == 0 && g_ckpt[0]) remove(g_ckpt); /* OUT is written: this rank's checkpoint is done with */
    MPI_Finalize();
    return rc;
}
