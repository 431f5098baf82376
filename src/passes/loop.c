/* loop.c — Loop and Scan unrolled during shape inference (infer.c calls hc_pass_unroll when
 * it reaches one: its inputs' shapes, and a Loop's trip count, are known by then). Each
 * iteration imports the body once more into the graph through the importer's hook
 * (hc_graph.inline_body) with its formal inputs bound; the node's outputs become the last
 * iteration's state and the per-iteration scan outputs stacked along their axis.
 *   Loop (11+): M (a constant: the backend runner binds it) iterations while cond holds;
 *     a condition the body computes masks the state (Where(running, new, old)), and is
 *     refused with scan outputs (their length would depend on the data).
 *   Scan (9+): one iteration per index of the scan inputs' scan axes, forward or reverse;
 *     scan outputs appended or prepended along scan_output_axes.
 *   Scan-8: batch-major inputs; the steps of each batch entry in turn, then stacked. */
#include <string.h>

#include "passes/pass_util.h"

/* The most iterations one Loop or Scan node unrolls (like RNN's time steps): passes.h */
int hc_loop_max_iterations = HC_LOOP_MAX_ITERATIONS;

typedef struct u_ctx {
    hc_graph *g;
    hc_node *n;
    hc_error *err;
    int uid;
    size_t first;  /* g->nodes.len before the unrolling: the new nodes follow */
    char *folded;  /* per new node: folded to constants here (the caller removes them) */
    size_t cap;
    size_t done;   /* nodes before this index are inferred */
} u_ctx;

/* Infer (and fold where known) the nodes added since the last call, in order: a body's
 * condition that depends only on the iteration is a constant by then. */
static hc_status settle(u_ctx *c) {
    for (size_t i = c->done; i < c->g->nodes.len; i++) {
        hc_node *m = c->g->nodes.data[i];
        hc_status st = hc_pass_infer_node(m, c->err);
        if (st) return st;
        size_t j = i - c->first;
        if (j >= c->cap) {
            size_t cap = 2 * j + 64;
            c->folded = hc_xrealloc(c->folded, cap);
            memset(c->folded + c->cap, 0, cap - c->cap);
            c->cap = cap;
        }
        bool f = false;
        if (m->op != HC_OPK_LOOP && m->op != HC_OPK_SCAN &&
            (st = hc_pass_fold_if_known(c->g, m, &f, c->err)))
            return st;
        c->folded[j] = f;
    }
    c->done = c->g->nodes.len;
    return HC_OK;
}

static const char *fresh(u_ctx *c, const char *s) {
    return hc_arena_printf(&c->g->arena, "%s/%s%d", c->n->name, s, c->uid++);
}

/* A node whose inputs are known now; inferred later, in order, by the inference pass. */
static hc_tensor *emit(u_ctx *c, hc_op_kind op, int nin, hc_tensor *const *in, int nattrs,
                       const hc_attr *attrs) {
    for (int i = 0; i < nin; i++)
        if (!in[i]) return NULL;
    hc_tensor *out = hc_graph_tensor(c->g, fresh(c, "u"), HC_F32, 0, NULL);
    hc_node *m = hc_graph_add_node(c->g, op, fresh(c, "n"), nin, in, 1, &out, nattrs, attrs, c->err);
    if (!m) return NULL;
    m->opset = c->n->opset;
    return out;
}

static hc_tensor *i64(u_ctx *c, int64_t v) {
    return hc_graph_constant(c->g, fresh(c, "i"), HC_I64, 0, NULL, &v);
}

/* x with a new axis of size 1 at `axis` (Unsqueeze's form of the node's opset). */
static hc_tensor *unsqueeze(u_ctx *c, hc_tensor *x, int64_t axis) {
    if (c->n->opset >= 13) {
        hc_tensor *in[2] = {x, hc_pass_const_i64(c->g, fresh(c, "ax"), 1, &axis)};
        return emit(c, HC_OPK_UNSQUEEZE, 2, in, 0, NULL);
    }
    hc_attr a = {.name = "axes", .kind = HC_ATTR_INTS, .n = 1, .ints = &axis};
    return emit(c, HC_OPK_UNSQUEEZE, 1, &x, 1, &a);
}

