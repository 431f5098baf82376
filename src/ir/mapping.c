/* mapping.c — task mappings: constructors, queries, the text form and the lowering of
 * FOR_MAPPING statements into loops (DESIGN.md, "Task mappings — exact semantics").
 *
 * Composition is associative ((A.B).C and A.(B.C) assign the same tasks in the same
 * order), so every algorithm here first flattens a mapping into its atomic levels,
 * outermost first, and works on that list. */
#include "ir/mapping.h"

#include <ctype.h>
#include <string.h>

/* ---- constructors ---------------------------------------------------------------- */
static void check_shape(int ndim, const int64_t *shape) {
    HC_ASSERT_MSG(ndim >= 1 && ndim <= HC_MAX_DIMS, "mapping rank out of range");
    for (int i = 0; i < ndim; i++) HC_ASSERT_MSG(shape[i] >= 1, "mapping extent must be >= 1");
}

static hc_mapping *atom_new(hc_arena *a, hc_mapping_kind k, int ndim, const int64_t *shape) {
    check_shape(ndim, shape);
    hc_mapping *m = HC_NEW(a, hc_mapping);
    m->kind = k, m->ndim = ndim;
    memcpy(m->shape, shape, sizeof(int64_t) * (size_t)ndim);
    return m;
}

const hc_mapping *hc_map_spatial(hc_arena *a, int ndim, const int64_t *shape) {
    hc_mapping *m = atom_new(a, HC_MAP_SPATIAL, ndim, shape);
    /* num_workers must fit in int64 */
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        HC_ASSERT_MSG(!__builtin_mul_overflow(n, shape[i], &n), "spatial mapping too large");
    return m;
}

const hc_mapping *hc_map_repeat(hc_arena *a, int ndim, const int64_t *shape,
                                const hc_loop_attr *attrs) {
    hc_mapping *m = atom_new(a, HC_MAP_REPEAT, ndim, shape);
    for (int i = 0; i < ndim; i++) m->attrs[i] = attrs ? attrs[i] : hc_serial();
    return m;
}

/* Why the product of two mappings cannot be formed, or NULL when it can. */
static const char *compose_problem(const hc_mapping *outer, const hc_mapping *inner) {
    if (outer->ndim != inner->ndim) return "rank mismatch";
    int64_t n;
    if (__builtin_mul_overflow(hc_map_num_workers(outer), hc_map_num_workers(inner), &n))
        return "number of workers overflows int64";
    int64_t so[HC_MAX_DIMS], si[HC_MAX_DIMS];
    hc_map_task_shape(outer, so);
    hc_map_task_shape(inner, si);
    for (int i = 0; i < outer->ndim; i++)
        if (__builtin_mul_overflow(so[i], si[i], &n)) return "task shape overflows int64";
    return NULL;
}

const hc_mapping *hc_map_compose(hc_arena *a, const hc_mapping *outer, const hc_mapping *inner) {
    const char *problem = compose_problem(outer, inner);
    HC_ASSERT_MSG(!problem, problem);
    hc_mapping *m = HC_NEW(a, hc_mapping);
    m->kind = HC_MAP_COMPOSE, m->ndim = outer->ndim;
    m->outer = outer, m->inner = inner;
    return m;
}

/* Workers are placed from the innermost dimension outwards so that consecutive workers
 * get neighbouring tasks (coalesced accesses on GPUs, shared cache lines on CPUs). */
const hc_mapping *hc_map_auto(hc_arena *a, int ndim, const int64_t *shape, int64_t workers,
                              hc_error *err) {
    if (ndim < 1 || ndim > HC_MAX_DIMS) {
        hc_error_set(err, HC_ERR_INVALID, "auto_map: rank %d is not in [1, %d]", ndim,
                     HC_MAX_DIMS);
        return NULL;
    }
    if (workers < 1) {
        hc_error_set(err, HC_ERR_INVALID, "auto_map: workers must be >= 1, got %lld",
                     (long long)workers);
        return NULL;
    }
    int64_t sp[HC_MAX_DIMS], rep[HC_MAX_DIMS], left = workers;
    for (int i = ndim - 1; i >= 0; i--) {
        if (shape[i] < 1) {
            hc_error_set(err, HC_ERR_INVALID, "auto_map: extent %d is %lld, must be >= 1", i,
                         (long long)shape[i]);
            return NULL;
        }
        sp[i] = hc_gcd(left, shape[i]);
        rep[i] = shape[i] / sp[i];
        left /= sp[i];
    }
    if (left != 1) {
        hc_error_set(err, HC_ERR_INVALID,
                     "auto_map: %lld workers do not divide the task shape "
                     "(%lld workers left over)", (long long)workers, (long long)left);
        return NULL;
    }
    return hc_map_compose(a, hc_map_repeat(a, ndim, rep, NULL), hc_map_spatial(a, ndim, sp));
}

