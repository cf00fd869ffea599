/* test_ops.c - the operator table's coverage: per operator, what each stage decided (ops.def expanded per stage), and per ONNX operator (tools/onnx_ops/operators.txt) how it imports and runs; checks the decisions agree and that docs/OPERATORS.md is current. `test_ops --markdown` prints that file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../kernels/exec.h"
#include "../kernels/fast.h"
#include "../kernels/fuse.h"
#include "../rules/enum.h"
#include "../rules/rule.h"
#include "../rules/rule_shape.h"
#include "../src/onnx_io.h"
#include "../verifier/verify.h"

static const char *yn(int v) { return v ? "yes" : "-"; }


/* ---- the fast-kernel probe: does so_fast_select bind a kernel to a node of this operator? ---- */

static int32_t probe_weight(so_model *m, so_graph *g, so_shape s)
{
    float *d = calloc((size_t)so_shape_numel(&s) + 1, sizeof *d);
    for (int64_t i = 0; i < so_shape_numel(&s); i++) d[i] = s.dtype == SO_I64 ? 0.0f : 0.5f;
    if (s.dtype == SO_I64) {
        free(d);
        d = calloc((size_t)so_shape_numel(&s) + 1, sizeof(int64_t));
    }
    return so_graph_add(g, SO_OP_WEIGHT, NULL, 0, 1, NULL, so_model_add_weight(m, "w", s, d), NULL);
}

static so_shape probe_shape(int rank, const int64_t *d)
{
    return so_shape_make(rank, d);
}

/* 1: a probe node of op (a 4-D float [1,16,8,8] input, the other inputs and the attributes of a typical
   use of that operator) gets a fast kernel; 0: it runs on the reference kernel (or no probe node of that
   operator could be built, which test_fast_probe rules out for the operators that have fast kernels). */
