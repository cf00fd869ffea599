/* rule.c - the rule language: text parse/print (format in rules/RULES.md), dimension expressions,
   instantiation of a pattern as a concrete graph (the symbolic shape check: rule_shape.c). */
#include "rule.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "../src/shape.h"
#include "rule_shape.h"

/* ---------------- attribute fields used per operator ---------------- */

/* ops.def's attrs column (SO_A_*): the fields printed and accepted per operator. */
static unsigned op_fields(so_op op) { return so_ops[op].attrs; }

/* The rule-file key of each operator's int list (ops.def's SO_A_INTS): what the list means.
   One decision per operator; an operator without one is an undeclared identifier. */
#define key_perm "perm"
#define key_axes "axes"
#define key_pads "pads"
#define key_ints "ints"     /* slice quads, resize parameters: no better name */
#define key_none NULL       /* the operator has no int list (SO_A_INTS not in its attrs) */
#define key_input key_none
#define key_weight key_none
#define key_opaque key_none
#define key_conv key_none
#define key_matmul key_none
#define key_gemm key_none
#define key_add key_none
#define key_sub key_none
#define key_mul key_none
#define key_div key_none
#define key_pow key_none
#define key_relu key_none
#define key_sigmoid key_none
#define key_tanh key_none
#define key_erf key_none
#define key_sqrt key_none
#define key_exp key_none
#define key_log key_none
#define key_neg key_none
#define key_reciprocal key_none
#define key_clip key_none
#define key_batchnorm key_none
#define key_maxpool key_none
#define key_avgpool key_none
#define key_lppool key_none
#define key_globallppool key_none
#define key_globalavgpool key_none
#define key_softmax key_none
#define key_reducemean key_axes
#define key_layernorm key_none
#define key_rmsnorm key_none
#define key_pad key_pads
#define key_concat key_none
#define key_split key_none
#define key_flatten key_none
#define key_reshape key_none
#define key_transpose key_perm
#define key_squeeze key_axes
#define key_unsqueeze key_axes
#define key_identity key_none
#define key_expand key_none
#define key_gather key_none
#define key_slice key_ints
#define key_lstm key_ints
#define key_enlarge key_none
#define key_const_pool key_none
#define key_const_idconv key_none
#define key_const_idmat key_none
#define key_const_ones key_none
#define key_bnfold_w key_none
#define key_bnfold_b key_none
#define key_hardsigmoid key_none
#define key_hardswish key_none
#define key_leakyrelu key_none
#define key_elu key_none
#define key_nchwc_in key_ints
#define key_nchwc_out key_ints
#define key_conv_nchwc key_none
#define key_maxpool_nchwc key_none
#define key_avgpool_nchwc key_none
#define key_globalavgpool_nchwc key_none
#define key_concat_nchwc key_ints
#define key_resize key_ints
#define key_reducesum key_axes

#define key_abs key_none
#define key_floor key_none
#define key_ceil key_none
#define key_round key_none
#define key_sign key_none
#define key_softplus key_none
#define key_softsign key_none
#define key_sin key_none
#define key_cos key_none
#define key_tan key_none
#define key_asin key_none
#define key_acos key_none
#define key_atan key_none
#define key_sinh key_none
#define key_cosh key_none
#define key_asinh key_none
#define key_acosh key_none
#define key_atanh key_none
#define key_mish key_none
#define key_selu key_none
#define key_celu key_none
#define key_thresholdedrelu key_none
#define key_shrink key_none
#define key_gelu key_none
#define key_max key_none
#define key_min key_none
#define key_prelu key_none
#define key_reducemax key_axes
#define key_reducemin key_axes
#define key_reduceprod key_axes
#define key_reducel1 key_axes
#define key_reducel2 key_axes
#define key_reducesumsquare key_axes
#define key_reducelogsum key_axes
#define key_reducelogsumexp key_axes
#define key_logsoftmax key_none
#define key_hardmax key_none
#define key_argmax key_none
#define key_argmin key_none
#define key_trilu key_ints
#define key_gatherelements key_none
#define key_depthtospace key_none
#define key_spacetodepth key_none

#define key_nllloss key_ints
#define key_where key_none

#define key_equal key_none
#define key_less key_none
#define key_greater key_none
#define key_lessorequal key_none
#define key_greaterorequal key_none
#define key_isinf key_none
#define key_isnan key_none

#define key_convtranspose key_ints

#define key_lrn key_none
#define key_scatterelements key_none
#define key_gathernd key_none
#define key_topk key_ints
#define key_det key_none
#define key_not key_none
#define key_and key_none
#define key_or key_none
#define key_xor key_none
#define key_mod key_none
#define key_cast key_none
#define key_gru key_ints
#define key_rnn key_ints
#define key_conv3d key_ints
#define key_convtranspose3d key_ints
#define key_maxpool3d key_ints
#define key_avgpool3d key_ints
#define key_reversesequence key_none
#define key_tfidfvectorizer key_ints
#define key_maxpoolidx key_none
#define key_maxunpool key_none
#define key_roialign key_ints
#define key_dft key_ints
#define key_stft key_ints
#define key_gridsample key_ints
#define key_scatternd key_none

static const char *const ints_keys[SO_OP_COUNT] = {
#define X(e, l, ...) [SO_OP_##e] = key_##l,
#include "../src/ops.def"
#undef X
};

static const char *ints_key(so_op op) { return ints_keys[op] ? ints_keys[op] : "ints"; }

static const char *dx_key(so_op op) { return op == SO_OP_SPLIT ? "sizes" : "shape"; }

/* ---------------- dimension expressions ---------------- */

void so_dimx_norm(so_dimx *d)
{
    for (int i = 1; i < d->n_sym; i++)
        for (int j = i; j > 0 && d->sym[j - 1] > d->sym[j]; j--) {
            int8_t t = d->sym[j];
            d->sym[j] = d->sym[j - 1];
            d->sym[j - 1] = t;
        }
}

int so_dimx_eq(const so_dimx *a, const so_dimx *b)
{
    so_dimx x = *a, y = *b;
    so_dimx_norm(&x);
    so_dimx_norm(&y);
    if (x.c != y.c || x.n_sym != y.n_sym) return 0;
    for (int i = 0; i < x.n_sym; i++)
        if (x.sym[i] != y.sym[i]) return 0;
    return 1;
}

int64_t so_dimx_eval(const so_dimx *d, const int64_t *sym_vals)
{
    int64_t v = d->c;
    for (int i = 0; i < d->n_sym; i++) v += sym_vals[d->sym[i]];
    return v;
}

void so_dimx_print(so_sbuf *b, const so_dimx *d, const so_rule *r)
{
    if (d->n_sym == 0) {
        so_sbuf_printf(b, "%d", (int)d->c);
    } else {
        /* a run of more than 4 copies of one symbol (block multiples) prints as "K*s" (the
           expression is normalised: sorted); shorter runs as before, "a+a" */
        for (int i = 0, first = 1; i < d->n_sym; first = 0) {
            int j = i;
            while (j < d->n_sym && d->sym[j] == d->sym[i]) j++;
            if (j - i > 4) so_sbuf_printf(b, "%s%d*%s", first ? "" : "+", j - i, r->sym_names[d->sym[i]]);
            else
                for (int q = i; q < j; q++) so_sbuf_printf(b, "%s%s", first && q == i ? "" : "+", r->sym_names[d->sym[i]]);
            i = j;
        }
        if (d->c > 0) so_sbuf_printf(b, "+%d", (int)d->c);
        else if (d->c < 0) so_sbuf_printf(b, "%d", (int)d->c);
    }
}

