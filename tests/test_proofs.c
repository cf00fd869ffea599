/* test_proofs.c - issue 19 units: rule proof digests, the proof cache, binding a rule set's proof status (forged tags refused), counterexample witnesses, the safety net's per-element comparison. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <math.h>

#include <cmocka.h>

#include "test_util.h"

#include "../kernels/safety.h"
#include "../rules/rule.h"
#include "../verifier/proofs.h"
#include "../verifier/verify.h"

static const char true_rule[] = "rule 7\n  input X [a,b]\n  input Y [a,b]\n  src s0 = add(X, Y) act=none\n"
                                "  dst d0 = add(Y, X) act=none\n  map s0 -> d0\n  proof proved 0.010 s\n  from hand\nend\n";
static const char forged_rule[] = "rule 1\n  input X [a,b]\n  src s0 = relu(X)\n  map s0 -> X\n  proof proved\nend\n";

static void parse(const char *txt, so_ruleset *rs)
{
    if (so_rules_parse("t.rules", txt, strlen(txt), rs) != SO_OK) fail_msg("%s", so_error());
}

/* The digest depends on what is proved, not on numbering, provenance or the proof line. */
static void test_digest(void **state)
{
    (void)state;
    so_ruleset a, b;
    parse(true_rule, &a);
    parse(true_rule, &b);
    so_rule r = a.rules[0];
    so_proof_digest d0 = so_proof_digest_of(&r);
    r.id = 99, r.status = SO_RULE_FAILED, r.proof_seconds = 3;
    snprintf(r.provenance, sizeof r.provenance, "other");
    so_proof_digest d1 = so_proof_digest_of(&r);
    assert_true(d0.hi == d1.hi && d0.lo == d1.lo);
    b.rules[0].dst.nodes[0].in[0].node = -1; /* add(X, X): another rule */
    so_proof_digest d2 = so_proof_digest_of(&b.rules[0]);
    assert_false(d0.hi == d2.hi && d0.lo == d2.lo);
    so_ruleset_free(&a);
    so_ruleset_free(&b);
}

/* Cache round trip in a private folder; "" disables it. */
static void test_cache(void **state)
{
    (void)state;
    char dir[] = "/tmp/so_proofs_XXXXXX";
    assert_non_null(mkdtemp(dir));
    so_ruleset a;
    parse(true_rule, &a);
    so_proof_digest d = so_proof_digest_of(&a.rules[0]);
    so_proof_cache c;
    so_proof_cache_open(&c, dir);
    assert_non_null(c.path);
    assert_false(so_proof_cache_has(&c, d));
    so_proof_cache_add(&c, d);
    assert_int_equal(so_proof_cache_save(&c), SO_OK);
    char path[4300];
    snprintf(path, sizeof path, "%s", c.path);
    so_proof_cache_close(&c);
    so_proof_cache_open(&c, dir);
    assert_true(so_proof_cache_has(&c, d));
    so_proof_cache_close(&c);
    so_proof_cache_open(&c, "");
    assert_null(c.path);
    so_proof_cache_close(&c);
    unlink(path);
    rmdir(dir);
    so_ruleset_free(&a);
}

/* A forged 'proof proved' is refused with file, line and rule; allowed, it is counted and marked
   unverified; a true rule is proved now, then served from the cache. */
static void test_bind(void **state)
{
    (void)state;
    char dir[] = "/tmp/so_proofs_XXXXXX";
    assert_non_null(mkdtemp(dir));
    so_proof_opts o = {.allow_unverified = 0, .threads = 1, .timeout_s = 5, .cache_dir = dir};
    so_proof_stats st;
    so_ruleset f;
    parse(forged_rule, &f);
    assert_int_equal(so_proofs_bind(&f, "forged.rules", &o, &st), SO_ERR);
    assert_non_null(strstr(so_error(), "forged.rules:1: rule 1 is tagged 'proof proved' but this build's verifier does not prove it"));
    so_ruleset_free(&f);
    parse(forged_rule, &f); /* after SO_ERR the statuses are unspecified */
    o.allow_unverified = 1;
    assert_int_equal(so_proofs_bind(&f, "forged.rules", &o, &st), SO_OK);
    assert_int_equal(st.unproved, 1);
    assert_int_equal(st.forged, 1);
    assert_int_equal(f.rules[0].status, SO_RULE_UNVERIFIED);
    /* a text with an unproved rule is never recorded as a whole: the second bind refuses it again */
    o.allow_unverified = 0;
    assert_int_equal(so_proofs_bind(&f, "forged.rules", &o, &st), SO_ERR);
    so_ruleset_free(&f);
    o.allow_unverified = 0;
    so_ruleset t;
    parse(true_rule, &t);
    assert_int_equal(so_proofs_bind(&t, "t.rules", &o, &st), SO_OK);
    assert_int_equal(st.proved_now, 1);
    assert_int_equal(st.cached, 0);
    assert_int_equal(so_proofs_bind(&t, "t.rules", &o, &st), SO_OK);
    assert_int_equal(st.proved_now, 0);
    assert_int_equal(st.cached, 1);
    assert_int_equal(t.rules[0].status, SO_RULE_PROVED);
    if (st.cache_path[0]) unlink(st.cache_path);
    rmdir(dir);
    so_ruleset_free(&t);
}

