/* sym_infer.c — symbolic shape inference: the dimensions of an op's outputs as
 * expressions of the symbols of its inputs (dynamic shapes, docs/dynamic.md).
 *
 * It runs after the op's own (concrete) inference at the graph's hint binding, for nodes
 * that read a symbolic tensor. A rule gives every output's dimensions as expressions
 * (and, for small integer outputs of shape computations, its values: Shape -> Gather ->
 * Concat -> Reshape stays symbolic instead of folding to the hint's numbers). The rules
 * are checked, not trusted: the expressions must give the concrete shapes at the hint
 * binding, and again at a second binding, where the op's concrete inference runs once
 * more on inputs of that binding's shapes. A rule that does not know a case says so; no
 * hint value is ever taken for a symbol's.
 *
 * Relations between symbols that an op needs (the K of a MatMul, a broadcast, a Slice of
 * a 1024-row table ending at `seq`) are kept as the graph's constraints, checked for
 * every binding at run time. A choice the symbols cannot decide (min(seq, 1024)) is
 * taken as the hint binding decides it, and kept as a constraint too. */
#include <string.h>

#include "graph/ops/geometry.h"
#include "graph/ops/nn_internal.h"
#include "graph/ops/shape_internal.h"

/* Values kept symbolic: shape computations are short vectors. */
#define SYM_MAX_VALUES 64

typedef struct out_spec {
    bool set;
    int ndim;
    const hc_sym *dims[HC_MAX_DIMS];
    bool has_vals; /* nval values (symval, or constant data) */
    int64_t nval;
    const hc_sym **vals;
} out_spec;

typedef struct ctx {
    hc_node *n;
    hc_graph *g;
    hc_arena *a;
    hc_error *err;
    out_spec *out;
} ctx;

static const hc_sym *K(ctx *c, int64_t v) { return hc_sym_const(c->a, v); }
static const hc_sym *D(const hc_tensor *t, int d) { return hc_tensor_dim(t, d); }
static hc_tensor *IN(ctx *c, int i) { return hc_shp_in(c->n, i); }

static hc_status fail(ctx *c, hc_status st, const char *fmt, ...) HC_PRINTF(3, 4);
static hc_status fail(ctx *c, hc_status st, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return hc_node_fail(c->n, st, c->err, "%s", msg);
}

static hc_status unsupported(ctx *c, const char *why) {
    return fail(c, HC_ERR_UNSUPPORTED, "%s; fix the symbols with --dim NAME=V or --shape "
                "INPUT=D0,D1,... (docs/dynamic.md)", why);
}

static hc_status need(ctx *c, hc_symc_kind k, const hc_sym *x, const hc_sym *y,
                      const char *what) {
    return hc_graph_add_constraint(c->g, k, x, y, c->n->name, what, c->err);
}

/* The value of x at the hint binding (x must have one). */
static int64_t at_hint(ctx *c, const hc_sym *x) {
    hc_sym_binding hb = hc_graph_hint_binding(c->g);
    int64_t v = 0;
    HC_ASSERT(hc_sym_eval(x, &hb, &v));
    return v;
}

/* Whether m is exactly one atom of this kind (a min or max that did not simplify). */
static bool is_atom(const hc_sym *m, hc_sym_kind kind) {
    return m->nterms == 1 && m->c0 == 0 && m->terms[0].coef == 1 && m->terms[0].nf == 1 &&
           m->terms[0].f[0]->kind == kind;
}

/* min (max: the larger) that the symbols cannot decide: decided as at the hint binding,
 * kept as a constraint. */
static const hc_sym *pick(ctx *c, bool larger, const hc_sym *x, const hc_sym *y,
                          const char *what, hc_status *st) {
    const hc_sym *m = larger ? hc_sym_max(c->a, x, y) : hc_sym_min(c->a, x, y);
    if (!is_atom(m, larger ? HC_SYM_MAX : HC_SYM_MIN)) return m;
    /* lo <= hi at the hints: the result is lo for a min, hi for a max */
    bool x_lo = at_hint(c, x) <= at_hint(c, y);
    const hc_sym *lo = x_lo ? x : y, *hi = x_lo ? y : x;
    *st = need(c, HC_SYMC_LE, lo, hi, what);
    return larger ? hi : lo;
}
static const hc_sym *pick_min(ctx *c, const hc_sym *x, const hc_sym *y, const char *what,
                              hc_status *st) {
    return pick(c, false, x, y, what, st);
}
static const hc_sym *pick_max(ctx *c, const hc_sym *x, const hc_sym *y, const char *what,
                              hc_status *st) {
    return pick(c, true, x, y, what, st);
}

/* ---- results ---------------------------------------------------------------------- */
static void set_dims(ctx *c, int i, int ndim, const hc_sym *const *dims) {
    HC_ASSERT(i < c->n->noutputs && ndim <= HC_MAX_DIMS);
    c->out[i].set = true;
    c->out[i].ndim = ndim;
    for (int d = 0; d < ndim; d++) c->out[i].dims[d] = dims[d];
}

static void same_as(ctx *c, int i, const hc_tensor *x) {
    const hc_sym *d[HC_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) d[k] = D(x, k);
    set_dims(c, i, x->ndim, d);
}

static void set_vals(ctx *c, int i, int64_t nval, const hc_sym *const *vals) {
    c->out[i].has_vals = true;
    c->out[i].nval = nval;
    c->out[i].vals = HC_NEW_ARRAY(c->a, const hc_sym *, (size_t)(nval ? nval : 1));
    for (int64_t k = 0; k < nval; k++) c->out[i].vals[k] = vals[k];
}

/* Input i's values as expressions (its symval or constant data), at most max; false when
 * it has neither. */
static bool values_of(const hc_tensor *t, const hc_sym **v, int64_t *count, int64_t max) {
    if (!t || (!t->symval && !(t->data && (hc_dtype_is_int(t->dtype) || t->dtype == HC_BOOL))))
        return false;
    int64_t n = hc_tensor_numel(t);
    if (n > max) return false;
    for (int64_t k = 0; k < n; k++)
        if (!(v[k] = hc_tensor_value_sym(t, k))) return false;
    *count = n;
    return true;
}

/* Ops that move a value vector without changing it (Reshape, Squeeze, Unsqueeze): the
 * output has x's values. */
static void pass_values(ctx *c, const hc_tensor *x) {
    const hc_sym *v[SYM_MAX_VALUES];
    int64_t nv;
    if (x->symval && values_of(x, v, &nv, SYM_MAX_VALUES)) set_vals(c, 0, nv, v);
}

/* A shape-determining input (a Reshape's shape, an Expand's): its values, or an error
 * naming the input when they depend on data. */
static hc_status shape_values(ctx *c, int i, const hc_sym **v, int64_t *count) {
    if (values_of(IN(c, i), v, count, SYM_MAX_VALUES)) return HC_OK;
    return unsupported(c, hc_arena_printf(c->a, "input %d ('%s') decides the output's shape "
                                          "and depends on the data at run time, not only on "
                                          "the symbols", i, IN(c, i) ? IN(c, i)->name : "?"));
}

/* ---- broadcasting ------------------------------------------------------------------- */
static hc_status broadcast(ctx *c, int nin, const hc_tensor *const *in, int *nd,
                           const hc_sym **out) {
    int r = 0;
    for (int i = 0; i < nin; i++)
        if (in[i]) r = HC_MAX(r, in[i]->ndim);
    for (int d = 0; d < r; d++) {
        const hc_sym *res = NULL;
        for (int i = 0; i < nin; i++) {
            if (!in[i]) continue;
            int k = d - (r - in[i]->ndim);
            if (k < 0) continue;
            const hc_sym *v = D(in[i], k);
            int64_t cv, cr;
            if (!res || (hc_sym_is_const(res, &cr) && cr == 1)) {
                res = v;
                continue;
            }
            if ((hc_sym_is_const(v, &cv) && cv == 1) || hc_sym_equal(res, v)) continue;
            const char *what = hc_arena_printf(c->a, "broadcasting input %d, dimension %d", i, k);
            hc_status st;
            if (hc_sym_is_const(v, NULL)) { /* a symbol against a fixed size: that size */
                st = need(c, HC_SYMC_BCAST, v, res, what);
                res = v;
            } else {
                st = need(c, HC_SYMC_BCAST, res, v, what);
            }
            if (st) return st;
        }
        out[d] = res;
    }
    *nd = r;
    return HC_OK;
}

/* ---- value arithmetic (shape computations) -------------------------------------------- */
/* The lower bound of x when every symbol is >= 1, if x is a polynomial of symbols with
 * nonnegative coefficients; false otherwise. */
static bool lower_bound(const hc_sym *x, int64_t *lb) {
    int64_t s = x->c0;
    for (int i = 0; i < x->nterms; i++) {
        if (x->terms[i].coef < 0) return false;
        for (int f = 0; f < x->terms[i].nf; f++)
            if (x->terms[i].f[f]->kind != HC_SYM_VAR) return false;
        if (__builtin_add_overflow(s, x->terms[i].coef, &s)) return false;
    }
    *lb = s;
    return true;
}

/* x OP y for the elementwise ops of shape computations; NULL when not expressible. */
static const hc_sym *value_op(ctx *c, hc_op_kind op, const hc_sym *x, const hc_sym *y) {
    int64_t cx, cy, lb;
    switch (op) {
    case HC_OPK_ADD: return hc_sym_add(c->a, x, y);
    case HC_OPK_SUB: return hc_sym_sub(c->a, x, y);
    case HC_OPK_MUL: return hc_sym_mul(c->a, x, y);
    case HC_OPK_DIV: /* integer Div truncates: floor for the nonnegative values of shapes */
        if (hc_sym_is_const(y, &cy) && cy == 0) return NULL;
        if (!(hc_sym_is_const(x, &cx) && hc_sym_is_const(y, &cy)) &&
            !(lower_bound(x, &lb) && lb >= 0 && lower_bound(y, &lb) && lb >= 1))
            return NULL;
        return hc_sym_floordiv(c->a, x, y);
    case HC_OPK_MOD: /* fmod = 0: the divisor's sign, as floor modulo */
        if (hc_sym_is_const(y, &cy) && cy == 0) return NULL;
        return hc_sym_mod(c->a, x, y);
    case HC_OPK_MIN: case HC_OPK_MAX: { /* only where the symbols decide it */
        bool mx = op == HC_OPK_MAX;
        const hc_sym *m = mx ? hc_sym_max(c->a, x, y) : hc_sym_min(c->a, x, y);
        return is_atom(m, mx ? HC_SYM_MAX : HC_SYM_MIN) ? NULL : m;
    }
    case HC_OPK_EQUAL: {
        if (hc_sym_equal(x, y)) return K(c, 1);
        const hc_sym *d = hc_sym_sub(c->a, x, y);
        if (hc_sym_is_const(d, &cx)) return K(c, cx == 0);
        if ((lower_bound(d, &lb) && lb > 0) ||
            (lower_bound(hc_sym_neg(c->a, d), &lb) && lb > 0))
            return K(c, 0);
        return NULL;
    }
    default: return NULL;
    }
}

