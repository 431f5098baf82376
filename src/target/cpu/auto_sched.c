/* auto_sched.c — the rule-based CPU auto-scheduler for injective and reduction tasks.
 *
 * Rules (DESIGN.md "Scheduling", docs/task.md):
 *  - injective intermediate nodes are inlined into their consumers (unless the inlined
 *    expression grows too large, then they are materialized);
 *  - outputs, and nodes with a reduce that other nodes read, get their own loop nest,
 *    in producer-before-consumer order; intermediates live in heap temporaries;
 *  - a loop nest fuses the outer dimensions (and, when that is not enough work for the
 *    threads, blocks of the innermost one) into one loop over work items, parallel when
 *    there is enough work; a spatial task mapping on that loop's variable recovers the
 *    indices (a repeat mapping when serial); the innermost dimension is a serial loop
 *    the C compiler vectorizes;
 *  - reductions accumulate per work item (so per thread): a vector of accumulators
 *    along the innermost output dimension when the reduced data is contiguous along it
 *    (reduce over a non-innermost axis, matmul-like), else one scalar per element. */
#include <math.h>
#include <string.h>

#include "target/cpu/cpu.h"
#include "ir/mapping.h"
#include "target/sched_util.h"

/* The loop nest of one materialized node. */
typedef struct nest {
    int ndim;                  /* >= 1: a 0-d node is computed as shape [1] */
    int64_t dims[HC_MAX_DIMS];
    int64_t inner, outer, blk, nblk, nwork;
    bool parallel, vector_acc;
    int tile_dim; /* >= 0: tiles of tile x tile over (tile_dim, innermost) */
    int64_t tile;
    /* Symbolic extents (dynamic shapes): per dim its index expression, and the inner
     * extent and the number of work items as expressions. The decisions above are made
     * at the hint values; a symbolic innermost dim is one block. */
    bool sym;
    hc_expr *ext[HC_MAX_DIMS];
    hc_expr *inner_e, *nwork_e;
} nest;

static void plan_nest(const hc_as_sched *s, const hc_tnode *n, int64_t work, bool vector_acc,
                      int tile_dim, nest *p) {
    p->ndim = n->ndim ? n->ndim : 1;
    for (int i = 0; i < p->ndim; i++) p->dims[i] = n->ndim ? n->shape[i] : 1;
    p->inner = p->dims[p->ndim - 1];
    p->tile_dim = tile_dim;
    p->tile = hc_dtype_size(n->dtype) <= 4 ? 32 : 16;
    p->outer = 1;
    for (int i = 0; i + 1 < p->ndim; i++)
        p->outer *= i == tile_dim ? hc_cdiv(p->dims[i], p->tile) : p->dims[i];
    int threads = s->target ? HC_MAX(1, s->target->caps.num_cores) : 1;
    int lanes = s->target ? HC_MAX(1, hc_target_f32_lanes(s->target)) : 8;
    p->vector_acc = vector_acc;
    p->parallel = threads > 1 && work >= HC_AUTOSCHED_PARALLEL_MIN_WORK;
    p->blk = vector_acc ? HC_MIN(p->inner, HC_AUTOSCHED_MAX_ACC) : p->inner;
    if (tile_dim >= 0) p->blk = HC_MIN(p->inner, p->tile);
    /* Too few outer work items for the threads: also split the innermost dimension, in
     * blocks that stay multiples of the vector width. */
    if (p->parallel && p->outer * hc_cdiv(p->inner, p->blk) < 2 * threads) {
        int64_t want = hc_cdiv(2 * threads, p->outer);
        int64_t b = hc_cdiv(p->inner, want);
        b = hc_round_up(b, lanes);
        if (b < p->blk) p->blk = b;
    }
    bool sym_inner = n->ndim && n->sym[n->ndim - 1];
    if (sym_inner) p->blk = p->inner; /* one block: its extent is the expression */
    p->nblk = hc_cdiv(p->inner, p->blk);
    p->nwork = p->outer * p->nblk;
    if (p->nwork < 2) p->parallel = false;
    p->sym = n->ndim && hc_tnode_is_symbolic(n);
    if (!p->sym) return;
    hc_arena *a = s->a;
    for (int i = 0; i < p->ndim; i++) p->ext[i] = hc_tnode_extent(a, n, i);
    p->inner_e = p->ext[p->ndim - 1];
    hc_expr *w = hc_int(a, p->nblk);
    for (int i = 0; i + 1 < p->ndim; i++)
        w = hc_mul(a, w, i == tile_dim ? hc_int(a, hc_cdiv(p->dims[i], p->tile)) : p->ext[i]);
    p->nwork_e = hc_simplify_expr(a, w);
}