/* ---------------- printing ---------------- */

static void sb_ref(so_sbuf *b, const so_rule *r, const so_pattern *p, so_rref ref)
{
    if (ref.node < 0) {
        so_sbuf_printf(b, "%s", r->inputs[-(ref.node + 1)].name);
        return;
    }
    const so_rnode *n = &p->nodes[ref.node];
    if (n->n_out == 1) so_sbuf_printf(b, "%s", n->name);
    else so_sbuf_printf(b, "%s.%d", n->name, (int)ref.slot);
}

static void sb_ints(so_sbuf *b, const char *key, const int32_t *v, int n)
{
    so_sbuf_printf(b, " %s=", key);
    for (int i = 0; i < n; i++) so_sbuf_printf(b, "%s%d", i ? "," : "", (int)v[i]);
}

/* The attributes of n as rule text prints them (" kernel=3,3 ..."), the fields its op uses. */
static void sb_attrs(so_sbuf *b, const so_rule *r, const so_rnode *n)
{
    const so_attr *a = &n->attr;
    unsigned f = op_fields(n->op);
    if (f & SO_A_KERNEL) sb_ints(b, "kernel", a->kernel, 2);
    if (f & SO_A_STRIDE) sb_ints(b, "stride", a->stride, 2);
    if (f & SO_A_PAD) sb_ints(b, "pad", a->pad, 4);
    if (f & SO_A_DIL) sb_ints(b, "dilation", a->dilation, 2);
    if ((f & SO_A_GROUP) && a->group == SO_RULE_GROUP_DW) so_sbuf_printf(b, " group=dw");
    else if (f & SO_A_GROUP) so_sbuf_printf(b, " group=%d", (int)a->group);
    if (f & SO_A_AXIS) so_sbuf_printf(b, " axis=%d", (int)a->axis);
    if (f & SO_A_TRANS) so_sbuf_printf(b, " trans_a=%d trans_b=%d", (int)a->trans_a, (int)a->trans_b);
    if (f & SO_A_ALPHA) so_sbuf_printf(b, " alpha=%.9g beta=%.9g", (double)a->alpha, (double)a->beta);
    if (f & SO_A_KEEPDIMS) so_sbuf_printf(b, " keepdims=%d", (int)a->keepdims);
    if (f & SO_A_CIP) so_sbuf_printf(b, " count_include_pad=%d", (int)a->count_include_pad);
    if (f & SO_A_CEIL) so_sbuf_printf(b, " ceil_mode=%d", (int)a->ceil_mode);
    if (f & SO_A_HIDDEN) so_sbuf_printf(b, " hidden=%d", (int)a->hidden);
    if (f & SO_A_DIR) so_sbuf_printf(b, " direction=%d", (int)a->direction);
    if (f & SO_A_MODE) so_sbuf_printf(b, " mode=%d", (int)a->mode);
    if (f & SO_A_VALUE) so_sbuf_printf(b, " value=%.9g", (double)a->value);
    if (f & SO_A_EPS) so_sbuf_printf(b, " epsilon=%.9g", (double)a->epsilon);
    if ((f & SO_A_INTS) && n->op == SO_OP_NCHWC_OUT && n->n_dx > 0) {
        so_sbuf_printf(b, " ints=");
        for (int k = 0; k < n->n_dx; k++) {
            if (k) so_sbuf_printf(b, ",");
            so_dimx_print(b, &n->dx[k], r);
        }
    } else if (f & SO_A_INTS) {
        so_sbuf_printf(b, " %s=", ints_key(n->op));
        for (int k = 0; k < a->n_ints; k++) so_sbuf_printf(b, "%s%lld", k ? "," : "", (long long)a->ints[k]);
    }
    if (f & SO_A_DIMS) {
        so_sbuf_printf(b, " %s=", dx_key(n->op));
        for (int k = 0; k < n->n_dx; k++) {
            if (k) so_sbuf_printf(b, ",");
            so_dimx_print(b, &n->dx[k], r);
        }
    }
    if (f & SO_A_ACT) {
        int act = a->act;
        so_sbuf_printf(b, " act=%s", act >= 0 && act < SO_ACT_COUNT ? so_act_names[act] : "?");
    }
    if ((f & SO_A_CLIP) || ((f & SO_A_ACT) && a->act == SO_ACT_CLIP))
        so_sbuf_printf(b, " clip_min=%.9g clip_max=%.9g", (double)a->clip_min, (double)a->clip_max);
}

static void sb_node(so_sbuf *b, const so_rule *r, const so_pattern *p, int i, const char *side)
{
    const so_rnode *n = &p->nodes[i];
    so_sbuf_printf(b, "  %s %s = %s(", side, n->name, so_ops[n->op].name);
    for (int k = 0; k < n->n_in; k++) {
        if (k) so_sbuf_printf(b, ", ");
        sb_ref(b, r, p, n->in[k]);
    }
    so_sbuf_printf(b, ")");
    sb_attrs(b, r, n);
    so_sbuf_printf(b, "\n");
}

/* The expression of ref as a tree over the rule's inputs, node names left out: "op(args) attrs"
   with args the same (a multi-output node's output k is suffixed "#k"). */
static void sb_expr(so_sbuf *b, const so_rule *r, const so_pattern *p, so_rref ref)
{
    if (ref.node < 0) {
        so_sbuf_printf(b, "%s", r->inputs[-(ref.node + 1)].name);
        return;
    }
    const so_rnode *n = &p->nodes[ref.node];
    so_sbuf_printf(b, "%s(", so_ops[n->op].name);
    for (int k = 0; k < n->n_in; k++) {
        if (k) so_sbuf_printf(b, ", ");
        sb_expr(b, r, p, n->in[k]);
    }
    so_sbuf_printf(b, ")");
    sb_attrs(b, r, n);
    if (n->n_out > 1) so_sbuf_printf(b, "#%d", (int)ref.slot);
}

int so_rule_same_sides(const so_rule *r)
{
    int same = 1;
    for (int k = 0; k < r->n_outputs && same; k++) {
        so_sbuf a = {0}, c = {0};
        sb_expr(&a, r, &r->src, r->src_out[k]);
        sb_expr(&c, r, &r->dst, r->dst_out[k]);
        same = a.s && c.s && !strcmp(a.s, c.s);
        free(a.s);
        free(c.s);
    }
    return same;
}

