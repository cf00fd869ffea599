/* enum_priv.h - private to the generator (rules/enum.c, gen_eval.c, gen_universe.c, gen*.c): residue arithmetic and graph tensor ids. */
#ifndef SO_ENUM_PRIV_H
#define SO_ENUM_PRIV_H

#include "enum.h"
#include <stdint.h>

/* ---------------- residue arithmetic ---------------- */

static inline uint32_t mred(uint64_t x)
{
    uint64_t r = (x & GEN_P) + (x >> 31);
    r = (r & GEN_P) + (r >> 31);
    return r >= GEN_P ? (uint32_t)(r - GEN_P) : (uint32_t)r;
}
/* Sum of raw products (each < 2^62) in 128 bits, reduced once: 2^64 = 4 (mod 2^31 - 1). */
typedef unsigned __int128 u128;
static inline uint32_t mred128(u128 x)
{
    uint64_t lo = (uint64_t)x, hi = (uint64_t)(x >> 64);
    return mred((uint64_t)mred(lo) + (uint64_t)mred(hi) * 4u);
}
static inline uint32_t madd(uint32_t a, uint32_t b) { return mred((uint64_t)a + b); }
static inline uint32_t msub(uint32_t a, uint32_t b) { return mred((uint64_t)a + GEN_P - b); }
static inline uint32_t mmul(uint32_t a, uint32_t b) { return mred((uint64_t)a * b); }
static inline uint32_t mpow(uint32_t a, uint64_t e)
{
    uint32_t r = 1;
    while (e) {
        if (e & 1) r = mmul(r, a);
        a = mmul(a, a);
        e >>= 1;
    }
    return r;
}
static inline uint32_t minv(uint32_t a) { return mpow(a, GEN_P - 2); }

/* Non-linear activations: fixed pseudo-random functions of the residue. */
static inline uint32_t nonlin(uint32_t x, uint64_t salt) { return mred(so_mix64((uint64_t)x * 0x9e3779b97f4a7c15ULL ^ salt)); } /* mred = % GEN_P */
#define SALT_RELU 0x52454c55ULL
#define SALT_SIGM 0x5349474dULL
#define SALT_TANH 0x54414e48ULL
#define SALT_BN   0x424e5351ULL

static inline int tid_node(const gen_universe *u, int t) { return t < u->n_vars ? -1 : (t - u->n_vars) / GEN_MAX_OUT; }
static inline int tid_slot(const gen_universe *u, int t) { return (t - u->n_vars) % GEN_MAX_OUT; }

/* gen_eval.c */
int enp_type_eq(const gen_type *a, const gen_type *b);
void enp_eval_inst(const gen_universe *u, int inst, const gen_type *it, uint32_t *const *iv, const gen_type *ot, uint32_t **ov);

/* gen_universe.c */
int enp_is_kernel_type(const gen_type *t);
int enp_arg_ok(int kind, int axis, int pos, const gen_type *t, int role);

/* enum.c */
int enp_split_cut(const gen_universe *u, const gen_node *nodes, const gen_type *types, int t, int axis);

#endif
