/* arena.h - bump allocator: many small allocations, freed together in one call. */
#ifndef SO_ARENA_H
#define SO_ARENA_H

#include <stddef.h>

typedef struct so_arena_block so_arena_block;

/* Zero-initialise (so_arena a = {0};) before use. */
typedef struct so_arena {
    so_arena_block *head;
    size_t used_bytes; /* total handed out, for statistics */
} so_arena;

/* Returns zeroed memory aligned to 16 bytes, owned by the arena (aborts on OOM). */
void *so_arena_alloc(so_arena *a, size_t n);
/* Copies n bytes / a C string into the arena. NULL in, NULL out. */
void *so_arena_dup(so_arena *a, const void *p, size_t n);
char *so_arena_strdup(so_arena *a, const char *s);
/* Frees every block; the arena is empty and reusable afterwards. */
void so_arena_free(so_arena *a);

#endif