static int fast_kernel(so_op op)
{
    static const int64_t x4[] = {1, 16, 8, 8}, c16[] = {16}, w33[] = {16, 16, 3, 3}, a2[] = {8, 16}, b2[] = {16, 8},
                         l8[] = {8}, sx[] = {4, 1, 8}, sw[] = {1, 64, 8}, sr[] = {1, 64, 16}, wt[] = {16, 8, 2, 2};
    so_model *m = so_model_new("probe");
    m->inputs = so_arena_alloc(&m->arena, sizeof(so_value_info) * 2);
    m->n_inputs = 1;
    m->inputs[0].name = "x";
    m->inputs[0].shape = probe_shape(4, x4);
    so_graph *g = so_graph_new(m);
    m->graph = g;
    so_attr a;
    memset(&a, 0, sizeof a);
    so_edge e[SO_MAX_IN];
    int ne = 1, nout = so_ops[op].n_out > 0 ? so_ops[op].n_out : 1;
    e[0] = (so_edge){so_graph_add(g, SO_OP_INPUT, NULL, 0, 1, NULL, 0, NULL), 0};
    a.stride[0] = a.stride[1] = a.dilation[0] = a.dilation[1] = a.group = 1;
    switch (op) {
    case SO_OP_CONV:
        e[ne++] = (so_edge){probe_weight(m, g, probe_shape(4, w33)), 0};
        e[ne++] = (so_edge){probe_weight(m, g, probe_shape(1, c16)), 0};
        a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
        break;
    case SO_OP_CONVTRANSPOSE: /* a k2 s2 upsampler */
        e[ne++] = (so_edge){probe_weight(m, g, probe_shape(4, wt)), 0};
        a.stride[0] = a.stride[1] = 2;
        break;
    case SO_OP_GEMM:
        m->inputs[0].shape = probe_shape(2, a2);
        e[ne++] = (so_edge){probe_weight(m, g, probe_shape(2, b2)), 0};
        a.alpha = a.beta = 1.0f;
        break;
    case SO_OP_LSTM:
        m->inputs[0].shape = probe_shape(3, sx);
        e[ne++] = (so_edge){probe_weight(m, g, probe_shape(3, sw)), 0};
        e[ne++] = (so_edge){probe_weight(m, g, probe_shape(3, sr)), 0};
        a.hidden = 16;
        break;
    case SO_OP_BATCHNORM:
        for (int k = 0; k < 4; k++) e[ne++] = (so_edge){probe_weight(m, g, probe_shape(1, c16)), 0};
        a.epsilon = 1e-5f;
        break;
    case SO_OP_LAYERNORM:
        e[ne++] = (so_edge){probe_weight(m, g, probe_shape(1, l8)), 0};
        a.axis = 3, a.epsilon = 1e-5f;
        break;
    case SO_OP_MAXPOOL:
    case SO_OP_AVGPOOL:
        a.kernel[0] = a.kernel[1] = 3;
        a.pad[0] = a.pad[1] = a.pad[2] = a.pad[3] = 1;
        break;
    case SO_OP_SOFTMAX: a.axis = 3; break;
    case SO_OP_CONCAT: e[ne++] = e[0], a.axis = 1; break;
    case SO_OP_SPLIT: a.axis = 1, a.n_ints = 2, a.ints[0] = a.ints[1] = 8, nout = 2; break;
    case SO_OP_TRANSPOSE: a.n_ints = 4, a.ints[0] = 0, a.ints[1] = 2, a.ints[2] = 3, a.ints[3] = 1; break;
    case SO_OP_SLICE: a.n_ints = 4, a.ints[0] = 1, a.ints[1] = 1, a.ints[2] = 7, a.ints[3] = 1; break;
    case SO_OP_PAD: a.n_ints = 8; for (int k = 0; k < 8; k++) a.ints[k] = 1; break;
    case SO_OP_RESIZE: a.n_ints = 5, a.ints[0] = SO_RESIZE_HALF_PIXEL, a.ints[3] = a.ints[4] = 16, a.alpha = a.beta = 2.0f; break;
    case SO_OP_CLIP: a.clip_min = -1.0f, a.clip_max = 1.0f; break;
    case SO_OP_HARDSIGMOID: a.alpha = 0.2f, a.beta = 0.5f; break;
    case SO_OP_LEAKYRELU: a.alpha = 0.1f; break;
    case SO_OP_REDUCEMEAN:
    case SO_OP_REDUCESUM:
    case SO_OP_REDUCEMAX:
    case SO_OP_REDUCEMIN: a.n_ints = 2, a.ints[0] = 2, a.ints[1] = 3, a.keepdims = 1; break;
    default:
        for (int k = 1; k < so_ops[op].min_in; k++) e[ne++] = e[0]; /* element-wise: the same shape */
        break;
    }
    int fast = -1;
    int32_t n = so_graph_add(g, op, e, ne, nout, so_model_attr(m, &a), -1, "probe");
    int ok = 1;
    for (int32_t i = 0; i <= n && ok; i++) ok = so_graph_infer(g, i) == SO_OK;
    if (ok) {
        so_fast_ctx c = {g, NULL, NULL};
        so_fast_kernel k;
        fast = so_fast_select(&c, n, &k) == SO_OK && k.run != NULL;
        if (k.free_priv) k.free_priv(k.priv);
    }
    so_model_free(m);
    return fast; /* -1: no probe node */
}

/* ---- every ONNX operator (tools/onnx_ops/operators.txt) ---- */

typedef struct onnx_def {
    char domain[64], name[64], vers[128], dep[64];
} onnx_def;