/* Elementwise ops on values: the output's values when every input has them. */
static void elementwise_values(ctx *c, int nin, const hc_tensor *const *in) {
    const hc_tensor *y = c->n->outputs[0];
    if (!y || (!hc_dtype_is_int(y->dtype) && y->dtype != HC_BOOL)) return;
    int64_t ny = hc_tensor_numel(y);
    if (ny > SYM_MAX_VALUES || c->out[0].ndim != y->ndim) return;
    const hc_sym *v[3][SYM_MAX_VALUES];
    int64_t cnt[3];
    bool any_sym = false;
    if (nin > 3) return;
    for (int i = 0; i < nin; i++) {
        if (!values_of(in[i], v[i], &cnt[i], SYM_MAX_VALUES)) return;
        any_sym |= in[i]->symval != NULL;
    }
    if (!any_sym) return;
    const hc_sym *r[SYM_MAX_VALUES];
    for (int64_t k = 0; k < ny; k++) {
        /* the element of each input that broadcasts to flat index k of y */
        const hc_sym *e[3];
        for (int i = 0; i < nin; i++) {
            int64_t rem = k, off = 0, stride = 1;
            for (int d = y->ndim - 1; d >= 0; d--) {
                int64_t idx = rem % y->shape[d];
                rem /= y->shape[d];
                int kd = d - (y->ndim - in[i]->ndim);
                if (kd < 0) continue;
                int64_t dim = in[i]->shape[kd];
                off += (dim == 1 ? 0 : idx) * stride;
                stride *= dim;
            }
            e[i] = v[i][off];
        }
        if (c->n->op == HC_OPK_WHERE) {
            int64_t cond;
            if (!hc_sym_is_const(e[0], &cond)) return;
            r[k] = cond ? e[1] : e[2];
        } else if (!(r[k] = value_op(c, c->n->op, e[0], e[1]))) {
            return;
        }
    }
    set_vals(c, 0, ny, r);
}

/* ---- rules per op family --------------------------------------------------------------- */
static hc_status rule_elementwise(ctx *c) {
    hc_node *n = c->n;
    int nd;
    const hc_sym *d[HC_MAX_DIMS];
    hc_status st = broadcast(c, n->ninputs, (const hc_tensor *const *)n->inputs, &nd, d);
    if (st) return st;
    for (int i = 0; i < n->noutputs; i++)
        if (n->outputs[i]) set_dims(c, i, nd, d);
    elementwise_values(c, n->ninputs, (const hc_tensor *const *)n->inputs);
    return HC_OK;
}

/* Ops whose outputs have input 0's shape (activations, normalizations, casts). Values go
 * through the ones that keep them (Cast between integers, Identity, Neg, Abs). */
static hc_status rule_same(ctx *c) {
    hc_node *n = c->n;
    const hc_tensor *x = n->inputs[0];
    for (int i = 0; i < n->noutputs; i++)
        if (n->outputs[i]) same_as(c, i, x);
    const hc_tensor *y = n->outputs[0];
    const hc_sym *v[SYM_MAX_VALUES];
    int64_t cnt = 0;
    if (x->symval && y && hc_dtype_is_int(y->dtype) && values_of(x, v, &cnt, SYM_MAX_VALUES)) {
        bool keep = n->op == HC_OPK_CAST || n->op == HC_OPK_IDENTITY || n->op == HC_OPK_NEG ||
                    n->op == HC_OPK_ABS || n->op == HC_OPK_CAST_LIKE;
        if (n->op == HC_OPK_NEG)
            for (int64_t k = 0; k < cnt; k++) v[k] = hc_sym_neg(c->a, v[k]);
        if (n->op == HC_OPK_ABS)
            for (int64_t k = 0; k < cnt && keep; k++) {
                int64_t lb;
                keep = lower_bound(v[k], &lb) && lb >= 0;
            }
        if (keep) set_vals(c, 0, cnt, v);
    }
    return HC_OK;
}

/* BatchNormalization, LayerNormalization, RMS and the like: output 0 is input 0's shape;
 * the statistics outputs are input 0's dims before `axis`, then ones (LayerNorm), or
 * fixed channel vectors (BatchNorm in training). */
static hc_status rule_norm(ctx *c) {
    hc_node *n = c->n;
    const hc_tensor *x = n->inputs[0];
    same_as(c, 0, x);
    if (n->op == HC_OPK_LAYER_NORMALIZATION || n->op == HC_OPK_RMS_NORMALIZATION) {
        int axis;
        hc_status st = hc_node_axis(n, hc_node_attr_int(n, "axis", -1), x->ndim, &axis, c->err);
        if (st) return st;
        const hc_sym *d[HC_MAX_DIMS];
        for (int k = 0; k < x->ndim; k++) d[k] = k < axis ? D(x, k) : K(c, 1);
        for (int i = 1; i < n->noutputs; i++)
            if (n->outputs[i]) set_dims(c, i, x->ndim, d);
        return HC_OK;
    }
    for (int i = 1; i < n->noutputs; i++) {
        const hc_tensor *o = n->outputs[i];
        if (!o) continue;
        if (x->ndim > 1 && x->sym && x->sym[1])
            return unsupported(c, "the channel dimension is symbolic");
        const hc_sym *d[HC_MAX_DIMS];
        for (int k = 0; k < o->ndim; k++) d[k] = K(c, o->shape[k]);
        set_dims(c, i, o->ndim, d);
    }
    return HC_OK;
}

static hc_status rule_matmul(ctx *c, const hc_tensor *a, const hc_tensor *b) {
    hc_node *n = c->n;
    if (a->ndim < 1 || b->ndim < 1) return unsupported(c, "a 0-d operand");
    const hc_sym *ka = D(a, a->ndim - 1), *kb = D(b, b->ndim >= 2 ? b->ndim - 2 : 0);
    hc_status st = need(c, HC_SYMC_EQ, ka, kb, "the reduction dimension K of its operands");
    if (st) return st;
    /* batch dimensions broadcast (the two matrix dims left out) */
    hc_tensor ta = *a, tb = *b; /* copies with the matrix dims cut */
    ta.ndim = a->ndim >= 2 ? a->ndim - 2 : 0;
    tb.ndim = b->ndim >= 2 ? b->ndim - 2 : 0;
    const hc_tensor *bt[2] = {&ta, &tb};
    int nd;
    const hc_sym *d[HC_MAX_DIMS];
    if ((st = broadcast(c, 2, bt, &nd, d))) return st;
    if (a->ndim >= 2) d[nd++] = D(a, a->ndim - 2);
    if (b->ndim >= 2) d[nd++] = D(b, b->ndim - 1);
    set_dims(c, 0, nd, d);
    (void)n;
    return HC_OK;
}

static hc_status rule_gemm(ctx *c) {
    const hc_tensor *a = c->n->inputs[0], *b = c->n->inputs[1];
    bool ta = hc_node_attr_int(c->n, "transA", 0), tb = hc_node_attr_int(c->n, "transB", 0);
    if (a->ndim != 2 || b->ndim != 2) return unsupported(c, "operands that are not matrices");
    hc_status st = need(c, HC_SYMC_EQ, D(a, ta ? 0 : 1), D(b, tb ? 1 : 0),
                        "the reduction dimension K of its operands");
    if (st) return st;
    const hc_sym *d[2] = {D(a, ta ? 1 : 0), D(b, tb ? 0 : 1)};
    const hc_tensor *cc = IN(c, 2);
    if (cc) { /* C broadcasts to [M, N] */
        hc_tensor y = *c->n->outputs[0];
        y.ndim = 2;
        const hc_sym *ys[2] = {d[0], d[1]};
        y.sym = ys;
        const hc_tensor *bt[2] = {&y, cc};
        int nd;
        const hc_sym *r[HC_MAX_DIMS];
        if ((st = broadcast(c, 2, bt, &nd, r))) return st;
    }
    set_dims(c, 0, 2, d);
    return HC_OK;
}

/* Conv / pooling windows: N from the input, channels as inferred, spatial sizes by the
 * ONNX formulas for symbolic input sizes. */
static hc_status rule_window(ctx *c, const hc_tensor *x, const hc_tensor *w) {
    hc_node *n = c->n;
    const hc_tensor *y = n->outputs[0];
    int ns = x->ndim - 2;
    if (ns < 0 || y->ndim != x->ndim) return unsupported(c, "an input of rank < 2");
    if (w && w->sym) return unsupported(c, "symbolic weight dimensions");
    if (w && x->sym && x->sym[1]) { /* channels: the weights' times the groups */
        hc_status e = need(c, HC_SYMC_EQ, D(x, 1),
                           K(c, w->shape[1] * hc_node_attr_int(n, "group", 1)),
                           "the input channels against the weights'");
        if (e) return e;
    }
    int cnt;
    const int64_t *ks = hc_node_attr_ints(n, "kernel_shape", &cnt);
    const int64_t *strides = hc_node_attr_ints(n, "strides", &cnt);
    int np;
    const int64_t *pads = hc_node_attr_ints(n, "pads", &np);
    const int64_t *dil = hc_node_attr_ints(n, "dilations", &cnt);
    const char *ap = hc_node_attr_string(n, "auto_pad", "NOTSET");
    bool ceil_mode = hc_node_attr_int(n, "ceil_mode", 0) != 0;
    bool global = n->op == HC_OPK_GLOBAL_AVERAGE_POOL || n->op == HC_OPK_GLOBAL_MAX_POOL;
    const hc_sym *d[HC_MAX_DIMS];
    d[0] = D(x, 0);
    d[1] = w ? K(c, y->shape[1]) : D(x, 1); /* pooling keeps the channels */
    for (int s = 0; s < ns; s++) {
        const hc_sym *in = D(x, 2 + s);
        if (global || hc_sym_is_const(in, NULL)) {
            d[2 + s] = K(c, y->shape[2 + s]);
            continue;
        }
        if (n->op == HC_OPK_CONV_TRANSPOSE || ceil_mode)
            return unsupported(c, "a symbolic spatial size under ConvTranspose or ceil_mode");
        int64_t k = ks ? ks[s] : w ? w->shape[2 + s] : 1;
        int64_t st = strides ? strides[s] : 1, dl = dil ? dil[s] : 1;
        if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
            d[2 + s] = hc_sym_ceildiv(c->a, in, K(c, st));
        } else {
            int64_t pb = pads && !strcmp(ap, "NOTSET") && np == 2 * ns ? pads[s] + pads[ns + s] : 0;
            const hc_sym *span = hc_sym_add_c(c->a, in, pb - dl * (k - 1) - 1);
            d[2 + s] = hc_sym_add_c(c->a, hc_sym_floordiv(c->a, span, K(c, st)), 1);
            hc_status e = need(c, HC_SYMC_LE, K(c, dl * (k - 1) + 1 - pb), in,
                               hc_arena_printf(c->a, "the window of spatial dimension %d", s));
            if (e) return e;
        }
    }
    for (int i = 0; i < n->noutputs; i++)
        if (n->outputs[i]) set_dims(c, i, x->ndim, d);
    return HC_OK;
}

