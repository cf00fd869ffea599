/* layout.h - blocked-channel (NCHWc) layout placement: rewrites a graph so that convs, pools and the element-wise ops between them run on blocked values, with reorders only where a plain operator needs NCHW. */
#ifndef SO_LAYOUT_H
#define SO_LAYOUT_H

#include "graph.h"

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

/* *out = g with every BatchNormalization that is the only user of a conv so_layout_nchwc could block (block b)
   folded into new conv weights and bias (added to g's model once), in NCHW. so_layout_nchwc on the result
   adds no large weights, so a caller trying several `keep` sets folds once. *n_folded: how many. */
so_status so_layout_fold_bn(const so_graph *g, int b, so_graph **out, int32_t *n_folded);

#endif