/* The text of r; canon: without the number, the proof line and the provenance. */
static char *format_rule(const so_rule *r, int canon)
{
    so_sbuf b = {0};
    if (canon) so_sbuf_printf(&b, "rule\n");
    else so_sbuf_printf(&b, "rule %d\n", (int)r->id);
    for (int i = 0; i < r->n_inputs; i++) {
        const so_rinput *in = &r->inputs[i];
        so_sbuf_printf(&b, "  input %s [", in->name);
        for (int k = 0; k < in->rank; k++) {
            if (k) so_sbuf_printf(&b, ",");
            so_dimx_print(&b, &in->dim[k], r);
        }
        so_sbuf_printf(&b, "]\n");
    }
    for (int i = 0; i < r->src.n_nodes; i++) sb_node(&b, r, &r->src, i, "src");
    for (int i = 0; i < r->dst.n_nodes; i++) sb_node(&b, r, &r->dst, i, "dst");
    for (int k = 0; k < r->n_outputs; k++) {
        so_sbuf_printf(&b, "  map ");
        sb_ref(&b, r, &r->src, r->src_out[k]);
        so_sbuf_printf(&b, " -> ");
        sb_ref(&b, r, &r->dst, r->dst_out[k]);
        so_sbuf_printf(&b, "\n");
    }
    for (int k = 0; k < r->n_pre; k++) {
        const so_precond *p = &r->pre[k];
        if (p->kind == SO_PRE_GE) so_sbuf_printf(&b, "  where %s >= %lld\n", r->sym_names[p->sym], (long long)p->value);
        else so_sbuf_printf(&b, "  where %s %% %lld == 0\n", r->sym_names[p->sym], (long long)p->value);
    }
    if (canon) {
        so_sbuf_printf(&b, "end\n");
        return b.s;
    }
    if (r->status == SO_RULE_UNVERIFIED) {
        so_sbuf_printf(&b, "  proof unverified\n");
    } else {
        so_sbuf_printf(&b, "  proof %s", r->status == SO_RULE_PROVED ? "proved" : "failed");
        if (r->proof_seconds >= 0) so_sbuf_printf(&b, " %.3f s", r->proof_seconds);
        so_sbuf_printf(&b, "\n");
    }
    if (r->provenance[0]) so_sbuf_printf(&b, "  from %s\n", r->provenance);
    so_sbuf_printf(&b, "end\n");
    return b.s;
}

char *so_rule_format(const so_rule *r) { return format_rule(r, 0); }
char *so_rule_format_canon(const so_rule *r) { return format_rule(r, 1); }

static so_status write_all(FILE *f, const char *s, size_t n)
{
    return fwrite(s, 1, n, f) == n ? SO_OK : SO_ERR;
}

so_status so_rules_save(const so_ruleset *rs, const char *path)
{
    so_atomic out;
    if (so_atomic_open(&out, path, "wb") != SO_OK) return SO_ERR;
    FILE *f = out.f;
    int ok = 1;
    /* header: one "# " comment line per header line */
    const char *h = rs->header;
    while (*h) {
        const char *e = strchr(h, '\n');
        size_t n = e ? (size_t)(e - h) : strlen(h);
        ok &= fprintf(f, "# %.*s\n", (int)n, h) > 0;
        h += n + (e ? 1 : 0);
    }
    if (rs->header[0]) ok &= fputc('\n', f) != EOF;
    for (int32_t i = 0; i < rs->n_rules && ok; i++) {
        so_rule r = rs->rules[i];
        r.id = i + 1;
        char *s = so_rule_format(&r);
        ok &= write_all(f, s, strlen(s)) == SO_OK;
        if (i + 1 < rs->n_rules) ok &= fputc('\n', f) != EOF;
        free(s);
    }
    return so_atomic_commit(&out, path, ok);
}

void so_ruleset_push(so_ruleset *rs, const so_rule *r)
{
    if (rs->n_rules == rs->cap_rules) {
        rs->cap_rules = rs->cap_rules ? rs->cap_rules * 2 : 64;
        rs->rules = so_xrealloc(rs->rules, (size_t)rs->cap_rules * sizeof *rs->rules);
    }
    rs->rules[rs->n_rules++] = *r;
}

void so_ruleset_free(so_ruleset *rs)
{
    free(rs->rules);
    memset(rs, 0, sizeof *rs);
}

/* ---------------- parsing ---------------- */

typedef struct lexer {
    const char *p, *end;
} lexer;

static void skip_ws(lexer *L)
{
    while (L->p < L->end && (*L->p == ' ' || *L->p == '\t' || *L->p == '\r')) L->p++;
}

static int is_id0(int c) { return isalpha(c) || c == '_'; }
static int is_id(int c) { return isalnum(c) || c == '_'; }

/* Reads an identifier into buf (n bytes); 0 if none or too long. */
static int lex_id(lexer *L, char *buf, size_t n)
{
    skip_ws(L);
    const char *s = L->p;
    if (s >= L->end || !is_id0((unsigned char)*s)) return 0;
    while (L->p < L->end && is_id((unsigned char)*L->p)) L->p++;
    size_t len = (size_t)(L->p - s);
    if (len + 1 > n) return 0;
    memcpy(buf, s, len);
    buf[len] = 0;
    return 1;
}

static int lex_ch(lexer *L, char c)
{
    skip_ws(L);
    if (L->p < L->end && *L->p == c) {
        L->p++;
        return 1;
    }
    return 0;
}

/* Integers in rule text are bounded (SO_RULE_INT_MAX, rule.h) so that the int32 shape arithmetic of the
   symbolic check cannot overflow (fuzz finding: "b-2147483648-2" overflowed a dimension constant). */

static int lex_int(lexer *L, int64_t *v)
{
    skip_ws(L);
    const char *s = L->p;
    if (s < L->end && (*s == '-' || *s == '+')) s++;
    if (s >= L->end || !isdigit((unsigned char)*s)) return 0;
    char tmp[32];
    size_t n = 0;
    const char *q = L->p;
    while (q < L->end && (isdigit((unsigned char)*q) || (q == L->p && (*q == '-' || *q == '+'))) && n < sizeof tmp - 1)
        tmp[n++] = *q++;
    tmp[n] = 0;
    errno = 0;
    long long x = strtoll(tmp, NULL, 10);
    if (errno || x > SO_RULE_INT_MAX || x < -SO_RULE_INT_MAX) return 0;
    *v = x;
    L->p = q;
    return 1;
}

static int lex_double(lexer *L, double *v)
{
    skip_ws(L);
    char tmp[64];
    size_t n = 0;
    const char *q = L->p;
    while (q < L->end && n < sizeof tmp - 1 && (isalnum((unsigned char)*q) || *q == '.' || *q == '-' || *q == '+'))
        tmp[n++] = *q++;
    tmp[n] = 0;
    if (!n) return 0;
    char *e;
    errno = 0;
    double d = strtod(tmp, &e);
    if (*e || errno) return 0;
    *v = d;
    L->p = q;
    return 1;
}

static int lex_float(lexer *L, float *v)
{
    double d;
    if (!lex_double(L, &d)) return 0;
    *v = (float)d;
    return 1;
}

static int at_eol(lexer *L)
{
    skip_ws(L);
    return L->p >= L->end;
}

typedef struct pstate {
    const char *path;
    int line;
    so_rule *r;
} pstate;

