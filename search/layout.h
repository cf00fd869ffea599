/* layout.h - blocked-channel (NCHWc) layout placement: rewrites a graph so that convs, pools and the element-wise ops between them run on blocked values, with reorders only where a plain operator needs NCHW. */
#ifndef SO_LAYOUT_H
#define SO_LAYOUT_H

#include "graph.h"
#include "cost.h"
#include "match.h"

/* What so_layout_nchwc did. */
typedef struct so_layout_stats {
    int32_t convs;      /* CONV -> CONV_NCHWC (a following BatchNormalization folded into its weights) */
    int32_t bn_folded;
    int32_t pools;      /* MAXPOOL / AVGPOOL / GLOBALAVGPOOL -> blocked forms */
    int32_t elementwise; /* element-wise ops run on blocked values */
    int32_t concats;    /* channel CONCAT -> CONCAT_NCHWC */
    int32_t reorders;   /* NCHWC_IN + NCHWC_OUT inserted */
} so_layout_stats;

/* Which convs may be blocked: keep[i] != 0 leaves conv node i of g in NCHW (NULL: block all that qualify). */
/* Builds *out, a new graph over g's model (new weights for folded batchnorms are added to the model), in
   which every conv with constant weights and a bias-less or constant bias whose groups are 1, depthwise, or
   multiples of b on both sides runs as CONV_NCHWC with block size b; a BatchNormalization that is the only
   user of such a conv is folded into new weights; pools and same-shape element-wise ops whose input is
   blocked stay blocked; NCHWC_IN / NCHWC_OUT are inserted where a value changes layout (once per value).
   g must be topologically sorted with shapes inferred. *out is owned by the caller (so_graph_free). */
so_status so_layout_nchwc(const so_graph *g, int b, const char *keep, so_graph **out, so_layout_stats *st);

/* Is cand (priced cc under cm) worth taking over cur (priced cb) in a layout refinement (a conv left
   in NCHW, api/optimize.c)? Under the measured model only when the nodes the change brings in cost
   clearly less than the nodes it takes out (so_cost_graph_diff, so_cost_clearly_lower: beyond
   the measurement noise), so close calls stay blocked; under the deterministic flops model any gain
   (cc < cb). Since session 23 the cached prices (each configuration timed once, at whatever moment it was
   first needed) decide alone only a change they price at SO_LAYOUT_RETIME_BELOW or more of what it replaces
   or more (since session 24: the band around the threshold 1 - SO_COST_NOISE reaches that far on the dearer side);
   any other is decided by re-timing both sides' changed configurations paired and
   interleaved (so_cost_paired_ratio: each side at its fastest, their ratio must be below 1 - SO_COST_NOISE), so
   a blocked conv priced 2-4x its in-model time under load (session 22, ResNet-50's 1x1s on a loaded VM) is
   not unblocked, nor the neighbours whose reorders that unblock made free. The result is recorded with the
   disk cache: a later run on it decides that change the same way. A cost table's prices decide alone, and so do
   the cached prices once the re-timing budget is spent (cm->paired_budget, optimize's layout_retime_budget: the
   report's search_detail.layout_paired_cut counts those decisions) for a change priced dearer (not made), while a
   change priced cheaper is then not made either (unconfirmed: the cascading error); the dearer side of the band is
   re-timed only while less than half the budget is spent.
   at_g/at name the conv decided, printed with the two sides (and the paired ratio) when SO_DEBUG_LAYOUT is set. */
int so_layout_gain(so_cost_model *cm, const so_graph *cand, double cc, const so_graph *cur, double cb, const so_graph *at_g, int32_t at);
/* The cached-price ratio (changed nodes new / old) from which a layout change is rejected without re-timing: 2,
   i.e. every change priced cheaper, and the ones priced dearer up to 2 / (1 - SO_COST_NOISE) = 2.67x the threshold.
   The re-timing guards against the error that cascades (a false unblock makes its neighbours' reorders free,
   session 22), and since session 24 against the other (a conv whose plain form is clearly cheaper priced dearer under
   load: one ResNet-50 run priced a plain layer4 conv2 at 2.53 and kept it blocked, another re-timed it 0.525 and
   unblocked it). Session 23 re-timed only below 1 because re-timing everything below 1 / (1 - SO_COST_NOISE) took
   11.7 s of paired timing on MobileNet-v2 at load 7.5; now the budget (cm->paired_budget) bounds that. */
#define SO_LAYOUT_RETIME_BELOW 2.0

/* Does the layout search's best graph (priced cost_best under cm; NULL: it found nothing) replace the placement it
   started from (placed, priced cost_placed; api/optimize.c place_layout)? The same test as so_layout_gain: under the
   measured model only when the nodes the search changed cost clearly less than the ones it replaced (beyond
   SO_COST_NOISE; re-timed paired as there), under the flops model any gain. Without it the layout search took any
   measured gain, and on ResNet-50 (Intel Xeon model 207, session 16) it left 7 of layer 3's 1x1 convs in NCHW with a
   reorder pair each for a priced 1.4 % (within the noise of two timings) while the all-blocked graph ran faster in
   the model at 1 and 2 threads. Printed with both sides when SO_DEBUG_LAYOUT is set. */