/* Reductions: axes from the attribute or input 1 (constants), keepdims. */
static hc_status rule_reduce(ctx *c) {
    hc_node *n = c->n;
    const hc_tensor *x = n->inputs[0];
    bool keep = hc_node_attr_int(n, "keepdims", 1) != 0;
    bool arg = n->op == HC_OPK_ARG_MAX || n->op == HC_OPK_ARG_MIN;
    bool red[HC_MAX_DIMS] = {false};
    int64_t axes[SHP_MAX_VALUES];
    int cnt = 0;
    hc_status st;
    if (arg) {
        axes[0] = hc_node_attr_int(n, "axis", 0), cnt = 1;
    } else if (hc_shp_in(n, 1) && !hc_shp_in_empty(n, 1)) {
        if ((st = hc_shp_const_ints(n, 1, axes, SHP_MAX_VALUES, &cnt, c->err))) return st;
    } else {
        const int64_t *v = hc_node_attr_ints(n, "axes", &cnt);
        if (cnt > SHP_MAX_VALUES) return unsupported(c, "too many axes");
        if (cnt) memcpy(axes, v, sizeof(int64_t) * (size_t)cnt);
    }
    int ax[HC_MAX_DIMS];
    if (cnt > x->ndim) return unsupported(c, "more axes than dimensions");
    if (cnt && (st = hc_shp_axes(n, "axes", axes, cnt, x->ndim, ax, c->err))) return st;
    bool noop = !arg && cnt == 0 && hc_node_attr_int(n, "noop_with_empty_axes", 0);
    for (int i = 0; i < cnt; i++) red[ax[i]] = true;
    if (!cnt && !noop)
        for (int d = 0; d < x->ndim; d++) red[d] = true;
    const hc_sym *d[HC_MAX_DIMS];
    int nd = 0;
    for (int k = 0; k < x->ndim; k++) {
        if (!red[k]) d[nd++] = D(x, k);
        else if (keep) d[nd++] = K(c, 1);
    }
    set_dims(c, 0, nd, d);
    return HC_OK;
}

static hc_status rule_topk(ctx *c) {
    hc_node *n = c->n;
    const hc_tensor *x = n->inputs[0];
    const hc_sym *kv[1];
    int64_t cnt = 0;
    if (!values_of(IN(c, 1), kv, &cnt, 1) || cnt != 1)
        return unsupported(c, "k (input 1) depends on the data: the output size is known only "
                              "at run time");
    int axis;
    hc_status st = hc_node_axis(n, hc_node_attr_int(n, "axis", -1), x->ndim, &axis, c->err);
    if (st) return st;
    if ((st = need(c, HC_SYMC_LE, kv[0], D(x, axis), "k against the size of the axis")))
        return st;
    const hc_sym *d[HC_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) d[k] = k == axis ? kv[0] : D(x, k);
    for (int i = 0; i < n->noutputs; i++)
        if (n->outputs[i]) set_dims(c, i, x->ndim, d);
    return HC_OK;
}

/* ---- shape and data movement ---------------------------------------------------------- */
static const hc_sym *numel(ctx *c, const hc_tensor *x, int from, int to) {
    const hc_sym *p = K(c, 1);
    for (int d = from; d < to; d++) p = hc_sym_mul(c->a, p, D(x, d));
    return p;
}

static hc_status rule_shape(ctx *c) {
    const hc_tensor *x = c->n->inputs[0];
    if (c->n->op == HC_OPK_SIZE) {
        set_dims(c, 0, 0, NULL);
        const hc_sym *v = numel(c, x, 0, x->ndim);
        set_vals(c, 0, 1, &v);
        return HC_OK;
    }
    int64_t r = x->ndim;
    int64_t start = c->n->opset >= 15 ? hc_node_attr_int(c->n, "start", 0) : 0;
    int64_t end = c->n->opset >= 15 ? hc_node_attr_int(c->n, "end", r) : r;
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = HC_MIN(HC_MAX(start, 0), r);
    end = HC_MIN(HC_MAX(end, start), r);
    const hc_sym *len = K(c, end - start), *v[HC_MAX_DIMS];
    set_dims(c, 0, 1, &len);
    for (int64_t d = start; d < end; d++) v[d - start] = D(x, (int)d);
    set_vals(c, 0, end - start, v);
    return HC_OK;
}

static hc_status rule_reshape(ctx *c) {
    hc_node *n = c->n;
    const hc_tensor *x = n->inputs[0];
    const hc_sym *s[SYM_MAX_VALUES];
    int64_t cnt = 0;
    hc_status st = shape_values(c, 1, s, &cnt);
    if (st) return st;
    if (cnt > HC_MAX_DIMS) return unsupported(c, "a shape of too many dimensions");
    bool allowzero = hc_node_attr_int(n, "allowzero", 0) != 0;
    int infer_at = -1;
    const hc_sym *known = K(c, 1);
    for (int i = 0; i < cnt; i++) {
        int64_t v;
        bool isc = hc_sym_is_const(s[i], &v);
        if (isc && v == 0 && !allowzero) {
            if (i >= x->ndim) return unsupported(c, "shape[i] = 0 beyond the input's rank");
            s[i] = D(x, i);
        } else if (isc && v == -1) {
            infer_at = i;
            continue;
        }
        known = hc_sym_mul(c->a, known, s[i]);
    }
    const hc_sym *total = numel(c, x, 0, x->ndim);
    if (infer_at >= 0) {
        const hc_sym *q = hc_sym_exact_div(c->a, total, known);
        if (!q) {
            if ((st = need(c, HC_SYMC_DIVIDES, total, known, "the -1 of the shape input")))
                return st;
            q = hc_sym_floordiv(c->a, total, known);
        }
        s[infer_at] = q;
    } else if ((st = need(c, HC_SYMC_EQ, known, total, "the element count of the shape input"))) {
        return st;
    }
    set_dims(c, 0, (int)cnt, s);
    pass_values(c, x);
    return HC_OK;
}

static hc_status rule_flatten(ctx *c) {
    const hc_tensor *x = c->n->inputs[0];
    int64_t axis = hc_node_attr_int(c->n, "axis", 1);
    if (axis < 0) axis += x->ndim;
    const hc_sym *d[2] = {numel(c, x, 0, (int)axis), numel(c, x, (int)axis, x->ndim)};
    set_dims(c, 0, 2, d);
    return HC_OK;
}

/* Squeeze / Unsqueeze: the axes are constants (attribute or input 1). */
static hc_status squeeze_axes(ctx *c, int64_t *axes, int *cnt) {
    *cnt = -1;
    if (c->n->opset < 13) {
        const int64_t *v = hc_node_attr_ints(c->n, "axes", cnt);
        if (!hc_node_attr(c->n, "axes")) *cnt = -1;
        if (*cnt > SHP_MAX_VALUES) return unsupported(c, "too many axes");
        if (*cnt > 0) memcpy(axes, v, sizeof(int64_t) * (size_t)*cnt);
        return HC_OK;
    }
    if (!IN(c, 1)) return HC_OK;
    return hc_shp_const_ints(c->n, 1, axes, SHP_MAX_VALUES, cnt, c->err);
}

static hc_status rule_squeeze(ctx *c, bool unsq) {
    const hc_tensor *x = c->n->inputs[0];
    int64_t axes[SHP_MAX_VALUES];
    int cnt, ax[HC_MAX_DIMS];
    hc_status st = squeeze_axes(c, axes, &cnt);
    if (st) return st;
    const hc_sym *d[HC_MAX_DIMS];
    int nd = 0;
    if (unsq) {
        int on = x->ndim + cnt;
        if ((st = hc_shp_axes(c->n, "axes", axes, cnt, on, ax, c->err))) return st;
        bool ins[HC_MAX_DIMS] = {false};
        for (int i = 0; i < cnt; i++) ins[ax[i]] = true;
        for (int k = 0, j = 0; k < on; k++) d[nd++] = ins[k] ? K(c, 1) : D(x, j++);
    } else {
        bool drop[HC_MAX_DIMS] = {false};
        if (cnt > 0 && (st = hc_shp_axes(c->n, "axes", axes, cnt, x->ndim, ax, c->err)))
            return st;
        for (int i = 0; i < cnt; i++) {
            if ((st = need(c, HC_SYMC_EQ, D(x, ax[i]), K(c, 1), "a squeezed axis"))) return st;
            drop[ax[i]] = true;
        }
        for (int k = 0; k < x->ndim; k++) {
            int64_t v;
            bool one = hc_sym_is_const(D(x, k), &v) && v == 1;
            if (cnt < 0 && !one && !hc_sym_is_const(D(x, k), NULL)) {
                /* Squeeze without axes drops the dims of size 1: a symbol must not be 1 */
                if ((st = need(c, HC_SYMC_NE, D(x, k), K(c, 1), "Squeeze without axes")))
                    return st;
            }
            if (!(cnt < 0 ? one : drop[k])) d[nd++] = D(x, k);
        }
    }
    set_dims(c, 0, nd, d);
    pass_values(c, x);
    return HC_OK;
}