/* ---- emission -------------------------------------------------------------------- */

/* State shared by the body emitters of one loop nest. */
typedef struct body {
    const hc_as_node *ni;
    const nest *p;
    hc_expr *idx[HC_MAX_DIMS]; /* store index; the innermost entry is j0 + jph */
    hc_var *jph;               /* placeholder for the position inside the inner block */
    hc_expr *jn;               /* extent of the inner loop */
    hc_expr *value;            /* node value over idx */
    int vector_bits;           /* of the target: sizes partial accumulators */
} body;

static hc_expr *at_j(hc_arena *a, const body *bd, hc_expr *e, hc_var *jj) {
    return hc_subst_expr(a, e, 1, (hc_var *[]){bd->jph}, (hc_expr *[]){hc_ref(a, jj)});
}

static void store_at_j(hc_builder *b, const body *bd, hc_var *jj, hc_expr *v) {
    hc_expr *idx[HC_MAX_DIMS];
    int n = bd->p->ndim;
    for (int i = 0; i < n; i++) idx[i] = at_j(b->a, bd, bd->idx[i], jj);
    hc_b_store(b, bd->ni->buf, n, idx, hc_as_cast_to(b->a, bd->ni->node->dtype, v));
}

static void emit_scalar_body(hc_builder *b, const body *bd) {
    hc_var *jj = hc_b_for_begin(b, "j", bd->jn, hc_serial());
    hc_expr *v = hc_as_emit_scalar_reduces(b, at_j(b->a, bd, bd->value, jj), bd->vector_bits);
    store_at_j(b, bd, jj, v);
    hc_b_end(b);
}

/* e = k * jj + c with a constant k > 0 and c free of jj: c (and *k), else NULL. */
static hc_expr *offset_of(hc_arena *a, hc_expr *e, hc_var *jj, int64_t *k) {
    *k = hc_expr_coef(e, jj);
    if (*k <= 0 || *k == INT64_MIN) return NULL;
    return hc_subst_expr(a, e, 1, &jj, (hc_expr *[]){hc_int(a, 0)});
}

/* floor(x / k) and ceil(x / k) for k > 0 and x of any sign (C's / truncates). */
static hc_expr *floor_div(hc_arena *a, hc_expr *x, int64_t k) {
    if (k == 1) return x;
    hc_expr *neg = hc_sub(a, hc_int(a, 0),
                          hc_div(a, hc_sub(a, hc_int(a, k - 1), x), hc_int(a, k)));
    return hc_select(a, hc_le(a, hc_int(a, 0), x), hc_div(a, x, hc_int(a, k)), neg);
}
static hc_expr *ceil_div(hc_arena *a, hc_expr *x, int64_t k) {
    if (k == 1) return x;
    return hc_sub(a, hc_int(a, 0), floor_div(a, hc_sub(a, hc_int(a, 0), x), k));
}

/* Split a conjunction over the inner index jj: conjuncts free of jj go to *inv, bounds
 * lo <= jj < hi from `x <= k*jj + c`, `x < k*jj + c`, `k*jj + c < x`, `k*jj + c <= x`
 * (constant k > 0: a window of stride k) narrow *lo / *hi. false when some conjunct is
 * neither. */
