/* proofs.h - proofs bound to content: a rule counts as proved only when this build's verifier proved that exact rule (proof cache, load-time binding). */
#ifndef SO_PROOFS_H
#define SO_PROOFS_H

#include <stddef.h>
#include <stdint.h>

#include "../rules/rule.h"

/* A rule's proof digest: XXH3-128 of its canonical text (so_rule_format_canon: no number, no proof
   line, no provenance: exactly what the verifier reads), the axiom table (every field of every
   so_axiom) and the Z3 version string. Two rules with the same digest are the same proof
   obligation for the same axioms and solver. */
typedef struct so_proof_digest {
    uint64_t hi, lo;
} so_proof_digest;
so_proof_digest so_proof_digest_of(const so_rule *r);
/* The digest of a whole parsed rules text (rs->has_text_hash): XXH3-128 of "file", rs->text_hash,
   the axiom table and the Z3 version. In the cache it means "every rule of exactly this text was
   proved by this build" (written only when all were), so a second run need not format each rule. */
so_proof_digest so_proof_file_digest(const so_ruleset *rs);

/* The proof cache: the digests this build proved. One file per build,
   DIR/proofs-<XXH3 of (executable, axioms, Z3 version)>.txt, where DIR is the cache_dir given,
   else $XDG_CACHE_HOME/superopt, else $HOME/.cache/superopt (the folder of the cost cache);
   cache_dir "" disables it. Format: a header line naming the key, then one 32-hex digest per
   line, sorted. Written atomically (temporary + rename) as the union of what is on disk and what
   this process proved, so concurrent writers can only lose entries (re-proved later), never add
   a wrong one. A damaged or foreign file is ignored (and replaced). It is a local trust store,
   like the cost cache: whoever can write it can forge a proof, as with the binary itself. */
typedef struct so_proof_cache {
    char *path;            /* NULL: no cache */
    so_proof_digest *d;    /* sorted (loaded) */
    size_t n, cap;
    so_proof_digest *add;  /* proved by this process, not yet written */
    size_t n_add, cap_add;
} so_proof_cache;

/* Opens (loads) the cache; never fails (an unreadable cache is empty). */
void so_proof_cache_open(so_proof_cache *c, const char *cache_dir);
int so_proof_cache_has(const so_proof_cache *c, so_proof_digest d);
void so_proof_cache_add(so_proof_cache *c, so_proof_digest d);
/* Writes the union back if anything was added; SO_ERR (message names the file) if it cannot. */
so_status so_proof_cache_save(so_proof_cache *c);
void so_proof_cache_close(so_proof_cache *c);

/* The build's proof store: the proofs `make` proved for rules/default.rules with this executable, kept
   beside it (the same file format and key as the cache; read only here, never written at run time):
   <folder of the executable>/../share/superopt/proofs (installed) if that folder exists, else
   <folder of the executable>/proofs (build tree: build/proofs). Like the executable itself, only whoever
   can write that folder can change it, so a first run with an empty cache (a fresh HOME, another user,
   --cache-dir NEW) proves nothing the build proved. Its key holds the executable's hash, so a store left by
   another build is ignored. Fills buf and returns 1 if a candidate folder exists, else 0. */
int so_proof_store_dir(char *buf, size_t n);

typedef struct so_proof_opts {
    int allow_unverified;  /* rules this build cannot prove are kept (status UNVERIFIED) instead of refused */
    int threads;           /* provers (1..2) */
    double timeout_s;      /* per rule; <= 0: 10 s (generous: a loaded machine must not refuse a true rule) */
    const char *cache_dir; /* as so_proof_cache_open */
} so_proof_opts;

typedef struct so_proof_stats {
    int32_t rules;         /* in the set */
    int32_t cached;        /* proofs found in the cache or the build's proof store */
    int32_t from_store;    /* of those: found in the build's proof store (and not in the cache) */
    int32_t proved_now;    /* proved by this call (and added to the cache) */
    int32_t unproved;      /* kept unproved under allow_unverified */
    int32_t forged;        /* of those: tagged 'proof proved' in the file */
    double seconds;        /* spent proving */
    double bind_seconds;   /* the whole call: digests, cache lookups, proofs, cache write */
    char cache_path[4200]; /* "" if no cache */
    char store_path[4200]; /* the build's proof store file read, "" if none */
} so_proof_stats;

/* Binds the proof status of every rule of rs (read from `path`, for messages) to this build:
   a rule is PROVED iff its digest is in the proof cache, in the build's proof store
   (so_proof_store_dir; read even when cache_dir is "") or the verifier proves it now; the
   file's own `proof` line is only used to tell a forged tag from an honest one. Without
   allow_unverified the first rule that is not proved is refused: SO_ERR with
   "PATH:LINE: rule N is tagged 'proof proved' but this build's verifier does not prove it (why)"
   (or "... is not proved (why)" for a rule tagged failed/unverified). With allow_unverified such
   rules get status UNVERIFIED and are counted in st (after SO_ERR the statuses are unspecified). Newly proved digests are saved to the cache
   (a cache that cannot be written is not an error: st->cache_path is then ""). */
so_status so_proofs_bind(so_ruleset *rs, const char *path, const so_proof_opts *o, so_proof_stats *st);

#endif
