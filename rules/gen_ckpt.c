/* gen_ckpt.c - generator checkpoint of the verification stage: write, load and resume proofs. */
#include "gen_priv.h"
#include "../verifier/proofs.h"
#include "../verifier/verify.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

/* ---------------- checkpoint of the verification stage ----------------
   Enumeration, bucketing, generalisation and the float re-test are deterministic and take a
   minority of the time; the proofs dominate. The checkpoint records, for the candidate list
   that reaches the prover (identified by an XXH3 of its printed rules), the proof status of
   every rule proved so far, plus the options and an XXH3 of the running binary. */

typedef struct ckpt {
    const char *path;
    char opts[192];
    uint64_t bin, cand;
    int32_t n;
    char *st;           /* per rule: '.' pending, 'p' proved, 'f' failed */
    double last, interval;
    int writes, stop_after;
} ckpt;

static so_status ckpt_write(ckpt *c)
{
    so_atomic a;
    if (so_atomic_open(&a, c->path, "w") != SO_OK) return SO_ERR;
    fprintf(a.f, "superopt-generate-checkpoint 1\n%s\nbinary %016llx\ncandidates %ld %016llx\n", c->opts,
            (unsigned long long)c->bin, (long)c->n, (unsigned long long)c->cand);
    fwrite(c->st, 1, (size_t)c->n, a.f);
    fputc('\n', a.f);
    if (so_atomic_commit(&a, c->path, 1) != SO_OK) return SO_ERR;
    c->last = so_now();
    if (c->stop_after > 0 && ++c->writes >= c->stop_after) _exit(137); /* test hook: die mid-run */
    return SO_OK;
}

/* Loads c->path into c->st if it exists. Returns SO_ERR with a one-line message if it belongs
   to other options, another binary or another candidate list. */
static so_status ckpt_load(ckpt *c)
{
    FILE *f = fopen(c->path, "r");
    if (!f) return SO_OK; /* nothing to resume */
    so_status rc = SO_ERR;
    char l1[64], l2[256], l3[64], l4[96];
    char *buf = so_xmalloc((size_t)c->n + 2);
    char want3[64], want4[96];
    snprintf(want3, sizeof want3, "binary %016llx\n", (unsigned long long)c->bin);
    snprintf(want4, sizeof want4, "candidates %ld %016llx\n", (long)c->n, (unsigned long long)c->cand);
    if (!fgets(l1, sizeof l1, f) || strcmp(l1, "superopt-generate-checkpoint 1\n") || !fgets(l2, sizeof l2, f) ||
        !fgets(l3, sizeof l3, f) || !fgets(l4, sizeof l4, f)) {
        so_errorf("%s: not a generate checkpoint (delete it or run without --resume)", c->path);
        goto done;
    }
    l2[strcspn(l2, "\n")] = 0;
    if (strcmp(l2, c->opts)) {
        so_errorf("%s: checkpoint of other options (%s, now %s); delete it or run without --resume", c->path, l2,
                  c->opts);
        goto done;
    }
    if (strcmp(l3, want3)) {
        so_errorf("%s: checkpoint written by another superopt binary; delete it or run without --resume", c->path);
        goto done;
    }
    if (strcmp(l4, want4)) {
        so_errorf("%s: checkpoint of another candidate list; delete it or run without --resume", c->path);
        goto done;
    }
    if (fread(buf, 1, (size_t)c->n + 1, f) != (size_t)c->n + 1 || buf[c->n] != '\n') {
        so_errorf("%s: truncated checkpoint; delete it or run without --resume", c->path);
        goto done;
    }
    for (int32_t k = 0; k < c->n; k++)
        if (buf[k] != '.' && buf[k] != 'p' && buf[k] != 'f') {
            so_errorf("%s: corrupt checkpoint; delete it or run without --resume", c->path);
            goto done;
        }
    memcpy(c->st, buf, (size_t)c->n);
    rc = SO_OK;
done:
    free(buf);
    fclose(f);
    return rc;
}

/* Proves rs in chunks, checkpointing after a chunk when the interval has passed; rules
   already decided by a loaded checkpoint are not proved again. */