int so_layout_search_keep(so_cost_model *cm, const so_graph *best, double cost_best, const so_graph *placed, double cost_placed);

/* Is graph a (priced ca) cheaper than graph b (priced cb)? --layout auto's choices between placements
   (api/optimize.c place_layout; ties keep b): the pass's against the rules' placement, and the placed graph against
   the searched graph left plain (whether the layout is applied at all). Flops model or cost table: ca < cb. Measured
   with a disk cache: the cached prices decide unless the ratio of the two graphs' changed nodes (a's / b's,
   so_cost_graph_diff) is in [lo, hi); there the paired re-timing (so_cost_paired_ratio, recorded like
   so_layout_gain's) decides: a when its ratio is below 1. The pass against the rules: lo = 1 - SO_COST_NOISE,
   hi = 1 / (1 - SO_COST_NOISE) (a close call). The placed graph against the plain one: lo = 1, hi = +inf (every
   "not cheaper": on session 23's loaded VM one optimize of ResNet-50 priced its blocked placement at 377 ms against
   196 plain and wrote the model all NCHW). With the re-timing budget spent (SO_PAIRED_CUT) the cached prices decide,
   except that the apply decision (hi = +inf) then applies the placement. *retimed (may be NULL): 1 when the paired re-timing decided (the
   report's layout.choice_retimed / apply_retimed). Printed when SO_DEBUG_LAYOUT is set. */
int so_layout_prefer(so_cost_model *cm, const so_graph *a, double ca, const so_graph *b, double cb, double lo, double hi, int *retimed);

/* *out = g with every BatchNormalization that is the only user of a conv so_layout_nchwc could block (block b)
   folded into new conv weights and bias (added to g's model once), in NCHW. so_layout_nchwc on the result
   adds no large weights, so a caller trying several `keep` sets folds once. *n_folded: how many. */
so_status so_layout_fold_bn(const so_graph *g, int b, so_graph **out, int32_t *n_folded);

/* ---- rule-driven placement: the same decision made by applying proven layout rules ----
   A rule's class for block b: how so_layout_by_rules uses it. With plain = the non-layout operators of
   a pattern whose output is not blocked (rank != 5) and reorders = its nchwc_in / nchwc_out nodes:
   REDUCE   layout rule of block b, plain equal, fewer reorders (a round trip cancels; two reorders
            before an add / concat become one after it);
   PUSH     fewer plain operators, no more reorders (a reorder moves past an element-wise op or a
            conv, which then runs blocked), or a conv+batchnorm fold (dst has bnfold_w);
   SEED     fewer plain operators at the price of more reorders (a plain conv becomes
            nchwc_out . conv_nchwc . nchwc_in; add(nchwc_out(P), X) becomes nchwc_out(add(P, nchwc_in(X))));
   UNBLOCK  a single conv_nchwc becomes nchwc_in . conv . nchwc_out (used by the refinement). */
enum { SO_LAYOUT_RULE_NONE = 0, SO_LAYOUT_RULE_REDUCE, SO_LAYOUT_RULE_PUSH, SO_LAYOUT_RULE_SEED, SO_LAYOUT_RULE_UNBLOCK };
int so_layout_rule_class(const so_rule *r, int b);
/* The block of a layout rule (the lanes of its reorders or blocked inputs), 0 if it has no layout operator. */
int so_layout_rule_block(const so_rule *r);

/* Builds *out from g by applying rules only: repeatedly the first match of a REDUCE rule, else of a
   PUSH rule, else of a SEED rule, until none applies. Every step lowers (plain operators, reorders)
   lexicographically, so it ends. counts (if not NULL, n_rules entries) is incremented per application of
   rules[i]; st counts the result's blocked convs, reorders, blocked element-wise ops and concats. The
   rules are the search's list (each rule and its reverse); their matches need exact blocking (channels
   multiples of b), so a conv with other channel counts stays plain. *out: caller frees. */
so_status so_layout_by_rules(const so_graph *g, const so_rule *rules, int32_t n_rules, int b, so_fold_ctx *fc,
                             so_graph **out, int32_t *counts, so_layout_stats *st);

/* *out = g with conv_nchwc node `node` run plain again by an UNBLOCK rule (nchwc_in . conv . nchwc_out),
   *rule_used its index; *out NULL when no UNBLOCK rule matches there. */
so_status so_layout_unblock_at(const so_graph *g, const so_rule *rules, int32_t n_rules, int b, int32_t node, so_fold_ctx *fc,
                               so_graph **out, int32_t *rule_used);

/* *out = g after the rules of block b that lower the reorders (REDUCE rules, and those that run the
   blocked operators of a reorder round trip plain again) are applied until none matches: what an
   UNBLOCK leaves between two reorders that then cancel (two adjacent convs unblocked one after the
   other end with no reorder between them). counts as so_layout_by_rules. */
so_status so_layout_cancel(const so_graph *g, const so_rule *rules, int32_t n_rules, int b, so_fold_ctx *fc, so_graph **out,
                           int32_t *counts);

#endif
