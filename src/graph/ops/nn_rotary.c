/* nn_rotary.c — RotaryEmbedding (opset 23): rotary positional embeddings (RoPE).
 *
 * X is [batch, heads, seq, head_size], or [batch, seq, hidden] with the num_heads
 * attribute (hidden = heads * head_size). The first rotary_embedding_dim (rd; 0: the head
 * size) values of each head are rotated in pairs (x1, x2): the halves [0, rd/2) and
 * [rd/2, rd), or with `interleaved` the even and odd positions; the rest are copied:
 *     real = cos * x1 - sin * x2,    imag = sin * x1 + cos * x2
 * with cos/sin = cache[position_ids[b, s], j] ([max_pos, rd/2] caches), or cache[b, s, j]
 * ([batch, seq, rd/2] caches) without position_ids. One injective compute over the output;
 * position ids are read at run time and clamped into the cache (the spec leaves
 * out-of-range ids undefined: this never reads outside a tensor). */
#include "graph/ops/nn_internal.h"

typedef struct rope_geom {
    bool three_d;
    int64_t batch, heads, seq, head, rd;
} rope_geom;

static hc_status rope_geometry(const hc_node *n, rope_geom *g, hc_error *err) {
    const hc_tensor *x = hc_nn_in(n, 0), *cs = hc_nn_in(n, 1), *sn = hc_nn_in(n, 2),
                    *pos = hc_nn_in(n, 3);
    if (hc_nn_need_float(n, 0, err)) return err->status;
    if (x->ndim != 3 && x->ndim != 4)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input 0 ('%s') has rank %d, expected 3 or 4",
                            x->name, x->ndim);
    g->three_d = x->ndim == 3;
    g->batch = x->shape[0];
    if (g->three_d) {
        g->heads = hc_node_attr_int(n, "num_heads", 0);
        if (g->heads <= 0 || x->shape[2] % g->heads)
            return hc_node_fail(n, HC_ERR_INVALID, err, "num_heads (%lld) must be given and "
                                "divide the hidden size %lld of a 3-D input",
                                (long long)g->heads, (long long)x->shape[2]);
        g->seq = x->shape[1], g->head = x->shape[2] / g->heads;
    } else {
        g->heads = x->shape[1], g->seq = x->shape[2], g->head = x->shape[3];
    }
    g->rd = hc_node_attr_int(n, "rotary_embedding_dim", 0);
    if (g->rd == 0) g->rd = g->head;
    if (g->rd < 0 || g->rd > g->head || g->rd % 2)
        return hc_node_fail(n, HC_ERR_INVALID, err, "rotary_embedding_dim %lld must be even and "
                            "at most the head size %lld", (long long)g->rd, (long long)g->head);
    for (int i = 1; i <= 2; i++) {
        const hc_tensor *c = i == 1 ? cs : sn;
        if (c->dtype != x->dtype)
            return hc_node_fail(n, HC_ERR_INVALID, err, "input %d ('%s') is %s, input 0 is %s", i,
                                c->name, hc_dtype_name(c->dtype), hc_dtype_name(x->dtype));
        bool ok = pos ? c->ndim == 2 && c->shape[0] > 0 && c->shape[1] == g->rd / 2
                      : c->ndim == 3 && c->shape[0] == g->batch && c->shape[1] == g->seq &&
                            c->shape[2] == g->rd / 2;
        if (!ok)
            return hc_node_fail(n, HC_ERR_INVALID, err, "input %d ('%s') must have shape %s",
                                i, c->name, pos ? "[max_position + 1, rotary_dim / 2]"
                                                : "[batch, seq, rotary_dim / 2]");
    }
    if (pos && (pos->ndim != 2 || pos->shape[0] != g->batch || pos->shape[1] != g->seq ||
                !hc_dtype_is_int(pos->dtype)))
        return hc_node_fail(n, HC_ERR_INVALID, err, "position_ids ('%s') must be an integer "
                            "tensor of shape [batch, seq]", pos->name);
    return HC_OK;
}

hc_status hc_nn_infer_rotary(hc_node *n, hc_error *err) {
    rope_geom g;
    if (rope_geometry(n, &g, err)) return err->status;
    const hc_tensor *x = hc_nn_in(n, 0);
    hc_node_set_output(n, 0, x->dtype, x->ndim, x->shape);
    return HC_OK;
}

