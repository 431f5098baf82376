/* build.h — a small helper for writing models as straight-line graph construction code
 * (used by the builtin models only).
 *
 * Errors are sticky: after the first failure every helper returns NULL without touching
 * the graph, so a model builder can be written without checking each step; the builder
 * checks hc_mb_failed (or the error) once at the end. Weights come from one hc_rng
 * stream, so a model is the same bytes on every run and machine. */
#ifndef HC_MODELS_BUILD_H
#define HC_MODELS_BUILD_H

#include "graph/graph.h"

typedef struct hc_mb {
    hc_graph *g;
    hc_rng rng;
    hc_error *err;
    bool failed;
} hc_mb;

void hc_mb_init(hc_mb *b, hc_graph *g, uint64_t seed, hc_error *err);
bool hc_mb_failed(const hc_mb *b);

/* ---- attributes (arrays live in the graph's arena) ----------------------------- */
hc_attr hc_mb_int(const char *name, int64_t v);
hc_attr hc_mb_float(const char *name, double v);
hc_attr hc_mb_ints(hc_mb *b, const char *name, int n, const int64_t *v);
/* [v0, v1] (2-D kernel shapes and strides); [v, v, v, v] (2-D pads). */
hc_attr hc_mb_ints2(hc_mb *b, const char *name, int64_t v0, int64_t v1);
hc_attr hc_mb_ints4(hc_mb *b, const char *name, int64_t v);

/* ---- constants ------------------------------------------------------------------ */
/* f32 weights uniform in [lo, hi). */
hc_tensor *hc_mb_uniform(hc_mb *b, const char *name, int ndim, const int64_t *shape,
                         double lo, double hi);
hc_tensor *hc_mb_scalar(hc_mb *b, const char *name, float v);   /* f32, rank 0 */
hc_tensor *hc_mb_shape(hc_mb *b, const char *name, int n, const int64_t *dims); /* i64[n] */

/* ---- nodes ---------------------------------------------------------------------- */
/* Appends a node with one output (named out_name, or a fresh name when NULL) and
 * returns that output. A NULL input means an earlier step failed: nothing is added. */
hc_tensor *hc_mb_op(hc_mb *b, hc_op_kind op, const char *name, const char *out_name,
                    int ninputs, hc_tensor *const *inputs, int nattrs, const hc_attr *attrs);
/* One-input and two-input shorthands without attributes. */
hc_tensor *hc_mb_op1(hc_mb *b, hc_op_kind op, const char *name, hc_tensor *x);
hc_tensor *hc_mb_op2(hc_mb *b, hc_op_kind op, const char *name, hc_tensor *x, hc_tensor *y);

/* ---- the builtin models (resnet.c, bert.c) --------------------------------------- */
typedef struct hc_resnet_config {
    bool bottleneck;    /* ResNet-50 style 1x1-3x3-1x1 blocks, else two 3x3 convs */
    int blocks[4];      /* blocks per stage */
    int width;          /* channels of the stem and the first stage */
    int image;          /* input height and width */
    int classes;
} hc_resnet_config;

typedef struct hc_bert_config {
    int layers, hidden, heads, ffn, vocab, seq;
} hc_bert_config;

hc_status hc_build_resnet(const hc_resnet_config *c, const char *name, hc_graph **out,
                          hc_error *err);
hc_status hc_build_bert(const hc_bert_config *c, const char *name, hc_graph **out,
                        hc_error *err);

#endif