static so_status perr(pstate *S, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static so_status perr(pstate *S, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return so_errorc(SO_ERR_PARSE, "%s:%d: %s", S->path, S->line, msg);
}

static int find_sym(so_rule *r, const char *name, int create)
{
    for (int i = 0; i < r->n_syms; i++)
        if (strcmp(r->sym_names[i], name) == 0) return i;
    if (!create || r->n_syms >= SO_RULE_MAX_SYMS || strlen(name) >= sizeof r->sym_names[0]) return -1;
    memcpy(r->sym_names[r->n_syms], name, strlen(name) + 1); /* length checked above */
    return r->n_syms++;
}

/* dimension expression: term ('+' term)* with term = integer | symbol; '-' integer allowed after a symbol */
static so_status parse_dimx(pstate *S, lexer *L, so_dimx *d)
{
    memset(d, 0, sizeof *d);
    for (int first = 1;; first = 0) {
        int64_t v;
        char name[32];
        skip_ws(L);
        if (!first && L->p < L->end && *L->p == '-') {
            if (!lex_int(L, &v)) return perr(S, "bad dimension expression");
            if (d->c + v > SO_RULE_INT_MAX || d->c + v < -SO_RULE_INT_MAX) return perr(S, "dimension constant out of range");
            d->c += (int32_t)v;
        } else {
            if (!first && !lex_ch(L, '+')) break;
            if (lex_int(L, &v)) {
                if (lex_ch(L, '*')) { /* K*symbol: K copies of the symbol */
                    if (!lex_id(L, name, sizeof name)) return perr(S, "expected a symbol after '*'");
                    int s = find_sym(S->r, name, 1);
                    if (s < 0) return perr(S, "too many dimension symbols or symbol '%s' too long", name);
                    if (v < 1 || d->n_sym + v > SO_DIMX_MAX_SYM) return perr(S, "dimension expression has more than %d symbols", SO_DIMX_MAX_SYM);
                    for (int64_t q = 0; q < v; q++) d->sym[d->n_sym++] = (int8_t)s;
                } else {
                    if (d->c + v > SO_RULE_INT_MAX || d->c + v < -SO_RULE_INT_MAX) return perr(S, "dimension constant out of range");
                    d->c += (int32_t)v;
                }
            } else if (lex_id(L, name, sizeof name)) {
                int s = find_sym(S->r, name, 1);
                if (s < 0) return perr(S, "too many dimension symbols or symbol '%s' too long", name);
                if (d->n_sym >= SO_DIMX_MAX_SYM) return perr(S, "dimension expression has more than %d symbols", SO_DIMX_MAX_SYM);
                d->sym[d->n_sym++] = (int8_t)s;
            } else {
                return perr(S, "expected a dimension (integer or symbol)");
            }
        }
        skip_ws(L);
        if (L->p >= L->end || (*L->p != '+' && *L->p != '-')) break;
    }
    so_dimx_norm(d);
    return SO_OK;
}

static int name_taken(const so_rule *r, const char *name)
{
    for (int i = 0; i < r->n_inputs; i++)
        if (strcmp(r->inputs[i].name, name) == 0) return 1;
    for (int w = 0; w < 2; w++) {
        const so_pattern *p = w ? &r->dst : &r->src;
        for (int i = 0; i < p->n_nodes; i++)
            if (strcmp(p->nodes[i].name, name) == 0) return 1;
    }
    return 0;
}

static so_status parse_ref(pstate *S, lexer *L, const so_pattern *p, so_rref *ref)
{
    char name[32];
    if (!lex_id(L, name, sizeof name)) return perr(S, "expected a tensor name");
    int64_t slot = -1;
    if (L->p < L->end && *L->p == '.') {
        L->p++;
        if (!lex_int(L, &slot) || slot < 0) return perr(S, "bad output index after '%s.'", name);
    }
    so_rule *r = S->r;
    for (int i = 0; i < r->n_inputs; i++)
        if (strcmp(r->inputs[i].name, name) == 0) {
            if (slot > 0) return perr(S, "input '%s' has one output", name);
            ref->node = (int16_t)(-(i + 1));
            ref->slot = 0;
            return SO_OK;
        }
    for (int i = 0; i < p->n_nodes; i++)
        if (strcmp(p->nodes[i].name, name) == 0) {
            const so_rnode *n = &p->nodes[i];
            if (n->n_out > 1 && slot < 0) return perr(S, "'%s' has %d outputs: write %s.K", name, (int)n->n_out, name);
            if (slot < 0) slot = 0;
            if (slot >= n->n_out) return perr(S, "'%s' has no output %lld", name, (long long)slot);
            ref->node = (int16_t)i;
            ref->slot = (int16_t)slot;
            return SO_OK;
        }
    return perr(S, "unknown tensor '%s' (not an input or an earlier node of this side)", name);
}

static so_status parse_int_list(pstate *S, lexer *L, const char *key, int32_t *v, int n)
{
    for (int i = 0; i < n; i++) {
        int64_t x;
        if (i && !lex_ch(L, ',')) return perr(S, "%s= needs %d values", key, n);
        if (!lex_int(L, &x)) return perr(S, "%s= needs %d integers", key, n);
        v[i] = (int32_t)x;
    }
    return SO_OK;
}

static so_status parse_attr(pstate *S, lexer *L, so_rnode *n, const char *key)
{
    unsigned f = op_fields(n->op);
    so_attr *a = &n->attr;
    int64_t x;
#define NEED(bit)                                                                              \
    if (!(f & (bit))) return perr(S, "attribute '%s' is not used by %s", key, so_ops[n->op].name)
    if (strcmp(key, "kernel") == 0) { NEED(SO_A_KERNEL); return parse_int_list(S, L, key, a->kernel, 2); }
    if (strcmp(key, "stride") == 0) { NEED(SO_A_STRIDE); return parse_int_list(S, L, key, a->stride, 2); }
    if (strcmp(key, "pad") == 0) { NEED(SO_A_PAD); return parse_int_list(S, L, key, a->pad, 4); }
    if (strcmp(key, "dilation") == 0) { NEED(SO_A_DIL); return parse_int_list(S, L, key, a->dilation, 2); }
    if (strcmp(key, "group") == 0) { /* group=dw: depthwise (SO_RULE_GROUP_DW) */
        NEED(SO_A_GROUP);
        char id[8];
        if (lex_id(L, id, sizeof id)) {
            if (strcmp(id, "dw") != 0 || (n->op != SO_OP_CONV && n->op != SO_OP_CONV_NCHWC))
                return perr(S, "group= needs an integer, or dw on conv / conv_nchwc");
            a->group = SO_RULE_GROUP_DW;
            return SO_OK;
        }
    }
    struct { const char *k; unsigned bit; int32_t *p; } ints[] = {
        {"group", SO_A_GROUP, &a->group}, {"axis", SO_A_AXIS, &a->axis}, {"trans_a", SO_A_TRANS, &a->trans_a},
        {"trans_b", SO_A_TRANS, &a->trans_b}, {"keepdims", SO_A_KEEPDIMS, &a->keepdims},
        {"count_include_pad", SO_A_CIP, &a->count_include_pad}, {"ceil_mode", SO_A_CEIL, &a->ceil_mode},
        {"hidden", SO_A_HIDDEN, &a->hidden}, {"direction", SO_A_DIR, &a->direction}, {"mode", SO_A_MODE, &a->mode},
    };
    for (size_t i = 0; i < SO_ARRAY_LEN(ints); i++)
        if (strcmp(key, ints[i].k) == 0) {
            NEED(ints[i].bit);
            if (!lex_int(L, &x)) return perr(S, "%s= needs an integer", key);
            *ints[i].p = (int32_t)x;
            return SO_OK;
        }
    struct { const char *k; unsigned bit; float *p; } fl[] = {
        {"alpha", SO_A_ALPHA, &a->alpha}, {"beta", SO_A_ALPHA, &a->beta}, {"clip_min", SO_A_CLIP, &a->clip_min},
        {"clip_max", SO_A_CLIP, &a->clip_max}, {"epsilon", SO_A_EPS, &a->epsilon}, {"value", SO_A_VALUE, &a->value},
    };
    for (size_t i = 0; i < SO_ARRAY_LEN(fl); i++)
        if (strcmp(key, fl[i].k) == 0) {
            unsigned bit = fl[i].bit;
            if (bit == SO_A_CLIP && (f & SO_A_ACT)) bit = SO_A_ACT;
            NEED(bit);
            if (!lex_float(L, fl[i].p)) return perr(S, "%s= needs a number", key);
            return SO_OK;
        }
    if (strcmp(key, "act") == 0) {
        NEED(SO_A_ACT);
        char name[32];
        if (!lex_id(L, name, sizeof name)) return perr(S, "act= needs a name");
        for (int i = 0; i < SO_ACT_COUNT; i++)
            if (strcmp(so_act_names[i], name) == 0) {
                a->act = i;
                return SO_OK;
            }
        return perr(S, "unknown activation '%s'", name);
    }
    if ((f & SO_A_INTS) && n->op == SO_OP_NCHWC_OUT && strcmp(key, "ints") == 0) {
        /* nchwc_out ints=b,c: c is symbolic in rules (c = b*k, exact blocking), kept in dx */
        n->n_dx = 0;
        do {
            if (n->n_dx >= 2) return perr(S, "nchwc_out takes ints=b,c");
            if (parse_dimx(S, L, &n->dx[n->n_dx++]) != SO_OK) return SO_ERR;
        } while (lex_ch(L, ','));
        if (n->n_dx != 2 || n->dx[0].n_sym || n->dx[0].c < 1) return perr(S, "nchwc_out takes ints=b,c with a concrete b");
        return SO_OK;
    }
    if ((f & SO_A_INTS) && strcmp(key, ints_key(n->op)) == 0) {
        a->n_ints = 0;
        /* an empty list ("ints=" then a blank or the end of the line) is what so_rule_format
           prints for zero values (fuzz finding: format -> parse failed on it) */
        if (L->p >= L->end || *L->p == ' ' || *L->p == '\t' || *L->p == '\r') return SO_OK;
        do {
            if (a->n_ints >= SO_MAX_INTS) return perr(S, "too many values in %s=", key);
            if (!lex_int(L, &x)) return perr(S, "%s= needs integers", key);
            a->ints[a->n_ints++] = x;
        } while (lex_ch(L, ','));
        return SO_OK;
    }
    if ((f & SO_A_DIMS) && strcmp(key, dx_key(n->op)) == 0) {
        n->n_dx = 0;
        if (L->p >= L->end || *L->p == ' ' || *L->p == '\t' || *L->p == '\r') return SO_OK; /* empty, as above */
        do {
            if (n->n_dx >= SO_MAX_RANK) return perr(S, "too many values in %s=", key);
            if (parse_dimx(S, L, &n->dx[n->n_dx++]) != SO_OK) return SO_ERR;
        } while (lex_ch(L, ','));
        return SO_OK;
    }
#undef NEED
    return perr(S, "attribute '%s' is not used by %s", key, so_ops[n->op].name);
}

static so_status parse_node(pstate *S, lexer *L, so_pattern *p)
{
    so_rule *r = S->r;
    if (p->n_nodes >= SO_RULE_MAX_NODES) return perr(S, "more than %d nodes in a pattern", SO_RULE_MAX_NODES);
    so_rnode *n = &p->nodes[p->n_nodes];
    memset(n, 0, sizeof *n);
    if (!lex_id(L, n->name, sizeof n->name)) return perr(S, "expected a node name (at most 15 characters)");
    if (name_taken(r, n->name)) return perr(S, "name '%s' is already used", n->name);
    if (!lex_ch(L, '=')) return perr(S, "expected '=' after '%s'", n->name);
    char opname[32];
    if (!lex_id(L, opname, sizeof opname)) return perr(S, "expected an operator name");
    int op = so_op_from_name(opname);
    if (op < 0 || (so_ops[op].flags & (SO_F_SOURCE | SO_F_OPAQUE)))
        return perr(S, "unknown operator '%s'", opname);
    n->op = (so_op)op;
    if (!lex_ch(L, '(')) return perr(S, "expected '(' after %s", opname);
    if (!lex_ch(L, ')')) {
        do {
            if (n->n_in >= SO_RULE_MAX_IN) return perr(S, "more than %d inputs", SO_RULE_MAX_IN);
            if (parse_ref(S, L, p, &n->in[n->n_in]) != SO_OK) return SO_ERR;
            n->n_in++;
        } while (lex_ch(L, ','));
        if (!lex_ch(L, ')')) return perr(S, "expected ')' or ','");
    }
    char seen[24][32]; /* keys given on this line: a repeated key is an error (fuzz finding: an
                          overridden shape= left a symbol behind that format -> parse dropped) */
    int n_seen = 0;
    while (!at_eol(L)) {
        char key[32];
        if (!lex_id(L, key, sizeof key)) return perr(S, "expected key=value");
        for (int i = 0; i < n_seen; i++)
            if (strcmp(seen[i], key) == 0) return perr(S, "attribute '%s' given twice", key);
        if (n_seen < 24) memcpy(seen[n_seen++], key, sizeof key);
        if (!lex_ch(L, '=')) return perr(S, "expected '=' after '%s'", key);
        if (parse_attr(S, L, n, key) != SO_OK) return SO_ERR;
    }
    /* printed only with act=clip, so accepted only with it (fuzz finding: lost in format -> parse) */
    if (!(op_fields(op) & SO_A_CLIP) && n->attr.act != SO_ACT_CLIP && (n->attr.clip_min != 0 || n->attr.clip_max != 0))
        return perr(S, "clip_min/clip_max need act=clip");
    if (n->n_in < so_ops[op].min_in || n->n_in > so_ops[op].max_in)
        return perr(S, "%s takes %d..%d inputs, got %d", opname, so_ops[op].min_in, so_ops[op].max_in, (int)n->n_in);
    if (op == SO_OP_SPLIT) {
        if (n->n_dx < 1) return perr(S, "split needs sizes=");
        n->n_out = n->n_dx;
    } else {
        n->n_out = so_ops[op].n_out > 0 ? so_ops[op].n_out : 1;
    }
    p->n_nodes++;
    return SO_OK;
}

static so_status parse_rule_line(pstate *S, lexer *L, const char *kw, int *seen_dst, int *seen_map)
{
    so_rule *r = S->r;
    if (strcmp(kw, "input") == 0) {
        if (r->src.n_nodes || r->dst.n_nodes) return perr(S, "inputs must come before src/dst lines");
        if (r->n_inputs >= SO_RULE_MAX_INPUTS) return perr(S, "more than %d inputs", SO_RULE_MAX_INPUTS);
        so_rinput *in = &r->inputs[r->n_inputs];
        memset(in, 0, sizeof *in);
        if (!lex_id(L, in->name, sizeof in->name)) return perr(S, "expected an input name (at most 15 characters)");
        if (name_taken(r, in->name)) return perr(S, "name '%s' is already used", in->name);
        if (!lex_ch(L, '[')) return perr(S, "expected '[' after input name");
        if (!lex_ch(L, ']')) {
            do {
                if (in->rank >= SO_MAX_RANK) return perr(S, "rank above %d", SO_MAX_RANK);
                if (parse_dimx(S, L, &in->dim[in->rank++]) != SO_OK) return SO_ERR;
            } while (lex_ch(L, ','));
            if (!lex_ch(L, ']')) return perr(S, "expected ']'");
        }
        r->n_inputs++;
    } else if (strcmp(kw, "src") == 0) {
        if (*seen_dst) return perr(S, "src lines must come before dst lines");
        if (parse_node(S, L, &r->src) != SO_OK) return SO_ERR;
    } else if (strcmp(kw, "dst") == 0) {
        *seen_dst = 1;
        if (parse_node(S, L, &r->dst) != SO_OK) return SO_ERR;
    } else if (strcmp(kw, "map") == 0) {
        *seen_map = 1;
        if (r->n_outputs >= SO_RULE_MAX_OUTPUTS) return perr(S, "more than %d outputs", SO_RULE_MAX_OUTPUTS);
        if (parse_ref(S, L, &r->src, &r->src_out[r->n_outputs]) != SO_OK) return SO_ERR;
        if (r->src_out[r->n_outputs].node < 0) return perr(S, "map source must be a src node");
        if (!lex_ch(L, '-') || !lex_ch(L, '>')) return perr(S, "expected '->'");
        if (parse_ref(S, L, &r->dst, &r->dst_out[r->n_outputs]) != SO_OK) return SO_ERR;
        r->n_outputs++;
    } else if (strcmp(kw, "where") == 0) {
        if (r->n_pre >= SO_RULE_MAX_PRE) return perr(S, "more than %d preconditions", SO_RULE_MAX_PRE);
        char name[32];
        if (!lex_id(L, name, sizeof name)) return perr(S, "expected a symbol after 'where'");
        int s = find_sym(r, name, 0);
        if (s < 0) return perr(S, "unknown symbol '%s'", name);
        so_precond *p = &r->pre[r->n_pre];
        int64_t v, z;
        p->sym = s;
        if (lex_ch(L, '>')) {
            if (!lex_ch(L, '=') || !lex_int(L, &v)) return perr(S, "expected 'SYM >= K'");
            p->kind = SO_PRE_GE;
            p->value = v;
        } else if (lex_ch(L, '%')) {
            if (!lex_int(L, &v) || v < 1 || !lex_ch(L, '=') || !lex_ch(L, '=') || !lex_int(L, &z) || z != 0)
                return perr(S, "expected 'SYM %% K == 0' with K >= 1");
            p->kind = SO_PRE_DIV;
            p->value = v;
        } else {
            return perr(S, "expected '>=' or '%%' after '%s'", name);
        }
        r->n_pre++;
    } else if (strcmp(kw, "proof") == 0) {
        char st[32];
        if (!lex_id(L, st, sizeof st)) return perr(S, "expected proved, failed or unverified");
        if (strcmp(st, "unverified") == 0) {
            r->status = SO_RULE_UNVERIFIED;
            r->proof_seconds = 0;
        } else if (strcmp(st, "proved") == 0 || strcmp(st, "failed") == 0) {
            r->status = st[0] == 'p' ? SO_RULE_PROVED : SO_RULE_FAILED;
            double secs = -1;
            char unit[8];
            /* a proof time is bounded (1e9 s, ~31 years) so that it prints back as a short number */
            if (!at_eol(L) && (!lex_double(L, &secs) || !(secs >= 0 && secs <= 1e9) || !lex_id(L, unit, sizeof unit) || strcmp(unit, "s") != 0))
                return perr(S, "expected 'proof %s [SECONDS s]' with 0 <= SECONDS <= 1e9", st);
            r->proof_seconds = secs;
        } else {
            return perr(S, "unknown proof status '%s'", st);
        }
    } else if (strcmp(kw, "from") == 0) {
        skip_ws(L);
        size_t n = (size_t)(L->end - L->p);
        while (n && (L->p[n - 1] == ' ' || L->p[n - 1] == '\t' || L->p[n - 1] == '\r')) n--;
        if (n >= sizeof r->provenance) return perr(S, "provenance longer than %d characters", (int)sizeof r->provenance - 1);
        memcpy(r->provenance, L->p, n);
        r->provenance[n] = 0;
        L->p = L->end;
    } else {
        return perr(S, "unknown keyword '%s'", kw);
    }
    if (!at_eol(L)) return perr(S, "unexpected text at end of line");
    return SO_OK;
}

so_status so_rules_parse(const char *path, const char *text, size_t len, so_ruleset *out)
{
    so_ruleset rs;
    memset(&rs, 0, sizeof rs);
    so_rule cur;
    pstate S = {path ? path : "<rules>", 0, &cur};
    int in_rule = 0, seen_dst = 0, seen_map = 0, header_done = 0, rule_line = 0;
    size_t hlen = 0;
    const char *p = text, *end = text + len;
    const char *nul = memchr(text, 0, len); /* text is not C-string-safe past a NUL (fuzz finding) */
    if (nul) {
        int line = 1;
        for (const char *q = text; q < nul; q++) line += *q == '\n';
        return so_errorc(SO_ERR_PARSE, "%s:%d: NUL byte in rule text", S.path, line);
    }
    while (p < end) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        if (!e) e = end;
        S.line++;
        lexer L = {p, e};
        const char *next = e < end ? e + 1 : end;
        skip_ws(&L);
        if (L.p >= L.end) {
            p = next;
            continue;
        }
        if (*L.p == '#') {
            if (!header_done && !in_rule) {
                const char *c = L.p + 1;
                if (c < e && *c == ' ') c++;
                size_t n = (size_t)(e - c);
                while (n && c[n - 1] == '\r') n--;
                if (hlen + n + 2 < sizeof rs.header) {
                    if (hlen) rs.header[hlen++] = '\n';
                    memcpy(rs.header + hlen, c, n);
                    hlen += n;
                    rs.header[hlen] = 0;
                }
            }
            p = next;
            continue;
        }
        header_done = 1;
        char kw[32];
        if (!lex_id(&L, kw, sizeof kw)) {
            perr(&S, "expected a keyword");
            goto fail;
        }
        if (!in_rule) {
            int64_t id;
            if (strcmp(kw, "rule") != 0) {
                perr(&S, "expected 'rule N'");
                goto fail;
            }
            if (!lex_int(&L, &id) || !at_eol(&L)) {
                perr(&S, "expected 'rule N'");
                goto fail;
            }
            memset(&cur, 0, sizeof cur);
            cur.id = rs.n_rules + 1;
            cur.line = S.line;
            rule_line = S.line;
            in_rule = 1;
            seen_dst = seen_map = 0;
        } else if (strcmp(kw, "end") == 0) {
            if (!at_eol(&L)) {
                perr(&S, "unexpected text after 'end'");
                goto fail;
            }
            if (cur.src.n_nodes == 0) {
                perr(&S, "rule has no src nodes");
                goto fail;
            }
            if (cur.n_outputs == 0) {
                perr(&S, "rule has no map lines");
                goto fail;
            }
            if (so_rule_check(&cur) != SO_OK) {
                char msg[600];
                snprintf(msg, sizeof msg, "%s", so_error());
                so_errorc(SO_ERR_PARSE, "%s:%d: %s", S.path, rule_line, msg);
                goto fail;
            }
            so_ruleset_push(&rs, &cur);
            in_rule = 0;
        } else if (strcmp(kw, "rule") == 0) {
            perr(&S, "'rule' inside a rule (missing 'end'?)");
            goto fail;
        } else {
            if (seen_map && (strcmp(kw, "src") == 0 || strcmp(kw, "dst") == 0 || strcmp(kw, "input") == 0)) {
                perr(&S, "'%s' after 'map'", kw);
                goto fail;
            }
            if (parse_rule_line(&S, &L, kw, &seen_dst, &seen_map) != SO_OK) goto fail;
        }
        p = next;
    }
    if (in_rule) {
        S.line = rule_line;
        perr(&S, "rule is not closed by 'end'");
        goto fail;
    }
    XXH128_hash_t th = XXH3_128bits(text, len);
    rs.text_hash[0] = th.high64;
    rs.text_hash[1] = th.low64;
    rs.has_text_hash = 1;
    *out = rs;
    return SO_OK;
fail:
    so_ruleset_free(&rs);
    return SO_ERR_PARSE;
}