static hc_status rule_transpose(ctx *c) {
    const hc_tensor *x = c->n->inputs[0];
    int cnt, perm[HC_MAX_DIMS];
    const int64_t *p = hc_node_attr_ints(c->n, "perm", &cnt);
    hc_status st = HC_OK;
    if (!p) for (int d = 0; d < x->ndim; d++) perm[d] = x->ndim - 1 - d;
    else if ((st = hc_shp_axes(c->n, "perm", p, cnt, x->ndim, perm, c->err))) return st;
    const hc_sym *d[HC_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) d[k] = D(x, perm[k]);
    set_dims(c, 0, x->ndim, d);
    return HC_OK;
}

static hc_status rule_concat(ctx *c) {
    hc_node *n = c->n;
    const hc_tensor *x0 = NULL;
    for (int i = 0; i < n->ninputs && !x0; i++) x0 = n->inputs[i];
    int axis;
    hc_status st = hc_node_axis(n, hc_node_attr_int(n, "axis", 0), x0->ndim, &axis, c->err);
    if (st) return st;
    const hc_sym *d[HC_MAX_DIMS], *sum = K(c, 0);
    for (int k = 0; k < x0->ndim; k++) d[k] = D(x0, k);
    const hc_sym *vals[SYM_MAX_VALUES];
    int64_t nv = 0;
    bool values = x0->ndim == 1 && hc_dtype_is_int(x0->dtype);
    for (int i = 0; i < n->ninputs; i++) {
        const hc_tensor *x = n->inputs[i];
        if (!x) continue;
        sum = hc_sym_add(c->a, sum, D(x, axis));
        for (int k = 0; k < x0->ndim; k++)
            if (k != axis && (st = need(c, HC_SYMC_EQ, D(x, k), d[k],
                                        hc_arena_printf(c->a, "input %d, dimension %d", i, k))))
                return st;
        int64_t cnt = 0;
        if (values && values_of(x, vals + nv, &cnt, SYM_MAX_VALUES - nv)) nv += cnt;
        else values = false;
    }
    d[axis] = sum;
    set_dims(c, 0, x0->ndim, d);
    if (values) set_vals(c, 0, nv, vals);
    return HC_OK;
}

static hc_status rule_split(ctx *c) {
    hc_node *n = c->n;
    const hc_tensor *x = n->inputs[0];
    int axis;
    hc_status st = hc_node_axis(n, hc_node_attr_int(n, "axis", 0), x->ndim, &axis, c->err);
    if (st) return st;
    const hc_sym *dim = D(x, axis);
    const hc_sym *d[HC_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) d[k] = D(x, k);
    bool given = (n->opset < 13 && hc_node_attr(n, "split")) ||
                 (n->opset >= 13 && IN(c, 1) && !hc_shp_in_empty(n, 1));
    if (given) { /* sizes given (constants, or values of the symbols): they add up */
        const hc_sym *sz[SYM_MAX_VALUES];
        int64_t cnt = 0;
        if (n->opset < 13) {
            int ca;
            const int64_t *v = hc_node_attr_ints(n, "split", &ca);
            for (int i = 0; i < ca && i < SYM_MAX_VALUES; i++) sz[cnt++] = K(c, v[i]);
        } else if ((st = shape_values(c, 1, sz, &cnt))) {
            return st;
        }
        if (cnt != n->noutputs) return unsupported(c, "split sizes of another count than outputs");
        const hc_sym *sum = K(c, 0);
        for (int i = 0; i < n->noutputs; i++) sum = hc_sym_add(c->a, sum, sz[i]);
        if ((st = need(c, HC_SYMC_EQ, sum, dim, "the split sizes"))) return st;
        for (int i = 0; i < n->noutputs; i++)
            if (n->outputs[i]) {
                d[axis] = sz[i];
                set_dims(c, i, x->ndim, d);
            }
        return HC_OK;
    }
    int64_t parts = n->noutputs;
    const hc_sym *chunk;
    if (n->opset >= 18) {
        chunk = hc_sym_ceildiv(c->a, dim, K(c, parts));
    } else {
        if ((st = need(c, HC_SYMC_DIVIDES, dim, K(c, parts), "an equal split"))) return st;
        chunk = hc_sym_floordiv(c->a, dim, K(c, parts));
    }
    for (int i = 0; i < n->noutputs; i++) {
        d[axis] = i + 1 < n->noutputs ? chunk
                                      : hc_sym_sub(c->a, dim, hc_sym_mul_c(c->a, chunk, parts - 1));
        if (n->outputs[i]) set_dims(c, i, x->ndim, d);
    }
    if (n->opset >= 18 && parts > 1)
        return need(c, HC_SYMC_LE, hc_sym_mul_c(c->a, chunk, parts - 1), dim,
                    "the chunks of the split");
    return HC_OK;
}

/* Slice with starts / ends that may be symbolic (ends = seq); axes, steps constant. */
static hc_status rule_slice(ctx *c) {
    hc_node *n = c->n;
    const hc_tensor *x = n->inputs[0];
    const hc_sym *starts[SYM_MAX_VALUES], *ends[SYM_MAX_VALUES];
    int64_t ns, ne, axes[SHP_MAX_VALUES], steps[SHP_MAX_VALUES];
    int na = -1, nst = -1;
    hc_status st;
    if (n->opset < 10) {
        int cs, ce;
        const int64_t *s = hc_node_attr_ints(n, "starts", &cs), *e = hc_node_attr_ints(n, "ends", &ce);
        if (!s || !e || cs > SYM_MAX_VALUES || ce > SYM_MAX_VALUES) return unsupported(c, "bad starts/ends");
        for (int i = 0; i < cs; i++) starts[i] = K(c, s[i]);
        for (int i = 0; i < ce; i++) ends[i] = K(c, e[i]);
        ns = cs, ne = ce;
        const int64_t *a = hc_node_attr_ints(n, "axes", &na);
        if (a && na <= SHP_MAX_VALUES) memcpy(axes, a, sizeof(int64_t) * (size_t)na);
        else na = -1;
    } else {
        if ((st = shape_values(c, 1, starts, &ns)) || (st = shape_values(c, 2, ends, &ne)))
            return st;
        if (IN(c, 3) && (st = hc_shp_const_ints(n, 3, axes, SHP_MAX_VALUES, &na, c->err)))
            return st;
        if (IN(c, 4) && (st = hc_shp_const_ints(n, 4, steps, SHP_MAX_VALUES, &nst, c->err)))
            return st;
    }
    if (ne != ns || ns > x->ndim) return unsupported(c, "starts and ends differ in length");
    int ax[SHP_MAX_VALUES];
    for (int i = 0; i < ns; i++) ax[i] = i;
    if (na >= 0 && (st = hc_shp_axes(n, "axes", axes, na, x->ndim, ax, c->err))) return st;
    const hc_sym *d[HC_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) d[k] = D(x, k);
    const hc_sym *vals[SYM_MAX_VALUES];
    int64_t nv = 0;
    bool values = x->symval && x->ndim == 1;
    for (int i = 0; i < ns; i++) {
        int k = ax[i];
        int64_t step = nst >= 0 ? steps[i] : 1;
        const hc_sym *dim = D(x, k), *b = starts[i], *e = ends[i];
        int64_t bc, ec, dc;
        bool bconst = hc_sym_is_const(b, &bc), econst = hc_sym_is_const(e, &ec),
             dconst = hc_sym_is_const(dim, &dc);
        if (bconst && econst && dconst) {
            d[k] = K(c, n->outputs[0]->shape[k]);
            if (values) { /* the elements taken, concretely */
                for (int64_t j = 0; j < d[k]->c0 && nv < SYM_MAX_VALUES; j++) {
                    int64_t b0 = bc < 0 ? bc + dc : bc;
                    b0 = step > 0 ? hc_clamp64(b0, 0, dc) : hc_clamp64(b0, 0, dc - 1);
                    vals[nv++] = hc_tensor_value_sym(x, b0 + j * step);
                }
            }
            continue;
        }
        values = false;
        if (step != 1) return unsupported(c, "a symbolic slice with a step other than 1");
        /* negative constants count from the end; INT_MAX-like ends mean the end */
        if (bconst && bc < 0) b = hc_sym_add_c(c->a, dim, bc);
        if (econst && ec < 0) e = hc_sym_add_c(c->a, dim, ec);
        if (econst && ec >= INT32_MAX) e = dim;
        const char *what = hc_arena_printf(c->a, "the slice of dimension %d", k);
        b = pick_max(c, K(c, 0), b, what, &st);
        if (!st) b = pick_min(c, b, dim, what, &st);
        if (!st) e = pick_min(c, e, dim, what, &st);
        if (!st) d[k] = pick_max(c, hc_sym_sub(c->a, e, b), K(c, 0), what, &st);
        if (st) return st;
    }
    set_dims(c, 0, x->ndim, d);
    if (values && x->ndim == 1) set_vals(c, 0, nv, vals);
    return HC_OK;
}

static hc_status rule_gather(ctx *c) {
    hc_node *n = c->n;
    const hc_tensor *x = n->inputs[0], *ind = n->inputs[1];
    int axis;
    hc_status st = hc_node_axis(n, hc_node_attr_int(n, "axis", 0), x->ndim, &axis, c->err);
    if (st) return st;
    const hc_sym *d[HC_MAX_DIMS];
    int nd = 0;
    for (int k = 0; k < axis; k++) d[nd++] = D(x, k);
    for (int k = 0; k < ind->ndim; k++) d[nd++] = D(ind, k);
    for (int k = axis + 1; k < x->ndim; k++) d[nd++] = D(x, k);
    set_dims(c, 0, nd, d);
    /* values: a 1-d value vector indexed by constant indices */
    const hc_sym *v[SYM_MAX_VALUES];
    int64_t nv, ni;
    int64_t idx[SYM_MAX_VALUES];
    if (x->symval && x->ndim == 1 && ind->data && values_of(x, v, &nv, SYM_MAX_VALUES) &&
        (ni = hc_tensor_const_ints(ind, idx, SYM_MAX_VALUES)) >= 0 &&
        ni == hc_tensor_numel(ind)) {
        const hc_sym *r[SYM_MAX_VALUES];
        for (int64_t k = 0; k < ni; k++) {
            int64_t j = idx[k] < 0 ? idx[k] + nv : idx[k];
            if (j < 0 || j >= nv) return fail(c, HC_ERR_INVALID, "index %lld is out of range",
                                               (long long)idx[k]);
            r[k] = v[j];
        }
        set_vals(c, 0, ni, r);
    }
    return HC_OK;
}