static bool split_guard(hc_arena *a, hc_expr *g, hc_var *jj, hc_expr **inv, hc_expr **lo,
                        hc_expr **hi) {
    if (!hc_expr_mentions(g, jj)) {
        *inv = *inv ? hc_and(a, *inv, g) : g;
        return true;
    }
    if (g->kind != HC_E_BINARY) return false;
    hc_binop op = g->u.bin.op;
    hc_expr *x = g->u.bin.a, *y = g->u.bin.b;
    if (op == HC_OP_AND)
        return split_guard(a, x, jj, inv, lo, hi) && split_guard(a, y, jj, inv, lo, hi);
    if (op != HC_OP_LT && op != HC_OP_LE) return false;
    bool lt = op == HC_OP_LT;
    int64_t k;
    if (!hc_expr_mentions(x, jj)) { /* x < k jj + c: jj >= floor((x-c)/k) + 1;  <=: ceil((x-c)/k) */
        hc_expr *c = offset_of(a, y, jj, &k);
        if (!c) return false;
        hc_expr *d = hc_sub(a, x, c);
        hc_expr *l = lt ? hc_add(a, floor_div(a, d, k), hc_int(a, 1)) : ceil_div(a, d, k);
        *lo = hc_max(a, *lo, l);
        return true;
    }
    if (!hc_expr_mentions(y, jj)) { /* k jj + c < y: jj < ceil((y-c)/k);  <=: floor((y-c)/k) + 1 */
        hc_expr *c = offset_of(a, x, jj, &k);
        if (!c) return false;
        hc_expr *d = hc_sub(a, y, c);
        hc_expr *h = lt ? ceil_div(a, d, k) : hc_add(a, floor_div(a, d, k), hc_int(a, 1));
        *hi = hc_min(a, *hi, h);
        return true;
    }
    return false;
}

/* acc[jj] = combine(acc[jj], select(g, x, identity)) for jj < jn, when the guard g splits
 * into a part free of jj and a range of jj: `if (part) for jj in range: acc[jj] =
 * combine(acc[jj], x)`. The elements skipped would combine the identity, so this is
 * exact; the loop left has no condition and vectorizes (a padded pooling window's
 * inner loop). false (nothing emitted) when v is not of that form. */
static bool emit_guarded_update(hc_builder *b, const body *bd, hc_var *acc, hc_reduce_kind k,
                                hc_expr *identity, hc_expr *v) {
    hc_arena *a = b->a;
    if (v->kind != HC_E_SELECT || !hc_expr_equal(v->u.sel.f, identity)) return false;
    if (k != HC_REDUCE_SUM && k != HC_REDUCE_AVG && k != HC_REDUCE_MAX && k != HC_REDUCE_MIN)
        return false;
    hc_expr *inv = NULL, *lo = hc_int(a, 0), *hi = bd->jn;
    if (!split_guard(a, v->u.sel.cond, bd->jph, &inv, &lo, &hi)) return false;
    if (inv) hc_b_if_begin(b, inv);
    hc_var *l = hc_b_declare(b, "jlo", hc_type_scalar(HC_INDEX_TYPE), hc_simplify_expr(a, lo));
    hc_expr *n = hc_max(a, hc_sub(a, hc_simplify_expr(a, hi), hc_ref(a, l)), hc_int(a, 0));
    hc_var *jj = hc_b_for_begin(b, "j", n, hc_serial());
    hc_expr *j = hc_add(a, hc_ref(a, l), hc_ref(a, jj));
    hc_expr *x = hc_subst_expr(a, v->u.sel.t, 1, (hc_var *[]){bd->jph}, (hc_expr *[]){j});
    hc_b_store(b, acc, 1, &j, hc_as_reduce_combine(a, k, hc_load(a, acc, 1, &j), x));
    hc_b_end(b);
    if (inv) hc_b_end(b);
    return true;
}

/* A SUM/AVG reduction over at most 256 elements (a window) whose value is a float load
 * contiguous along the inner index, or such a load under a guard that split_guard
 * splits: x on success, with the guard's
 * parts in *inv, *lo, *hi (lo <= jph < hi), else NULL. */
