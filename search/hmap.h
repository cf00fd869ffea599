/* hmap.h - open-addressing hash map from 64-bit keys (already hashed) to 64-bit values. */
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

#endif