/* Reads tools/onnx_ops/operators.txt; returns the count (malloc'd array in *out), -1 on error. */
static int read_onnx_defs(onnx_def **out)
{
    char *text = NULL;
    if (so_read_file("tools/onnx_ops/operators.txt", &text, NULL) != SO_OK) return -1;
    int n = 0, cap = 0;
    onnx_def *d = NULL;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (line[0] == '#') continue;
        if (n == cap) d = realloc(d, (size_t)(cap = cap ? cap * 2 : 256) * sizeof *d);
        if (sscanf(line, "%63[^\t]\t%63[^\t]\t%127[^\t]\t%63s", d[n].domain, d[n].name, d[n].vers, d[n].dep) != 4) {
            free(text);
            free(d);
            return -1;
        }
        n++;
    }
    free(text);
    *out = d;
    return n;
}

static int has_version(const char *list, int v)
{
    char buf[160];
    snprintf(buf, sizeof buf, ",%s,", list);
    char key[16];
    snprintf(key, sizeof key, ",%d,", v);
    return strstr(buf, key) != NULL;
}

/* The opsets 7..SO_ONNX_MAX_OPSET in which the operator exists (has a version <= that opset; the importer reads
   deprecated versions too), as "a-b"; "" when none. */
static void accepted_opsets(const onnx_def *d, char *buf, size_t cap)
{
    int first = 0, cur = 0;
    buf[0] = 0;
    for (int v = 1; v <= SO_ONNX_MAX_OPSET + 1; v++) {
        if (v <= SO_ONNX_MAX_OPSET && has_version(d->vers, v)) cur = v;
        int live = v <= SO_ONNX_MAX_OPSET && v >= 7 && cur;
        if (live && !first) first = v;
        if (!live && first) {
            size_t l = strlen(buf);
            if (first == v - 1) snprintf(buf + l, cap - l, "%s%d", l ? ", " : "", first);
            else snprintf(buf + l, cap - l, "%s%d-%d", l ? ", " : "", first, v - 1);
            first = 0;
        }
    }
}

