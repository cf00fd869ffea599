/* gen_priv.h - private to the rule generator (rules/gen*.c): helpers shared by its pruning, generalisation, subsumption, checkpoint and pipeline modules. */
#ifndef SO_GEN_PRIV_H
#define SO_GEN_PRIV_H

#include "enum_priv.h"
#include "gen.h"


/* gen_prune.c */
int genp_split_bucket_ev(const gen_universe *u, const gen_inputs *in, const gen_graph *g, int n, int *cls, gen_eval *ev);
int genp_value_redundant_ev(const gen_universe *u, const gen_graph *a, const gen_eval *pa, const gen_graph *b, const gen_eval *pb);
uint64_t genp_graph_orbit_hash(const gen_universe *u, const gen_graph *g);

/* gen_unify.c: g with its enlarged-kernel pseudo-variables replaced by explicit enlarge nodes on
   their base variables (prepended), as rules print them; 0 if that does not fit GEN_MAX_NODES. */
int genp_expand_pseudo(const gen_universe *u, const gen_graph *g, gen_graph *o);

/* gen_subsume.c */
void genp_add_eps_instances(so_ruleset *rs);

/* gen_ckpt.c */
so_status genp_verify_ckpt(const so_gen_options *o, so_ruleset *rs, int threads, char ***why_out);

#endif
