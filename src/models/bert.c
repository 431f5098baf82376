/* bert.c — a BERT encoder (Devlin et al. 2018) as a graph, the way exporters write it:
 * embeddings (Gather) + LayerNormalization, then per layer self-attention (MatMul,
 * Reshape, Transpose, scaled scores plus the additive mask, Softmax) and an erf-GELU
 * feed-forward block, each followed by a residual Add and LayerNormalization; finally
 * the pooler (first token -> dense -> Tanh).
 *
 * Inputs: input_ids i64 [1, seq] (ids < vocab) and attention_mask i64 [1, seq] (1 keeps
 * a position, 0 masks it: (1 - mask) * -10000 is added to the scores). Outputs:
 * last_hidden_state f32 [1, seq, hidden] and pooler_output f32 [1, hidden].
 * Weights: uniform with standard deviation 0.02 (BERT's initializer range). */
#include "models/build.h"

#include <math.h>

typedef struct bert {
    hc_mb b;
    const hc_bert_config *c;
} bert;

#define BERT_STD_BOUND 0.0346 /* uniform(-b, b) has std 0.02 */

static const char *nm(bert *t, const char *prefix, const char *suffix) {
    return hc_arena_printf(&t->b.g->arena, "%s.%s", prefix, suffix);
}

static hc_tensor *vec(bert *t, const char *name, int64_t n, double lo, double hi) {
    return hc_mb_uniform(&t->b, name, 1, &n, lo, hi);
}

static hc_tensor *layernorm_as(bert *t, const char *name, hc_tensor *x, const char *out_name) {
    int64_t h = t->c->hidden;
    hc_tensor *in[3] = {x, vec(t, nm(t, name, "weight"), h, 0.8, 1.2),
                        vec(t, nm(t, name, "bias"), h, -0.1, 0.1)};
    hc_attr attrs[2] = {hc_mb_int("axis", -1), hc_mb_float("epsilon", 1e-12)};
    return hc_mb_op(&t->b, HC_OPK_LAYER_NORMALIZATION, name, out_name, 3, in, 2, attrs);
}

static hc_tensor *layernorm(bert *t, const char *name, hc_tensor *x) {
    return layernorm_as(t, name, x, NULL);
}

/* x [.., in] @ W [in, out] + bias */
static hc_tensor *dense(bert *t, const char *name, hc_tensor *x, int64_t in, int64_t out) {
    int64_t wshape[2] = {in, out};
    hc_tensor *w = hc_mb_uniform(&t->b, nm(t, name, "weight"), 2, wshape, -BERT_STD_BOUND,
                                 BERT_STD_BOUND);
    hc_tensor *y = hc_mb_op2(&t->b, HC_OPK_MATMUL, nm(t, name, "matmul"), x, w);
    hc_tensor *bias = vec(t, nm(t, name, "bias"), out, -BERT_STD_BOUND, BERT_STD_BOUND);
    return hc_mb_op2(&t->b, HC_OPK_ADD, nm(t, name, "add"), y, bias);
}

static hc_tensor *reshape(bert *t, const char *name, hc_tensor *x, int n, const int64_t *dims) {
    hc_tensor *in[2] = {x, hc_mb_shape(&t->b, nm(t, name, "shape"), n, dims)};
    return hc_mb_op(&t->b, HC_OPK_RESHAPE, name, NULL, 2, in, 0, NULL);
}

static hc_tensor *transpose(bert *t, const char *name, hc_tensor *x, int64_t p0, int64_t p1,
                            int64_t p2, int64_t p3) {
    int64_t perm[4] = {p0, p1, p2, p3};
    hc_attr a = hc_mb_ints(&t->b, "perm", 4, perm);
    return hc_mb_op(&t->b, HC_OPK_TRANSPOSE, name, NULL, 1, &x, 1, &a);
}

/* [1, seq, hidden] -> [1, heads, seq, head_dim] (or [1, heads, head_dim, seq] for keys) */
static hc_tensor *split_heads(bert *t, const char *name, hc_tensor *x, bool keys) {
    const hc_bert_config *c = t->c;
    int64_t dims[4] = {1, c->seq, c->heads, c->hidden / c->heads};
    x = reshape(t, nm(t, name, "reshape"), x, 4, dims);
    const char *tn = nm(t, name, "transpose");
    return keys ? transpose(t, tn, x, 0, 2, 3, 1) : transpose(t, tn, x, 0, 2, 1, 3);
}

