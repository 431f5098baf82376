/* vectorize.c — a scalar expression of lane L as vector code, for the post-scheduling
 * rewrite's vector accesses (rewrite.c): a load whose flat offset does not depend on L is
 * one scalar (broadcast), one with offset + L a vector load, a constant stride a strided
 * load; lanes that cross blocks of a div/mod (an im2col row, a pad) become one masked load
 * per block. The result is IR vector code (vector types and VLOAD-family primitives),
 * which every target's emitter prints in its own dialect. */
#include <string.h>

#include "fuse/vectorize.h"

/* e at lane 0 */
static hc_expr *lane0(hc_arena *a, hc_var *L, hc_expr *e) {
    hc_expr *z = hc_int(a, 0);
    return hc_subst_expr(a, e, 1, &L, &z);
}

/* ---- vectorizing a lane expression -------------------------------------------------- */
typedef struct vec {
    hc_arena *a;
    hc_var *L;
    hc_var *vs;       /* scalar standing for the stored lane value (epilogue), or NULL */
    hc_expr *vvalue;  /* the vector value */
    hc_expr *count;   /* valid lanes (masked), or NULL */
    int lanes;
    const hc_type *vt;
    bool bad;
    /* Inside the branches of a select that became vector code, both branches are
     * evaluated for every lane: a load there is only allowed if it is also evaluated
     * unconditionally (it appears in an enclosing condition), since the condition may be
     * what keeps its index in bounds (Pad, Im2Col). */
    int guard;
    int nsafe;
    const hc_expr *safe[64];
} vec;

static void collect_safe_loads(vec *v, const hc_expr *e) {
    switch (e->kind) {
    case HC_E_LOAD:
        if (v->nsafe < 64) v->safe[v->nsafe++] = e;
        break;
    case HC_E_BINARY: collect_safe_loads(v, e->u.bin.a), collect_safe_loads(v, e->u.bin.b); break;
    case HC_E_UNARY: collect_safe_loads(v, e->u.un.a); break;
    case HC_E_CAST: collect_safe_loads(v, e->u.cast.a); break;
    case HC_E_SELECT:
        collect_safe_loads(v, e->u.sel.cond);
        break; /* branch loads are conditional */
    case HC_E_CALL:
        for (int i = 0; i < e->u.call.nargs; i++) collect_safe_loads(v, e->u.call.args[i]);
        break;
    default: break;
    }
}

/* A load at constant indices inside the buffer's constant shape (a scalar constant such
 * as a Where's fill value): reading it can never fault. */
static bool const_in_bounds(const hc_expr *e) {
    const hc_type *t = e->u.load.buf->type;
    if (t->kind != HC_TY_TENSOR || t->ndim != e->u.load.n) return false;
    for (int i = 0; i < e->u.load.n; i++) {
        int64_t x, d;
        if (!hc_expr_is_const_int(e->u.load.idx[i], &x) || !hc_expr_is_const_int(t->shape[i], &d) ||
            x < 0 || x >= d)
            return false;
    }
    return true;
}

static bool is_safe_load(const vec *v, const hc_expr *e) {
    if (const_in_bounds(e)) return true;
    for (int i = 0; i < v->nsafe; i++)
        if (hc_expr_equal(v->safe[i], e)) return true;
    return false;
}

/* A load in e that a guard would evaluate unconditionally without being safe. */
static bool has_unsafe_load(const vec *v, const hc_expr *e) {
    switch (e->kind) {
    case HC_E_LOAD: return !is_safe_load(v, e);
    case HC_E_BINARY: return has_unsafe_load(v, e->u.bin.a) || has_unsafe_load(v, e->u.bin.b);
    case HC_E_UNARY: return has_unsafe_load(v, e->u.un.a);
    case HC_E_CAST: return has_unsafe_load(v, e->u.cast.a);
    case HC_E_SELECT:
        return has_unsafe_load(v, e->u.sel.cond) || has_unsafe_load(v, e->u.sel.t) ||
               has_unsafe_load(v, e->u.sel.f);
    case HC_E_CALL:
        for (int i = 0; i < e->u.call.nargs; i++)
            if (has_unsafe_load(v, e->u.call.args[i])) return true;
        return false;
    default: return false;
    }
}