so_status so_rules_load(const char *path, so_ruleset *out)
{
    char *buf;
    size_t n;
    /* a regular file (a FIFO or /dev/zero is refused without reading) of at most SO_RULES_MAX_BYTES */
    if (so_read_file_max(path, SO_RULES_MAX_BYTES, &buf, &n) != SO_OK) return so_error_code();
    so_status st = so_rules_parse(path, buf, n, out);
    free(buf);
    return st;
}

/* ---------------- misc ---------------- */

void so_rule_reverse(const so_rule *r, so_rule *out)
{
    so_rule t = *r;
    t.src = r->dst;
    t.dst = r->src;
    for (int k = 0; k < r->n_outputs; k++) {
        t.src_out[k] = r->dst_out[k];
        t.dst_out[k] = r->src_out[k];
    }
    *out = t;
}

so_status so_rule_pick_syms(const so_rule *r, uint64_t seed, int64_t max, int64_t *vals)
{
    uint64_t st = seed * 0x2545f4914f6cdd1dULL + 7;
    for (int s = 0; s < r->n_syms; s++) {
        int64_t lo = 1, div = 1;
        for (int k = 0; k < r->n_pre; k++) {
            if (r->pre[k].sym != s) continue;
            if (r->pre[k].kind == SO_PRE_GE) lo = SO_MAX(lo, r->pre[k].value);
            else div = div * r->pre[k].value; /* products: fine for the small moduli used */
        }
        int64_t v = seed == 0 ? lo + (s % 3) : lo + (int64_t)(so_rng_next(&st) % (uint64_t)(max > lo ? max - lo + 1 : 1));
        if (div > 1) v = ((v + div - 1) / div) * div;
        if (v < lo) v += div;
        for (int k = 0; k < r->n_pre; k++)
            if (r->pre[k].sym == s && r->pre[k].kind == SO_PRE_DIV && v % r->pre[k].value)
                return so_errorf("rule %d: cannot satisfy the preconditions on '%s'", (int)r->id, r->sym_names[s]);
        vals[s] = v;
    }
    return SO_OK;
}