static hc_expr *chunkable(hc_arena *a, const body *bd, const hc_expr *r, hc_expr *v,
                          hc_expr **inv, hc_expr **lo, hc_expr **hi) {
    hc_reduce_kind k = r->u.reduce.kind;
    if ((k != HC_REDUCE_SUM && k != HC_REDUCE_AVG) || r->type->dtype != HC_F32) return NULL;
    if (hc_reduce_is_symbolic(r)) return NULL;
    int64_t extent = 1; /* small windows only: a long reduction streams its rows better */
    for (int i = 0; i < r->u.reduce.naxes; i++) extent *= r->u.reduce.extents[i];
    if (extent > 256) return NULL;
    *inv = NULL, *lo = hc_int(a, 0), *hi = bd->jn;
    hc_expr *x = v;
    if (v->kind == HC_E_SELECT) {
        if (!hc_expr_equal(v->u.sel.f, hc_as_reduce_init(a, k, HC_F32)) ||
            !split_guard(a, v->u.sel.cond, bd->jph, inv, lo, hi))
            return NULL;
        x = v->u.sel.t;
    }
    if (x->kind != HC_E_LOAD || x->type->kind != HC_TY_SCALAR || x->type->dtype != HC_F32)
        return NULL;
    int n = x->u.load.n;
    for (int i = 0; i + 1 < n; i++)
        if (hc_expr_mentions(x->u.load.idx[i], bd->jph)) return NULL;
    return n > 0 && hc_expr_coef(x->u.load.idx[n - 1], bd->jph) == 1 ? x : NULL;
}

/* The accumulation of a chunkable reduction in vector registers, `lanes` positions of the
 * inner block at a time: per chunk c0 = c * lanes, the reduction loops inside, and
 * vacc += vload_range(&x[jph = c0], lo - c0, hi - c0) (the lanes the guard admits, the
 * others add zero), then acc[c0 .. c0 + lanes) = vacc. Unlike the loop per element
 * below, the partial sums stay in a register across the reduction (a padded pooling
 * window: 9 masked vector loads and adds per 16 outputs). acc has room for whole chunks. */
static void emit_chunked_reduce(hc_builder *b, const body *bd, const hc_expr *r, hc_var *acc,
                                int lanes) {
    hc_arena *a = b->a;
    const hc_type *vt = hc_type_vector(a, HC_F32, lanes);
    hc_expr *nchunks = hc_div(a, hc_add(a, bd->jn, hc_int(a, lanes - 1)), hc_int(a, lanes));
    hc_var *c = hc_b_for_begin(b, "c", hc_simplify_expr(a, nchunks), hc_serial());
    hc_expr *c0 = hc_mul(a, hc_ref(a, c), hc_int(a, lanes));
    hc_expr *zero = hc_call(a, HC_PRIM_VBROADCAST, vt, 1, (hc_expr *[]){hc_f32(a, 0)});
    hc_var *vacc = hc_b_declare(b, "vacc", vt, zero);
    hc_expr *inv, *lo, *hi;
    hc_expr *x = chunkable(a, bd, r, hc_as_open_reduce_loops(b, r), &inv, &lo, &hi);
    HC_ASSERT(x);
    if (inv) hc_b_if_begin(b, inv);
    int n = x->u.load.n;
    hc_expr **idx = HC_NEW_ARRAY(a, hc_expr *, n);
    for (int i = 0; i < n; i++) idx[i] = hc_subst_expr(a, x->u.load.idx[i], 1, &bd->jph, &c0);
    hc_expr *hi_c = hc_min(a, hi, bd->jn);
    hc_expr *args[3] = {hc_address(a, x->u.load.buf, n, idx),
                        hc_simplify_expr(a, hc_sub(a, lo, c0)),
                        hc_simplify_expr(a, hc_sub(a, hi_c, c0))};
    hc_expr *ld = hc_call(a, HC_PRIM_VLOAD_RANGE, vt, 3, args);
    hc_b_assign(b, vacc, hc_add(a, hc_ref(a, vacc), ld));
    if (inv) hc_b_end(b);
    hc_as_close_loops(b, r->u.reduce.naxes);
    hc_expr *st[2] = {hc_address(a, acc, 1, &c0), hc_ref(a, vacc)};
    hc_b_eval(b, hc_call(a, HC_PRIM_VSTORE, hc_type_scalar(HC_VOID), 2, st));
    hc_b_end(b);
}