/* Lanes lo <= i < hi of p[i * k], the others 0 and not read. */
static hc_expr *strided_load(hc_arena *a, const hc_type *vt, hc_expr *p, int64_t k, hc_expr *lo,
                             hc_expr *hi) {
    hc_expr *args[4] = {p, hc_int(a, k), lo, hi};
    return hc_call(a, HC_PRIM_VLOAD_STRIDED, vt, 4, args);
}

static hc_expr *as_vec(vec *v, hc_expr *e, bool isvec) {
    if (isvec) return e;
    if (!hc_type_is_scalar(e->type, HC_F32)) {
        v->bad = true;
        return e;
    }
    return hc_call3(v->a, HC_PRIM_VBROADCAST, v->vt, 1, e, NULL, NULL);
}

/* The range of an integer type of at most 16 bits (i32 lanes and f32 hold all its values
 * exactly; an i32's limits are not f32 values). */
static bool int_range(hc_dtype t, double *lo, double *hi) {
    switch (t) {
    case HC_I8: *lo = -128, *hi = 127; return true;
    case HC_U8: *lo = 0, *hi = 255; return true;
    case HC_I16: *lo = -32768, *hi = 32767; return true;
    case HC_U16: *lo = 0, *hi = 65535; return true;
    default: return false;
    }
}

static bool uses_lane(vec *v, const hc_expr *e) {
    return hc_expr_mentions(e, v->L) || (v->vs && hc_expr_mentions(e, v->vs));
}