void so_rule_canon_syms(so_rule *r)
{
    int map[SO_RULE_MAX_SYMS], n = 0;
    for (int i = 0; i < SO_RULE_MAX_SYMS; i++) map[i] = -1;
#define VISIT(d)                                                        \
    do {                                                                \
        so_dimx *d_ = (d);                                              \
        for (int q = 0; q < d_->n_sym; q++)                             \
            if (map[d_->sym[q]] < 0) map[d_->sym[q]] = n++;             \
    } while (0)
    /* printed order: inputs, then src nodes, dst nodes (dx lists); within an expression the
       printed order is sorted by symbol index, so visit after sorting by old index */
    for (int i = 0; i < r->n_inputs; i++)
        for (int k = 0; k < r->inputs[i].rank; k++) VISIT(&r->inputs[i].dim[k]);
    for (int w = 0; w < 2; w++) {
        so_pattern *p = w ? &r->dst : &r->src;
        for (int i = 0; i < p->n_nodes; i++)
            for (int k = 0; k < p->nodes[i].n_dx; k++) VISIT(&p->nodes[i].dx[k]);
    }
    for (int s = 0; s < r->n_syms; s++)
        if (map[s] < 0) map[s] = n++;
    char names[SO_RULE_MAX_SYMS][12];
    memcpy(names, r->sym_names, sizeof names);
    for (int s = 0; s < r->n_syms; s++) memcpy(r->sym_names[map[s]], names[s], sizeof names[s]);
#define REMAP(d)                                                        \
    do {                                                                \
        so_dimx *d_ = (d);                                              \
        for (int q = 0; q < d_->n_sym; q++) d_->sym[q] = (int8_t)map[d_->sym[q]]; \
        so_dimx_norm(d_);                                               \
    } while (0)
    for (int i = 0; i < r->n_inputs; i++)
        for (int k = 0; k < r->inputs[i].rank; k++) REMAP(&r->inputs[i].dim[k]);
    for (int w = 0; w < 2; w++) {
        so_pattern *p = w ? &r->dst : &r->src;
        for (int i = 0; i < p->n_nodes; i++)
            for (int k = 0; k < p->nodes[i].n_dx; k++) REMAP(&p->nodes[i].dx[k]);
    }
    for (int k = 0; k < r->n_pre; k++) r->pre[k].sym = map[r->pre[k].sym];
#undef VISIT
#undef REMAP
}

