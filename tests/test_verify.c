/* test_verify.c - verifier tests: axiom self-check, true rules proved, false-rule suite rejected, numeric guard, permutation codes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../rules/rule.h"
#include "../verifier/axioms.h"
#include "../verifier/verify.h"

/* Every axiom agrees with the reference kernels on random instances (and both sides are
   ill-typed together on perturbed ones), with enough well-typed instances evaluated. */
static void test_axioms_selfcheck(void **state)
{
    (void)state;
    const ax_parsed *ax;
    int n = so_axioms_get(&ax);
    assert_true(n >= 60);
    int failed = 0;
    for (int k = 0; k < n; k++) {
        int ok = 0, evals = 0;
        char why[512];
        assert_int_equal(so_axiom_selfcheck(k, 100, 7, &ok, &evals, why, sizeof why), SO_OK);
        if (!ok) {
            fprintf(stderr, "axiom self-check failed: %s\n", why);
            failed++;
        }
        if (ok) assert_true(evals >= 3);
    }
    assert_int_equal(failed, 0);
}

static void load(const char *path, so_ruleset *rs)
{
    so_status st = so_rules_load(path, rs);
    if (st != SO_OK) fprintf(stderr, "%s\n", so_error());
    assert_int_equal(st, SO_OK);
}

static void test_true_rules_proved(void **state)
{
    (void)state;
    so_ruleset rs = {0};
    load("tests/verify_true.rules", &rs);
    assert_true(rs.n_rules >= 10);
    so_verifier *v = NULL;
    assert_int_equal(so_verifier_new(&v), SO_OK);
    for (int i = 0; i < rs.n_rules; i++) {
        int status = -1;
        double secs = -1;
        char why[160];
        assert_int_equal(so_verifier_prove(v, &rs.rules[i], 10.0, &status, &secs, why, sizeof why), SO_OK);
        if (status != SO_RULE_PROVED) fprintf(stderr, "true rule %d not proved: %s\n", (int)rs.rules[i].id, why);
        assert_int_equal(status, SO_RULE_PROVED);
        assert_true(secs >= 0);
        int ok = 0;
        assert_int_equal(so_verify_numeric(&rs.rules[i], 3, 11, &ok, why, sizeof why), SO_OK);
        if (!ok) fprintf(stderr, "true rule %d numeric: %s\n", (int)rs.rules[i].id, why);
        assert_true(ok);
    }
    so_verifier_free(v);
    so_ruleset_free(&rs);
}

/* The false-rule suite: every rule rejected by the prover, and independently by the numeric guard. */
static void test_false_rules_rejected(void **state)
{
    (void)state;
    so_ruleset rs = {0};
    load("tests/false_rules.rules", &rs);
    assert_true(rs.n_rules >= 20);
    so_verify_summary sum;
    char **why = NULL;
    assert_int_equal(so_verify_ruleset(&rs, 2, 5.0, &sum, &why), SO_OK);
    assert_int_equal(sum.rules, rs.n_rules);
    assert_int_equal(sum.proved, 0);
    assert_int_equal(sum.failed, rs.n_rules);
    for (int i = 0; i < rs.n_rules; i++) {
        if (rs.rules[i].status == SO_RULE_PROVED) fprintf(stderr, "FALSE rule %d was proved\n", (int)rs.rules[i].id);
        assert_int_equal(rs.rules[i].status, SO_RULE_FAILED);
        assert_non_null(why[i]);
        assert_string_not_equal(why[i], "proved");
        int ok = 1;
        char nwhy[200];
        assert_int_equal(so_verify_numeric(&rs.rules[i], 8, 5, &ok, nwhy, sizeof nwhy), SO_OK);
        if (ok) fprintf(stderr, "false rule %d passed the numeric guard\n", (int)rs.rules[i].id);
        assert_false(ok);
        free(why[i]);
    }
    free(why);
    so_ruleset_free(&rs);
}