/* Returns the vectorized e; *isvec says whether it is a vector (else uniform scalar). */
static hc_expr *vectorize(vec *v, hc_expr *e, bool *isvec) {
    hc_arena *a = v->a;
    *isvec = false;
    if (v->bad) return e;
    if (!uses_lane(v, e)) {
        if (v->guard && has_unsafe_load(v, e)) v->bad = true;
        return e;
    }
    switch (e->kind) {
    case HC_E_VAR:
        if (v->vs && e->u.var == v->vs) {
            *isvec = true;
            return v->vvalue;
        }
        break; /* the lane index used as a value */
    case HC_E_LOAD: {
        /* f32 values; bools (a Where's condition) only contiguous along the lanes */
        bool boolean = hc_type_is_scalar(e->type, HC_BOOL);
        if (!hc_type_is_scalar(e->type, HC_F32) && !boolean) break;
        if (v->guard && !is_safe_load(v, e)) break;
        int64_t k = hc_offset_coef(e->u.load.buf, e->u.load.n, e->u.load.idx, v->L);
        hc_expr **idx0 = HC_NEW_ARRAY(a, hc_expr *, e->u.load.n + 1);
        for (int i = 0; i < e->u.load.n; i++) idx0[i] = lane0(a, v->L, e->u.load.idx[i]);
        if (k == 0) return hc_load(a, e->u.load.buf, e->u.load.n, idx0);
        if (k == INT64_MIN || (boolean && k != 1)) break;
        hc_expr *p = hc_address(a, e->u.load.buf, e->u.load.n, idx0);
        *isvec = true;
        if (boolean) {
            const hc_type *bt = hc_type_vector(a, HC_BOOL, v->lanes);
            return v->count ? hc_call3(a, HC_PRIM_VLOAD_MASK, bt, 2, p, v->count, NULL)
                            : hc_call3(a, HC_PRIM_VLOAD, bt, 1, p, NULL, NULL);
        }
        if (k != 1) /* lane i at p[i * k]: a gather */
            return strided_load(a, v->vt, p, k, hc_int(a, 0),
                                v->count ? v->count : hc_int(a, v->lanes));
        return v->count ? hc_call3(a, HC_PRIM_VLOAD_MASK, v->vt, 2, p, v->count, NULL)
                        : hc_call3(a, HC_PRIM_VLOAD, v->vt, 1, p, NULL, NULL);
    }
    case HC_E_BINARY: {
        hc_binop op = e->u.bin.op;
        if (hc_binop_is_comparison(op) && hc_type_is_scalar(e->u.bin.a->type, HC_F32) &&
            hc_type_is_scalar(e->u.bin.b->type, HC_F32)) {
            bool vx, vy; /* a vector of bools (lane masks) */
            hc_expr *x = vectorize(v, e->u.bin.a, &vx), *y = vectorize(v, e->u.bin.b, &vy);
            if (v->bad) return e;
            if (!vx && !vy) return hc_binary(a, op, x, y);
            *isvec = true;
            return hc_binary(a, op, as_vec(v, x, vx), as_vec(v, y, vy));
        }
        if (op != HC_OP_ADD && op != HC_OP_SUB && op != HC_OP_MUL && op != HC_OP_DIV &&
            op != HC_OP_MIN && op != HC_OP_MAX)
            break;
        if (!hc_type_is_scalar(e->type, HC_F32)) break;
        bool vx, vy;
        hc_expr *x = vectorize(v, e->u.bin.a, &vx), *y = vectorize(v, e->u.bin.b, &vy);
        if (v->bad) return e;
        if (!vx && !vy) return hc_binary(a, op, x, y);
        *isvec = true;
        return hc_binary(a, op, as_vec(v, x, vx), as_vec(v, y, vy));
    }
    case HC_E_UNARY: {
        if (e->u.un.op != HC_OP_NEG || !hc_type_is_scalar(e->type, HC_F32)) break;
        bool vx;
        hc_expr *x = vectorize(v, e->u.un.a, &vx);
        *isvec = vx;
        return hc_unary(a, HC_OP_NEG, x);
    }
    case HC_E_SELECT: {
        if (!hc_type_is_scalar(e->type, HC_F32)) break;
        bool vc, vt, vf;
        hc_expr *c = vectorize(v, e->u.sel.cond, &vc);
        if (v->bad) return e;
        if (!vc && !uses_lane(v, e->u.sel.t) && !uses_lane(v, e->u.sel.f))
            return hc_select(a, c, e->u.sel.t, e->u.sel.f); /* scalar: stays lazy */
        if (!vc && !hc_type_is_scalar(c->type, HC_BOOL)) break;
        int saved = v->nsafe;
        collect_safe_loads(v, e->u.sel.cond);
        v->guard++;
        hc_expr *t = vectorize(v, e->u.sel.t, &vt), *f = vectorize(v, e->u.sel.f, &vf);
        v->guard--;
        v->nsafe = saved;
        if (v->bad) return e;
        *isvec = true;
        return hc_select(a, c, as_vec(v, t, vt), as_vec(v, f, vf));
    }
    case HC_E_CAST: {
        if (!hc_type_is_scalar(e->type, HC_F32)) break;
        const hc_expr *in = e->u.cast.a;
        if (hc_type_is_scalar(in->type, HC_F32)) return vectorize(v, (hc_expr *)in, isvec);
        /* f32(T(x)) with x f32 and T an integer type of at most 16 bits: the quantize /
         * dequantize chain of a QDQ epilogue (round, clamp, cast to i8/u8, back to f32).
         * As vectors: x saturated to T's range, truncated through i32 lanes and converted
         * back; the same value as the scalar casts wherever those are defined (x within T's
         * range, as QuantizeLinear's clamp makes it). */
        double lo, hi;
        if (in->kind != HC_E_CAST || in->type->kind != HC_TY_SCALAR ||
            !hc_type_is_scalar(in->u.cast.a->type, HC_F32) || !int_range(in->type->dtype, &lo, &hi))
            break;
        bool vx;
        hc_expr *x = vectorize(v, in->u.cast.a, &vx);
        if (v->bad) return e;
        if (!vx) return hc_cast(a, e->type, hc_cast(a, in->type, x));
        x = hc_max(a, hc_min(a, x, as_vec(v, hc_f32(a, (float)hi), false)),
                   as_vec(v, hc_f32(a, (float)lo), false));
        *isvec = true;
        return hc_cast(a, v->vt, hc_cast(a, hc_type_vector(a, HC_I32, v->lanes), x));
    }
    case HC_E_CALL: {
        hc_prim p = e->u.call.prim;
        if (hc_prim_is_vector(p) || p == HC_PRIM_ISNAN || p == HC_PRIM_ISINF) break;
        if (!hc_type_is_scalar(e->type, HC_F32)) break;
        bool any = false, vs_[3];
        hc_expr *args[3];
        for (int i = 0; i < e->u.call.nargs && i < 3; i++) {
            args[i] = vectorize(v, e->u.call.args[i], &vs_[i]);
            any |= vs_[i];
        }
        if (v->bad) return e;
        if (!any) return hc_call(a, p, e->type, e->u.call.nargs, args);
        for (int i = 0; i < e->u.call.nargs; i++) args[i] = as_vec(v, args[i], vs_[i]);
        *isvec = true;
        return hc_math(a, p, args[0], e->u.call.nargs > 1 ? args[1] : NULL);
    }
    default: break;
    }
    v->bad = true;
    return e;
}