const hc_mapping *hc_map_spatial2(hc_arena *a, int64_t s0, int64_t s1) {
    return hc_map_spatial(a, 2, (int64_t[]){s0, s1});
}

const hc_mapping *hc_map_repeat2(hc_arena *a, int64_t s0, int64_t s1) {
    return hc_map_repeat(a, 2, (int64_t[]){s0, s1}, NULL);
}

/* ---- queries --------------------------------------------------------------------- */
static int64_t atom_workers(const hc_mapping *m) {
    if (m->kind == HC_MAP_REPEAT) return 1;
    int64_t n = 1;
    for (int i = 0; i < m->ndim; i++) n *= m->shape[i];
    return n;
}

int64_t hc_map_num_workers(const hc_mapping *m) {
    if (m->kind == HC_MAP_COMPOSE)
        return hc_map_num_workers(m->outer) * hc_map_num_workers(m->inner);
    return atom_workers(m);
}

void hc_map_task_shape(const hc_mapping *m, int64_t *shape_out) {
    if (m->kind != HC_MAP_COMPOSE) {
        memcpy(shape_out, m->shape, sizeof(int64_t) * (size_t)m->ndim);
        return;
    }
    int64_t inner[HC_MAX_DIMS];
    hc_map_task_shape(m->outer, shape_out);
    hc_map_task_shape(m->inner, inner);
    for (int i = 0; i < m->ndim; i++) shape_out[i] *= inner[i];
}

/* Atomic levels of a mapping, outermost first. */
typedef HC_VEC(const hc_mapping *) level_vec;

static void flatten(const hc_mapping *m, level_vec *out) {
    if (m->kind == HC_MAP_COMPOSE) {
        flatten(m->outer, out);
        flatten(m->inner, out);
    } else {
        hc_vec_push(out, m);
    }
}

/* ---- worker2task ----------------------------------------------------------------- */
/* Spatial coordinates of local worker w in a spatial atom (row-major). */
static void unravel(const hc_mapping *m, int64_t w, int64_t *idx) {
    for (int k = m->ndim - 1; k >= 0; k--) {
        idx[k] = w % m->shape[k];
        w /= m->shape[k];
    }
}

int64_t hc_map_worker2task(const hc_mapping *m, int64_t w, int64_t **tasks_out) {
    HC_ASSERT_MSG(w >= 0 && w < hc_map_num_workers(m), "worker out of range");
    level_vec lv = {0};
    flatten(m, &lv);
    int nl = (int)lv.len, d = m->ndim;
    /* Fixed (spatial) coordinates per level; repeat levels start at 0 and count. */
    int64_t(*idx)[HC_MAX_DIMS] = hc_xcalloc((size_t)nl, sizeof *idx);
    int64_t count = 1, rest = w;
    for (int l = nl - 1; l >= 0; l--) {
        const hc_mapping *lm = lv.data[l];
        int64_t n = atom_workers(lm);
        if (lm->kind == HC_MAP_SPATIAL) unravel(lm, rest % n, idx[l]);
        else
            for (int k = 0; k < d; k++)
                HC_ASSERT_MSG(!__builtin_mul_overflow(count, lm->shape[k], &count),
                              "too many tasks per worker");
        rest /= n;
    }
    HC_ASSERT_MSG((uint64_t)count <= SIZE_MAX / sizeof(int64_t) / (size_t)d, "too many tasks");
    int64_t *tasks = hc_xmalloc(sizeof(int64_t) * (size_t)count * (size_t)d);
    for (int64_t t = 0; t < count; t++) {
        for (int k = 0; k < d; k++) {
            int64_t v = 0;
            for (int l = 0; l < nl; l++) v = v * lv.data[l]->shape[k] + idx[l][k];
            tasks[t * d + k] = v;
        }
        /* Advance the odometer over repeat dims: the last level's last dim is fastest. */
        for (int l = nl - 1, carry = 1; l >= 0 && carry; l--) {
            const hc_mapping *lm = lv.data[l];
            if (lm->kind != HC_MAP_REPEAT) continue;
            for (int k = d - 1; k >= 0 && carry; k--) {
                carry = ++idx[l][k] == lm->shape[k];
                if (carry) idx[l][k] = 0;
            }
        }
    }
    free(idx);
    hc_vec_free(&lv);
    *tasks_out = tasks;
    return count;
}