/* One accumulator per element of the inner block: the inner loop stays a plain
 * elementwise loop (vectorizable without reassociating floating-point sums). */
static void emit_vector_body(hc_builder *b, const body *bd) {
    hc_arena *a = b->a;
    hc_expr_vec rs = {0};
    hc_as_top_reduces(bd->value, &rs);
    hc_expr **res = HC_NEW_ARRAY(a, hc_expr *, rs.len);
    hc_var **accs = HC_NEW_ARRAY(a, hc_var *, rs.len);
    for (size_t i = 0; i < rs.len; i++) {
        hc_expr *r = rs.data[i];
        hc_reduce_kind k = r->u.reduce.kind;
        hc_dtype at = hc_as_acc_dtype(r->type->dtype);
        int lanes = bd->vector_bits / 32;
        hc_expr *inv, *lo, *hi;
        bool chunks = lanes >= 8 && chunkable(a, bd, r, r->u.reduce.value, &inv, &lo, &hi);
        int64_t len = chunks ? hc_round_up(bd->p->blk, lanes) : bd->p->blk;
        const hc_type *tt = hc_type_tensor_c(a, at, 1, &len, HC_SCOPE_REGISTER);
        hc_var *acc = accs[i] = hc_b_declare(b, "acc", tt, NULL);
        if (chunks) {
            emit_chunked_reduce(b, bd, r, acc, lanes);
            res[i] = hc_as_reduce_finish(a, r, hc_load(a, acc, 1, (hc_expr *[]){hc_ref(a, bd->jph)}));
            continue;
        }
        hc_var *jj = hc_b_for_begin(b, "j", bd->jn, hc_serial());
        hc_expr *ji[1] = {hc_ref(a, jj)};
        hc_b_store(b, acc, 1, ji, hc_as_reduce_init(a, k, at));
        hc_b_end(b);
        hc_expr *v = hc_as_open_reduce_loops(b, r);
        if (!emit_guarded_update(b, bd, acc, k, hc_as_reduce_init(a, k, at), v)) {
            jj = hc_b_for_begin(b, "j", bd->jn, hc_serial());
            ji[0] = hc_ref(a, jj);
            hc_b_store(b, acc, 1, ji,
                       hc_as_reduce_combine(a, k, hc_load(a, acc, 1, ji), at_j(a, bd, v, jj)));
            hc_b_end(b);
        }
        hc_as_close_loops(b, r->u.reduce.naxes);
        res[i] = hc_as_reduce_finish(a, r, hc_load(a, acc, 1, (hc_expr *[]){hc_ref(a, bd->jph)}));
    }
    hc_expr *v = hc_as_replace_exprs(a, bd->value, (int)rs.len, rs.data, res);
    hc_var *jj = hc_b_for_begin(b, "j", bd->jn, hc_serial());
    store_at_j(b, bd, jj, at_j(a, bd, v, jj));
    hc_b_end(b);
    hc_vec_free(&rs);
}

static bool want_vector_acc(const hc_as_node *ni) {
    const hc_tnode *n = ni->node;
    if (n->ndim == 0 || n->shape[n->ndim - 1] < 2 || !hc_expr_has_reduce(ni->value)) return false;
    if (n->sym[n->ndim - 1]) return false; /* the accumulators are a fixed-size array */
    if (hc_as_reduce_under_condition(ni->value, false)) return false;
    hc_expr_vec rs = {0};
    hc_as_top_reduces(ni->value, &rs);
    bool nested = false, contiguous = false;
    for (size_t i = 0; i < rs.len; i++) {
        nested |= hc_expr_has_reduce(rs.data[i]->u.reduce.value);
        contiguous |= hc_as_contiguous_in(rs.data[i]->u.reduce.value, n->axes[n->ndim - 1]);
    }
    hc_vec_free(&rs);
    return !nested && contiguous;
}