/* ---- piecewise-contiguous gathers (im2col, pad) ------------------------------------- */
typedef struct piece {
    hc_arena *a;
    hc_var *L;
    int lanes;
    hc_expr *ok;   /* runtime condition under which the rewritten expression is exact */
    bool bad;
    /* the one lane-dependent div/mod: x / w, x % w with x = x0 + L; this piece covers
     * the lanes with (x0 % w + L) / w == seg */
    const hc_expr *x;
    int64_t w;
    int seg;
} piece;

static void piece_and(piece *p, hc_expr *cond) {
    p->ok = p->ok ? hc_and(p->a, p->ok, cond) : cond;
}

/* x / w and x % w with x = x0 + L: when every lane stays in the same block of w, i.e.
 * x0 % w + lanes - 1 < w, they are x0 / w (uniform) and x0 % w + L (affine). */
static hc_expr *piece_expr(hc_mutator *m, hc_expr *e) {
    piece *p = m->ctx;
    int64_t w;
    if (e->kind != HC_E_BINARY || (e->u.bin.op != HC_OP_DIV && e->u.bin.op != HC_OP_MOD) ||
        !hc_expr_mentions(e->u.bin.a, p->L))
        return e;
    if (!hc_expr_is_const_int(e->u.bin.b, &w) || w <= 0 || hc_expr_coef(e->u.bin.a, p->L) != 1) {
        p->bad = true;
        return e;
    }
    if (p->x && (p->w != w || !hc_expr_equal(p->x, e->u.bin.a))) { /* a second divisor */
        p->bad = true;
        return e;
    }
    p->x = e->u.bin.a, p->w = w;
    hc_arena *a = p->a;
    hc_expr *x0 = lane0(p->a, p->L, e->u.bin.a), *W = hc_int(a, w);
    /* in piece seg: x / w = x0 / w + seg and x % w = x0 % w - seg * w + L */
    if (e->u.bin.op == HC_OP_DIV) return hc_add(a, hc_div(a, x0, W), hc_int(a, p->seg));
    return hc_add(a, hc_sub(a, hc_mod(a, x0, W), hc_int(a, p->seg * w)), hc_ref(a, p->L));
}

typedef struct lrange {
    hc_expr *lo, *hi; /* lanes [lo, hi) */
    hc_expr *uniform; /* lane-independent conjuncts, or NULL */
    /* conjuncts 0 <= x and x < bound with a constant bound: what they admit needs no
     * clamp of x to [0, bound - 1] (Pad, Im2Col clamp the index they guard) */
    int nlow, nhigh;
    const hc_expr *low[8], *high[8];
    int64_t bound[8];
} lrange;