/* ---- printer ----------------------------------------------------------------------- */
static void print_attr(hc_sb *sb, hc_loop_attr at) {
    if (at.kind == HC_LOOP_SERIAL) return;
    hc_sb_putc(sb, at.kind == HC_LOOP_UNROLL ? 'u' : 'p');
    if (at.factor) hc_sb_printf(sb, "%d", at.factor);
}

static void print_atom(hc_sb *sb, const hc_mapping *m) {
    hc_sb_puts(sb, m->kind == HC_MAP_SPATIAL ? "spatial(" : "repeat(");
    for (int i = 0; i < m->ndim; i++) {
        hc_sb_printf(sb, "%s%lld", i ? "," : "", (long long)m->shape[i]);
        if (m->kind == HC_MAP_REPEAT) print_attr(sb, m->attrs[i]);
    }
    hc_sb_putc(sb, ')');
}

void hc_print_mapping(hc_sb *sb, const hc_mapping *m) {
    if (m->kind == HC_MAP_COMPOSE) {
        hc_print_mapping(sb, m->outer);
        hc_sb_putc(sb, '.');
        hc_print_mapping(sb, m->inner);
    } else {
        print_atom(sb, m);
    }
}

/* ---- parser ------------------------------------------------------------------------ */
/* Grammar (whitespace allowed between tokens):
 *   mapping := term ('.' term)*
 *   term    := 'spatial' '(' ext (',' ext)* ')'
 *            | 'repeat'  '(' rext (',' rext)* ')'
 *            | 'auto_map' '(' shape ',' int ')'
 *   rext    := int [('u' | 'p') [int]]      unroll / parallel, optional factor
 *   shape   := '(' int (',' int)* ')' | int */
typedef struct parser {
    hc_arena *a;
    const char *text, *p;
    hc_error *err;
    bool failed;
} parser;

static void skip_ws(parser *ps) {
    while (isspace((unsigned char)*ps->p)) ps->p++;
}

/* Reports the first error only; later ones are consequences of it. */
static void parse_error(parser *ps, const char *expected) {
    if (ps->failed) return;
    ps->failed = true;
    char got[24];
    if (!*ps->p) snprintf(got, sizeof got, "end of input");
    else snprintf(got, sizeof got, "'%.12s'", ps->p);
    hc_error_set(ps->err, HC_ERR_INVALID, "mapping '%s': column %d: expected %s, got %s",
                 ps->text, (int)(ps->p - ps->text) + 1, expected, got);
}

static void semantic_error(parser *ps, const char *at, const char *msg) {
    if (ps->failed) return;
    ps->failed = true;
    hc_error_set(ps->err, HC_ERR_INVALID, "mapping '%s': column %d: %s", ps->text,
                 (int)(at - ps->text) + 1, msg);
}

static bool accept(parser *ps, char c) {
    skip_ws(ps);
    if (*ps->p != c) return false;
    ps->p++;
    return true;
}

static bool expect(parser *ps, char c) {
    if (accept(ps, c)) return true;
    char what[8];
    snprintf(what, sizeof what, "'%c'", c);
    parse_error(ps, what);
    return false;
}

/* A positive integer that fits in int64; `what` names it in errors. */
static bool parse_int(parser *ps, const char *what, int64_t *out) {
    skip_ws(ps);
    if (!isdigit((unsigned char)*ps->p)) {
        parse_error(ps, what);
        return false;
    }
    const char *start = ps->p;
    int64_t v = 0;
    for (; isdigit((unsigned char)*ps->p); ps->p++) {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *ps->p - '0', &v)) {
            semantic_error(ps, start, "integer does not fit in int64");
            return false;
        }
    }
    if (v < 1) {
        semantic_error(ps, start, "value must be >= 1");
        return false;
    }
    *out = v;
    return true;
}

static bool parse_attr(parser *ps, hc_loop_attr *at) {
    *at = hc_serial();
    char c = *ps->p; /* directly after the extent, no space */
    if (c != 'u' && c != 'p') return true;
    ps->p++;
    int64_t f = 0;
    if (isdigit((unsigned char)*ps->p) && !parse_int(ps, "a factor", &f)) return false;
    if (f > 1 << 20) {
        semantic_error(ps, ps->p - 1, "loop attribute factor too large");
        return false;
    }
    *at = c == 'u' ? hc_unroll((int)f) : hc_parallel((int)f);
    return true;
}

