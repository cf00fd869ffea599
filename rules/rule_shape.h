/* rule_shape.h - the rule language's symbolic shapes: one shape rule per operator over any dim algebra,
   a pattern's symbolic shapes, and the rule check. Owner: the rule language (layer rulelang). */
#ifndef SO_RULE_SHAPE_H
#define SO_RULE_SHAPE_H

#include "rule.h"

/* Checks a rule: refs in range, arity per ops.def, attributes valid, symbolic shapes
   type-check on both sides and mapped outputs have equal symbolic shapes. Error text has
   no file prefix ("rule 3: ..."). so_rules_parse calls it for every rule. */
so_status so_rule_check(const so_rule *r);
/* Symbolic output shape of pattern ref `ref` of side `which` (0 src, 1 dst). rank -1 if
   the shape is not known symbolically (an operator without a symbolic shape rule). */
typedef struct so_sshape {
    int32_t rank;
    so_dimx dim[SO_MAX_RANK];
} so_sshape;
so_status so_rule_shape(const so_rule *r, int which, so_rref ref, so_sshape *out);
/* The shape rule of rule node n (src/shape.c so_dims_*, one mapping per operator) over any dim algebra A: in[0..n_in)
   the inputs' dims (a rank < 0 gives unknown outputs), ndx the node's own dims n->dx in A (split sizes,
   nchwc_out's (b, C), the constants' shapes, expand / reshape targets), out[0..n_out) with dim storage set by the
   caller (room for SO_MAX_RANK dims of A). Writes the outputs' ranks and dims (rank -1: no shape rule for the
   operator, checked at instantiation), or fails with a message (none if A is quiet). The rule checker runs it over
   the rule language's dims, the verifier over solver terms (verifier/encode.c). */
so_status so_rule_node_dims(const so_dim_alg *A, const so_rnode *n, const so_dims *in, const so_dims *ndx, so_dims *out);
/* ops.def decision of the rule language, for the coverage test and docs/OPERATORS.md: whether the rule check
   has a symbolic shape rule for op (else its shape is checked only when a rule is instantiated). */
int so_rule_has_shape_rule(so_op op);

#endif