/* Record t when it is 0 <= x (x >= 0) or x < c (x <= c - 1) with c a constant. */
static void note_bound(const hc_expr *t, lrange *r) {
    const hc_expr *x = t->u.bin.a, *y = t->u.bin.b;
    hc_binop op = t->u.bin.op;
    int64_t v;
    if (op == HC_OP_GT || op == HC_OP_GE) { /* y < x, y <= x */
        const hc_expr *s = x;
        x = y, y = s, op = op == HC_OP_GT ? HC_OP_LT : HC_OP_LE;
    }
    if (hc_expr_is_const_int(x, &v) && v == 0 && op == HC_OP_LE && r->nlow < 8)
        r->low[r->nlow++] = y;
    else if (hc_expr_is_const_int(y, &v) && r->nhigh < 8) {
        r->high[r->nhigh] = x;
        r->bound[r->nhigh++] = op == HC_OP_LT ? v : v + 1;
    }
}

/* Does r admit only lanes where 0 <= y < top + 1? */
static bool bounded_by(const lrange *r, const hc_expr *y, int64_t top) {
    bool low = false, high = false;
    for (int i = 0; i < r->nlow; i++) low |= hc_expr_equal(r->low[i], y);
    for (int i = 0; i < r->nhigh; i++)
        high |= r->bound[i] <= top + 1 && hc_expr_equal(r->high[i], y);
    return low && high;
}

/* Narrow r by one conjunct of a select condition; false when it is not of the form
 * (affine in L with coefficient +-1) CMP (uniform) or lane-independent. */
static bool range_term(hc_arena *a, hc_var *L, const hc_expr *t, lrange *r) {
    if (!hc_expr_mentions(t, L)) {
        r->uniform = r->uniform ? hc_and(a, r->uniform, (hc_expr *)t) : (hc_expr *)t;
        return true;
    }
    if (t->kind != HC_E_BINARY) return false;
    hc_binop op = t->u.bin.op;
    if (op == HC_OP_AND)
        return range_term(a, L, t->u.bin.a, r) && range_term(a, L, t->u.bin.b, r);
    if (op != HC_OP_LT && op != HC_OP_LE && op != HC_OP_GT && op != HC_OP_GE) return false;
    if (!hc_dtype_is_int(t->u.bin.a->type->dtype) || !hc_dtype_is_int(t->u.bin.b->type->dtype))
        return false;
    note_bound(t, r);
    hc_expr *d = hc_sub(a, t->u.bin.a, t->u.bin.b); /* d CMP 0 */
    int64_t k = hc_expr_coef(d, L);
    if (k == INT64_MIN || k == 0) return false;
    hc_expr *d0 = lane0(a, L, d), *one = hc_int(a, 1);
    if (k != 1 && k != -1) { /* a strided index: d = d0 + k * L */
        /* as m * L <= B (upper) or m * L >= B (lower) with m = |k| > 0 */
        bool le = op == HC_OP_LT || op == HC_OP_LE; /* k * L <= -d0 (- 1 if strict) */
        hc_expr *B = hc_sub(a, hc_int(a, 0), d0);
        if (op == HC_OP_LT) B = hc_sub(a, B, one);
        if (op == HC_OP_GT) B = hc_add(a, B, one);
        if (k < 0) le = !le, B = hc_sub(a, hc_int(a, 0), B);
        int64_t m = k < 0 ? -k : k;
        hc_expr *M = hc_int(a, m), *zero = hc_int(a, 0);
        /* lanes are >= 0, so a negative bound only means "none" / "all": clamping it at 0
         * first makes C's truncating division a floor (hi) and a ceiling (lo) */
        if (le) r->hi = hc_min(a, r->hi, hc_div(a, hc_max(a, hc_add(a, B, M), zero), M));
        else
            r->lo = hc_max(a, r->lo, hc_div(a, hc_add(a, hc_max(a, B, zero), hc_int(a, m - 1)), M));
        return true;
    }
    /* k = +1: d = d0 + L;  k = -1: d = d0 - L */
    bool upper = (k == 1) == (op == HC_OP_LT || op == HC_OP_LE); /* bounds L from above */
    hc_expr *bound;
    if (k == 1) bound = hc_sub(a, hc_int(a, 0), d0); /* L CMP -d0 */
    else bound = d0;                                  /* L CMP' d0 (flipped) */
    bool strict = op == HC_OP_LT || op == HC_OP_GT;
    if (upper) r->hi = hc_min(a, r->hi, strict ? bound : hc_add(a, bound, one));
    else r->lo = hc_max(a, r->lo, strict ? hc_add(a, bound, one) : bound);
    return true;
}