static int dims_eq(const so_dimx *a, const so_dimx *b, int n)
{
    for (int i = 0; i < n; i++)
        if (!so_dimx_eq(&a[i], &b[i])) return 0;
    return 1;
}

static int pattern_eq(const so_pattern *a, const so_pattern *b)
{
    if (a->n_nodes != b->n_nodes) return 0;
    for (int i = 0; i < a->n_nodes; i++) {
        const so_rnode *x = &a->nodes[i], *y = &b->nodes[i];
        if (x->op != y->op || x->n_in != y->n_in || x->n_out != y->n_out || x->n_dx != y->n_dx) return 0;
        if (memcmp(x->in, y->in, sizeof(so_rref) * (size_t)x->n_in) != 0) return 0;
        if (memcmp(&x->attr, &y->attr, sizeof x->attr) != 0) return 0;
        if (!dims_eq(x->dx, y->dx, x->n_dx) || strcmp(x->name, y->name) != 0) return 0;
    }
    return 1;
}

int so_rule_eq(const so_rule *a, const so_rule *b)
{
    if (a->n_syms != b->n_syms || a->n_inputs != b->n_inputs || a->n_outputs != b->n_outputs || a->n_pre != b->n_pre ||
        a->status != b->status || strcmp(a->provenance, b->provenance) != 0)
        return 0;
    for (int s = 0; s < a->n_syms; s++)
        if (strcmp(a->sym_names[s], b->sym_names[s]) != 0) return 0;
    for (int i = 0; i < a->n_inputs; i++) {
        const so_rinput *x = &a->inputs[i], *y = &b->inputs[i];
        if (strcmp(x->name, y->name) != 0 || x->rank != y->rank || !dims_eq(x->dim, y->dim, x->rank)) return 0;
    }
    if (!pattern_eq(&a->src, &b->src) || !pattern_eq(&a->dst, &b->dst)) return 0;
    for (int k = 0; k < a->n_outputs; k++)
        if (memcmp(&a->src_out[k], &b->src_out[k], sizeof(so_rref)) || memcmp(&a->dst_out[k], &b->dst_out[k], sizeof(so_rref)))
            return 0;
    for (int k = 0; k < a->n_pre; k++)
        if (a->pre[k].kind != b->pre[k].kind || a->pre[k].sym != b->pre[k].sym || a->pre[k].value != b->pre[k].value)
            return 0;
    return 1;
}