static hc_status rule_expand(ctx *c) {
    const hc_tensor *x = c->n->inputs[0];
    const hc_sym *s[SYM_MAX_VALUES];
    int64_t cnt = 0;
    hc_status st = shape_values(c, 1, s, &cnt);
    if (st) return st;
    if (cnt > HC_MAX_DIMS) return unsupported(c, "too many dimensions");
    hc_tensor shp = *x; /* the shape input as a tensor of those dims */
    shp.ndim = (int)cnt;
    shp.sym = s;
    for (int k = 0; k < cnt; k++) hc_sym_is_const(s[k], &shp.shape[k]);
    const hc_tensor *bt[2] = {x, &shp};
    int nd;
    const hc_sym *d[HC_MAX_DIMS];
    if ((st = broadcast(c, 2, bt, &nd, d))) return st;
    set_dims(c, 0, nd, d);
    return HC_OK;
}

static hc_status rule_tile(ctx *c) {
    const hc_tensor *x = c->n->inputs[0];
    const hc_sym *r[SYM_MAX_VALUES];
    int64_t cnt = 0;
    hc_status st = shape_values(c, 1, r, &cnt);
    if (st) return st;
    if (cnt != x->ndim) return unsupported(c, "repeats of another length than the rank");
    const hc_sym *d[HC_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) d[k] = hc_sym_mul(c->a, D(x, k), r[k]);
    set_dims(c, 0, x->ndim, d);
    return HC_OK;
}

static hc_status rule_pad(ctx *c) {
    hc_node *n = c->n;
    const hc_tensor *x = n->inputs[0];
    const hc_sym *p[SYM_MAX_VALUES];
    int64_t cnt = 0;
    int64_t axes[SHP_MAX_VALUES];
    int na = -1;
    if (n->opset < 11) {
        int cp;
        const int64_t *v = hc_node_attr_ints(n, "pads", &cp);
        for (int i = 0; i < cp && i < SYM_MAX_VALUES; i++) p[i] = K(c, v[i]);
        cnt = cp;
    } else {
        hc_status st = shape_values(c, 1, p, &cnt);
        if (st) return st;
        if (IN(c, 3) && (st = hc_shp_const_ints(n, 3, axes, SHP_MAX_VALUES, &na, c->err)))
            return st;
    }
    int ax[HC_MAX_DIMS], nax = na >= 0 ? na : x->ndim;
    for (int i = 0; i < x->ndim; i++) ax[i] = i;
    hc_status st;
    if (na >= 0 && (st = hc_shp_axes(n, "axes", axes, na, x->ndim, ax, c->err))) return st;
    if (cnt != 2 * nax) return unsupported(c, "pads of another length than 2 x the axes");
    const hc_sym *d[HC_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) d[k] = D(x, k);
    for (int i = 0; i < nax; i++)
        d[ax[i]] = hc_sym_add(c->a, d[ax[i]], hc_sym_add(c->a, p[i], p[nax + i]));
    set_dims(c, 0, x->ndim, d);
    return HC_OK;
}

static hc_status rule_constant_of_shape(ctx *c) {
    const hc_sym *s[SYM_MAX_VALUES];
    int64_t cnt = 0;
    hc_status st = shape_values(c, 0, s, &cnt);
    if (st) return st;
    if (cnt > HC_MAX_DIMS) return unsupported(c, "too many dimensions");
    set_dims(c, 0, (int)cnt, s);
    return HC_OK;
}

static hc_status rule_range(ctx *c) {
    const hc_sym *v[3];
    int64_t cnt, delta;
    for (int i = 0; i < 3; i++)
        if (!values_of(IN(c, i), &v[i], &cnt, 1) || cnt != 1)
            return unsupported(c, hc_arena_printf(c->a, "input %d depends on the data: the "
                                                  "output size is known only at run time", i));
    if (!hc_sym_is_const(v[2], &delta) || delta == 0)
        return unsupported(c, "a symbolic or zero delta");
    hc_status st = HC_OK;
    const hc_sym *len = hc_sym_ceildiv(c->a, hc_sym_sub(c->a, v[1], v[0]), K(c, delta));
    len = pick_max(c, len, K(c, 0), "the length of the range", &st);
    if (st) return st;
    set_dims(c, 0, 1, &len);
    return HC_OK;
}

static hc_status rule_one_hot(ctx *c) {
    const hc_tensor *ind = c->n->inputs[0];
    const hc_sym *depth[1];
    int64_t cnt = 0;
    if (!values_of(IN(c, 1), depth, &cnt, 1) || cnt != 1)
        return unsupported(c, "depth (input 1) depends on the data");
    int axis;
    hc_status st = hc_node_axis(c->n, hc_node_attr_int(c->n, "axis", -1), ind->ndim + 1, &axis,
                                c->err);
    if (st) return st;
    const hc_sym *d[HC_MAX_DIMS];
    for (int k = 0, j = 0; k <= ind->ndim; k++) d[k] = k == axis ? depth[0] : D(ind, j++);
    set_dims(c, 0, ind->ndim + 1, d);
    return HC_OK;
}

static hc_status rule_depth_space(ctx *c, bool to_space) {
    const hc_tensor *x = c->n->inputs[0];
    int64_t b = hc_node_attr_int(c->n, "blocksize", 1);
    if (x->ndim != 4) return unsupported(c, "an input that is not 4-d");
    const hc_sym *d[4] = {D(x, 0), K(c, c->n->outputs[0]->shape[1]), NULL, NULL};
    if (x->sym && x->sym[1]) return unsupported(c, "the channel dimension is symbolic");
    hc_status st;
    for (int k = 2; k < 4; k++) {
        if (to_space) {
            d[k] = hc_sym_mul_c(c->a, D(x, k), b);
        } else {
            if ((st = need(c, HC_SYMC_DIVIDES, D(x, k), K(c, b), "the block size"))) return st;
            d[k] = hc_sym_floordiv(c->a, D(x, k), K(c, b));
        }
    }
    set_dims(c, 0, 4, d);
    return HC_OK;
}

static hc_status rule_rnn(ctx *c) {
    hc_node *n = c->n;
    const hc_tensor *x = n->inputs[0];
    if (x->ndim != 3) return unsupported(c, "an input that is not 3-d");
    bool bf = hc_node_attr_int(n, "layout", 0) != 0; /* [batch, seq, input] */
    const hc_sym *seq = D(x, bf ? 1 : 0), *batch = D(x, bf ? 0 : 1);
    for (int i = 0; i < n->noutputs; i++) {
        const hc_tensor *o = n->outputs[i];
        if (!o) continue;
        const hc_sym *d[HC_MAX_DIMS];
        for (int k = 0; k < o->ndim; k++) d[k] = K(c, o->shape[k]);
        if (i == 0) { /* Y: [seq, dirs, batch, hidden] or [batch, seq, dirs, hidden] */
            d[bf ? 1 : 0] = seq;
            d[bf ? 0 : 2] = batch;
        } else { /* Y_h, Y_c: [dirs, batch, hidden] or [batch, dirs, hidden] */
            d[bf ? 0 : 1] = batch;
        }
        set_dims(c, i, o->ndim, d);
    }
    return HC_OK;
}

/* Attention (ONNX 23): batch, query and key/value sequences (and a past's length) may be
 * symbolic; heads and head sizes are what the op inferred (fixed). */
static hc_status rule_attention(ctx *c) {
    hc_node *n = c->n;
    const hc_tensor *q = n->inputs[0], *k = n->inputs[1], *v = n->inputs[2];
    const hc_tensor *pk = IN(c, 4);
    bool three = q->ndim == 3;
    int sd = three ? 1 : 2; /* the sequence dimension */
    const hc_sym *B = D(q, 0), *Sq = D(q, sd), *S = D(k, sd);
    hc_status st;
    if ((st = need(c, HC_SYMC_EQ, D(k, 0), B, "K's batch")) ||
        (st = need(c, HC_SYMC_EQ, D(v, 0), B, "V's batch")) ||
        (st = need(c, HC_SYMC_EQ, D(v, sd), S, "V's sequence against K's")))
        return st;
    for (int d = 1; d < q->ndim; d++)
        if (d != sd && ((q->sym && q->sym[d]) || (k->sym && k->sym[d]) || (v->sym && v->sym[d])))
            return unsupported(c, "symbolic heads or head sizes");
    const hc_sym *T = pk ? hc_sym_add(c->a, D(pk, 2), S) : S;
    if (pk && (st = need(c, HC_SYMC_EQ, D(pk, 0), B, "past_key's batch"))) return st;
    const hc_tensor *mask = IN(c, 3);
    if (mask) { /* at most T columns; the other dims broadcast to [B, Hq, Sq] */
        int r = mask->ndim;
        if ((st = need(c, HC_SYMC_LE, D(mask, r - 1), T, "attn_mask's columns"))) return st;
        const hc_sym *full[3] = {B, NULL, Sq}; /* the heads are fixed: the op checks them */
        for (int d = 0; d + 1 < r; d++) {
            int f = 3 - (r - 1) + d;
            const hc_sym *md = D(mask, d);
            int64_t one;
            if (f == 1 || (hc_sym_is_const(md, &one) && one == 1)) continue;
            if ((st = need(c, HC_SYMC_BCAST, full[f], md, "attn_mask's broadcast"))) return st;
        }
    }
    for (int i = 0; i < n->noutputs; i++) {
        const hc_tensor *o = n->outputs[i];
        if (!o) continue;
        const hc_sym *d[4];
        for (int j = 0; j < o->ndim; j++) d[j] = K(c, o->shape[j]);
        d[0] = B;
        if (i == 0) d[three ? 1 : 2] = Sq;
        else if (i == 3) d[2] = Sq, d[3] = T;
        else d[2] = T;
        set_dims(c, i, o->ndim, d);
    }
    return HC_OK;
}

/* The internal ops the attention passes make (src/graph/ops/nn_attention.c):
 * ATTENTION_CORE keeps its scores' shape; ATTENTION_FUSED(Q [B, Hq, Sq, D], K [B, Hk, T,
 * D], V [B, Hk, T, Dv], ...) gives [B, Hq, Sq, Dv], the heads and head sizes fixed. */