typedef struct rope_ctx {
    const rope_geom *g;
    bool interleaved;
    const hc_tnode *x, *cos, *sin, *pos;
} rope_ctx;

static hc_expr *rope_at(hc_arena *a, hc_var *const *axes, void *vctx) {
    const rope_ctx *c = vctx;
    const rope_geom *g = c->g;
    hc_expr *b = hc_ref(a, axes[0]), *s, *d, *hid = NULL, *h = NULL;
    if (g->three_d) {
        s = hc_ref(a, axes[1]), hid = hc_ref(a, axes[2]);
        d = hc_mod(a, hid, hc_int(a, g->head));
    } else {
        h = hc_ref(a, axes[1]), s = hc_ref(a, axes[2]), d = hc_ref(a, axes[3]);
    }
    int64_t half = g->rd / 2;
    /* pair index j, the two partners' positions in the head, and whether d is x1's */
    hc_expr *j, *d1, *d2, *first;
    if (c->interleaved) {
        j = hc_div(a, d, hc_int(a, 2));
        d1 = hc_mul(a, j, hc_int(a, 2));
        d2 = hc_add(a, d1, hc_int(a, 1));
        first = hc_eq(a, hc_mod(a, d, hc_int(a, 2)), hc_int(a, 0));
    } else {
        first = hc_lt(a, d, hc_int(a, half));
        j = hc_select(a, first, d, hc_sub(a, d, hc_int(a, half)));
        d1 = j;
        d2 = hc_add(a, j, hc_int(a, half));
    }
    /* x at position p of the same head */
    hc_expr *idx1[4], *idx2[4];
    if (g->three_d) {
        hc_expr *base = hc_sub(a, hid, d);
        idx1[0] = idx2[0] = b, idx1[1] = idx2[1] = s;
        idx1[2] = hc_add(a, base, d1), idx2[2] = hc_add(a, base, d2);
    } else {
        idx1[0] = idx2[0] = b, idx1[1] = idx2[1] = h, idx1[2] = idx2[2] = s;
        idx1[3] = d1, idx2[3] = d2;
    }
    hc_expr *x1 = hc_at(a, c->x, idx1), *x2 = hc_at(a, c->x, idx2);
    hc_expr *cv, *sv;
    if (c->pos) {
        hc_expr *pi[2] = {b, s};
        hc_expr *p = hc_cast(a, hc_type_scalar(HC_I64), hc_at(a, c->pos, pi));
        p = hc_min(a, hc_max(a, p, hc_int(a, 0)), hc_int(a, c->cos->shape[0] - 1));
        hc_expr *ci[2] = {p, j};
        cv = hc_at(a, c->cos, ci), sv = hc_at(a, c->sin, ci);
    } else {
        hc_expr *ci[3] = {b, s, j};
        cv = hc_at(a, c->cos, ci), sv = hc_at(a, c->sin, ci);
    }
    hc_expr *real = hc_sub(a, hc_mul(a, cv, x1), hc_mul(a, sv, x2));
    hc_expr *imag = hc_add(a, hc_mul(a, sv, x1), hc_mul(a, cv, x2));
    hc_expr *rot = hc_select(a, first, real, imag);
    if (g->rd == g->head) return rot;
    return hc_select(a, hc_lt(a, d, hc_int(a, g->rd)), rot, hc_at_axes(a, c->x, axes));
}

hc_task *hc_nn_task_rotary(hc_arena *a, const hc_node *n, hc_error *err) {
    rope_geom g;
    if (rope_geometry(n, &g, err)) return NULL;
    int nin;
    hc_tnode **in = hc_node_input_tnodes(a, n, &nin);
    rope_ctx c = {&g, hc_node_attr_int(n, "interleaved", 0) != 0, in[0], in[1], in[2],
                  nin > 3 ? in[3] : NULL};
    const hc_tensor *y = n->outputs[0];
    hc_tnode *out = hc_compute(a, y->name, y->ndim, y->shape, rope_at, &c);
    return hc_node_task(a, n, nin, in, 1, &out);
}