so_status genp_verify_ckpt(const so_gen_options *o, so_ruleset *rs, int threads, char ***why_out)
{
    ckpt c;
    memset(&c, 0, sizeof c);
    so_proof_cache pc;
    memset(&pc, 0, sizeof pc);
    c.path = o->ckpt_path;
    c.n = rs->n_rules;
    snprintf(c.opts, sizeof c.opts, "options max-ops=%d seed=%llu shard=%d/%d float=%d timeout=%g", o->max_ops,
             (unsigned long long)o->seed, o->shard_i, o->shard_n, o->float_test, o->timeout_s);
    c.bin = so_exe_hash();
    XXH3_state_t *hs = XXH3_createState();
    XXH3_64bits_reset(hs);
    for (int32_t k = 0; k < rs->n_rules; k++) {
        char *t = so_rule_format(&rs->rules[k]);
        XXH3_64bits_update(hs, t, strlen(t) + 1);
        free(t);
    }
    c.cand = XXH3_64bits_digest(hs);
    XXH3_freeState(hs);
    c.st = so_xmalloc((size_t)c.n + 1);
    memset(c.st, '.', (size_t)c.n);
    /* test hooks (tests/gen_resume.sh): a value that is not a number is an error, not a silent 0 */
    const char *e = getenv("SO_GEN_CKPT_INTERVAL"), *e2 = getenv("SO_GEN_CKPT_STOP_AFTER");
    long long stop = 0;
    c.interval = 2.0;
    char **why = why_out ? calloc((size_t)(c.n ? c.n : 1), sizeof *why) : NULL;
    so_status rc = SO_ERR;
    if (e && so_parse_double(e, 0, 1e9, &c.interval)) {
        so_errorf("SO_GEN_CKPT_INTERVAL=%s: expected seconds >= 0", e);
        goto done;
    }
    if (e2 && so_parse_int(e2, 0, INT32_MAX, &stop)) {
        so_errorf("SO_GEN_CKPT_STOP_AFTER=%s: expected an integer >= 0", e2);
        goto done;
    }
    c.stop_after = (int)stop;
    /* proofs bound to content (verifier/proofs.h): every rule proved here goes to this build's proof
       cache, saved before each checkpoint write; a checkpoint's 'p' counts only if the cache holds
       that rule's proof, so an edited checkpoint is refused. Without a cache (no $HOME) the
       checkpoint's 'p' rules are proved again; its 'f' rules always are. */
    so_proof_cache_open(&pc, NULL);
    if (o->resume && ckpt_load(&c) != SO_OK) goto done;
    for (int32_t k = 0; k < c.n; k++) {
        /* a 'f' is never trusted: nothing binds a failure to content, so an edited checkpoint could
           drop a true rule silently; failed candidates are verified again (they are few) */
        if (c.st[k] == 'f') c.st[k] = '.';
        if (c.st[k] != 'p') continue;
        if (!pc.path) {
            c.st[k] = '.';
            continue;
        }
        if (!so_proof_cache_has(&pc, so_proof_digest_of(&rs->rules[k]))) {
            so_errorf("%s: checkpoint marks candidate %d proved, but this build never proved it (no entry in its proof cache %s): "
                      "an edited checkpoint or a deleted cache; delete the checkpoint or run without --resume",
                      c.path, (int)k + 1, pc.path);
            goto done;
        }
    }
    c.last = so_now();
    /* each so_verify_ruleset call builds a fresh Z3 context per thread (all axioms asserted,
       ~30 ms): chunks of n/16 rules, 32..512, amortise that and still checkpoint often */
    const int32_t chunk = c.n / 16 < 32 ? 32 : c.n / 16 > 512 ? 512 : c.n / 16;
    for (int32_t k = 0; k < c.n;) {
        /* next run of pending rules, at most chunk long */
        while (k < c.n && c.st[k] != '.') {
            rs->rules[k].status = c.st[k] == 'p' ? SO_RULE_PROVED : SO_RULE_FAILED;
            rs->rules[k].proof_seconds = -1;
            if (why && !why[k]) why[k] = so_xstrdup(c.st[k] == 'p' ? "proved (checkpoint)" : "failed (checkpoint)");
            k++;
        }
        int32_t j = k;
        while (j < c.n && j - k < chunk && c.st[j] == '.') j++;
        if (j == k) break;
        so_ruleset view = *rs;
        view.rules = rs->rules + k;
        view.n_rules = j - k;
        view.cap_rules = j - k;
        so_verify_summary vs;
        char **w = NULL;
        if (so_verify_ruleset(&view, threads, o->timeout_s, &vs, why ? &w : NULL) != SO_OK) goto done;
        for (int32_t i = k; i < j; i++) {
            c.st[i] = rs->rules[i].status == SO_RULE_PROVED ? 'p' : 'f';
            if (c.st[i] == 'p') so_proof_cache_add(&pc, so_proof_digest_of(&rs->rules[i]));
            if (why) why[i] = w[i - k];
        }
        free(w);
        k = j;
        if (c.path && so_now() - c.last >= c.interval && k < c.n) {
            /* the proofs first: a checkpoint never holds a 'p' its cache lacks (a cache that cannot be
               written only means a resume refuses the checkpoint) */
            (void)so_proof_cache_save(&pc);
            if (ckpt_write(&c) != SO_OK) goto done;
        }
    }
    (void)so_proof_cache_save(&pc); /* so that optimize --rules OUT finds these proofs */
    rc = SO_OK;
done:
    so_proof_cache_close(&pc);
    free(c.st);
    if (why_out && rc == SO_OK) *why_out = why;
    else if (why) {
        for (int32_t k = 0; k < c.n; k++) free(why[k]);
        free(why);
    }
    return rc;
}