static bool fixed_dims(const hc_tensor *x, int from, int to);
static hc_status rule_attention_internal(ctx *c) {
    hc_node *n = c->n;
    const hc_tensor *q = n->inputs[0];
    if (n->op == HC_OPK_ATTENTION_CORE) {
        same_as(c, 0, q);
        return HC_OK;
    }
    const hc_tensor *k = n->inputs[1], *v = n->inputs[2];
    if (!fixed_dims(q, 1, 2) || !fixed_dims(q, 3, 4) || !fixed_dims(k, 1, 2) ||
        !fixed_dims(k, 3, 4) || !fixed_dims(v, 1, 2) || !fixed_dims(v, 3, 4))
        return unsupported(c, "symbolic heads or head sizes");
    hc_status st;
    if ((st = need(c, HC_SYMC_EQ, D(k, 0), D(q, 0), "K's batch")) ||
        (st = need(c, HC_SYMC_EQ, D(v, 0), D(q, 0), "V's batch")) ||
        (st = need(c, HC_SYMC_EQ, D(v, 2), D(k, 2), "V's keys against K's")))
        return st;
    const hc_sym *d[4] = {D(q, 0), D(q, 1), D(q, 2), D(v, 3)};
    set_dims(c, 0, 4, d);
    return HC_OK;
}

/* Resize / Upsample: a symbolic size scales by a rational scale (floor(in * p / q)), or
 * comes from the sizes input's values. */
static hc_status rule_resize(ctx *c) {
    hc_node *n = c->n;
    const hc_tensor *x = n->inputs[0], *y = n->outputs[0];
    int axes[HC_MAX_DIMS], na = x->ndim;
    for (int d = 0; d < x->ndim; d++) axes[d] = d;
    int cnt = 0;
    const int64_t *av = n->op == HC_OPK_RESIZE && n->opset >= 18 ? hc_node_attr_ints(n, "axes", &cnt)
                                                                 : NULL;
    hc_status st;
    if (av && (st = hc_shp_axes(n, "axes", av, cnt, x->ndim, axes, c->err))) return st;
    if (av) na = cnt;
    const hc_sym *d[HC_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) d[k] = D(x, k);
    int scales_in = n->op == HC_OPK_UPSAMPLE || n->opset < 11 ? 1 : 2;
    int sizes_in = n->op == HC_OPK_RESIZE && n->opset >= 11 ? 3 : -1;
    bool sizes = sizes_in >= 0 && IN(c, sizes_in) && !hc_shp_in_empty(n, sizes_in);
    double sc[HC_MAX_DIMS];
    if (sizes) {
        const char *policy = n->opset >= 18 ? hc_node_attr_string(n, "keep_aspect_ratio_policy",
                                                                  "stretch")
                                            : "stretch";
        if (strcmp(policy, "stretch"))
            return unsupported(c, "a symbolic size under keep_aspect_ratio_policy");
        const hc_sym *v[SYM_MAX_VALUES];
        int64_t nv;
        if ((st = shape_values(c, sizes_in, v, &nv))) return st;
        if (nv != na) return unsupported(c, "sizes of another length than the axes");
        for (int i = 0; i < na; i++) d[axes[i]] = v[i];
        set_dims(c, 0, x->ndim, d);
        return HC_OK;
    }
    if (n->op == HC_OPK_UPSAMPLE && n->opset < 9) {
        const double *f = hc_node_attr_floats(n, "scales", &cnt);
        if (!f || cnt != x->ndim) return unsupported(c, "scales");
        for (int k = 0; k < x->ndim; k++) sc[k] = f[k];
    } else {
        double v[SHP_MAX_VALUES];
        if ((st = hc_shp_const_doubles(n, scales_in, v, SHP_MAX_VALUES, &cnt, c->err))) return st;
        if (cnt != na) return unsupported(c, "scales of another length than the axes");
        for (int k = 0; k < x->ndim; k++) sc[k] = 1.0;
        for (int i = 0; i < na; i++) sc[axes[i]] = v[i];
    }
    for (int k = 0; k < x->ndim; k++) {
        if (hc_sym_is_const(d[k], NULL)) {
            d[k] = K(c, y->shape[k]);
            continue;
        }
        int64_t q = 0;
        for (int64_t t = 1; t <= 64 && !q; t++) /* the scale as p / q exactly */
            if (sc[k] * (double)t == (double)(int64_t)(sc[k] * (double)t)) q = t;
        if (!q) return unsupported(c, "a symbolic size under a scale that is not a fraction of "
                                      "small integers");
        int64_t p = (int64_t)(sc[k] * (double)q);
        d[k] = hc_sym_floordiv(c->a, hc_sym_mul_c(c->a, d[k], p), K(c, q));
    }
    set_dims(c, 0, x->ndim, d);
    return HC_OK;
}

/* Einsum: an output dim is its label's size; every operand dim of one label must agree
 * (ellipsis dims broadcast). */
static hc_status rule_einsum(ctx *c) {
    hc_node *n = c->n;
    int nout, out[HC_MAX_DIMS], label[HC_MAX_DIMS][HC_MAX_DIMS];
    if (n->ninputs > HC_MAX_DIMS) return unsupported(c, "too many operands");
    hc_status st = hc_nn_einsum_labels(n, &nout, out, label, c->err);
    if (st) return st;
    const hc_sym *d[HC_MAX_DIMS];
    for (int i = 0; i < nout; i++) {
        const hc_sym *r = NULL;
        for (int k = 0; k < n->ninputs; k++) {
            const hc_tensor *t = n->inputs[k];
            for (int j = 0; t && j < t->ndim; j++) {
                if (label[k][j] != out[i]) continue;
                const hc_sym *v = D(t, j);
                int64_t one;
                bool ell = out[i] >= 52;
                if (!r || (ell && hc_sym_is_const(r, &one) && one == 1)) r = v;
                else if (!(ell && hc_sym_is_const(v, &one) && one == 1) &&
                         (st = need(c, ell ? HC_SYMC_BCAST : HC_SYMC_EQ, r, v,
                                    hc_arena_printf(c->a, "operand %d, dimension %d", k, j))))
                    return st;
            }
        }
        d[i] = r ? r : K(c, 1);
    }
    /* summed labels must agree too */
    for (int k = 0; k < n->ninputs; k++)
        for (int j = 0; n->inputs[k] && j < n->inputs[k]->ndim; j++)
            for (int k2 = k; k2 < n->ninputs; k2++)
                for (int j2 = 0; n->inputs[k2] && j2 < n->inputs[k2]->ndim; j2++)
                    if ((k2 > k || j2 > j) && label[k][j] == label[k2][j2] && label[k][j] < 52 &&
                        (st = need(c, HC_SYMC_EQ, D(n->inputs[k], j), D(n->inputs[k2], j2),
                                   "a label's sizes")))
                        return st;
    set_dims(c, 0, nout, d);
    return HC_OK;
}

/* GridSample: [N, C] of the input, the output's spatial sizes from the grid. */
static hc_status rule_grid_sample(ctx *c) {
    const hc_tensor *x = c->n->inputs[0], *grid = c->n->inputs[1];
    if (grid->ndim != x->ndim) return unsupported(c, "a grid of another rank");
    hc_status st = need(c, HC_SYMC_EQ, D(grid, 0), D(x, 0), "the grid's batch");
    if (st) return st;
    const hc_sym *d[HC_MAX_DIMS] = {D(x, 0), D(x, 1)};
    for (int k = 2; k < x->ndim; k++) d[k] = D(grid, k - 1);
    set_dims(c, 0, x->ndim, d);
    return HC_OK;
}

/* ---- the driver ------------------------------------------------------------------------ */
static hc_status rule_internal(ctx *c); /* the internal ops of passes: at the end */