/* The output dimension along which some load is contiguous while it strides along the
 * innermost one (a transpose): tiling both keeps the reads and the writes in cache.
 * Loads that do not depend on the innermost axis (broadcasts) do not count. */
static int load_transposed_dim(const hc_expr *e, const hc_tnode *n) {
    int found = -1, m = e->kind == HC_E_LOAD ? e->u.load.n : 0;
    const hc_var *j = n->axes[n->ndim - 1];
    bool strided = false;
    for (int i = 0; i + 1 < m; i++) strided |= hc_expr_mentions(e->u.load.idx[i], j);
    if (strided && !hc_expr_mentions(e->u.load.idx[m - 1], j))
        for (int d = 0; d + 1 < n->ndim; d++)
            if (hc_expr_mentions(e->u.load.idx[m - 1], n->axes[d])) found = d;
    hc_expr *c[HC_AS_MAX_CHILDREN];
    int k = hc_as_children(e, c);
    for (int i = 0; i < k; i++) found = HC_MAX(found, load_transposed_dim(c[i], n));
    return found;
}

static int transposed_dim(const hc_as_node *ni) {
    const hc_tnode *n = ni->node;
    if (n->ndim < 2 || hc_expr_has_reduce(ni->value)) return -1;
    int d = load_transposed_dim(ni->value, n);
    int64_t t = hc_dtype_size(n->dtype) <= 4 ? 32 : 16;
    if (d >= 0 && (n->sym[d] || n->sym[n->ndim - 1])) return -1; /* tiles of fixed extents only */
    return d >= 0 && n->shape[d] >= t && n->shape[n->ndim - 1] >= t ? d : -1;
}

/* Loops over work items; returns the number of blocks opened. Sets the outer indices
 * and the inner block's start. */
static int open_outer(hc_builder *b, const nest *p, const hc_tnode *n, hc_expr **idx,
                      hc_expr **j0) {
    hc_arena *a = b->a;
    int64_t md[HC_MAX_DIMS + 1];
    const char *names[HC_MAX_DIMS + 1];
    int nm = 0;
    for (int i = 0; i + 1 < p->ndim; i++) {
        bool t = i == p->tile_dim;
        md[nm] = t ? hc_cdiv(p->dims[i], p->tile) : p->dims[i];
        names[nm++] = t ? "tb" : n->axes[i]->name;
    }
    if (p->nblk > 1) md[nm] = p->nblk, names[nm++] = "jb";
    *j0 = hc_int(a, 0);
    if (nm == 0) return 0;
    hc_var *vars[HC_MAX_DIMS + 1];
    int opened = 0;
    if (p->sym) { /* extents are expressions: loops and index arithmetic, no mapping */
        hc_expr *me[HC_MAX_DIMS + 1];
        for (int i = 0, k = 0; i + 1 < p->ndim; i++, k++)
            me[k] = i == p->tile_dim ? hc_int(a, md[k]) : p->ext[i];
        if (p->nblk > 1) me[nm - 1] = hc_int(a, p->nblk);
        if (p->parallel) {
            hc_var *w = hc_b_for_begin(b, "w", p->nwork_e, hc_parallel(0));
            hc_expr *rest = hc_ref(a, w);
            for (int k = nm - 1; k >= 0; k--) {
                hc_expr *v = k ? hc_mod(a, rest, me[k]) : rest;
                vars[k] = hc_b_declare(b, names[k], hc_type_scalar(HC_INDEX_TYPE), v);
                if (k) rest = hc_div(a, rest, me[k]);
            }
            opened = 1;
        } else {
            for (int k = 0; k < nm; k++) vars[k] = hc_b_for_begin(b, names[k], me[k], hc_serial());
            opened = nm;
        }
    } else if (p->parallel) {
        hc_var *w = hc_b_for_begin(b, "w", hc_int(a, p->nwork), hc_parallel(0));
        hc_b_for_map_begin(b, hc_map_spatial(a, nm, md), hc_ref(a, w), nm, vars, names);
        opened = 2;
    } else {
        hc_b_for_map_begin(b, hc_map_repeat(a, nm, md, NULL), hc_int(a, 0), nm, vars, names);
        opened = 1;
    }
    for (int i = 0; i + 1 < p->ndim; i++) idx[i] = hc_ref(a, vars[i]);
    if (p->nblk > 1) *j0 = hc_mul(a, hc_ref(a, vars[nm - 1]), hc_int(a, p->blk));
    if (p->tile_dim >= 0) { /* the rows of a tile, outside the contiguous inner loop */
        int d = p->tile_dim;
        hc_expr *t0 = hc_mul(a, idx[d], hc_int(a, p->tile));
        hc_expr *dim = p->sym ? p->ext[d] : hc_int(a, p->dims[d]);
        hc_expr *ext = hc_min(a, hc_int(a, p->tile), hc_sub(a, dim, t0));
        idx[d] = hc_add(a, t0, hc_ref(a, hc_b_for_begin(b, "t", ext, hc_serial())));
        opened++;
    }
    return opened;
}

