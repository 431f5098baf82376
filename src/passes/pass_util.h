/* pass_util.h — helpers shared by the graph passes (private to src/passes). */
#ifndef HC_PASS_UTIL_H
#define HC_PASS_UTIL_H

#include "passes/passes.h"

/* Infer one node's outputs (error when the op has no definition). */
hc_status hc_pass_infer_node(hc_node *n, hc_error *err);
/* Make the readers of `from` read `to`. A graph output keeps its name: `to` takes it.
 * Returns false (and changes nothing) when `from` is a graph output and `to` cannot be
 * renamed (a graph input, another graph output or a constant). */
bool hc_pass_bypass(hc_graph *g, hc_tensor *from, hc_tensor *to);
bool hc_pass_is_graph_output(const hc_graph *g, const hc_tensor *t);
bool hc_pass_is_graph_input(const hc_graph *g, const hc_tensor *t);
/* A new node whose outputs get inferred right away; NULL with err set on failure. */
hc_node *hc_pass_add_node(hc_graph *g, hc_op_kind op, const char *name, int ninputs,
                          hc_tensor *const *inputs, int nattrs, const hc_attr *attrs,
                          hc_error *err);
/* An i64 1-D constant (shapes, axes). */
hc_tensor *hc_pass_const_i64(hc_graph *g, const char *name, int n, const int64_t *v);
/* A constant of a float dtype (f16/bf16/f32/f64) from double values. */
hc_tensor *hc_pass_const_float(hc_graph *g, const char *name, hc_dtype dt, int ndim,
                               const int64_t *shape, const double *v);
/* Inference's constant propagation for one node (already inferred): when its value is
 * known at compile time, evaluate it and make its outputs constants (*folded = true; the
 * caller removes the node). */
hc_status hc_pass_fold_if_known(hc_graph *g, hc_node *n, bool *folded, hc_error *err);
/* A 2-D Conv's explicit pads [top, left, bottom, right] with auto_pad resolved (kernel k,
 * strides s, dilations d; src/passes/lower.c). */
void hc_pass_conv_pads(const hc_node *n, const int64_t *k, const int64_t *s, const int64_t *d,
                       int64_t *pads);
/* How src/passes/lower.c computes a 2-D group-1 Conv under `o`: kept for the direct
 * template, Winograd F(2x2, 3x3), or im2col + matmul. */
typedef enum hc_conv_path { HC_CONV_IM2COL, HC_CONV_WINOGRAD, HC_CONV_DIRECT } hc_conv_path;
hc_conv_path hc_pass_conv_path(const hc_node *n, const hc_optimize_options *o);
/* The same for a conv of the channel-blocked layout, where Winograd can be F(4x4, 3x3) and
 * also takes 5x5 and the 1-D kernels 1xk / kx1 of 3, 5, 7 taps (docs/winograd.md):
 * Winograd also where the direct template would take the conv but F(4x4) applies
 * (hc_pass_winograd_tile) and neither path is forced. */
hc_conv_path hc_pass_conv_path_blocked(const hc_node *n, const hc_optimize_options *o);
/* The machine a pass's rules decide for: o->target, else hc_target_default() (a test
 * states one with hc_target_cpu_describe). */
const struct hc_target *hc_pass_target(const hc_optimize_options *o);
/* Winograd's transformed weights of w [OC, C, kh, kw] for the tile m (2, 4 or 6; the
 * transforms hc_wino_axis(m, kh) and hc_wino_axis(m, kw), tiles of ah x aw inputs): [ah*aw,
 * OC, C], or transposed [ah*aw, C, OC]. */
hc_tensor *hc_pass_winograd_weights(hc_graph *g, const hc_tensor *w, int m, bool transposed);
/* The tile m of a blocked Winograd conv (one its path took): 4 where F(4) pays over F(2)
 * on o->target (NULL: hc_target_default()) — fewer multiply-adds, its transformed weights
 * within caps.l2_bytes * caps.num_cores per image or enough multiply-adds saved per extra
 * byte, lower.c — and 6 where F(6) (1x7 / 7x1 only) pays over that the same way; else 2.
 * o->wino_tile forces it (6: F(6) where n has its table, else 4). A test states the
 * machine by setting o->target to an injected description (hc_target_cpu_describe). */
int hc_pass_winograd_tile(const hc_node *n, const hc_optimize_options *o);
/* Building the replacement of node n in a lowering pass: fresh names "n_<suffix><k>", nodes
 * inferred as they are added (NULL, with err set, when one fails; a NULL input passes the
 * failure on), and n's output i replaced by y (same dtype and shape; through an Identity
 * when y cannot take a graph output's name). */
typedef struct hc_rewrite {
    hc_graph *g;
    hc_node *n;
    hc_error *err;
    int uid;
} hc_rewrite;
const char *hc_rw_fresh(hc_rewrite *c, const char *suffix);
hc_tensor *hc_rw_emit(hc_rewrite *c, hc_op_kind op, int nin, hc_tensor *const *in, int nattrs,
                      const hc_attr *attrs);
hc_status hc_rw_replace(hc_rewrite *c, int i, hc_tensor *y);
/* Slice(x) [start, end) along axis, in the graph's opset (Slice-1's attributes below 10);
 * NULL as hc_rw_emit. */
hc_tensor *hc_rw_slice(hc_rewrite *c, hc_tensor *x, int64_t axis, int64_t start, int64_t end);
/* A lowering pass's loop: lower(g, n, err) for every node of g (as it was on entry) that
 * match(n) accepts, then, when any was, toposort and drop the dead nodes (the rnn,
 * quant, loss, attention and batchnorm-training lowerings). */
hc_status hc_pass_lower_each(hc_graph *g, bool (*match)(const hc_node *n),
                             hc_status (*lower)(hc_graph *g, hc_node *n, hc_error *err),
                             hc_error *err);
/* The same with a context for lower (the attention lowering's target). */
hc_status hc_pass_lower_each_ctx(hc_graph *g, bool (*match)(const hc_node *n),
                                 hc_status (*lower)(hc_graph *g, hc_node *n, void *ctx,
                                                    hc_error *err),
                                 void *ctx, hc_error *err);
/* Drop the nodes flagged in remove[] (indexed like g->nodes), keeping order. */
void hc_pass_remove_nodes(hc_graph *g, const char *remove);

#endif