/* Strip min(max(x, 0), e - 1) from a lane-dependent index, recording the lanes where it
 * is the identity into the fast-path condition. */
static hc_expr *unclamp(piece *p, hc_expr *x, lrange *r) {
    int64_t zero, top;
    if (x->kind == HC_E_BINARY && x->u.bin.op == HC_OP_MIN &&
        hc_expr_is_const_int(x->u.bin.b, &top) && x->u.bin.a->kind == HC_E_BINARY &&
        x->u.bin.a->u.bin.op == HC_OP_MAX && hc_expr_is_const_int(x->u.bin.a->u.bin.b, &zero) &&
        zero == 0) {
        hc_expr *y = x->u.bin.a->u.bin.a;
        int64_t k = hc_expr_coef(y, p->L);
        if (k == INT64_MIN || k == 0) return NULL;
        if (bounded_by(r, y, top)) return y; /* the select's own bounds: no check */
        hc_arena *a = p->a;
        hc_expr *y0 = lane0(p->a, p->L, y), *K = hc_int(a, k);
        /* lanes [lo, hi) must satisfy 0 <= y0 + k * L <= top (or be empty): y is smallest
         * at the first lane and largest at the last one when k > 0, the reverse if k < 0 */
        hc_expr *first = hc_add(a, y0, hc_mul(a, K, r->lo));
        hc_expr *last = hc_add(a, y0, hc_mul(a, K, hc_sub(a, r->hi, hc_int(a, 1))));
        if (k < 0) {
            hc_expr *t = first;
            first = last, last = t;
        }
        hc_expr *in = hc_and(a, hc_le(a, hc_int(a, 0), first), hc_le(a, last, hc_int(a, top)));
        piece_and(p, hc_binary(a, HC_OP_OR, hc_le(a, r->hi, r->lo), in));
        return y;
    }
    return hc_expr_coef(x, p->L) == INT64_MIN ? NULL : x;
}

/* select(cond, X[idx], 0) or X[idx] (f32), after the piecewise rewrite: one masked load
 * of the lanes the condition admits. NULL when the expression has another form. */
