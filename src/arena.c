/* arena.c - bump allocator built from a list of malloc'd blocks. */
#include "arena.h"
#include "common.h"

#include <stdlib.h>
#include <string.h>

struct so_arena_block {
    so_arena_block *next;
    size_t cap, used;
    _Alignas(16) unsigned char data[];
};

#define ARENA_BLOCK_MIN (64 * 1024)

void *so_arena_alloc(so_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    so_arena_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > ARENA_BLOCK_MIN ? n : ARENA_BLOCK_MIN;
        b = so_xmalloc(sizeof *b + cap);
        b->cap = cap;
        b->used = 0;
        /* keep the partially used head first if the new block is a one-off big one */
        if (a->head && n > ARENA_BLOCK_MIN) {
            b->next = a->head->next;
            a->head->next = b;
        } else {
            b->next = a->head;
            a->head = b;
        }
    }
    void *p = b->data + b->used;
    b->used += n;
    a->used_bytes += n;
    memset(p, 0, n);
    return p;
}

void *so_arena_dup(so_arena *a, const void *p, size_t n)
{
    if (!p) return NULL;
    void *q = so_arena_alloc(a, n);
    memcpy(q, p, n);
    return q;
}

char *so_arena_strdup(so_arena *a, const char *s)
{
    return s ? so_arena_dup(a, s, strlen(s) + 1) : NULL;
}

void so_arena_free(so_arena *a)
{
    so_arena_block *b = a->head;
    while (b) {
        so_arena_block *n = b->next;
        free(b);
        b = n;
    }
    a->head = NULL;
    a->used_bytes = 0;
}
