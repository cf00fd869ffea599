/* rule.h - the rule language: a substitution (source pattern -> target pattern over the same
   input variables), shape symbols and preconditions, provenance and proof status; text I/O. */
#ifndef SO_RULE_H
#define SO_RULE_H

#include "../src/graph.h"
#include "../src/shape.h"

#define SO_RULE_MAX_NODES   8   /* per pattern */
#define SO_RULE_MAX_IN      6   /* inputs per pattern node (batchnorm has 5) */
#define SO_RULE_MAX_INPUTS  8   /* tensor variables per rule */
#define SO_RULE_MAX_OUTPUTS 4
#define SO_RULE_MAX_SYMS    16  /* dimension symbols per rule */
#define SO_RULE_MAX_PRE     8

/* A dimension expression: c + sum of symbols sym[0..n_sym). Symbols index so_rule.sym_names.
   Concrete dims have n_sym == 0. A symbol may repeat: a blocked layout's channel count is
   b*k (b = 8 or 16 copies of k; printed "8*k"), and a concat of two such values b*k + b*l. */
#define SO_DIMX_MAX_SYM 32
typedef struct so_dimx {
    int32_t c;
    int32_t n_sym;
    int8_t sym[SO_DIMX_MAX_SYM];
} so_dimx;

/* A rule input: a tensor variable with a symbolic shape. Repeated symbols are equality
   constraints on the matched tensors' dims. */
typedef struct so_rinput {
    char name[16];
    int32_t rank;
    so_dimx dim[SO_MAX_RANK];
} so_rinput;

/* Reference inside a pattern: node >= 0 -> output `slot` of pattern node `node`;
   node < 0 -> rule input -(node + 1) (slot 0). */
typedef struct so_rref {
    int16_t node, slot;
} so_rref;

/* A depthwise conv in rules (conv, conv_nchwc): `group=dw` (attr.group == SO_RULE_GROUP_DW), a conv whose
   group is its channel count — kernel W[C,1,kh,kw] on C input channels, C output channels, group = C = W.dim0 —
   so one rule covers every depthwise conv whatever its (symbolic) channel count. The matcher binds it to a
   graph conv with group == W.dim0 == its input channels and W.dim1 == 1; a rewrite and an instantiated rule
   resolve it from the kernel's shape (so_rule_group_of). Never in a graph. */
#define SO_RULE_GROUP_DW (-1)
/* The concrete group of a rule node's attributes a whose kernel has shape w: a->group, or w's dim 0 for group=dw. */
int32_t so_rule_group_of(const so_attr *a, const so_shape *w);

typedef struct so_rnode {
    so_op op;
    int32_t n_in, n_out;
    so_rref in[SO_RULE_MAX_IN];
    so_attr attr;               /* concrete attribute values (zero where unused) */
    int32_t n_dx;               /* symbolic int list: SPLIT sizes, CONST_* shape; else 0 */
    so_dimx dx[SO_MAX_RANK];
    char name[16];              /* the variable name used in the text (for printing) */
} so_rnode;

typedef struct so_pattern {
    int32_t n_nodes;            /* nodes in topological order */
    so_rnode nodes[SO_RULE_MAX_NODES];
} so_pattern;

/* Precondition on a symbol: kind GE: sym >= value;  kind DIV: sym % value == 0. */
typedef enum so_pre_kind { SO_PRE_GE = 1, SO_PRE_DIV = 2 } so_pre_kind;
typedef struct so_precond {
    int32_t kind, sym;
    int64_t value;
} so_precond;

typedef enum so_rule_status { SO_RULE_UNVERIFIED = 0, SO_RULE_PROVED = 1, SO_RULE_FAILED = 2 } so_rule_status;

typedef struct so_rule {
    int32_t id;                 /* position in its file, 1-based */
    int32_t line;               /* line of "rule" in the file, for messages */
    int32_t n_syms;             /* every symbol is implicitly >= 1 */
    char sym_names[SO_RULE_MAX_SYMS][12];
    int32_t n_inputs;
    so_rinput inputs[SO_RULE_MAX_INPUTS];
    so_pattern src, dst;
    int32_t n_outputs;          /* src_out[k] is replaced by dst_out[k] */
    so_rref src_out[SO_RULE_MAX_OUTPUTS], dst_out[SO_RULE_MAX_OUTPUTS];
    int32_t n_pre;
    so_precond pre[SO_RULE_MAX_PRE];
    int32_t status;             /* so_rule_status */
    double proof_seconds;
    char provenance[96];        /* e.g. "generate max-ops=3 seed=1" */
} so_rule;