/* parts stacked along axis (Unsqueeze each, then Concat). */
static hc_tensor *stack(u_ctx *c, int n, hc_tensor **parts, int64_t axis) {
    hc_tensor **u = HC_NEW_ARRAY(&c->g->arena, hc_tensor *, n + 1);
    for (int i = 0; i < n; i++)
        if (!(u[i] = unsqueeze(c, parts[i], axis))) return NULL;
    if (n == 1) return u[0];
    hc_attr a = {.name = "axis", .kind = HC_ATTR_INT, .i = axis};
    return emit(c, HC_OPK_CONCAT, n, u, 1, &a);
}

static hc_status replace(u_ctx *c, int i, hc_tensor *y) {
    hc_tensor *old = i < c->n->noutputs ? c->n->outputs[i] : NULL;
    if (!old) return HC_OK;
    if (!y) return c->err->status ? c->err->status : HC_ERR_INVALID;
    if (!hc_pass_bypass(c->g, old, y)) {
        hc_tensor *id = emit(c, HC_OPK_IDENTITY, 1, &y, 0, NULL);
        if (!id || !hc_pass_bypass(c->g, old, id))
            return hc_node_fail(c->n, HC_ERR_UNSUPPORTED, c->err, "output '%s' cannot be replaced "
                                "by its unrolled value", old->name);
    }
    return HC_OK;
}

static hc_status body(u_ctx *c, int it, int nformal, hc_tensor **formal, int nout, hc_tensor **outs) {
    const char *prefix = hc_arena_printf(&c->g->arena, "%s/%d/", c->n->name, it);
    hc_status st = settle(c); /* the nodes made for this iteration's inputs */
    if (!st) st = c->g->inline_body(c->g, c->n, prefix, nformal, formal, nout, outs, c->err);
    return st ? st : settle(c);
}

static hc_status unroll_loop(u_ctx *c, int nformal) {
    hc_node *n = c->n;
    if (!n->inputs[0]->data) return hc_node_need_const(n, 0, c->err);
    if (!n->inputs[1]->data) return hc_node_need_const(n, 1, c->err);
    if (hc_tensor_numel(n->inputs[0]) != 1 || hc_tensor_numel(n->inputs[1]) != 1)
        return hc_node_fail(n, HC_ERR_INVALID, c->err, "M and cond must be single values");
    int64_t M = (int64_t)hc_tensor_const_at(n->inputs[0], 0);
    if (hc_tensor_const_at(n->inputs[1], 0) == 0 || M < 0) M = 0;
    if (M > hc_loop_max_iterations)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, c->err, "%lld iterations: loops are unrolled, at "
                            "most %d", (long long)M, hc_loop_max_iterations);
    int N = nformal - 2, K = n->noutputs - N;
    if (N < 0 || K < 0)
        return hc_node_fail(n, HC_ERR_INVALID, c->err, "%d inputs and %d outputs do not fit a Loop",
                            nformal, n->noutputs);
    if (M == 0 && K > 0)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, c->err, "no iteration with scan outputs (their "
                            "shape is unknown)");
    hc_arena *a = &c->g->arena;
    hc_tensor **v = HC_NEW_ARRAY(a, hc_tensor *, N + 1);
    for (int i = 0; i < N; i++) v[i] = n->inputs[2 + i];
    hc_tensor ***scan = HC_NEW_ARRAY(a, hc_tensor **, K + 1);
    for (int j = 0; j < K; j++) scan[j] = HC_NEW_ARRAY(a, hc_tensor *, M + 1);
    hc_tensor *cond = n->inputs[1], *running = NULL; /* NULL: every iteration so far ran */
    hc_tensor **formal = HC_NEW_ARRAY(a, hc_tensor *, nformal + 1);
    hc_tensor **outs = HC_NEW_ARRAY(a, hc_tensor *, 1 + N + K + 1);
    for (int64_t it = 0; it < M; it++) {
        formal[0] = i64(c, it), formal[1] = cond;
        for (int i = 0; i < N; i++) formal[2 + i] = v[i];
        hc_status st = body(c, (int)it, nformal, formal, 1 + N + K, outs);
        if (st) return st;
        hc_tensor *co = outs[0];
        bool still = co == cond || (co->data && hc_tensor_const_at(co, 0) != 0);
        if (!still && K > 0)
            return hc_node_fail(n, HC_ERR_UNSUPPORTED, c->err, "the body computes the condition "
                                "and the loop has scan outputs: their length would depend on the "
                                "data");
        for (int i = 0; i < N; i++) {
            hc_tensor *nv = outs[1 + i];
            if (running) { /* this iteration runs only while every earlier one continued */
                hc_tensor *w[3] = {running, nv, v[i]};
                nv = emit(c, HC_OPK_WHERE, 3, w, 0, NULL);
            }
            v[i] = nv;
        }
        for (int j = 0; j < K; j++) scan[j][it] = outs[1 + N + j];
        if (!still) {
            hc_tensor *r[2] = {running ? running : cond, co};
            running = running ? emit(c, HC_OPK_AND, 2, r, 0, NULL) : co;
        }
        cond = co;
    }
    for (int i = 0; i < N; i++)
        if (replace(c, i, v[i])) return c->err->status;
    for (int j = 0; j < K; j++)
        if (replace(c, N + j, stack(c, (int)M, scan[j], 0))) return c->err->status;
    return HC_OK;
}