/* Comma-separated extents up to the closing ')'; `attrs` NULL forbids suffixes. */
static int parse_extents(parser *ps, int64_t *shape, hc_loop_attr *attrs) {
    int n = 0;
    do {
        if (n == HC_MAX_DIMS) {
            skip_ws(ps);
            semantic_error(ps, ps->p, "rank exceeds HC_MAX_DIMS (8)");
            return -1;
        }
        if (!parse_int(ps, "a positive integer", &shape[n])) return -1;
        if (attrs && !parse_attr(ps, &attrs[n])) return -1;
        n++;
    } while (accept(ps, ','));
    if (!expect(ps, ')')) return -1;
    return n;
}

static const hc_mapping *parse_auto(parser *ps) {
    int64_t shape[HC_MAX_DIMS], workers;
    int n = 1;
    skip_ws(ps);
    const char *at = ps->p;
    if (accept(ps, '(')) n = parse_extents(ps, shape, NULL);
    else if (!parse_int(ps, "a shape '(a,b,...)' or an integer", &shape[0])) return NULL;
    if (n < 0 || !expect(ps, ',') || !parse_int(ps, "a worker count", &workers) ||
        !expect(ps, ')'))
        return NULL;
    hc_error e;
    const hc_mapping *m = hc_map_auto(ps->a, n, shape, workers, &e);
    if (!m) semantic_error(ps, at, e.msg);
    return m;
}

static const hc_mapping *parse_term(parser *ps) {
    skip_ws(ps);
    const char *start = ps->p;
    while (isalnum((unsigned char)*ps->p) || *ps->p == '_') ps->p++;
    size_t len = (size_t)(ps->p - start);
    int kind = -1;
    if (len == 7 && !strncmp(start, "spatial", len)) kind = HC_MAP_SPATIAL;
    else if (len == 6 && !strncmp(start, "repeat", len)) kind = HC_MAP_REPEAT;
    else if (len == 8 && !strncmp(start, "auto_map", len)) kind = HC_MAP_COMPOSE;
    if (kind < 0) {
        ps->p = start;
        parse_error(ps, "'spatial', 'repeat' or 'auto_map'");
        return NULL;
    }
    if (!expect(ps, '(')) return NULL;
    if (kind == HC_MAP_COMPOSE) return parse_auto(ps);
    int64_t shape[HC_MAX_DIMS];
    hc_loop_attr attrs[HC_MAX_DIMS];
    int n = parse_extents(ps, shape, kind == HC_MAP_REPEAT ? attrs : NULL);
    if (n < 0) return NULL;
    if (kind == HC_MAP_REPEAT) return hc_map_repeat(ps->a, n, shape, attrs);
    int64_t nw = 1;
    for (int i = 0; i < n; i++)
        if (__builtin_mul_overflow(nw, shape[i], &nw)) {
            semantic_error(ps, start, "number of workers overflows int64");
            return NULL;
        }
    return hc_map_spatial(ps->a, n, shape);
}

const hc_mapping *hc_map_parse(hc_arena *a, const char *text, hc_error *err) {
    parser ps = {a, text, text, err, false};
    const hc_mapping *m = NULL;
    do {
        skip_ws(&ps);
        const char *at = ps.p;
        const hc_mapping *t = parse_term(&ps);
        if (!t) return NULL;
        if (m) {
            const char *problem = compose_problem(m, t);
            if (problem) {
                char msg[128];
                snprintf(msg, sizeof msg, "cannot compose: %s (rank %d . rank %d)", problem,
                         m->ndim, t->ndim);
                semantic_error(&ps, at, msg);
                return NULL;
            }
        }
        m = m ? hc_map_compose(a, m, t) : t;
    } while (accept(&ps, '.'));
    skip_ws(&ps);
    if (*ps.p) {
        parse_error(&ps, "'.' or end of input");
        return NULL;
    }
    return m;
}

/* ---- lowering ---------------------------------------------------------------------- */
/* for (v...) in M on w: body  becomes
 *   let w' = w                                  (only when w is not a variable/constant)
 *   let v_l = <spatial index of level l, dim k> (for each non-trivial spatial coordinate)
 *   for v_l in [0, s) attr                      (repeat dims, level order, row-major)
 *     let v = sum_l idx_l * prod_{l'>l} shape_l'   (per mapping dimension)
 *       body */