static hc_status apply_rule(ctx *c) {
    hc_node *n = c->n;
    switch (n->op) {
    case HC_OPK_ADD: case HC_OPK_SUB: case HC_OPK_MUL: case HC_OPK_DIV: case HC_OPK_POW:
    case HC_OPK_MOD: case HC_OPK_MIN: case HC_OPK_MAX: case HC_OPK_MEAN: case HC_OPK_SUM:
    case HC_OPK_EQUAL: case HC_OPK_LESS: case HC_OPK_GREATER: case HC_OPK_LESS_OR_EQUAL:
    case HC_OPK_GREATER_OR_EQUAL: case HC_OPK_AND: case HC_OPK_OR: case HC_OPK_XOR:
    case HC_OPK_BITWISE_AND: case HC_OPK_BITWISE_OR: case HC_OPK_BITWISE_XOR:
    case HC_OPK_BIT_SHIFT: case HC_OPK_WHERE:
        return rule_elementwise(c);
    case HC_OPK_RELU: case HC_OPK_LEAKY_RELU: case HC_OPK_SIGMOID: case HC_OPK_HARD_SIGMOID:
    case HC_OPK_HARD_SWISH: case HC_OPK_GELU: case HC_OPK_SWISH: case HC_OPK_TANH:
    case HC_OPK_ERF: case HC_OPK_SOFTPLUS: case HC_OPK_SOFTSIGN: case HC_OPK_ELU:
    case HC_OPK_SELU: case HC_OPK_CELU: case HC_OPK_THRESHOLDED_RELU: case HC_OPK_SHRINK:
    case HC_OPK_CLIP: case HC_OPK_SOFTMAX: case HC_OPK_LOG_SOFTMAX: case HC_OPK_HARDMAX:
    case HC_OPK_SQRT: case HC_OPK_EXP: case HC_OPK_LOG: case HC_OPK_NEG: case HC_OPK_ABS:
    case HC_OPK_RECIPROCAL: case HC_OPK_FLOOR: case HC_OPK_CEIL: case HC_OPK_ROUND:
    case HC_OPK_SIGN: case HC_OPK_SIN: case HC_OPK_COS: case HC_OPK_TAN: case HC_OPK_ASIN:
    case HC_OPK_ACOS: case HC_OPK_ATAN: case HC_OPK_SINH: case HC_OPK_COSH: case HC_OPK_ASINH:
    case HC_OPK_ACOSH: case HC_OPK_ATANH: case HC_OPK_IS_NAN: case HC_OPK_IS_INF:
    case HC_OPK_NOT: case HC_OPK_BITWISE_NOT: case HC_OPK_CAST: case HC_OPK_CAST_LIKE:
    case HC_OPK_IDENTITY: case HC_OPK_DROPOUT: case HC_OPK_LRN: case HC_OPK_LP_NORMALIZATION:
    case HC_OPK_MEAN_VARIANCE_NORMALIZATION: case HC_OPK_INSTANCE_NORMALIZATION:
    case HC_OPK_GROUP_NORMALIZATION: case HC_OPK_CUM_SUM: case HC_OPK_CUM_PROD:
    case HC_OPK_TRILU: case HC_OPK_EYE_LIKE: case HC_OPK_QUANTIZE_LINEAR:
    case HC_OPK_DEQUANTIZE_LINEAR: case HC_OPK_PRELU: case HC_OPK_ROTARY_EMBEDDING:
    case HC_OPK_REVERSE_SEQUENCE: case HC_OPK_SCATTER_ELEMENTS: case HC_OPK_SCATTER:
    case HC_OPK_SCATTER_ND:
        return rule_same(c);
    case HC_OPK_BATCH_NORMALIZATION: case HC_OPK_LAYER_NORMALIZATION:
    case HC_OPK_RMS_NORMALIZATION:
        return rule_norm(c);
    case HC_OPK_MATMUL: case HC_OPK_MATMUL_INTEGER:
        return rule_matmul(c, n->inputs[0], n->inputs[1]);
    case HC_OPK_QLINEAR_MATMUL: return rule_matmul(c, n->inputs[0], n->inputs[3]);
    case HC_OPK_GEMM: return rule_gemm(c);
    case HC_OPK_CONV: case HC_OPK_CONV_INTEGER: case HC_OPK_CONV_TRANSPOSE:
        return rule_window(c, n->inputs[0], n->inputs[1]);
    case HC_OPK_QLINEAR_CONV: return rule_window(c, n->inputs[0], n->inputs[3]);
    case HC_OPK_MAX_POOL: case HC_OPK_AVERAGE_POOL: case HC_OPK_LP_POOL:
    case HC_OPK_GLOBAL_AVERAGE_POOL: case HC_OPK_GLOBAL_MAX_POOL:
        return rule_window(c, n->inputs[0], NULL);
    case HC_OPK_REDUCE_MEAN: case HC_OPK_REDUCE_SUM: case HC_OPK_REDUCE_MAX:
    case HC_OPK_REDUCE_MIN: case HC_OPK_REDUCE_PROD: case HC_OPK_REDUCE_L1:
    case HC_OPK_REDUCE_L2: case HC_OPK_REDUCE_LOG_SUM: case HC_OPK_REDUCE_LOG_SUM_EXP:
    case HC_OPK_REDUCE_SUM_SQUARE: case HC_OPK_ARG_MAX: case HC_OPK_ARG_MIN:
        return rule_reduce(c);
    case HC_OPK_TOP_K: return rule_topk(c);
    case HC_OPK_SHAPE: case HC_OPK_SIZE: return rule_shape(c);
    case HC_OPK_RESHAPE: return rule_reshape(c);
    case HC_OPK_FLATTEN: return rule_flatten(c);
    case HC_OPK_SQUEEZE: return rule_squeeze(c, false);
    case HC_OPK_UNSQUEEZE: return rule_squeeze(c, true);
    case HC_OPK_TRANSPOSE: return rule_transpose(c);
    case HC_OPK_CONCAT: return rule_concat(c);
    case HC_OPK_SPLIT: return rule_split(c);
    case HC_OPK_SLICE: return rule_slice(c);
    case HC_OPK_GATHER: return rule_gather(c);
    case HC_OPK_GATHER_ELEMENTS: same_as(c, 0, n->inputs[1]); return HC_OK;
    case HC_OPK_EXPAND: return rule_expand(c);
    case HC_OPK_TILE: return rule_tile(c);
    case HC_OPK_PAD: return rule_pad(c);
    case HC_OPK_CONSTANT_OF_SHAPE: return rule_constant_of_shape(c);
    case HC_OPK_RANGE: return rule_range(c);
    case HC_OPK_ONE_HOT: return rule_one_hot(c);
    case HC_OPK_DEPTH_TO_SPACE: return rule_depth_space(c, true);
    case HC_OPK_SPACE_TO_DEPTH: return rule_depth_space(c, false);
    case HC_OPK_RNN: case HC_OPK_GRU: case HC_OPK_LSTM: return rule_rnn(c);
    case HC_OPK_ATTENTION: return rule_attention(c);
    case HC_OPK_ATTENTION_CORE: case HC_OPK_ATTENTION_FUSED: return rule_attention_internal(c);
    case HC_OPK_GRID_SAMPLE: return rule_grid_sample(c);
    case HC_OPK_EINSUM: return rule_einsum(c);
    case HC_OPK_RESIZE: case HC_OPK_UPSAMPLE: return rule_resize(c);
    case HC_OPK_IM2COL: case HC_OPK_WINO_INPUT: case HC_OPK_WINO_OUTPUT:
    case HC_OPK_TO_NCHWC: case HC_OPK_FROM_NCHWC: case HC_OPK_CONV_NCHWC:
    case HC_OPK_CONV_NCHWC_Q8: case HC_OPK_WINO_INPUT_NCHWC: case HC_OPK_WINO_OUTPUT_NCHWC:
    case HC_OPK_MAX_POOL_NCHWC: case HC_OPK_AVERAGE_POOL_NCHWC:
        return rule_internal(c);
    default:
        return unsupported(c, "symbolic dimensions reach this operator, which has no symbolic "
                              "shape inference yet");
    }
}

static void print_dims(hc_sb *sb, int nd, const hc_sym *const *d) {
    hc_sb_putc(sb, '[');
    for (int k = 0; k < nd; k++) {
        if (k) hc_sb_puts(sb, ", ");
        hc_sym_print(sb, d[k]);
    }
    hc_sb_putc(sb, ']');
}

/* The rule's dims against the concrete shapes (nd, shape) of output i under binding b. */
static hc_status check_out(ctx *c, int i, const hc_sym_binding *b, int nd,
                           const int64_t *shape, const char *where) {
    const out_spec *o = &c->out[i];
    bool ok = o->ndim == nd;
    for (int d = 0; ok && d < nd; d++) {
        int64_t v;
        ok = hc_sym_eval(o->dims[d], b, &v) && v == shape[d];
    }
    if (ok) return HC_OK;
    hc_sb s1, s2;
    hc_sb_init(&s1), hc_sb_init(&s2);
    print_dims(&s1, o->ndim, o->dims);
    hc_print_shape(&s2, nd, shape);
    hc_status st = fail(c, HC_ERR_UNSUPPORTED, "output %d: symbolic shape inference gives %s, "
                        "the op's own inference %s %s (a hidetc bug: please report it; fix the "
                        "symbols with --dim NAME=V meanwhile)", i, hc_sb_str(&s1),
                        hc_sb_str(&s2), where);
    hc_sb_free(&s1), hc_sb_free(&s2);
    return st;
}

/* Attach, for the op's concrete inference, the values of symbolic-valued inputs under
 * binding b (bufs freed by detach). */
static bool attach_values(hc_node *n, const hc_sym_binding *b, void **bufs) {
    for (int i = 0; i < n->ninputs; i++) {
        hc_tensor *t = n->inputs[i];
        bufs[i] = NULL;
        if (!t || !t->symval) continue;
        int64_t cnt = hc_tensor_numel(t);
        void *buf = hc_xcalloc((size_t)(cnt ? cnt : 1), (size_t)hc_dtype_size(t->dtype));
        for (int64_t k = 0; k < cnt; k++) {
            int64_t v;
            if (!hc_sym_eval(t->symval[k], b, &v)) {
                free(buf);
                return false;
            }
            hc_elem_set(buf, t->dtype, k, (double)v);
        }
        t->data = bufs[i] = buf;
    }
    return true;
}

static void detach_values(hc_node *n, void **bufs) {
    for (int i = 0; i < n->ninputs; i++)
        if (bufs[i]) {
            n->inputs[i]->data = NULL;
            free(bufs[i]);
            bufs[i] = NULL;
        }
}

bool hc_node_reads_symbols(const hc_node *n) {
    for (int i = 0; i < n->ninputs; i++)
        if (n->inputs[i] && (n->inputs[i]->sym || n->inputs[i]->symval)) return true;
    return false;
}

/* The graph of a node that reads symbols (its symbolic inputs' graph). */
static hc_graph *node_graph(const hc_node *n) {
    for (int i = 0; i < n->ninputs; i++)
        if (n->inputs[i] && n->inputs[i]->graph) return n->inputs[i]->graph;
    hc_unreachable();
}

hc_status hc_node_infer_concrete(hc_node *n, hc_error *err) {
    void *bufs[HC_MANY + 1];
    HC_ASSERT(n->ninputs <= HC_MANY);
    hc_sym_binding hb = hc_graph_hint_binding(node_graph(n));
    if (!attach_values(n, &hb, bufs)) {
        detach_values(n, bufs);
        return hc_node_fail(n, HC_ERR_INVALID, err, "an input's symbolic value has no value "
                            "at the hint binding (a division by zero?)");
    }
    hc_status st = hc_op_get(n->op)->infer(n, err);
    detach_values(n, bufs);
    if (st != HC_OK && err) { /* the shapes were the hint binding's: say so */
        hc_sb sb;
        hc_sb_init(&sb);
        for (int i = 0; i < hb.n; i++)
            hc_sb_printf(&sb, "%s%s=%lld", i ? ", " : "", hb.names[i], (long long)hb.values[i]);
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        hc_error_set(err, st, "%s (with the symbols at their hint values %s; --dim-hint "
                     "NAME=N sets others)", msg, hc_sb_str(&sb));
        hc_sb_free(&sb);
    }
    return st;
}

/* The op's concrete inference under binding b (inputs' shapes and values evaluated
 * there), compared with the rule's dims. Inputs and outputs are restored by the caller
 * (hc_tensor_set_sym_shape). An inference that fails at b proves nothing: skipped. */