static hc_expr *range_load(piece *p, hc_expr *e, hc_expr *count, const hc_type *vt) {
    hc_arena *a = p->a;
    lrange r = {.lo = hc_int(a, 0), .hi = count ? hc_min(a, count, hc_int(a, p->lanes))
                                                : hc_int(a, p->lanes)};
    if (p->x) { /* the lanes of piece seg: seg * w - x0 % w <= L < (seg + 1) * w - x0 % w */
        hc_expr *m0 = hc_mod(a, lane0(p->a, p->L, (hc_expr *)p->x), hc_int(a, p->w));
        r.lo = hc_max(a, r.lo, hc_sub(a, hc_int(a, p->seg * p->w), m0));
        r.hi = hc_min(a, r.hi, hc_sub(a, hc_int(a, (p->seg + 1) * p->w), m0));
    }
    hc_expr *ld = e;
    if (e->kind == HC_E_SELECT) {
        const hc_expr *f = e->u.sel.f;
        bool fzero = f->kind == HC_E_CONST && hc_type_is_scalar(f->type, HC_F32) &&
                     f->u.c.f == 0.0;
        if (!fzero || !range_term(p->a, p->L, e->u.sel.cond, &r)) return NULL;
        ld = e->u.sel.t;
    }
    if (ld->kind == HC_E_CAST && hc_type_is_scalar(ld->u.cast.a->type, HC_F32)) ld = ld->u.cast.a;
    if (ld->kind != HC_E_LOAD || !hc_type_is_scalar(ld->type, HC_F32)) return NULL;
    if (r.uniform) r.hi = hc_select(a, r.uniform, r.hi, hc_int(a, 0));
    int n = ld->u.load.n;
    hc_expr **idx = HC_NEW_ARRAY(a, hc_expr *, n + 1);
    for (int d = 0; d < n; d++) {
        hc_expr *x = ld->u.load.idx[d];
        if (hc_expr_mentions(x, p->L)) {
            x = unclamp(p, x, &r);
            if (!x) return NULL;
        }
        idx[d] = x;
    }
    int64_t k = hc_offset_coef(ld->u.load.buf, n, idx, p->L);
    if (k == INT64_MIN || k == 0) return NULL;
    for (int d = 0; d < n; d++) idx[d] = lane0(p->a, p->L, idx[d]);
    hc_expr *ptr = hc_address(a, ld->u.load.buf, n, idx);
    if (k != 1) return strided_load(a, vt, ptr, k, r.lo, r.hi); /* stride-k conv, Slice */
    hc_expr *args[3] = {ptr, r.lo, r.hi};
    return hc_call(a, HC_PRIM_VLOAD_RANGE, vt, 3, args);
}

/* ---- the interface (vectorize.h) ------------------------------------------------------ */
hc_expr *hc_lanes_vectorize(const hc_lanes *l, hc_expr *s, bool *isvec) {
    vec v = {.a = l->a, .L = l->L, .vs = l->vs, .vvalue = l->vvalue, .count = l->count,
             .lanes = l->lanes, .vt = l->vt};
    hc_expr *r = vectorize(&v, s, isvec);
    return v.bad ? NULL : r;
}

hc_expr *hc_lanes_as_vector(const hc_lanes *l, hc_expr *r, bool isvec) {
    vec v = {.a = l->a, .L = l->L, .vt = l->vt};
    r = as_vec(&v, r, isvec);
    return v.bad ? NULL : r;
}

hc_expr *hc_lanes_at0(const hc_lanes *l, hc_expr *e) { return lane0(l->a, l->L, e); }

hc_expr *hc_lanes_range_load(const hc_lanes *l, hc_expr *s, hc_expr **ok) {
    hc_arena *a = l->a;
    int lanes = l->lanes;
    /* one masked load per piece: the lanes of a vector span at most this many blocks of
     * the divisor (rows of an im2col); their loads cover disjoint lanes, so they add up */
    piece pc = {.a = a, .L = l->L, .lanes = lanes};
    hc_mutator pm = {.a = a, .ctx = &pc, .expr = piece_expr};
    hc_expr *s2 = hc_mutate_expr(&pm, s);
    hc_expr *fast = pc.bad ? NULL : range_load(&pc, s2, l->count, l->vt);
    int nseg = pc.x ? (int)((lanes - 1 + pc.w - 1) / pc.w) + 1 : 1;
    for (int seg = 1; fast && seg < nseg && seg <= 16; seg++) {
        piece ps = {.a = a, .L = l->L, .lanes = lanes, .ok = pc.ok, .seg = seg};
        hc_mutator psm = {.a = a, .ctx = &ps, .expr = piece_expr};
        hc_expr *sp = hc_mutate_expr(&psm, s);
        hc_expr *part = ps.bad ? NULL : range_load(&ps, sp, l->count, l->vt);
        fast = part ? hc_binary(a, HC_OP_ADD, fast, part) : NULL;
        pc.ok = ps.ok;
    }
    if (nseg > 17) fast = NULL;
    *ok = pc.ok;
    return fast;
}
