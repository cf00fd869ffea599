/* strmap.h - string -> int32 map over the core hash table (keys are borrowed, not copied). */
#ifndef SO_STRMAP_H
#define SO_STRMAP_H

#include <stddef.h>
#include <stdint.h>

#include "hmap.h"

/* Zero-initialise (so_strmap m = {0};) before use; free with so_strmap_free. The keys are
   borrowed: they must outlive the map. */
typedef struct so_strmap {
    const char **keys; /* in insertion order */
    int32_t *vals;
    size_t cap, n;
    so_hmap index;     /* XXH3 of the key -> its position in keys (several per hash) */
} so_strmap;

/* Value of key k, or -1 if absent. */
int32_t so_strmap_get(const so_strmap *m, const char *k);
/* Inserts or overwrites k -> v (aborts when memory runs out, as so_xmalloc). */
void so_strmap_put(so_strmap *m, const char *k, int32_t v);
/* Frees the table (not the keys) and zeroes m. */
void so_strmap_free(so_strmap *m);

#endif