typedef struct so_ruleset {
    so_rule *rules;             /* malloc'd */
    int32_t n_rules, cap_rules;
    char header[256];           /* free text from the file's leading comment lines */
    int32_t has_text_hash;      /* set by so_rules_parse: */
    uint64_t text_hash[2];      /* XXH3-128 of exactly the text parsed (verifier/proofs.c keys a whole file's proofs by it) */
} so_ruleset;

/* Parses rule text. Errors are one line: "PATH:LINE: what is wrong". Every rule is checked
   for well-formedness (refs in range, arity per ops.def, symbolic shapes type-check).
   On success *out owns its rules (so_ruleset_free). */
so_status so_rules_parse(const char *path, const char *text, size_t len, so_ruleset *out);
/* Largest rule file read (bytes): ~180,000 rules of ~370 bytes of text. A rule holds ~10 KB in
   memory (fixed-size patterns), so this also bounds the rule set near 2 GB. */
#define SO_RULES_MAX_BYTES ((size_t)64 << 20)
/* Reads and parses a file: a regular file of at most SO_RULES_MAX_BYTES (FIFOs and devices are
   refused without waiting or reading). */
so_status so_rules_load(const char *path, so_ruleset *out);
/* Text of one rule (malloc'd, caller frees), exactly the format so_rules_parse reads. */
char *so_rule_format(const so_rule *r);
/* What the rule states, for proof digests (verifier/proofs.h): the same text without the rule's
   number, its proof line and its provenance (malloc'd). */
char *so_rule_format_canon(const so_rule *r);

/* 1 if every mapped output of r is the same expression on both sides (the same operators,
   attributes and inputs, node names and order aside): a rule that rewrites nothing. The generator
   must never emit one (tests/test_gen.c checks the shipped set). */
int so_rule_same_sides(const so_rule *r);
/* Writes a whole set atomically (temporary file + rename). */
so_status so_rules_save(const so_ruleset *rs, const char *path);
void so_ruleset_push(so_ruleset *rs, const so_rule *r);
void so_ruleset_free(so_ruleset *rs);

/* Instantiates the source (which = 0) or target (which = 1) pattern as a concrete graph
   over model m with every symbol set to sym_vals[s]: INPUT nodes for the rule inputs
   (m->inputs are replaced by the rule inputs' concrete shapes), pattern nodes, and the
   mapped outputs as graph outputs. Fails if the preconditions or shapes do not hold.
   Caller frees the model (which owns the graph in m->graph). */
so_status so_rule_instantiate(const so_rule *r, int which, const int64_t *sym_vals, so_model **out);

/* ---- helpers (added by gen; see RULES.md); the shape check is rules/rule_shape.h ---- */
/* The same rule with source and target swapped (rules are equivalences; a search may
   apply either direction). */
void so_rule_reverse(const so_rule *r, so_rule *out);
/* Picks symbol values satisfying the preconditions (each >= 1), pseudo-random from seed
   in [1, max]; variant 0 gives small deterministic values. Returns SO_ERR if impossible. */
so_status so_rule_pick_syms(const so_rule *r, uint64_t seed, int64_t max, int64_t *vals);
/* Value of a dimension expression; normalisation (symbols sorted); equality. */
int64_t so_dimx_eval(const so_dimx *d, const int64_t *sym_vals);
void so_dimx_norm(so_dimx *d);
int so_dimx_eq(const so_dimx *a, const so_dimx *b);
/* Rule text bounds its integers so that the int32 shape arithmetic of the symbolic check cannot overflow. */
#define SO_RULE_INT_MAX (1 << 24)
/* d as rule text with r's symbol names ("8*k+1"). */
void so_dimx_print(so_sbuf *b, const so_dimx *d, const so_rule *r);
/* Renumbers symbols in order of first appearance in the printed text (inputs first), so
   that format -> parse reproduces the rule exactly. */
void so_rule_canon_syms(so_rule *r);
/* Structural equality of two rules (ignores id, line, proof time). */
int so_rule_eq(const so_rule *a, const so_rule *b);

/* ops.def decision of the rule language, for the coverage test and docs/OPERATORS.md: the key
   of op's int list in rule files ("perm", "axes", "pads", "ints"; NULL if it has none). Whether the
   rule check has a shape rule for op: so_rule_has_shape_rule (rules/rule_shape.h). */
const char *so_rule_ints_key(so_op op);

#endif