/* relu -> X has a witness (a negative input); add commutation has none. */
static void test_witness(void **state)
{
    (void)state;
    so_ruleset f, t;
    parse(forged_rule, &f);
    parse(true_rule, &t);
    int found = 0;
    char *text = NULL, *json = NULL;
    assert_int_equal(so_verify_witness(&f.rules[0], &found, &text, &json), SO_OK);
    assert_true(found);
    assert_non_null(strstr(text, "source 0, target -"));
    assert_non_null(strstr(json, "\"inputs\": {\"X\""));
    free(text);
    free(json);
    assert_int_equal(so_verify_witness(&t.rules[0], &found, &text, &json), SO_OK);
    assert_false(found);
    assert_null(text);
    so_ruleset_free(&f);
    so_ruleset_free(&t);
}

/* Per element: absolute tolerance near zero, relative for large values; Inf and NaN as such. */
static void test_safety_close(void **state)
{
    (void)state;
    assert_true(so_safety_close(0.0f, 5e-6f, 1));
    assert_false(so_safety_close(0.0f, 0.5f, 1));      /* relu -> identity on -0.5 */
    assert_true(so_safety_close(1e5f, 1e5f + 5.0f, 1)); /* 5e-5 relative */
    assert_false(so_safety_close(1e5f, 1e5f + 50.0f, 1));
    assert_true(so_safety_close(0.0f, 0.005f, 1000));   /* x1000 inputs: atol scales */
    assert_true(so_safety_close(INFINITY, INFINITY, 1));
    assert_false(so_safety_close(INFINITY, -INFINITY, 1));
    assert_false(so_safety_close(0.0f, -INFINITY, 1));
    assert_false(so_safety_close(INFINITY, 3e38f, 1));
    assert_true(so_safety_close(NAN, NAN, 1));
    assert_false(so_safety_close(NAN, 0.0f, 1));
    assert_false(so_safety_close(1.0f, NAN, 1));
}

/* The numeric check on graphs that are the original program or not: a clone (same nodes, attributes,
   weights) is "identical" (only the original runs; sets 0, agree, equal latencies); a changed attribute,
   a changed weight or swapped inputs make it not identical (every set compared: the first two caught,
   the third agrees on 4 sets); --check-noise compares an identical graph on every set. */
static void test_safety_identical(void **state)
{
    (void)state;
    tb t;
    tb_begin(&t, 1, 3);
    int32_t x = tb_input(&t, shp(2, 4, 8));
    so_attr ca;
    memset(&ca, 0, sizeof ca);
    ca.clip_min = -1, ca.clip_max = 1;
    int32_t c = tb_node_named(&t, SO_OP_CLIP, &x, 1, 1, &ca, "c");
    int32_t w = tb_weight(&t, 2, 4, 8);
    int32_t ins[2] = {c, w};
    int32_t y = tb_node_named(&t, SO_OP_MUL, ins, 2, 1, NULL, "y");
    t.g->outputs[0] = (so_edge){y, 0};
    so_safety_opts o = {.threads = 1, .seed = 5, .inputs_path = NULL, .time_it = 1, .noise_always = 0};
    so_safety_result r;

    so_graph *same = so_graph_clone(t.g);
    assert_int_equal(so_safety_check(t.g, same, &o, &r), SO_OK);
    assert_true(r.ran && r.agree && r.identical);
    assert_int_equal(r.sets, 0);
    assert_true(r.lat_before_ms >= 0 && r.lat_after_ms == r.lat_before_ms);
    o.noise_always = 1; /* --check-noise: every set, as before */
    assert_int_equal(so_safety_check(t.g, same, &o, &r), SO_OK);
    assert_true(r.ran && r.agree && !r.identical);
    assert_int_equal(r.sets, 4);
    assert_int_equal(r.noise_sets, 4);
    o.noise_always = 0;
    so_graph_free(same);

    so_graph *wide = so_graph_clone(t.g); /* clip to [-2, 2]: differs on the x1000 set */
    ca.clip_min = -2, ca.clip_max = 2;
    wide->nodes[c].attr = so_model_attr(t.m, &ca);
    assert_int_equal(so_safety_check(t.g, wide, &o, &r), SO_OK);
    assert_true(r.ran && !r.agree && !r.identical);
    assert_non_null(strstr(r.why, "large (x1000) inputs"));
    so_graph_free(wide);

    so_graph *other_w = so_graph_clone(t.g); /* the weight node refers to another weight */
    float *d = malloc(32 * sizeof *d);
    for (int j = 0; j < 32; j++) d[j] = 0.5f;
    other_w->nodes[w].ref = so_model_add_weight(t.m, "w2", shp(2, 4, 8), d);
    assert_int_equal(so_safety_check(t.g, other_w, &o, &r), SO_OK);
    assert_true(r.ran && !r.agree && !r.identical);
    so_graph_free(other_w);

    so_graph *swapped = so_graph_clone(t.g); /* mul(w, c): the same values, not the same program */
    swapped->nodes[y].in[0] = (so_edge){w, 0};
    swapped->nodes[y].in[1] = (so_edge){c, 0};
    assert_int_equal(so_safety_check(t.g, swapped, &o, &r), SO_OK);
    assert_true(r.ran && r.agree && !r.identical);
    assert_int_equal(r.sets, 4);
    so_graph_free(swapped);
    so_model_free(t.m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_digest), cmocka_unit_test(test_cache), cmocka_unit_test(test_bind),
        cmocka_unit_test(test_witness), cmocka_unit_test(test_safety_close),
        cmocka_unit_test(test_safety_identical),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
