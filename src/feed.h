/* feed.h - seeded values for graph inputs of every element type, valid for how the graph uses them. */
#ifndef SO_FEED_H
#define SO_FEED_H

#include <stdint.h>

#include "graph.h"

/* Range [*lo, *hi) of integer values graph input k (an int64-storage input of g) may take in every
   use the graph makes of it: indices of Gather / GatherElements / ScatterElements / GatherND (the
   indexed dimension, followed through reshapes, expands and transposes), NLL targets (the class
   count); a bool input or a Where condition 0/1. With no such use, [0, 8). */
void so_feed_int_range(const so_graph *g, int32_t k, int64_t *lo, int64_t *hi);

/* Fills buf (storage of input k: float32 or int64, numel of its shape) with seeded values: floats
   uniform in [-1, 1) (so_rng_fill), integers uniform in so_feed_int_range. Advances *state. */
void so_feed_fill(const so_graph *g, int32_t k, uint64_t *state, void *buf);

#endif
