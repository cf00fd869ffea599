/* strmap.c - string -> int32 map (open addressing, borrowed keys): names during ONNX import and export. */
#include "strmap.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common.h"

static size_t str_hash(const char *s) { return (size_t)XXH3_64bits(s, strlen(s)); }

int32_t so_strmap_get(const so_strmap *m, const char *k)
{
    if (!m->cap) return -1;
    size_t mask = m->cap - 1, h = str_hash(k) & mask;
    while (m->keys[h]) {
        if (strcmp(m->keys[h], k) == 0) return m->vals[h];
        h = (h + 1) & mask;
    }
    return -1;
}

void so_strmap_put(so_strmap *m, const char *k, int32_t v)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        const char **keys = so_xcalloc(cap, sizeof *keys);
        int32_t *vals = so_xcalloc(cap, sizeof *vals);
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->keys[i]) continue;
            size_t h = str_hash(m->keys[i]) & (cap - 1);
            while (keys[h]) h = (h + 1) & (cap - 1);
            keys[h] = m->keys[i];
            vals[h] = m->vals[i];
        }
        free(m->keys);
        free(m->vals);
        m->keys = keys;
        m->vals = vals;
        m->cap = cap;
    }
    size_t mask = m->cap - 1, h = str_hash(k) & mask;
    while (m->keys[h]) {
        if (strcmp(m->keys[h], k) == 0) {
            m->vals[h] = v;
            return;
        }
        h = (h + 1) & mask;
    }
    m->keys[h] = k;
    m->vals[h] = v;
    m->n++;
}

void so_strmap_free(so_strmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}