/* A Scan's counts: Kin scan inputs (num_scan_inputs), Nst states before them, Kout scan
 * outputs after the Nst final states (Scan-8 and Scan-9 alike). */
static hc_status scan_counts(u_ctx *c, int nformal, int64_t *Kin, int *Nst, int *Kout) {
    hc_node *n = c->n;
    *Kin = hc_node_attr_int(n, "num_scan_inputs", -1);
    *Nst = nformal - (int)*Kin;
    if (*Kin < 1 || *Nst < 0 || *Nst > n->noutputs)
        return hc_node_fail(n, HC_ERR_INVALID, c->err, "num_scan_inputs %lld does not fit %d inputs",
                            (long long)*Kin, nformal);
    *Kout = n->noutputs - *Nst;
    return HC_OK;
}

static hc_status unroll_scan(u_ctx *c, int nformal) {
    hc_node *n = c->n;
    int64_t Kin = 0;
    int Nst = 0, Kout = 0, cnt;
    if (scan_counts(c, nformal, &Kin, &Nst, &Kout)) return c->err->status;
    const int64_t *ia = hc_node_attr_ints(n, "scan_input_axes", &cnt);
    if (ia && cnt != Kin) return hc_node_fail(n, HC_ERR_INVALID, c->err, "scan_input_axes length");
    const int64_t *id = hc_node_attr_ints(n, "scan_input_directions", &cnt);
    if (id && cnt != Kin) return hc_node_fail(n, HC_ERR_INVALID, c->err, "scan_input_directions length");
    const int64_t *oa = hc_node_attr_ints(n, "scan_output_axes", &cnt);
    if (oa && cnt != Kout) return hc_node_fail(n, HC_ERR_INVALID, c->err, "scan_output_axes length");
    const int64_t *od = hc_node_attr_ints(n, "scan_output_directions", &cnt);
    if (od && cnt != Kout) return hc_node_fail(n, HC_ERR_INVALID, c->err, "scan_output_directions length");
    hc_arena *a = &c->g->arena;
    int64_t T = -1, *axes = HC_NEW_ARRAY(a, int64_t, Kin + 1);
    for (int j = 0; j < Kin; j++) {
        hc_tensor *x = n->inputs[Nst + j];
        int64_t ax = ia ? ia[j] : 0;
        if (ax < 0) ax += x->ndim;
        if (!x->shape_known || ax < 0 || ax >= x->ndim)
            return hc_node_fail(n, HC_ERR_INVALID, c->err, "scan input '%s': axis %lld of rank %d",
                                x->name, (long long)(ia ? ia[j] : 0), x->ndim);
        if (T >= 0 && x->shape[ax] != T)
            return hc_node_fail(n, HC_ERR_INVALID, c->err, "scan inputs of %lld and %lld steps",
                                (long long)T, (long long)x->shape[ax]);
        T = x->shape[ax], axes[j] = ax;
    }
    if (T < 1) return hc_node_fail(n, HC_ERR_UNSUPPORTED, c->err, "no scan step");
    if (T > hc_loop_max_iterations)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, c->err, "%lld steps: scans are unrolled, at most %d",
                            (long long)T, hc_loop_max_iterations);
    hc_tensor **st = HC_NEW_ARRAY(a, hc_tensor *, Nst + 1);
    for (int i = 0; i < Nst; i++) st[i] = n->inputs[i];
    hc_tensor ***scan = HC_NEW_ARRAY(a, hc_tensor **, Kout + 1);
    for (int j = 0; j < Kout; j++) scan[j] = HC_NEW_ARRAY(a, hc_tensor *, T + 1);
    hc_tensor **formal = HC_NEW_ARRAY(a, hc_tensor *, nformal + 1);
    hc_tensor **outs = HC_NEW_ARRAY(a, hc_tensor *, Nst + Kout + 1);
    for (int64_t t = 0; t < T; t++) {
        for (int i = 0; i < Nst; i++) formal[i] = st[i];
        for (int j = 0; j < Kin; j++) {
            int64_t idx = id && id[j] ? T - 1 - t : t;
            hc_attr ga = {.name = "axis", .kind = HC_ATTR_INT, .i = axes[j]};
            hc_tensor *gin[2] = {n->inputs[Nst + j], i64(c, idx)};
            formal[Nst + j] = emit(c, HC_OPK_GATHER, 2, gin, 1, &ga);
            if (!formal[Nst + j]) return c->err->status;
        }
        hc_status s = body(c, (int)t, nformal, formal, Nst + Kout, outs);
        if (s) return s;
        for (int i = 0; i < Nst; i++) st[i] = outs[i];
        for (int j = 0; j < Kout; j++) scan[j][t] = outs[Nst + j];
    }
    for (int i = 0; i < Nst; i++)
        if (replace(c, i, st[i])) return c->err->status;
    for (int j = 0; j < Kout; j++) {
        if (od && od[j]) /* prepended: the last step first */
            for (int64_t l = 0, r = T - 1; l < r; l++, r--) {
                hc_tensor *tmp = scan[j][l];
                scan[j][l] = scan[j][r], scan[j][r] = tmp;
            }
        if (replace(c, Nst + j, stack(c, (int)T, scan[j], oa ? oa[j] : 0))) return c->err->status;
    }
    return HC_OK;
}