/* The parallel driver proves the true rules and records status and time in the rules. */
static void test_ruleset_threads(void **state)
{
    (void)state;
    so_ruleset rs = {0};
    load("tests/verify_true.rules", &rs);
    so_verify_summary sum;
    assert_int_equal(so_verify_ruleset(&rs, 2, 10.0, &sum, NULL), SO_OK);
    assert_int_equal(sum.proved, rs.n_rules);
    assert_int_equal(sum.failed, 0);
    for (int i = 0; i < rs.n_rules; i++) {
        assert_int_equal(rs.rules[i].status, SO_RULE_PROVED);
        assert_true(rs.rules[i].proof_seconds >= 0.0);
    }
    /* the status survives a format/parse round trip */
    char *txt = so_rule_format(&rs.rules[0]);
    assert_non_null(strstr(txt, "proof proved"));
    free(txt);
    so_ruleset_free(&rs);
}

/* the status of proving rule r (one rule, 2 s), its reason in why */
static int prove_one(const so_rule *r, char *why, size_t n)
{
    int status = -1;
    double secs;
    assert_int_equal(so_verify_rule(r, 2.0, &status, &secs, why, n), SO_OK);
    return status;
}

/* An operator without Z3 semantics is reported, not proved. */
static void test_unsupported_op(void **state)
{
    (void)state;
    const char *txt = "rule 1\n  input X [n,c]\n  src a = exp(X)\n  dst b = exp(X)\n  map a -> b\n  proof unverified\nend\n";
    so_ruleset rs = {0};
    assert_int_equal(so_rules_parse("mem", txt, strlen(txt), &rs), SO_OK);
    char why[160];
    assert_int_equal(prove_one(&rs.rules[0], why, sizeof why), SO_RULE_FAILED);
    assert_non_null(strstr(why, "exp"));
    so_verify_thread_cleanup();
    so_ruleset_free(&rs);
}

/* The verifier types a node by the shared shape rule (src/shape.c so_dims_*, over solver terms): a node whose
   rule fails for every symbol value is refused with that rule's message (here transpose's, for a perm made
   invalid after parsing, which checks the rule with the same statement). */
static void test_shape_rule_in_verifier(void **state)
{
    (void)state;
    const char *txt = "rule 1\n  input X [n,c]\n  src a = transpose(X) perm=1,0\n  dst b = transpose(X) perm=1,0\n  map a -> b\n"
                      "  proof unverified\nend\n";
    so_ruleset rs = {0};
    assert_int_equal(so_rules_parse("mem", txt, strlen(txt), &rs), SO_OK);
    char why[160];
    assert_int_equal(prove_one(&rs.rules[0], why, sizeof why), SO_RULE_PROVED);
    rs.rules[0].src.nodes[0].attr.ints[0] = 0; /* perm=0,0 */
    assert_int_equal(prove_one(&rs.rules[0], why, sizeof why), SO_RULE_FAILED);
    if (!strstr(why, "perm is not a permutation of 0..1")) fprintf(stderr, "why: %s\n", why);
    assert_non_null(strstr(why, "perm is not a permutation of 0..1"));
    so_verify_thread_cleanup();
    so_ruleset_free(&rs);
}

static void test_perm_codes(void **state)
{
    (void)state;
    int64_t p[4] = {2, 0, 3, 1}, q[8];
    int64_t c = so_perm_code(4, p);
    assert_int_equal(so_perm_decode(c, q), 4);
    for (int i = 0; i < 4; i++) assert_int_equal(q[i], p[i]);
    int64_t bad[3] = {0, 0, 1};
    assert_int_equal(so_perm_decode(so_perm_code(3, bad), q), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_perm_codes),
        cmocka_unit_test(test_unsupported_op),
        cmocka_unit_test(test_shape_rule_in_verifier),
        cmocka_unit_test(test_true_rules_proved),
        cmocka_unit_test(test_false_rules_rejected),
        cmocka_unit_test(test_ruleset_threads),
        cmocka_unit_test(test_axioms_selfcheck),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
