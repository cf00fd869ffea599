/* test_ops.c - the operator table's coverage: per operator, what each stage decided (ops.def expanded per stage); checks the decisions agree and that docs/OPERATORS.md is current. `test_ops --markdown` prints that file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../kernels/exec.h"
#include "../kernels/fuse.h"
#include "../rules/enum.h"
#include "../rules/rule.h"
#include "../src/onnx_io.h"
#include "../verifier/verify.h"

static const char *yn(int v) { return v ? "yes" : "-"; }

/* The generated document (malloc'd). */
static char *operators_md(void)
{
    so_sbuf b = {0};
    so_sbuf_printf(&b, "# Operators\n\n"
                       "Generated from the operator table (`src/ops.def`) by `make operators` (`build/tests/test_ops --markdown`);\n"
                       "`make test` fails when this file is not current. One row per operator, one column per stage's\n"
                       "decision (each stage expands ops.def into its own table; an operator without a decision in a\n"
                       "stage does not build):\n\n"
                       "- **import / export**: `src/onnx_build.c` `imp_<op>`, `src/onnx_export.c` `exp_<op>` (\"-\": no ONNX form; the\n"
                       "  blocked-layout operators `*nchwc*` are written, and read back by `build_layout_op`, in superopt's layout domain);\n"
                       "- **shapes, reference kernel**: `src/shape.c` `shape_<op>`, `kernels/ref_*.c` `so_ref_<op>` (every operator);\n"
                       "- **FLOPs**: `kernels/exec.c` `flops_<op>` (the flops cost model and profiles);\n"
                       "- **rule shapes**: `rules/rule.c` `sym_<op>` (\"-\": shape left to instantiation);\n"
                       "- **generator**: `rules/gen_universe.c` `gen_<op>` (enumerated in fingerprints, or not in rules);\n"
                       "- **Z3**: `verifier/encode.c` `z3_<op>` (\"-\": not in the rule language);\n"
                       "- **epilogue act**: ops.def's activation role (what a fused kernel epilogue applies).\n\n"
                       "| operator | ONNX | import | export | shapes | reference | FLOPs | rule shapes | generator | Z3 | epilogue act |\n"
                       "|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int op = 0; op < SO_OP_COUNT; op++) {
        const so_op_info *o = &so_ops[op];
        so_sbuf_printf(&b, "| %s | %s | %s | %s | yes | yes | %s | %s | %s | %s | %s |\n", o->name, o->onnx ? o->onnx : "-",
                       yn(so_onnx_imports((so_op)op)), yn(so_onnx_exports((so_op)op)), so_flops_rule((so_op)op),
                       yn(so_rule_has_shape_rule((so_op)op)), gen_enumerates((so_op)op) == 1 ? "enumerated" : gen_enumerates((so_op)op) ? "kind, not in default" : "-",
                       yn(so_verify_has_semantics((so_op)op)), o->act ? so_act_names[o->act] : "-");
    }
    return b.s;
}

/* Every operator with an ONNX name imports and exports, with its attributes; those without none. */
static void test_import_export(void **state)
{
    (void)state;
    for (int op = 0; op < SO_OP_COUNT; op++) {
        const char *nm = so_ops[op].name;
        int onnx = so_ops[op].onnx != NULL, layout = (so_ops[op].flags & SO_F_LAYOUT) != 0;
        if (so_onnx_imports((so_op)op) != onnx) fail_msg("%s: import decision disagrees with its ONNX name", nm);
        /* the blocked-layout operators are written in superopt's own domain */
        if (so_onnx_exports((so_op)op) != (onnx || layout)) fail_msg("%s: export decision disagrees with its ONNX name", nm);
        if (so_onnx_import_drops_attrs((so_op)op)) fail_msg("%s has attributes but imports with the attribute-less importer", nm);
        if (so_onnx_export_drops_attrs((so_op)op)) fail_msg("%s has attributes but exports with the attribute-less exporter", nm);
    }
}

/* The rule language: what the generator enumerates has Z3 semantics and a symbolic shape rule;
   the generator's instance kinds and its decision table name the same operators; an int list
   has a key in rule files exactly when ops.def says the operator has one. */
static void test_rule_language(void **state)
{
    (void)state;
    int by_kind[SO_OP_COUNT] = {0};
    for (int k = 0; k < GK_COUNT; k++) by_kind[gen_kind_op[k]] = 1;
    for (int op = 0; op < SO_OP_COUNT; op++) {
        const char *nm = so_ops[op].name;
        if ((gen_enumerates((so_op)op) != 0) != by_kind[op]) fail_msg("%s: generator decision and instance kinds disagree", nm);
        if (gen_enumerates((so_op)op) == 1 && !so_verify_has_semantics((so_op)op)) fail_msg("%s is enumerated but has no Z3 semantics", nm);
        if (gen_enumerates((so_op)op) == 1 && !so_rule_has_shape_rule((so_op)op)) fail_msg("%s is enumerated but has no rule shape", nm);
        if (!!(so_ops[op].attrs & SO_A_INTS) != (so_rule_ints_key((so_op)op) != NULL)) fail_msg("%s: int-list key disagrees with ops.def attrs", nm);
    }
    assert_string_equal(so_rule_ints_key(SO_OP_REDUCESUM), so_rule_ints_key(SO_OP_REDUCEMEAN));
}

/* Activation roles: exactly the unary operators a kernel epilogue applies, each with its so_act. */
static void test_activation_role(void **state)
{
    (void)state;
    assert_int_equal(so_ops[SO_OP_RELU].act, SO_ACT_RELU);
    assert_int_equal(so_ops[SO_OP_SIGMOID].act, SO_ACT_SIGMOID);
    assert_int_equal(so_ops[SO_OP_TANH].act, SO_ACT_TANH);
    assert_int_equal(so_ops[SO_OP_CLIP].act, SO_ACT_CLIP);
    for (int op = 0; op < SO_OP_COUNT; op++)
        if (so_ops[op].act) assert_true(so_ops[op].flags & SO_F_UNARY);
}

/* FLOPs: no operator that does work falls back to zero; sources and views cost none. */
static void test_flops(void **state)
{
    (void)state;
    for (int op = 0; op < SO_OP_COUNT; op++) {
        int free_op = (so_ops[op].flags & (SO_F_SOURCE | SO_F_VIEW)) != 0;
        if (free_op != !strcmp(so_flops_rule((so_op)op), "none")) fail_msg("%s: FLOP decision '%s'", so_ops[op].name, so_flops_rule((so_op)op));
    }
    assert_string_equal(so_flops_rule(SO_OP_CONV), "counted");
    assert_string_equal(so_flops_rule(SO_OP_SOFTMAX), "counted");
}

static void test_doc_current(void **state)
{
    (void)state;
    char *want = operators_md(), *have = NULL;
    if (so_read_file("docs/OPERATORS.md", &have, NULL) != SO_OK) fail_msg("%s (run make operators)", so_error());
    if (strcmp(want, have)) fail_msg("docs/OPERATORS.md is not current: run make operators");
    free(want);
    free(have);
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--markdown")) {
        char *md = operators_md();
        fputs(md, stdout);
        free(md);
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import_export),  cmocka_unit_test(test_rule_language), cmocka_unit_test(test_activation_role),
        cmocka_unit_test(test_flops),          cmocka_unit_test(test_doc_current),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