/* x[i] along axis 0 (Gather with a scalar index: the axis goes away). */
static hc_tensor *take(u_ctx *c, hc_tensor *x, int64_t i) {
    hc_attr ga = {.name = "axis", .kind = HC_ATTR_INT, .i = 0};
    hc_tensor *gin[2] = {x, i64(c, i)};
    return emit(c, HC_OPK_GATHER, 2, gin, 1, &ga);
}

/* Scan-8: every input batch-major ([B, ...] states, [B, T, ...] scan inputs); per batch
 * entry the body runs over T steps (forward, or reverse per `directions`), and the outputs
 * are the per-entry final states and scan outputs ([B, T, ...]) stacked along axis 0.
 * sequence_lens (the importer's attribute) must be T for every entry. */
static hc_status unroll_scan8(u_ctx *c, int nformal) {
    hc_node *n = c->n;
    int64_t Kin = 0;
    int Nst = 0, Kout = 0, cnt;
    if (scan_counts(c, nformal, &Kin, &Nst, &Kout)) return c->err->status;
    const int64_t *dir = hc_node_attr_ints(n, "directions", &cnt);
    if (dir && cnt != Kin) return hc_node_fail(n, HC_ERR_INVALID, c->err, "directions length");
    int64_t B = -1, T = -1;
    for (int i = 0; i < nformal; i++) {
        hc_tensor *x = n->inputs[i];
        bool scan = i >= Nst;
        if (x->ndim < (scan ? 2 : 1))
            return hc_node_fail(n, HC_ERR_INVALID, c->err, "%s '%s' of rank %d has no batch%s axis",
                                scan ? "scan input" : "state", x->name, x->ndim,
                                scan ? " and sequence" : "");
        if (B >= 0 && x->shape[0] != B)
            return hc_node_fail(n, HC_ERR_INVALID, c->err, "inputs of batch %lld and %lld",
                                (long long)B, (long long)x->shape[0]);
        B = x->shape[0];
        if (scan && T >= 0 && x->shape[1] != T)
            return hc_node_fail(n, HC_ERR_INVALID, c->err, "scan inputs of %lld and %lld steps",
                                (long long)T, (long long)x->shape[1]);
        if (scan) T = x->shape[1];
    }
    const int64_t *sl = hc_node_attr_ints(n, "sequence_lens", &cnt);
    if (sl && cnt != B)
        return hc_node_fail(n, HC_ERR_INVALID, c->err, "%d sequence_lens for a batch of %lld", cnt,
                            (long long)B);
    for (int b = 0; sl && b < cnt; b++)
        if (sl[b] != T)
            return hc_node_fail(n, HC_ERR_UNSUPPORTED, c->err, "sequence_lens[%d] = %lld is not the "
                                "%lld steps (shorter sequences are not supported)", b,
                                (long long)sl[b], (long long)T);
    if (B < 1 || T < 1) return hc_node_fail(n, HC_ERR_UNSUPPORTED, c->err, "no scan step");
    if (B > hc_loop_max_iterations || T > hc_loop_max_iterations || B * T > hc_loop_max_iterations)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, c->err, "%lld x %lld steps: scans are unrolled, "
                            "at most %d", (long long)B, (long long)T, hc_loop_max_iterations);
    hc_arena *a = &c->g->arena;
    hc_tensor ***fin = HC_NEW_ARRAY(a, hc_tensor **, Nst + 1); /* [state][b] */
    for (int i = 0; i < Nst; i++) fin[i] = HC_NEW_ARRAY(a, hc_tensor *, B + 1);
    hc_tensor ***per = HC_NEW_ARRAY(a, hc_tensor **, Kout + 1); /* [output][b] */
    for (int j = 0; j < Kout; j++) per[j] = HC_NEW_ARRAY(a, hc_tensor *, B + 1);
    hc_tensor ***steps = HC_NEW_ARRAY(a, hc_tensor **, Kout + 1); /* [output][t] */
    for (int j = 0; j < Kout; j++) steps[j] = HC_NEW_ARRAY(a, hc_tensor *, T + 1);
    hc_tensor **st = HC_NEW_ARRAY(a, hc_tensor *, Nst + 1);
    hc_tensor **xb = HC_NEW_ARRAY(a, hc_tensor *, Kin + 1);
    hc_tensor **formal = HC_NEW_ARRAY(a, hc_tensor *, nformal + 1);
    hc_tensor **outs = HC_NEW_ARRAY(a, hc_tensor *, Nst + Kout + 1);
    for (int64_t b = 0; b < B; b++) {
        for (int i = 0; i < Nst; i++)
            if (!(st[i] = take(c, n->inputs[i], b))) return c->err->status;
        for (int j = 0; j < Kin; j++)
            if (!(xb[j] = take(c, n->inputs[Nst + j], b))) return c->err->status;
        for (int64_t t = 0; t < T; t++) {
            for (int i = 0; i < Nst; i++) formal[i] = st[i];
            for (int j = 0; j < Kin; j++)
                if (!(formal[Nst + j] = take(c, xb[j], dir && dir[j] ? T - 1 - t : t)))
                    return c->err->status;
            hc_status s = body(c, (int)(b * T + t), nformal, formal, Nst + Kout, outs);
            if (s) return s;
            for (int i = 0; i < Nst; i++) st[i] = outs[i];
            for (int j = 0; j < Kout; j++) steps[j][t] = outs[Nst + j];
        }
        for (int i = 0; i < Nst; i++) fin[i][b] = st[i];
        for (int j = 0; j < Kout; j++)
            if (!(per[j][b] = stack(c, (int)T, steps[j], 0))) return c->err->status;
    }
    for (int i = 0; i < Nst; i++)
        if (replace(c, i, stack(c, (int)B, fin[i], 0))) return c->err->status;
    for (int j = 0; j < Kout; j++)
        if (replace(c, Nst + j, stack(c, (int)B, per[j], 0))) return c->err->status;
    return HC_OK;
}

hc_status hc_pass_unroll(hc_graph *g, hc_node *n, char **folded, hc_error *err) {
    u_ctx c = {.g = g, .n = n, .err = err, .first = g->nodes.len, .done = g->nodes.len};
    *folded = NULL;
    if (!g->inline_body)
        return hc_node_fail(n, HC_ERR_UNSUPPORTED, err, "has no body to unroll (made by the ONNX "
                            "importer only)");
    int nformal = (int)hc_node_attr_int(n, "num_formal", n->ninputs);
    for (int i = 0; i < nformal; i++)
        if (!n->inputs[i] || !n->inputs[i]->shape_known)
            return hc_node_fail(n, HC_ERR_INVALID, err, "input %d has no known shape", i);
    hc_status st = n->op == HC_OPK_LOOP                        ? unroll_loop(&c, nformal)
                   : hc_node_attr_int(n, "batch_major", 0) ? unroll_scan8(&c, nformal)
                                                            : unroll_scan(&c, nformal);
    if (st == HC_OK) st = settle(&c); /* the stacking and masking nodes */
    *folded = c.folded;
    return st;
}
