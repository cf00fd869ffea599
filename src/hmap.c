/* hmap.c - open-addressing hash map from 64-bit keys to 64-bit values (linear probing). */
#include "hmap.h"

#include <stdlib.h>

#include "common.h"

/* 0 marks an empty slot, so key 0 is stored as a fixed constant; a real key equal to that
   constant would alias key 0 (keys are hashes: probability 2^-64). */
#define ZERO_KEY 0x9e3779b97f4a7c15ULL

static uint64_t fix(uint64_t k) { return k ? k : ZERO_KEY; }

static uint64_t slot_of(uint64_t k, uint64_t mask)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k & mask;
}

/* Rehashes into cap slots (a power of two above the count). */
static void rehash(so_hmap *h, uint64_t cap)
{
    uint64_t *k = so_xcalloc(cap, sizeof *k), *v = so_xcalloc(cap, sizeof *v);
    for (uint64_t i = 0; i < h->cap; i++) {
        if (!h->keys[i]) continue;
        uint64_t s = slot_of(h->keys[i], cap - 1);
        while (k[s]) s = (s + 1) & (cap - 1);
        k[s] = h->keys[i];
        v[s] = h->vals[i];
    }
    free(h->keys);
    free(h->vals);
    h->keys = k;
    h->vals = v;
    h->cap = cap;
}

static void grow(so_hmap *h) { rehash(h, h->cap ? h->cap * 2 : 64); }

void so_hmap_reserve(so_hmap *h, uint64_t n)
{
    uint64_t cap = h->cap ? h->cap : 64;
    while ((n + 1) * 2 > cap) cap *= 2;
    if (cap > h->cap) rehash(h, cap);
}

int so_hmap_get(const so_hmap *h, uint64_t key, uint64_t *val)
{
    if (!h->cap) return 0;
    key = fix(key);
    uint64_t mask = h->cap - 1, s = slot_of(key, mask);
    while (h->keys[s]) {
        if (h->keys[s] == key) {
            if (val) *val = h->vals[s];
            return 1;
        }
        s = (s + 1) & mask;
    }
    return 0;
}

static int insert(so_hmap *h, uint64_t key, uint64_t val, int overwrite)
{
    if ((h->n + 1) * 2 > h->cap) grow(h);
    key = fix(key);
    uint64_t mask = h->cap - 1, s = slot_of(key, mask);
    while (h->keys[s]) {
        if (h->keys[s] == key) {
            if (overwrite) h->vals[s] = val;
            return 0;
        }
        s = (s + 1) & mask;
    }
    h->keys[s] = key;
    h->vals[s] = val;
    h->n++;
    return 1;
}

void so_hmap_put(so_hmap *h, uint64_t key, uint64_t val) { (void)insert(h, key, val, 1); }
int so_hmap_add(so_hmap *h, uint64_t key, uint64_t val) { return insert(h, key, val, 0); }

void so_hmap_add_multi(so_hmap *h, uint64_t key, uint64_t val)
{
    if ((h->n + 1) * 2 > h->cap) grow(h);
    key = fix(key);
    uint64_t mask = h->cap - 1, s = slot_of(key, mask);
    while (h->keys[s]) s = (s + 1) & mask;
    h->keys[s] = key;
    h->vals[s] = val;
    h->n++;
}

int so_hmap_next(const so_hmap *h, uint64_t key, uint64_t *iter, uint64_t *val)
{
    if (!h->cap) return 0;
    key = fix(key);
    uint64_t mask = h->cap - 1, home = slot_of(key, mask);
    /* *iter: offset from the key's home slot of the next slot to examine */
    for (uint64_t off = *iter; off < h->cap; off++) {
        uint64_t s = (home + off) & mask;
        if (!h->keys[s]) break;
        if (h->keys[s] == key) {
            *val = h->vals[s];
            *iter = off + 1;
            return 1;
        }
    }
    *iter = h->cap;
    return 0;
}

void so_hmap_free(so_hmap *h)
{
    free(h->keys);
    free(h->vals);
    h->keys = h->vals = NULL;
    h->cap = h->n = 0;
}