/* ---------------- instantiation ---------------- */

so_status so_rule_instantiate(const so_rule *r, int which, const int64_t *sym_vals, so_model **out)
{
    *out = NULL;
    for (int k = 0; k < r->n_pre; k++) {
        int64_t v = sym_vals[r->pre[k].sym];
        if (r->pre[k].kind == SO_PRE_GE && v < r->pre[k].value)
            return so_errorf("rule %d: precondition %s >= %lld does not hold", (int)r->id, r->sym_names[r->pre[k].sym], (long long)r->pre[k].value);
        if (r->pre[k].kind == SO_PRE_DIV && v % r->pre[k].value)
            return so_errorf("rule %d: precondition %s %% %lld == 0 does not hold", (int)r->id, r->sym_names[r->pre[k].sym], (long long)r->pre[k].value);
    }
    for (int s = 0; s < r->n_syms; s++)
        if (sym_vals[s] < 1) return so_errorf("rule %d: symbol '%s' must be >= 1", (int)r->id, r->sym_names[s]);
    so_model *m = so_model_new("<rule>");
    so_graph *g = so_graph_new(m);
    m->graph = g;
    m->n_inputs = r->n_inputs;
    m->inputs = so_arena_alloc(&m->arena, sizeof *m->inputs * (size_t)(r->n_inputs + 1));
    int32_t inode[SO_RULE_MAX_INPUTS];
    for (int i = 0; i < r->n_inputs; i++) {
        const so_rinput *ri = &r->inputs[i];
        int64_t dims[SO_MAX_RANK];
        for (int k = 0; k < ri->rank; k++) {
            dims[k] = so_dimx_eval(&ri->dim[k], sym_vals);
            if (dims[k] < 1) {
                so_model_free(m);
                return so_errorf("rule %d: input '%s' dim %d is %lld", (int)r->id, ri->name, k, (long long)dims[k]);
            }
        }
        m->inputs[i].name = so_arena_strdup(&m->arena, ri->name);
        m->inputs[i].shape = so_shape_make(ri->rank, dims);
        inode[i] = so_graph_add(g, SO_OP_INPUT, NULL, 0, 1, NULL, i, m->inputs[i].name);
    }
    const so_pattern *p = which ? &r->dst : &r->src;
    int32_t pnode[SO_RULE_MAX_NODES];
    for (int i = 0; i < p->n_nodes; i++) {
        const so_rnode *n = &p->nodes[i];
        so_edge in[SO_RULE_MAX_IN];
        for (int k = 0; k < n->n_in; k++) {
            so_rref ref = n->in[k];
            in[k].node = ref.node < 0 ? inode[-(ref.node + 1)] : pnode[ref.node];
            in[k].slot = ref.node < 0 ? 0 : ref.slot;
        }
        so_attr a = n->attr;
        if (n->n_dx) {
            a.n_ints = n->n_dx;
            for (int k = 0; k < n->n_dx; k++) a.ints[k] = so_dimx_eval(&n->dx[k], sym_vals);
        }
        if (a.group == SO_RULE_GROUP_DW && (n->op == SO_OP_CONV || n->op == SO_OP_CONV_NCHWC)) { /* group = the kernel's channels */
            if (so_graph_infer_all(g) != SO_OK) {
                char msg[600];
                snprintf(msg, sizeof msg, "%s", so_error());
                so_model_free(m);
                return so_errorf("rule %d (%s): %s", (int)r->id, which ? "dst" : "src", msg);
            }
            a.group = so_rule_group_of(&a, &g->nodes[in[1].node].out[in[1].slot]);
        }
        pnode[i] = so_graph_add(g, n->op, in, n->n_in, n->n_out, so_model_attr(m, &a), -1,
                                so_arena_strdup(&m->arena, n->name));
    }
    m->n_outputs = r->n_outputs;
    m->outputs = so_arena_alloc(&m->arena, sizeof *m->outputs * (size_t)r->n_outputs);
    free(g->outputs); /* so_graph_new sized it for the model's (then zero) outputs */
    g->outputs = so_xcalloc((size_t)r->n_outputs, sizeof *g->outputs);
    for (int k = 0; k < r->n_outputs; k++) {
        so_rref ref = which ? r->dst_out[k] : r->src_out[k];
        g->outputs[k].node = ref.node < 0 ? inode[-(ref.node + 1)] : pnode[ref.node];
        g->outputs[k].slot = ref.node < 0 ? 0 : ref.slot;
        char nm[16];
        snprintf(nm, sizeof nm, "out%d", k);
        m->outputs[k].name = so_arena_strdup(&m->arena, nm);
    }
    if (so_graph_infer_all(g) != SO_OK) {
        char msg[600];
        snprintf(msg, sizeof msg, "%s", so_error());
        so_model_free(m);
        return so_errorf("rule %d (%s): %s", (int)r->id, which ? "dst" : "src", msg);
    }
    for (int k = 0; k < r->n_outputs; k++) m->outputs[k].shape = g->nodes[g->outputs[k].node].out[g->outputs[k].slot];
    *out = m;
    return SO_OK;
}

const char *so_rule_ints_key(so_op op) { return ints_keys[op]; }

int32_t so_rule_group_of(const so_attr *a, const so_shape *w)
{
    if (a->group != SO_RULE_GROUP_DW) return a->group;
    return w->rank == 4 ? (int32_t)w->dim[0] : 0; /* 0: no depthwise kernel (the shape check then fails) */
}