/* One row per ONNX operator: how it imports, its kernel, whether rules rewrite it. */
static void onnx_rows(so_sbuf *b, const onnx_def *defs, int n, const int *fast)
{
    for (int i = 0; i < n; i++) {
        const onnx_def *d = &defs[i];
        char acc[160], imp[600] = "", kern[200] = "-", rules[64] = "-";
        int dflt = !strcmp(d->domain, "ai.onnx");
        if (dflt) accepted_opsets(d, acc, sizeof acc);
        else snprintf(acc, sizeof acc, "any");
        const so_onnx_route *rt = dflt ? so_onnx_route_of(d->name) : NULL;
        /* the table operators of that ONNX name */
        char ops[200] = "";
        int any = 0, anyfast = 0, anyrule = 0;
        for (int op = 0; op < SO_OP_COUNT && dflt; op++) {
            if (!so_ops[op].onnx || strcmp(so_ops[op].onnx, d->name) || !so_onnx_imports((so_op)op)) continue;
            size_t l = strlen(ops);
            snprintf(ops + l, sizeof ops - l, "%s`%s`", any ? ", " : "", so_ops[op].name);
            any = 1;
            anyfast |= fast[op] == 1;
            anyrule |= gen_enumerates((so_op)op) == 1;
        }
        if (rt && rt->kind == SO_ROUTE_ALIAS) {
            snprintf(ops, sizeof ops, "`%s`", so_ops[rt->op].name);
            any = 1, anyfast = fast[rt->op] == 1, anyrule = gen_enumerates(rt->op) == 1;
        }
        if (!dflt) {
            snprintf(imp, sizeof imp, "kept opaque (every operator of domain %s)", d->domain);
        } else if (!acc[0]) {
            int first = atoi(d->vers);
            if (first > SO_ONNX_MAX_OPSET) snprintf(imp, sizeof imp, "not read: introduced in opset %d (superopt reads opsets 7-%d)", first, SO_ONNX_MAX_OPSET);
            else snprintf(imp, sizeof imp, "not read: removed before opset 7");
        } else if (rt) {
            static const char *const kind[] = {"no-op", "constant", "folded at import", "as", "expanded", "inlined", "refused", "as"};
            if (rt->kind == SO_ROUTE_ALIAS) snprintf(imp, sizeof imp, "as %s: %s", ops, rt->how);
            else if (rt->kind == SO_ROUTE_FORMS) snprintf(imp, sizeof imp, "as %s", rt->how);
            else snprintf(imp, sizeof imp, "%s: %s", kind[rt->kind], rt->how);
            if (rt->kind == SO_ROUTE_FOLD) snprintf(kern, sizeof kern, "- (otherwise kept opaque)");
            if (rt->kind == SO_ROUTE_EXPAND) snprintf(kern, sizeof kern, "its expansion's");
        } else if (any) {
            snprintf(imp, sizeof imp, "as %s", ops);
        } else {
            snprintf(imp, sizeof imp, "kept opaque%s", dflt ? "" : " (another domain)");
        }
        if (any && acc[0]) snprintf(kern, sizeof kern, "%s", anyfast ? "fast" : "reference only");
        if (anyrule && acc[0]) snprintf(rules, sizeof rules, "yes");
        if (!acc[0]) snprintf(acc, sizeof acc, "-");
        char vers[sizeof d->vers + sizeof d->dep + 16]; /* fits both fields: no truncation at any -O level */
        snprintf(vers, sizeof vers, "%s%s%s%s", d->vers, strcmp(d->dep, "-") ? " (deprecated: " : "", strcmp(d->dep, "-") ? d->dep : "",
                 strcmp(d->dep, "-") ? ")" : "");
        so_sbuf_printf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", d->name, d->domain, vers, acc, imp, kern, rules);
    }
}

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
                       "- **rule shapes**: `rules/rule_shape.c` `sym_<op>` (\"-\": shape left to instantiation);\n"
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
    onnx_def *defs = NULL;
    int nd = read_onnx_defs(&defs);
    if (nd < 0) {
        free(b.s);
        return NULL;
    }
    int fast[SO_OP_COUNT];
    for (int op = 0; op < SO_OP_COUNT; op++) fast[op] = so_ops[op].onnx ? fast_kernel((so_op)op) : -1;
    int n_def = 0, n_imp = 0;
    for (int i = 0; i < nd; i++) n_def += !strcmp(defs[i].domain, "ai.onnx");
    so_sbuf_printf(&b, "\n## Every ONNX operator\n\n"
                       "One row per operator of ONNX 1.22 (%d in the default domain `ai.onnx`, then `ai.onnx.ml` and the preview\n"
                       "domains), from `tools/onnx_ops/operators.txt` (written once by `tools/onnx_ops/list_operators.py` from\n"
                       "onnx.defs and ONNX's schema registrations; checked in). superopt reads models of default-domain opsets\n"
                       "7-%d; a node of any other domain is kept opaque.\n\n"
                       "- **versions**: the opsets that (re)defined the operator (and those ONNX marked deprecated); **opsets read**:\n"
                       "  the opsets 7-%d in which it exists. The importer reads each version's form (attributes that became inputs,\n"
                       "  changed defaults) by the model's opset.\n"
                       "- **import** (`src/onnx_build.c`: the table's importers; `src/onnx_node.c`: the route table for the rest):\n"
                       "  `as op`: the table operator(s) above; no-op / constant / folded at import (evaluated when its inputs\n"
                       "  are constants or depend on shapes only) / expanded into table operators / inlined / refused (an\n"
                       "  import error naming the file, the node and its operator); **kept opaque**: `superopt MODEL` writes the\n"
                       "  node back verbatim with the output shapes the file declares (value_info; without them a one-line\n"
                       "  error names the node and its operator), `superopt run` refuses it (one line naming the node and its\n"
                       "  operator).\n"
                       "- **kernel**: `fast` when `so_fast_select` binds a fast kernel to a probe node of the operator (a 4-D\n"
                       "  float input, typical attributes; other forms may still run on the reference kernel), `reference only`\n"
                       "  otherwise; folded operators have none.\n"
                       "- **rewrites**: `yes` when the rule generator enumerates the operator (rules/default.rules rewrites it);\n"
                       "  the hand-written passes (layout, fusion, folding) touch others.\n\n"
                       "| ONNX operator | domain | versions | opsets read | import | kernel | rewrites |\n"
                       "|---|---|---|---|---|---|---|\n",
                   n_def, SO_ONNX_MAX_OPSET, SO_ONNX_MAX_OPSET);
    onnx_rows(&b, defs, nd, fast);
    for (int i = 0; i < nd; i++) {
        if (strcmp(defs[i].domain, "ai.onnx")) continue;
        const so_onnx_route *rt = so_onnx_route_of(defs[i].name);
        n_imp += (rt && rt->kind != SO_ROUTE_REFUSE) || so_op_from_onnx(defs[i].name) != SO_OP_OPAQUE;
    }
    so_sbuf_printf(&b, "\n%d of the %d default-domain operators import as table operators (or no-ops, constants, folds,\n"
                       "expansions, inlined branches); the others are kept opaque or refused.\n", n_imp, n_def);
    free(defs);
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
   gen_universe_add_insts instantiates exactly the operators the generator's decision table puts in rules; an int list
   has a key in rule files exactly when ops.def says the operator has one. */
