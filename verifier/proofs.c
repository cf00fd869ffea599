/* proofs.c - proofs bound to content: rule digests, the on-disk proof cache of this build, and binding a loaded rule set's proof status to what this build proves. */
#include "proofs.h"

#include "axioms.h"
#include "verify.h"

#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <z3.h>

/* ---------------- digests ---------------- */

static char key_text[256]; /* "axioms <16 hex> z3 <version>" */
static uint64_t axioms_hash;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void upd_str(XXH3_state_t *s, const char *t)
{
    if (!t) t = "";
    XXH3_64bits_update(s, t, strlen(t) + 1);
}

static void key_init(void)
{
    const ax_parsed *ax;
    int n = so_axioms_get(&ax);
    XXH3_state_t *s = XXH3_createState();
    XXH3_64bits_reset(s);
    for (int k = 0; k < n; k++) {
        const so_axiom *a = ax[k].ax;
        upd_str(s, a->name);
        upd_str(s, a->vars);
        upd_str(s, a->params);
        upd_str(s, a->guard);
        upd_str(s, a->lhs);
        upd_str(s, a->rhs);
        XXH3_64bits_update(s, &a->flags, sizeof a->flags);
    }
    axioms_hash = XXH3_64bits_digest(s);
    XXH3_freeState(s);
    snprintf(key_text, sizeof key_text, "axioms %016" PRIx64 " z3 %s", axioms_hash, Z3_get_full_version());
}

so_proof_digest so_proof_digest_of(const so_rule *r)
{
    pthread_once(&key_once, key_init);
    char *t = so_rule_format_canon(r);
    XXH3_state_t *s = XXH3_createState();
    XXH3_128bits_reset(s);
    XXH3_128bits_update(s, t, strlen(t));
    XXH3_128bits_update(s, key_text, strlen(key_text));
    XXH128_hash_t h = XXH3_128bits_digest(s);
    XXH3_freeState(s);
    free(t);
    return (so_proof_digest){h.high64, h.low64};
}

so_proof_digest so_proof_file_digest(const so_ruleset *rs)
{
    pthread_once(&key_once, key_init);
    XXH3_state_t *s = XXH3_createState();
    XXH3_128bits_reset(s);
    XXH3_128bits_update(s, "file", 4);
    XXH3_128bits_update(s, rs->text_hash, sizeof rs->text_hash);
    XXH3_128bits_update(s, key_text, strlen(key_text));
    XXH128_hash_t h = XXH3_128bits_digest(s);
    XXH3_freeState(s);
    return (so_proof_digest){h.high64, h.low64};
}