static hc_tensor *attention(bert *t, const char *name, hc_tensor *x, hc_tensor *mask) {
    const hc_bert_config *c = t->c;
    hc_mb *b = &t->b;
    int64_t h = c->hidden;
    hc_tensor *q = split_heads(t, nm(t, name, "q"), dense(t, nm(t, name, "query"), x, h, h),
                               false);
    hc_tensor *k = split_heads(t, nm(t, name, "k"), dense(t, nm(t, name, "key"), x, h, h), true);
    hc_tensor *v = split_heads(t, nm(t, name, "v"), dense(t, nm(t, name, "value"), x, h, h),
                               false);
    hc_tensor *s = hc_mb_op2(b, HC_OPK_MATMUL, nm(t, name, "scores"), q, k);
    float scale = (float)(1.0 / sqrt((double)(c->hidden / c->heads)));
    s = hc_mb_op2(b, HC_OPK_MUL, nm(t, name, "scale"), s,
                  hc_mb_scalar(b, nm(t, name, "scale.value"), scale));
    s = hc_mb_op2(b, HC_OPK_ADD, nm(t, name, "mask"), s, mask);
    hc_attr axis = hc_mb_int("axis", -1);
    hc_tensor *p = hc_mb_op(b, HC_OPK_SOFTMAX, nm(t, name, "softmax"), NULL, 1, &s, 1, &axis);
    hc_tensor *ctx = hc_mb_op2(b, HC_OPK_MATMUL, nm(t, name, "context"), p, v);
    ctx = transpose(t, nm(t, name, "merge.transpose"), ctx, 0, 2, 1, 3);
    int64_t dims[3] = {1, c->seq, h};
    ctx = reshape(t, nm(t, name, "merge.reshape"), ctx, 3, dims);
    return dense(t, nm(t, name, "output"), ctx, h, h);
}

/* 0.5 * x * (1 + erf(x / sqrt(2))), as torch.nn.functional.gelu exports */
static hc_tensor *gelu(bert *t, const char *name, hc_tensor *x) {
    hc_mb *b = &t->b;
    hc_tensor *y = hc_mb_op2(b, HC_OPK_DIV, nm(t, name, "div"), x,
                             hc_mb_scalar(b, nm(t, name, "sqrt2"), (float)sqrt(2.0)));
    y = hc_mb_op1(b, HC_OPK_ERF, nm(t, name, "erf"), y);
    y = hc_mb_op2(b, HC_OPK_ADD, nm(t, name, "add"), y, hc_mb_scalar(b, nm(t, name, "one"), 1));
    y = hc_mb_op2(b, HC_OPK_MUL, nm(t, name, "mul"), x, y);
    return hc_mb_op2(b, HC_OPK_MUL, nm(t, name, "half"), y,
                     hc_mb_scalar(b, nm(t, name, "half.value"), 0.5f));
}

/* out_name: the name of the layer's output (NULL: a fresh one) */
static hc_tensor *layer(bert *t, const char *name, hc_tensor *x, hc_tensor *mask,
                        const char *out_name) {
    hc_mb *b = &t->b;
    const hc_bert_config *c = t->c;
    hc_tensor *a = attention(t, nm(t, name, "attention"), x, mask);
    x = hc_mb_op2(b, HC_OPK_ADD, nm(t, name, "attention.residual"), a, x);
    x = layernorm(t, nm(t, name, "attention.layernorm"), x);
    hc_tensor *f = dense(t, nm(t, name, "intermediate"), x, c->hidden, c->ffn);
    f = gelu(t, nm(t, name, "gelu"), f);
    f = dense(t, nm(t, name, "output"), f, c->ffn, c->hidden);
    x = hc_mb_op2(b, HC_OPK_ADD, nm(t, name, "output.residual"), f, x);
    return layernorm_as(t, nm(t, name, "output.layernorm"), x, out_name);
}