static void test_rule_language(void **state)
{
    (void)state;
    /* the operators gen_universe_add_insts can instantiate (one at a time) */
    int by_kind[SO_OP_COUNT] = {0};
    for (int op = 0; op < SO_OP_COUNT; op++) {
        static gen_universe u;
        const so_op one = (so_op)op;
        gen_universe_init(&u);
        gen_universe_add_insts(&u, &one, 1);
        by_kind[op] = u.n_insts > 0;
        for (int i = 0; i < u.n_insts; i++)
            if (u.insts[i].op != op) fail_msg("%s: gen_universe_add_insts made an instance of another operator", so_ops[op].name);
    }
    /* the default universe instantiates exactly the operators marked GEN_DEFAULT */
    static gen_universe du;
    int in_default[SO_OP_COUNT] = {0};
    gen_universe_default(&du);
    for (int i = 0; i < du.n_insts; i++) in_default[du.insts[i].op] = 1;
    for (int op = 0; op < SO_OP_COUNT; op++)
        if (in_default[op] != gen_in_default((so_op)op)) fail_msg("%s: the default universe and its GEN_DEFAULT decision disagree", so_ops[op].name);
    for (int op = 0; op < SO_OP_COUNT; op++) {
        const char *nm = so_ops[op].name;
        if ((gen_enumerates((so_op)op) != 0) != by_kind[op]) fail_msg("%s: generator decision and gen_universe_add_insts disagree", nm);
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


/* The route table: ALIAS rows name an importing table operator, FORMS rows an ONNX name the table has, the other
   kinds none (an operator is either the table's or routed); every row names an ONNX operator of the list. */
static void test_routes(void **state)
{
    (void)state;
    onnx_def *defs = NULL;
    int nd = read_onnx_defs(&defs);
    assert_true(nd > 200);
    static const char *const names[] = {"Identity", "Dropout", "Constant", "Shape", "Size", "EyeLike", "ConstantOfShape",
                                        "Range", "OneHot", "NonZero", "HannWindow", "HammingWindow", "BlackmanWindow", "Upsample",
                                        "Scatter", "SoftmaxCrossEntropyLoss", "Sum", "Mean", "MeanVarianceNormalization",
                                        "Tile", "InstanceNormalization", "GroupNormalization", "GlobalMaxPool",
                                        "LpNormalization", "Einsum", "If", "Loop", "Scan", "SequenceMap", "Conv", "ConvTranspose", "MaxPool",
                                        "AveragePool", "LSTM", "GRU", "RNN", "Cast", "LayerNormalization"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const so_onnx_route *r = so_onnx_route_of(names[i]);
        if (!r) fail_msg("%s has no route", names[i]);
        int listed = 0;
        for (int k = 0; k < nd; k++) listed |= !strcmp(defs[k].domain, "ai.onnx") && !strcmp(defs[k].name, names[i]);
        if (!listed) fail_msg("%s is not an ONNX operator of tools/onnx_ops/operators.txt", names[i]);
        so_op t = so_op_from_onnx(names[i]);
        if (r->kind == SO_ROUTE_ALIAS && (t != SO_OP_OPAQUE || !so_onnx_imports(r->op))) fail_msg("%s: alias route", names[i]);
        if (r->kind == SO_ROUTE_FORMS && t == SO_OP_OPAQUE) fail_msg("%s: forms of no table operator", names[i]);
        if (r->kind != SO_ROUTE_FORMS && r->kind != SO_ROUTE_NOOP && r->kind != SO_ROUTE_ALIAS && t != SO_OP_OPAQUE)
            fail_msg("%s: routed and a table operator", names[i]);
    }
    assert_null(so_onnx_route_of("Relu"));
    free(defs);
}

/* The fast-kernel probe builds a node for every operator the kernel modules serve, and finds their kernels. */
static void test_fast_probe(void **state)
{
    (void)state;
    static const so_op with_fast[] = {SO_OP_CONV, SO_OP_MATMUL, SO_OP_GEMM, SO_OP_ADD, SO_OP_SUB, SO_OP_MUL, SO_OP_DIV,
                                      SO_OP_POW, SO_OP_RELU, SO_OP_SIGMOID, SO_OP_TANH, SO_OP_ERF, SO_OP_SQRT, SO_OP_EXP,
                                      SO_OP_LOG, SO_OP_NEG, SO_OP_RECIPROCAL, SO_OP_CLIP, SO_OP_HARDSIGMOID, SO_OP_HARDSWISH,
                                      SO_OP_LEAKYRELU, SO_OP_SOFTMAX, SO_OP_LAYERNORM, SO_OP_BATCHNORM, SO_OP_REDUCEMEAN, SO_OP_REDUCESUM,
                                      SO_OP_MAXPOOL, SO_OP_AVGPOOL, SO_OP_GLOBALAVGPOOL, SO_OP_SLICE, SO_OP_TRANSPOSE,
                                      SO_OP_CONCAT, SO_OP_SPLIT, SO_OP_PAD, SO_OP_RESIZE, SO_OP_LSTM};
    for (size_t i = 0; i < sizeof with_fast / sizeof *with_fast; i++)
        if (fast_kernel(with_fast[i]) != 1) fail_msg("%s: the probe finds no fast kernel", so_ops[with_fast[i]].name);
    assert_int_equal(fast_kernel(SO_OP_DET), 0); /* reference only */
}

static void test_doc_current(void **state)
{
    (void)state;
    char *want = operators_md(), *have = NULL;
    if (!want) fail_msg("tools/onnx_ops/operators.txt: %s", so_error());
    if (so_read_file("docs/OPERATORS.md", &have, NULL) != SO_OK) {
        free(want);
        fail_msg("%s (run make operators)", so_error());
    }
    const int same = !strcmp(want, have);
    free(want); /* freed before a failure: fail_msg does not return */
    free(have);
    if (!same) fail_msg("docs/OPERATORS.md is not current: run make operators");
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--markdown")) {
        char *md = operators_md();
        if (!md) {
            fprintf(stderr, "test_ops: tools/onnx_ops/operators.txt: cannot read it\n");
            return 1;
        }
        fputs(md, stdout);
        free(md);
        return 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import_export),  cmocka_unit_test(test_rule_language), cmocka_unit_test(test_activation_role),
        cmocka_unit_test(test_flops),          cmocka_unit_test(test_routes),         cmocka_unit_test(test_fast_probe),
        cmocka_unit_test(test_doc_current),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
