/* hmap.h - the hash table of the project: open addressing from 64-bit keys (already hashed) to 64-bit values; unique or multi-valued keys. */
#ifndef SO_HMAP_H
#define SO_HMAP_H

#include <stdint.h>

/* Zero-initialise (so_hmap h = {0};) before use; free with so_hmap_free. Key 0 is allowed
   (stored remapped internally). */
typedef struct so_hmap {
    uint64_t *keys, *vals;
    uint64_t cap, n;
} so_hmap;

/* Returns 1 and sets *val if key is present, else 0. val may be NULL. */
int so_hmap_get(const so_hmap *h, uint64_t key, uint64_t *val);
/* Inserts or overwrites. */
void so_hmap_put(so_hmap *h, uint64_t key, uint64_t val);
/* Inserts if absent; returns 1 if it was inserted, 0 if the key was already present. */
int so_hmap_add(so_hmap *h, uint64_t key, uint64_t val);
void so_hmap_free(so_hmap *h);
/* Room for n keys in all without growing (a map about to take many keys is sized once). */
void so_hmap_reserve(so_hmap *h, uint64_t n);

/* Multi-valued use, for tables keyed by a hash of something else (a string, a struct): a hash is
   a bucket, not an identity, so the caller stores an index under the hash and compares the real
   keys itself. so_hmap_add_multi stores (key, val) even when key is present; so_hmap_next walks
   the values stored under key: start with *iter = 0, returns 1 and sets *val per value, 0 at the
   end. Do not mix with so_hmap_put on the same keys. */
void so_hmap_add_multi(so_hmap *h, uint64_t key, uint64_t val);
int so_hmap_next(const so_hmap *h, uint64_t key, uint64_t *iter, uint64_t *val);

#endif