typedef struct lower_level {
    const hc_mapping *m;
    hc_expr *idx[HC_MAX_DIMS]; /* per dimension; NULL when the coordinate is always 0 */
    hc_var *loop[HC_MAX_DIMS]; /* repeat dims with extent > 1 */
} lower_level;

static hc_var *index_var(hc_arena *a, const hc_var *base, int level) {
    char name[64];
    snprintf(name, sizeof name, "%s_%d", base->name, level);
    return hc_var_new(a, name, hc_type_scalar(HC_INDEX_TYPE));
}

/* Coordinates of a spatial level from the global worker w (`after`: product of the worker
 * counts of the levels inside it). Bound with lets collected in `lets`. */
static void lower_spatial(hc_arena *a, lower_level *lv, int l, hc_expr *w, int64_t after,
                          hc_var *const *vars, hc_stmt ***lets_tail) {
    const hc_mapping *m = lv->m;
    int64_t n = atom_workers(m), stride = n;
    hc_expr *wl = after == 1 ? w : hc_div(a, w, hc_int(a, after));
    wl = hc_mod(a, wl, hc_int(a, n));
    for (int k = 0; k < m->ndim; k++) {
        stride /= m->shape[k];
        if (m->shape[k] == 1) continue;
        hc_expr *e = stride == 1 ? wl : hc_div(a, wl, hc_int(a, stride));
        /* the leading coordinate is already < shape because wl < n */
        if (stride * m->shape[k] != n) e = hc_mod(a, e, hc_int(a, m->shape[k]));
        hc_var *v = index_var(a, vars[k], l);
        lv->idx[k] = hc_ref(a, v);
        **lets_tail = hc_let(a, v, e, NULL);
        *lets_tail = &(**lets_tail)->u.let.body;
    }
}

static hc_stmt *lower_one(hc_arena *a, hc_stmt *s) {
    const hc_mapping *m = s->u.fmap.mapping;
    hc_var *const *vars = s->u.fmap.vars;
    int d = m->ndim;
    level_vec flat = {0};
    flatten(m, &flat);
    int nl = (int)flat.len;
    lower_level *lv = hc_arena_alloc(a, sizeof(lower_level) * (size_t)nl);

    hc_stmt *root = NULL, **tail = &root;
    hc_expr *w = s->u.fmap.worker;
    if (w->kind != HC_E_VAR && w->kind != HC_E_CONST) {
        hc_var *wv = hc_var_new(a, "w", w->type);
        *tail = hc_let(a, wv, w, NULL);
        tail = &(*tail)->u.let.body;
        w = hc_ref(a, wv);
    }
    int64_t after = 1;
    for (int l = nl - 1; l >= 0; l--) {
        lv[l].m = flat.data[l];
        if (lv[l].m->kind == HC_MAP_SPATIAL) lower_spatial(a, &lv[l], l, w, after, vars, &tail);
        after *= atom_workers(lv[l].m);
    }
    for (int l = 0; l < nl; l++) {
        if (lv[l].m->kind != HC_MAP_REPEAT) continue;
        for (int k = 0; k < d; k++) {
            if (lv[l].m->shape[k] == 1) continue;
            hc_var *v = index_var(a, vars[k], l);
            lv[l].idx[k] = hc_ref(a, v);
            *tail = hc_for(a, v, hc_int(a, lv[l].m->shape[k]), lv[l].m->attrs[k], NULL);
            tail = &(*tail)->u.for_.body;
        }
    }
    for (int k = 0; k < d; k++) {
        hc_expr *e = NULL; /* Horner form of the sum over levels */
        for (int l = 0; l < nl; l++) {
            if (e && lv[l].m->shape[k] != 1) e = hc_mul(a, e, hc_int(a, lv[l].m->shape[k]));
            if (lv[l].idx[k]) e = e ? hc_add(a, e, lv[l].idx[k]) : lv[l].idx[k];
        }
        *tail = hc_let(a, vars[k], e ? e : hc_int(a, 0), NULL);
        tail = &(*tail)->u.let.body;
    }
    *tail = s->u.fmap.body;
    hc_vec_free(&flat);
    return root;
}

static hc_stmt *lower_cb(hc_mutator *mu, hc_stmt *s) {
    return s->kind == HC_S_FOR_MAPPING ? lower_one(mu->a, s) : s;
}

hc_stmt *hc_lower_mappings(hc_arena *a, hc_stmt *s) {
    /* bottom-up: bodies (and nested mappings in them) are lowered before their parent */
    hc_mutator mu = {.a = a, .stmt = lower_cb};
    return hc_mutate_stmt(&mu, s);
}
