/* strmap.c - string -> int32 map over the core hash table (so_hmap, keyed by XXH3 of the string; keys compared in full). */
#include "strmap.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common.h"

static uint64_t str_hash(const char *s) { return XXH3_64bits(s, strlen(s)); }

/* index of k in m->keys, or -1 */
static int64_t find(const so_strmap *m, const char *k, uint64_t h)
{
    uint64_t it = 0, v;
    while (so_hmap_next(&m->index, h, &it, &v))
        if (strcmp(m->keys[v], k) == 0) return (int64_t)v;
    return -1;
}

int32_t so_strmap_get(const so_strmap *m, const char *k)
{
    int64_t i = find(m, k, str_hash(k));
    return i < 0 ? -1 : m->vals[i];
}

void so_strmap_put(so_strmap *m, const char *k, int32_t v)
{
    uint64_t h = str_hash(k);
    int64_t i = find(m, k, h);
    if (i >= 0) {
        m->vals[i] = v;
        return;
    }
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 32;
        m->keys = so_xrealloc(m->keys, m->cap * sizeof *m->keys);
        m->vals = so_xrealloc(m->vals, m->cap * sizeof *m->vals);
    }
    m->keys[m->n] = k;
    m->vals[m->n] = v;
    so_hmap_add_multi(&m->index, h, m->n);
    m->n++;
}

void so_strmap_free(so_strmap *m)
{
    free(m->keys);
    free(m->vals);
    so_hmap_free(&m->index);
    memset(m, 0, sizeof *m);
}