static hc_tensor *embeddings(bert *t, hc_tensor *ids) {
    const hc_bert_config *c = t->c;
    hc_mb *b = &t->b;
    int64_t word[2] = {c->vocab, c->hidden}, pos[2] = {c->seq, c->hidden};
    hc_tensor *in[2] = {hc_mb_uniform(b, "embeddings.word", 2, word, -BERT_STD_BOUND,
                                      BERT_STD_BOUND),
                        ids};
    hc_tensor *x = hc_mb_op(b, HC_OPK_GATHER, "embeddings.gather", NULL, 2, in, 0, NULL);
    /* position ids are 0..seq-1 and token types all 0: both tables reduce to constants */
    hc_tensor *p = hc_mb_uniform(b, "embeddings.position", 2, pos, -BERT_STD_BOUND,
                                 BERT_STD_BOUND);
    x = hc_mb_op2(b, HC_OPK_ADD, "embeddings.add_position", x, p);
    hc_tensor *tt = vec(t, "embeddings.token_type", c->hidden, -BERT_STD_BOUND, BERT_STD_BOUND);
    x = hc_mb_op2(b, HC_OPK_ADD, "embeddings.add_token_type", x, tt);
    return layernorm(t, "embeddings.layernorm", x);
}

/* (1 - float(mask)) * -10000, shaped [1, 1, 1, seq] to broadcast over heads and rows */
static hc_tensor *extended_mask(bert *t, hc_tensor *mask) {
    hc_mb *b = &t->b;
    hc_attr to = hc_mb_int("to", 1); /* ONNX TensorProto FLOAT */
    hc_tensor *m = hc_mb_op(b, HC_OPK_CAST, "mask.cast", NULL, 1, &mask, 1, &to);
    m = hc_mb_op2(b, HC_OPK_SUB, "mask.invert", hc_mb_scalar(b, "mask.one", 1), m);
    m = hc_mb_op2(b, HC_OPK_MUL, "mask.scale", m, hc_mb_scalar(b, "mask.neg", -10000.0f));
    int64_t dims[4] = {1, 1, 1, t->c->seq};
    return reshape(t, "mask.reshape", m, 4, dims);
}

static hc_tensor *pooler(bert *t, hc_tensor *x) {
    hc_mb *b = &t->b;
    int64_t zero = 0;
    hc_tensor *in[2] = {x, hc_graph_constant(b->g, "pooler.index", HC_I64, 0, NULL, &zero)};
    hc_attr axis = hc_mb_int("axis", 1);
    hc_tensor *first = hc_mb_op(b, HC_OPK_GATHER, "pooler.first", NULL, 2, in, 1, &axis);
    hc_tensor *y = dense(t, "pooler.dense", first, t->c->hidden, t->c->hidden);
    return hc_mb_op(b, HC_OPK_TANH, "pooler.tanh", "pooler_output", 1, &y, 0, NULL);
}

hc_status hc_build_bert(const hc_bert_config *c, const char *name, hc_graph **out,
                        hc_error *err) {
    *out = NULL;
    if (c->layers < 1 || c->heads < 1 || c->hidden % c->heads != 0) {
        return hc_error_set(err, HC_ERR_INVALID, "builtin %s: bad configuration", name);
    }
    hc_graph *g = hc_graph_new(name, 17);
    bert t = {.c = c};
    hc_mb_init(&t.b, g, 0xbe27u, err);
    int64_t ishape[2] = {1, c->seq};
    hc_tensor *ids = hc_graph_add_input(g, "input_ids", HC_I64, 2, ishape);
    hc_tensor *mask = hc_graph_add_input(g, "attention_mask", HC_I64, 2, ishape);
    hc_tensor *x = embeddings(&t, ids);
    hc_tensor *m = extended_mask(&t, mask);
    for (int i = 0; i < c->layers; i++) {
        const char *out_name = i == c->layers - 1 ? "last_hidden_state" : NULL;
        x = layer(&t, hc_arena_printf(&g->arena, "encoder.layer%d", i), x, m, out_name);
    }
    hc_tensor *pooled = pooler(&t, x);
    if (hc_mb_failed(&t.b)) {
        hc_graph_free(g);
        return err->status;
    }
    hc_graph_add_output(g, x);
    hc_graph_add_output(g, pooled);
    *out = g;
    return HC_OK;
}