static int dcmp(const void *a, const void *b)
{
    const so_proof_digest *x = a, *y = b;
    if (x->hi != y->hi) return x->hi < y->hi ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* ---------------- the cache ---------------- */

static void header(char *buf, size_t n)
{
    pthread_once(&key_once, key_init);
    snprintf(buf, n, "# superopt proof cache 1 exe %016" PRIx64 " %s\n", so_exe_hash(), key_text);
}

void so_proof_cache_open(so_proof_cache *c, const char *cache_dir)
{
    memset(c, 0, sizeof *c);
    char dir[4096];
    if (!so_cache_dir(cache_dir, dir, sizeof dir)) return;
    char h[400];
    header(h, sizeof h);
    char path[4200];
    snprintf(path, sizeof path, "%s/proofs-%016" PRIx64 ".txt", dir, XXH3_64bits(h, strlen(h)));
    c->path = so_xstrdup(path);
    struct stat sb;
    if (stat(path, &sb) != 0) return;
    FILE *f = so_open_regular(path, NULL);
    if (!f) return; /* a FIFO, a device, unreadable: an empty cache (replaced on save) */
    char line[400];
    if (!fgets(line, sizeof line, f) || strcmp(line, h) != 0) { /* not this build's */
        fclose(f);
        return;
    }
    while (fgets(line, sizeof line, f)) {
        so_proof_digest d;
        char tail;
        if (sscanf(line, "%16" SCNx64 "%16" SCNx64 "%c", &d.hi, &d.lo, &tail) != 3 || tail != '\n' || strlen(line) != 33) continue;
        if (c->n == c->cap) {
            c->cap = c->cap ? 2 * c->cap : 1024;
            c->d = so_xrealloc(c->d, c->cap * sizeof *c->d);
        }
        c->d[c->n++] = d;
    }
    fclose(f);
    if (c->n > 1) qsort(c->d, c->n, sizeof *c->d, dcmp);
}

int so_proof_cache_has(const so_proof_cache *c, so_proof_digest d)
{
    return c->n && bsearch(&d, c->d, c->n, sizeof *c->d, dcmp) != NULL;
}

void so_proof_cache_add(so_proof_cache *c, so_proof_digest d)
{
    if (!c->path || so_proof_cache_has(c, d)) return;
    if (c->n_add == c->cap_add) {
        c->cap_add = c->cap_add ? 2 * c->cap_add : 256;
        c->add = so_xrealloc(c->add, c->cap_add * sizeof *c->add);
    }
    c->add[c->n_add++] = d;
}

so_status so_proof_cache_save(so_proof_cache *c)
{
    if (!c->path || !c->n_add) return SO_OK;
    /* the union with what another process may have written since we loaded */
    so_proof_cache disk;
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", c->path);
    char *sl = strrchr(dir, '/');
    if (sl) *sl = 0;
    so_proof_cache_open(&disk, dir);
    size_t n = c->n + c->n_add + disk.n;
    so_proof_digest *all = so_xmalloc((n + 1) * sizeof *all);
    if (c->n) memcpy(all, c->d, c->n * sizeof *all); /* (memcpy from NULL is undefined, even of 0 bytes) */
    memcpy(all + c->n, c->add, c->n_add * sizeof *all);
    if (disk.n) memcpy(all + c->n + c->n_add, disk.d, disk.n * sizeof *all);
    so_proof_cache_close(&disk);
    qsort(all, n, sizeof *all, dcmp);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!m || dcmp(&all[m - 1], &all[i])) all[m++] = all[i];
    so_status rc = SO_ERR;
    if (so_mkdir_p(dir) != 0) {
        so_errorf("%s: cannot create the proof cache folder: %s", dir, strerror(errno));
    } else {
        so_atomic a;
        if (so_atomic_open(&a, c->path, "w") == SO_OK) {
            char h[400];
            header(h, sizeof h);
            fputs(h, a.f);
            for (size_t i = 0; i < m; i++) fprintf(a.f, "%016" PRIx64 "%016" PRIx64 "\n", all[i].hi, all[i].lo);
            rc = so_atomic_commit(&a, c->path, 1);
        }
    }
    if (rc == SO_OK) {
        free(c->d);
        c->d = all, c->n = m, c->cap = n + 1;
        c->n_add = 0;
    } else
        free(all);
    return rc;
}

void so_proof_cache_close(so_proof_cache *c)
{
    free(c->path);
    free(c->d);
    free(c->add);
    memset(c, 0, sizeof *c);
}

