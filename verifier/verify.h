/* verify.h - proves rules (rules/rule.h) from the operator axioms with Z3, checks them numerically, and the `verify` CLI. */
#ifndef SO_VERIFY_H
#define SO_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "../rules/rule.h"

/* A prover: one Z3 context with the operator axioms asserted once; each rule is checked
   inside push/pop. Not thread-safe: use one per thread. */
typedef struct so_verifier so_verifier;

/* New prover. Free with so_verifier_free. */
so_status so_verifier_new(so_verifier **out);
void so_verifier_free(so_verifier *v);

/* Proves rule r for all values of its inputs and all symbol values satisfying its
   preconditions: asserts the negated rule next to the axioms; unsat = proved.
   *status: SO_RULE_PROVED, or SO_RULE_FAILED (sat, unknown, timeout, or an operator the
   verifier has no semantics for); why (may be NULL) receives a one-line reason
   ("proved", "timeout after 2.0 s", "counter-model found", "no Z3 semantics for 'lstm'").
   *seconds: solver wall time. Returns SO_ERR only on internal errors (message set). */
so_status so_verifier_prove(so_verifier *v, const so_rule *r, double timeout_s, int *status,
                            double *seconds, char *why, size_t why_len);

/* Same with a per-thread prover created on first use (freed by so_verify_thread_cleanup). */
so_status so_verify_rule(const so_rule *r, double timeout_s, int *status, double *seconds,
                         char *why, size_t why_len);
void so_verify_thread_cleanup(void);

/* Numeric guard: instantiates r at n_trials random symbol assignments that satisfy the
   preconditions (symbols in [1, 6]), runs source and target with the reference kernels on
   seeded random inputs and compares every mapped output (|a-b| <= 1e-4 * (1 + |a|)).
   *ok = 1 if all agree; else 0 and why names the trial and the first difference. */
so_status so_verify_numeric(const so_rule *r, int n_trials, uint64_t seed, int *ok,
                            char *why, size_t why_len);

/* Counterexample search for a rule that was not proved: instantiates r at small symbol values
   (drawn in [1, 1], [1, 2], ... [1, 6]) and runs both sides with the reference kernels on four
   input sets (uniform [-1, 1), x1000, all-negative, integers in [-2, 2]). On the first element
   where the sides differ (Inf/NaN compared as such, finite values beyond 1e-4 * (1 + |src|)),
   *found = 1 and *text / *json (malloc'd, caller frees) describe it: the symbols, each input's
   shape and values (text: the first 12; JSON: all, exactly), the output, element and both values. *found = 0 if none differs:
   the rule may still be false (on other shapes or values) or true but unproved. */
so_status so_verify_witness(const so_rule *r, int *found, char **text, char **json);

typedef struct so_verify_summary {
    int32_t rules, proved, failed;
    double seconds;               /* wall time of the whole run */
} so_verify_summary;

/* Proves every rule of rs in place (sets status and proof_seconds), with `threads`
   provers (1..2) and a per-rule timeout. If reasons is not NULL it receives a malloc'd
   array of rs->n_rules malloc'd one-line reasons (caller frees each and the array). */
so_status so_verify_ruleset(so_ruleset *rs, int threads, double timeout_s,
                            so_verify_summary *sum, char ***reasons);

/* Axiom report (verify --axioms): every axiom's numeric self-check against the kernels on
   `trials` random cases, and whether it follows from the others within timeout_s; printed as
   text, one JSON line (json) or a Markdown table (md). Returns 0 if all pass, else 1. */
int so_verify_axiom_report(int json, int trials, double timeout_s, int md);

/* 1 if operator op has Z3 semantics (ops.def's Z3 decision; verifier/encode.c), 0 if it is
   outside the rule language. */
int so_verify_has_semantics(so_op op);

#endif