static void emit_node(hc_as_sched *s, hc_builder *b, const hc_as_node *ni) {
    hc_arena *a = s->a;
    const hc_tnode *n = ni->node;
    if (hc_tnode_numel(n) == 0 && !hc_tnode_is_symbolic(n)) return;
    nest p;
    bool vec = want_vector_acc(ni);
    int tile_dim = vec ? -1 : transposed_dim(ni);
    plan_nest(s, n, hc_tnode_numel(n) * HC_MAX(1, hc_as_reduce_work(ni->value)), vec, tile_dim, &p);
    hc_b_comment(b, hc_arena_printf(a, "%s: %s%s%s", n->name, p.parallel ? "parallel" : "serial",
                                    vec ? ", vector of accumulators" : "",
                                    tile_dim >= 0 ? ", tiled" : ""));
    body bd = {.ni = ni, .p = &p, .jph = hc_axis(a, "jj")};
    bd.vector_bits = s->target ? s->target->caps.vector_bits : 256;
    hc_expr *j0;
    int opened = open_outer(b, &p, n, bd.idx, &j0);
    bd.idx[p.ndim - 1] = p.nblk > 1 ? hc_add(a, j0, hc_ref(a, bd.jph)) : hc_ref(a, bd.jph);
    hc_expr *inner = p.sym ? p.inner_e : hc_int(a, p.inner);
    bd.jn = p.nblk > 1 ? hc_min(a, hc_int(a, p.blk), hc_sub(a, inner, j0)) : inner;
    bd.value = n->ndim ? hc_subst_expr(a, ni->value, n->ndim, n->axes, bd.idx) : ni->value;
    if (vec) emit_vector_body(b, &bd);
    else emit_scalar_body(b, &bd);
    hc_as_close_loops(b, opened);
}

/* ---- entry ----------------------------------------------------------------------- */
hc_func *hc_auto_schedule(hc_arena *a, const hc_task *t, const struct hc_target *target,
                          hc_error *err) {
    hc_as_sched s;
    hc_var **params;
    int np, nnodes;
    hc_tnode **nodes = hc_as_begin(&s, a, t, target, err, &params, &np, &nnodes);
    if (!nodes) return NULL;
    hc_builder b;
    hc_builder_init(&b, a);
    /* heap temporaries for the materialized intermediates */
    for (int k = 0; k < nnodes; k++) {
        hc_as_node *ni = &s.info[t->ninputs + k];
        if (ni->role == HC_AS_MATERIALIZE && !hc_as_is_output(t, ni->node))
            hc_b_emit(&b, hc_declare(a, ni->buf, NULL));
    }
    for (int k = 0; k < nnodes; k++) {
        hc_as_node *ni = &s.info[t->ninputs + k];
        if (ni->role == HC_AS_MATERIALIZE) emit_node(&s, &b, ni);
    }
    hc_stmt *body = hc_builder_finish(&b);
    return hc_func_new(a, hc_sched_func_name(a, t->name), HC_FN_CPU_KERNEL, np, params, body);
}