int so_proof_store_dir(char *buf, size_t n)
{
    char self[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0) return 0;
    self[k] = 0;
    char *sl = strrchr(self, '/');
    if (!sl) return 0;
    *sl = 0;
    struct stat sb;
    snprintf(buf, n, "%s/../share/superopt/proofs", self);
    if (stat(buf, &sb) == 0 && S_ISDIR(sb.st_mode)) return 1;
    snprintf(buf, n, "%s/proofs", self);
    return stat(buf, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* ---------------- binding a rule set ---------------- */

so_status so_proofs_bind(so_ruleset *rs, const char *path, const so_proof_opts *o, so_proof_stats *st)
{
    double t_bind = so_now();
    memset(st, 0, sizeof *st);
    st->rules = rs->n_rules;
    so_proof_cache pc, ps; /* ps: the build's proof store, read only (never added to, never saved) */
    so_proof_cache_open(&pc, o->cache_dir);
    if (pc.path) snprintf(st->cache_path, sizeof st->cache_path, "%s", pc.path);
    char sdir[4096];
    memset(&ps, 0, sizeof ps);
    if (so_proof_store_dir(sdir, sizeof sdir)) {
        so_proof_cache_open(&ps, sdir);
        if (ps.n) snprintf(st->store_path, sizeof st->store_path, "%s", ps.path);
    }
    so_proof_digest *dg = so_xmalloc(((size_t)rs->n_rules + 1) * sizeof *dg);
    int32_t *todo = so_xmalloc(((size_t)rs->n_rules + 1) * sizeof *todo);
    int32_t nt = 0;
    /* a whole parsed text all of whose rules this build proved: one entry keyed by the text's hash,
       so that a second run does not format every rule (~20 us each, 50 ms for the shipped set) */
    so_proof_digest fd = {0, 0};
    if (rs->has_text_hash) {
        fd = so_proof_file_digest(rs);
        const int in_cache = so_proof_cache_has(&pc, fd);
        if (in_cache || so_proof_cache_has(&ps, fd)) {
            for (int32_t i = 0; i < rs->n_rules; i++) rs->rules[i].status = SO_RULE_PROVED;
            st->cached = rs->n_rules;
            st->from_store = in_cache ? 0 : rs->n_rules;
            free(dg);
            free(todo);
            so_proof_cache_close(&pc);
            so_proof_cache_close(&ps);
            st->bind_seconds = so_now() - t_bind;
            return SO_OK;
        }
    }
    for (int32_t i = 0; i < rs->n_rules; i++) {
        dg[i] = so_proof_digest_of(&rs->rules[i]);
        if (so_proof_cache_has(&pc, dg[i])) st->cached++;
        else if (so_proof_cache_has(&ps, dg[i])) st->cached++, st->from_store++;
        else todo[nt++] = i;
    }
    so_status rc = SO_OK;
    char **why = NULL;
    so_ruleset sub = {0};
    int32_t *tagged = so_xcalloc((size_t)nt + 1, sizeof *tagged);
    if (nt) { /* prove the rest on a copy (the prover overwrites status) */
        sub.rules = so_xmalloc((size_t)nt * sizeof *sub.rules);
        sub.n_rules = sub.cap_rules = nt;
        for (int32_t k = 0; k < nt; k++) {
            sub.rules[k] = rs->rules[todo[k]];
            tagged[k] = sub.rules[k].status;
        }
        so_verify_summary sum;
        double t0 = so_now();
        rc = so_verify_ruleset(&sub, o->threads, o->timeout_s > 0 ? o->timeout_s : 10.0, &sum, &why);
        st->seconds = so_now() - t0;
    }
    for (int32_t i = 0; i < rs->n_rules; i++) rs->rules[i].status = SO_RULE_PROVED; /* cached ones; the rest below */
    for (int32_t k = 0; k < nt && rc == SO_OK; k++) {
        so_rule *r = &rs->rules[todo[k]];
        if (sub.rules[k].status == SO_RULE_PROVED) {
            st->proved_now++;
            so_proof_cache_add(&pc, dg[todo[k]]);
            continue;
        }
        r->status = SO_RULE_UNVERIFIED;
        if (!o->allow_unverified) {
            rc = tagged[k] == SO_RULE_PROVED
                     ? so_errorf("%s:%d: rule %d is tagged 'proof proved' but this build's verifier does not prove it (%s); refused before the search",
                                 path, (int)r->line, (int)r->id, why[k])
                     : so_errorf("%s:%d: rule %d is not proved by this build's verifier (%s); refusing an unproved rule set (pass --allow-unverified to use it anyway)",
                                 path, (int)r->line, (int)r->id, why[k]);
            break;
        }
        st->unproved++;
        st->forged += tagged[k] == SO_RULE_PROVED;
    }
    if (rc == SO_OK && !st->unproved && rs->has_text_hash) so_proof_cache_add(&pc, fd);
    /* what was proved is kept even when the set is refused (the refusal's message kept too) */
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", rc == SO_OK ? "" : so_error());
    if (so_proof_cache_save(&pc) != SO_OK) st->cache_path[0] = 0;
    if (rc != SO_OK) so_errorf("%s", msg);
    if (why)
        for (int32_t k = 0; k < nt; k++) free(why[k]);
    free(why);
    free(sub.rules);
    free(tagged);
    free(todo);
    free(dg);
    so_proof_cache_close(&pc);
    so_proof_cache_close(&ps);
    st->bind_seconds = so_now() - t_bind;
    return rc;
}