static hc_status check_at(ctx *c, const hc_sym_binding *b, bool *checked) {
    hc_node *n = c->n;
    *checked = false;
    int64_t saved[HC_MANY + 1][HC_MAX_DIMS];
    void *bufs[HC_MANY + 1];
    bool ok = true;
    for (int i = 0; i < n->ninputs; i++) /* all first: one tensor may be several inputs */
        if (n->inputs[i]) memcpy(saved[i], n->inputs[i]->shape, sizeof saved[i]);
    for (int i = 0; i < n->ninputs && ok; i++) {
        hc_tensor *t = n->inputs[i];
        if (!t) continue;
        for (int d = 0; t->sym && d < t->ndim && ok; d++)
            if (t->sym[d]) ok = hc_sym_eval(t->sym[d], b, &t->shape[d]) && t->shape[d] >= 0;
        ok = ok && !hc_shape_too_large(t->dtype, t->ndim, t->shape);
    }
    hc_status st = HC_OK;
    if (ok && attach_values(n, b, bufs)) {
        hc_error e2 = {0};
        if (hc_op_get(n->op)->infer(n, &e2) == HC_OK) {
            *checked = true;
            for (int i = 0; i < n->noutputs && st == HC_OK; i++)
                if (n->outputs[i])
                    st = check_out(c, i, b, n->outputs[i]->ndim, n->outputs[i]->shape,
                                   "at a second binding of the symbols");
        }
        detach_values(n, bufs);
    } else {
        detach_values(n, bufs);
    }
    for (int i = n->ninputs; i-- > 0;) /* in reverse: the first save of a repeated input */
        if (n->inputs[i]) memcpy(n->inputs[i]->shape, saved[i], sizeof saved[i]);
    return st;
}

hc_status hc_node_infer_symbolic(hc_node *n, hc_error *err) {
    hc_graph *g = node_graph(n);
    ctx c = {n, g, &g->arena, err, HC_NEW_ARRAY(&g->arena, out_spec, (size_t)n->noutputs + 1)};
    hc_status st = apply_rule(&c);
    if (st) return st;
    hc_sym_binding hb = hc_graph_hint_binding(g);
    for (int i = 0; i < n->noutputs; i++) {
        hc_tensor *t = n->outputs[i];
        if (!t) continue;
        if (!c.out[i].set) hc_unreachable(); /* every rule sets every present output */
        if ((st = check_out(&c, i, &hb, t->ndim, t->shape, "at the hint values"))) return st;
    }
    /* a second binding: twice the hints (keeps their divisors), else the hints + 1 */
    int64_t v2[64];
    int ns = HC_MIN((int)g->sym_names.len, 64);
    bool checked = false;
    for (int attempt = 0; attempt < 2 && !checked && st == HC_OK; attempt++) {
        for (int k = 0; k < ns; k++)
            v2[k] = attempt == 0 ? 2 * g->sym_hints.data[k] : g->sym_hints.data[k] + 1;
        hc_sym_binding b2 = {ns, g->sym_names.data, v2};
        st = check_at(&c, &b2, &checked);
    }
    for (int i = 0; i < n->noutputs && st == HC_OK; i++) {
        hc_tensor *t = n->outputs[i];
        if (!t) continue;
        hc_dtype dt = t->dtype;
        if (!hc_tensor_set_sym_shape(t, c.out[i].ndim, c.out[i].dims)) hc_unreachable();
        t->dtype = dt;
        t->symval = NULL;
        const out_spec *o = &c.out[i];
        if (!o->has_vals || o->nval != hc_tensor_numel(t) || t->sym) continue;
        bool all_const = true;
        for (int64_t k = 0; k < o->nval; k++) all_const &= hc_sym_is_const(o->vals[k], NULL);
        if (all_const) { /* a constant after all: folded like one */
            size_t nb = hc_tensor_nbytes(t);
            t->data = hc_arena_alloc(&g->arena, nb ? nb : 1);
            for (int64_t k = 0; k < o->nval; k++) {
                int64_t v;
                hc_sym_is_const(o->vals[k], &v);
                hc_elem_set(t->data, t->dtype, k, (double)v);
            }
        } else {
            t->symval = o->vals;
        }
    }
    return st;
}

/* ---- internal ops made by passes (docs/nchwc.md, docs/winograd.md) ------------------- */
/* Output spatial size of an explicit-pad window over symbolic size `in`: (in + pads -
 * span) // stride + 1, with the window's fit kept as a constraint. */
static const hc_sym *window_out(ctx *c, const hc_sym *in, int64_t k, int64_t st, int64_t dl,
                                int64_t pads, int s, hc_status *e) {
    int64_t span = dl * (k - 1) + 1;
    if (hc_sym_is_const(in, NULL)) {
        int64_t v;
        hc_sym_is_const(in, &v);
        return K(c, (v + pads - span) / st + 1);
    }
    *e = need(c, HC_SYMC_LE, K(c, span - pads), in,
              hc_arena_printf(c->a, "the window of spatial dimension %d", s));
    return hc_sym_add_c(c->a, hc_sym_floordiv(c->a, hc_sym_add_c(c->a, in, pads - span),
                                              K(c, st)), 1);
}

static int64_t attr_at(const hc_node *n, const char *name, int i, int64_t dflt) {
    int cnt = 0;
    const int64_t *v = hc_node_attr_ints(n, name, &cnt);
    return v && i < cnt ? v[i] : dflt;
}

/* Whether dims [from, to) of x are fixed. */
static bool fixed_dims(const hc_tensor *x, int from, int to) {
    for (int d = from; d < to && d < x->ndim; d++)
        if (x->sym && x->sym[d]) return false;
    return true;
}

/* TO_NCHWC / FROM_NCHWC: the batch and spatial sizes carried, channels fixed; CONV_NCHWC
 * (and _Q8) and IM2COL: the batch carried, spatial sizes by the window formula with the
 * explicit pads [top, left, bottom, right]; the blocked pools as the 3-D pools they are;
 * the Winograd transforms: the batch carried into (and back out of) the tile count T =
 * N * TH * TW, fixed spatial sizes only. */
static hc_status rule_internal(ctx *c) {
    hc_node *n = c->n;
    const hc_tensor *x = n->inputs[0], *y = n->outputs[0];
    const hc_sym *d[HC_MAX_DIMS];
    hc_status e = HC_OK;
    switch (n->op) {
    case HC_OPK_MAX_POOL_NCHWC: case HC_OPK_AVERAGE_POOL_NCHWC:
        if (!fixed_dims(x, 4, 5)) return unsupported(c, "a symbolic channel block");
        return rule_window(c, x, NULL);
    case HC_OPK_TO_NCHWC: case HC_OPK_FROM_NCHWC: {
        bool to = n->op == HC_OPK_TO_NCHWC;
        if (!fixed_dims(x, 1, 2) || (!to && !fixed_dims(x, 4, 5)))
            return unsupported(c, "symbolic channels in the blocked layout");
        for (int k = 0; k < y->ndim; k++) d[k] = k == 0 || k == 2 || k == 3 ? D(x, k) : K(c, y->shape[k]);
        set_dims(c, 0, y->ndim, d);
        return HC_OK;
    }
    case HC_OPK_CONV_NCHWC: case HC_OPK_CONV_NCHWC_Q8: case HC_OPK_IM2COL: {
        bool im2col = n->op == HC_OPK_IM2COL;
        if (!fixed_dims(x, 1, 2) || !fixed_dims(x, 4, 5))
            return unsupported(c, "symbolic channels of a convolution");
        for (int i = 1; i < n->ninputs; i++)
            if (n->inputs[i] && n->inputs[i]->sym)
                return unsupported(c, "symbolic weight dimensions");
        if (im2col && hc_node_attr_int(n, "squeeze_batch", 0) && !fixed_dims(x, 0, 1))
            return unsupported(c, "a symbolic batch under squeeze_batch");
        int64_t k[2];
        for (int s = 0; s < 2; s++)
            k[s] = im2col ? attr_at(n, "kernel_shape", s, 1) : n->inputs[1]->shape[2 + s];
        const hc_sym *o[2];
        for (int s = 0; s < 2 && e == HC_OK; s++)
            o[s] = window_out(c, D(x, 2 + s), k[s], attr_at(n, "strides", s, 1),
                              attr_at(n, "dilations", s, 1),
                              attr_at(n, "pads", s, 0) + attr_at(n, "pads", s + 2, 0), s, &e);
        if (e) return e;
        if (im2col) {
            bool sq = hc_node_attr_int(n, "squeeze_batch", 0) != 0;
            const hc_sym *cols[3] = {D(x, 0), K(c, y->shape[sq ? 0 : 1]),
                                     hc_sym_mul(c->a, o[0], o[1])};
            set_dims(c, 0, sq ? 2 : 3, sq ? cols + 1 : cols);
            return HC_OK;
        }
        const hc_sym *r[5] = {D(x, 0), K(c, y->shape[1]), o[0], o[1], K(c, y->shape[4])};
        set_dims(c, 0, 5, r);
        return HC_OK;
    }
    case HC_OPK_WINO_INPUT: case HC_OPK_WINO_INPUT_NCHWC: {
        bool blk = n->op == HC_OPK_WINO_INPUT_NCHWC;
        if (!fixed_dims(x, 1, x->ndim)) return unsupported(c, "symbolic sizes other than the batch");
        /* T = N * (tiles per image): the fixed graph's T over the hint batch */
        int64_t nh = at_hint(c, D(x, 0));
        int64_t t = y->shape[blk ? 1 : 2];
        if (nh < 1 || t % nh) return unsupported(c, "a Winograd tile count not a multiple of the batch");
        const hc_sym *tt = hc_sym_mul_c(c->a, D(x, 0), t / nh);
        const hc_sym *r[3] = {K(c, y->shape[0]), blk ? tt : K(c, y->shape[1]),
                              blk ? K(c, y->shape[2]) : tt};
        set_dims(c, 0, 3, r);
        return HC_OK;
    }
    case HC_OPK_WINO_OUTPUT: case HC_OPK_WINO_OUTPUT_NCHWC: {
        bool blk = n->op == HC_OPK_WINO_OUTPUT_NCHWC;
        int td = blk ? 1 : 2;
        for (int k = 0; k < 3; k++)
            if (k != td && !fixed_dims(x, k, k + 1))
                return unsupported(c, "symbolic sizes other than the tiles");
        /* N = T / (tiles per image), exactly */
        hc_wino_geom wg;
        hc_error werr = {0};
        if (hc_wino_node_geom(n, &wg, &werr) != HC_OK)
            return unsupported(c, "an invalid Winograd tile");
        int64_t per =
            hc_cdiv(y->shape[2], (int64_t)wg.h->m) * hc_cdiv(y->shape[3], (int64_t)wg.w->m);
        const hc_sym *nb = hc_sym_exact_div(c->a, D(x, td), K(c, per));
        if (!nb) return unsupported(c, "a Winograd tile count not a multiple of the tiles per image");
        for (int k = 0; k < y->ndim; k++) d[k] = k ? K(c, y->shape[k]) : nb;
        set_dims(c, 0, y->ndim, d);
        return HC_OK;
    }
    default:
        return unsupported(c, "an internal operator without a symbolic rule");
    }
}
