/* graph_sym.c — symbols, symbolic tensor shapes and constraints of a graph (dynamic
 * shapes, docs/dynamic.md). The expressions are src/graph/sym.c's. */
#include <string.h>

#include "graph/graph.h"

const hc_sym *hc_tensor_dim(const hc_tensor *t, int d) {
    HC_ASSERT(d >= 0 && d < t->ndim && t->graph);
    if (t->sym && t->sym[d]) return t->sym[d];
    return hc_sym_const(&t->graph->arena, t->shape[d]);
}

bool hc_tensor_dims_equal(const hc_tensor *x, int dx, const hc_tensor *y, int dy) {
    const hc_sym *sx = x->sym ? x->sym[dx] : NULL, *sy = y->sym ? y->sym[dy] : NULL;
    if (!sx && !sy) return x->shape[dx] == y->shape[dy];
    return sx && sy && hc_sym_equal(sx, sy);
}

const hc_sym *hc_tensor_numel_sym(hc_arena *a, const hc_tensor *t) {
    const hc_sym *n = hc_sym_const(a, 1);
    for (int d = 0; d < t->ndim; d++)
        n = hc_sym_mul(a, n, t->sym && t->sym[d] ? t->sym[d] : hc_sym_const(a, t->shape[d]));
    return n;
}

bool hc_tensor_nbytes_at(const hc_tensor *t, const hc_sym_binding *b, size_t *out) {
    int64_t shape[HC_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) {
        shape[d] = t->shape[d];
        if (t->sym && t->sym[d] && !hc_sym_eval(t->sym[d], b, &shape[d])) return false;
        if (shape[d] < 0) return false;
    }
    if (hc_shape_too_large(t->dtype, t->ndim, shape)) return false;
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= shape[d];
    *out = (size_t)n * (size_t)hc_dtype_size(t->dtype);
    return true;
}

bool hc_tensor_numel_equal(const hc_tensor *x, const hc_tensor *y) {
    if (!x->sym && !y->sym) return hc_tensor_numel(x) == hc_tensor_numel(y);
    hc_arena a;
    hc_arena_init(&a);
    bool eq = hc_sym_equal(hc_tensor_numel_sym(&a, x), hc_tensor_numel_sym(&a, y));
    hc_arena_free(&a);
    return eq;
}

const hc_sym *hc_tensor_value_sym(const hc_tensor *t, int64_t i) {
    if (t->symval) return t->symval[i];
    if (t->data && (hc_dtype_is_int(t->dtype) || t->dtype == HC_BOOL) && i >= 0 && i < hc_tensor_numel(t))
        return hc_sym_const(&t->graph->arena, (int64_t)hc_elem_get(t->data, t->dtype, i));
    return NULL;
}

bool hc_tensor_set_sym_shape(hc_tensor *t, int ndim, const hc_sym *const *dims) {
    HC_ASSERT(ndim >= 0 && ndim <= HC_MAX_DIMS && t->graph);
    hc_sym_binding hb = hc_graph_hint_binding(t->graph);
    int64_t shape[HC_MAX_DIMS];
    bool any = false;
    for (int d = 0; d < ndim; d++) {
        int64_t c;
        if (hc_sym_is_const(dims[d], &c)) shape[d] = c;
        else if (hc_sym_eval(dims[d], &hb, &shape[d])) any = true;
        else return false;
    }
    t->ndim = ndim;
    memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    t->shape_known = true;
    t->sym = NULL;
    if (any) {
        const hc_sym **s = HC_NEW_ARRAY(&t->graph->arena, const hc_sym *, (size_t)ndim);
        for (int d = 0; d < ndim; d++) s[d] = hc_sym_is_const(dims[d], NULL) ? NULL : dims[d];
        t->sym = s;
    }
    return true;
}

void hc_print_tensor_shape(hc_sb *sb, const hc_tensor *t) {
    if (!t->sym) {
        hc_print_shape(sb, t->ndim, t->shape);
        return;
    }
    hc_sb_putc(sb, '[');
    for (int d = 0; d < t->ndim; d++) {
        if (d) hc_sb_puts(sb, ", ");
        if (t->sym[d]) hc_sym_print(sb, t->sym[d]);
        else hc_sb_printf(sb, "%lld", (long long)t->shape[d]);
    }
    hc_sb_putc(sb, ']');
}

const char *hc_graph_symbol(hc_graph *g, const char *name, int64_t hint) {
    for (size_t i = 0; i < g->sym_names.len; i++)
        if (!strcmp(g->sym_names.data[i], name)) return g->sym_names.data[i];
    const char *s = hc_arena_strdup(&g->arena, name);
    hc_vec_push(&g->sym_names, s);
    hc_vec_push(&g->sym_hints, hint);
    return s;
}

bool hc_graph_has_symbols(const hc_graph *g) { return g->sym_names.len > 0; }

hc_sym_binding hc_graph_hint_binding(const hc_graph *g) {
    return (hc_sym_binding){(int)g->sym_names.len, g->sym_names.data, g->sym_hints.data};
}

static const char *kind_op(hc_symc_kind k) {
    switch (k) {
    case HC_SYMC_EQ: return "==";
    case HC_SYMC_LE: return "<=";
    case HC_SYMC_BCAST: return "broadcasts to";
    case HC_SYMC_DIVIDES: return "is a multiple of";
    case HC_SYMC_NE: return "!=";
    }
    return "?";
}

void hc_print_constraint(hc_sb *sb, const hc_sym_constraint *c) {
    if (c->kind == HC_SYMC_BCAST) { /* "b == a or b == 1" reads better the other way */
        hc_sym_print(sb, c->b);
        hc_sb_puts(sb, " == ");
        hc_sym_print(sb, c->a);
        hc_sb_puts(sb, " (or 1)");
        return;
    }
    hc_sym_print(sb, c->a);
    hc_sb_printf(sb, " %s ", kind_op(c->kind));
    hc_sym_print(sb, c->b);
}

/* 1: holds, 0: broken, -1: cannot tell (a value is unknown or undefined). */
static int holds(const hc_sym_constraint *c, const hc_sym_binding *b) {
    int64_t x, y;
    if (!hc_sym_eval(c->a, b, &x) || !hc_sym_eval(c->b, b, &y)) return -1;
    switch (c->kind) {
    case HC_SYMC_EQ: return x == y;
    case HC_SYMC_LE: return x <= y;
    case HC_SYMC_BCAST: return y == x || y == 1;
    case HC_SYMC_DIVIDES: return y != 0 && x % y == 0;
    case HC_SYMC_NE: return x != y;
    }
    return -1;
}

static void constraint_error(const hc_sym_constraint *c, const hc_sym_binding *b,
                             hc_error *err) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_print_constraint(&sb, c);
    int64_t x = 0, y = 0;
    bool vx = hc_sym_eval(c->a, b, &x), vy = hc_sym_eval(c->b, b, &y);
    bool cx = hc_sym_is_const(c->a, NULL), cy = hc_sym_is_const(c->b, NULL);
    if ((vx && !cx) || (vy && !cy)) {
        hc_sb_puts(&sb, ", but");
        if (vx && !cx) {
            hc_sb_putc(&sb, ' ');
            hc_sym_print(&sb, c->a);
            hc_sb_printf(&sb, " = %lld", (long long)x);
        }
        if (vy && !cy) {
            hc_sb_puts(&sb, vx && !cx ? " and " : " ");
            hc_sym_print(&sb, c->b);
            hc_sb_printf(&sb, " = %lld", (long long)y);
        }
    }
    hc_error_set(err, HC_ERR_INVALID, "node '%s': %s needs %s", c->node, c->what,
                 hc_sb_str(&sb));
    hc_sb_free(&sb);
}

hc_status hc_graph_add_constraint(hc_graph *g, hc_symc_kind kind, const hc_sym *a,
                                  const hc_sym *b, const char *node, const char *what,
                                  hc_error *err) {
    hc_sym_constraint c = {kind, a, b, node ? node : "?", what ? what : "a shape"};
    hc_sym_binding none = {0};
    int h = holds(&c, &none); /* decidable without any symbol */
    if (h == 0) {
        constraint_error(&c, &none, err);
        return HC_ERR_INVALID;
    }
    if (h == 1) return HC_OK;
    if (kind != HC_SYMC_NE && hc_sym_equal(a, b)) return HC_OK;
    for (size_t i = 0; i < g->constraints.len; i++) {
        const hc_sym_constraint *o = &g->constraints.data[i];
        if (o->kind == kind && hc_sym_equal(o->a, a) && hc_sym_equal(o->b, b)) return HC_OK;
    }
    c.node = hc_arena_strdup(&g->arena, c.node);
    c.what = hc_arena_strdup(&g->arena, c.what);
    hc_vec_push(&g->constraints, c);
    /* the hint binding is a binding too: a constraint it breaks is a model that does
     * not fit its own hints (or hints that do not fit the model) */
    hc_sym_binding hb = hc_graph_hint_binding(g);
    if (holds(&c, &hb) == 0) {
        constraint_error(&c, &hb, err);
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return hc_error_set(err, HC_ERR_INVALID, "%s (at the symbols' hint values; set "
                            "others with --dim-hint NAME=V)", msg);
    }
    return HC_OK;
}

hc_status hc_graph_check_binding(const hc_graph *g, const hc_sym_binding *b, hc_error *err) {
    for (size_t i = 0; i < g->constraints.len; i++) {
        const hc_sym_constraint *c = &g->constraints.data[i];
        if (holds(c, b) != 1) {
            constraint_error(c, b, err);
            return HC_ERR_INVALID;
        }
    }
    return HC_OK;
}

static const hc_tensor *graph_input(const hc_graph *g, const char *name) {
    for (size_t i = 0; i < g->inputs.len; i++)
        if (!strcmp(g->inputs.data[i]->name, name)) return g->inputs.data[i];
    return NULL;
}

hc_status hc_graph_bind_inputs(const hc_graph *g, int n, const char *const *names,
                               const int *ndims, const int64_t (*shapes)[HC_MAX_DIMS],
                               int64_t *values, hc_error *err) {
    size_t ns = g->sym_names.len;
    /* where each symbol got its value: input index and dimension */
    int *from_in = hc_xmalloc(sizeof(int) * (ns + 1)), *from_dim = hc_xmalloc(sizeof(int) * (ns + 1));
    for (size_t k = 0; k < ns; k++) values[k] = -1, from_in[k] = -1, from_dim[k] = -1;
    hc_status st = HC_OK;
    hc_sb sb;
    hc_sb_init(&sb);
    /* the symbols bound so far, for pass 1 (filled between the passes) */
    const char **bnames = hc_xmalloc(sizeof(char *) * (ns + 1));
    int64_t *bvals = hc_xmalloc(sizeof(int64_t) * (ns + 1));
    hc_sym_binding bound = {0, bnames, bvals};
    for (int pass = 0; pass < 2 && st == HC_OK; pass++) {
        for (size_t k = 0; pass == 1 && k < ns; k++)
            if (values[k] >= 0) bnames[bound.n] = g->sym_names.data[k], bvals[bound.n++] = values[k];
        for (int i = 0; i < n && st == HC_OK; i++) {
            const hc_tensor *t = graph_input(g, names[i]);
            if (!t) {
                for (size_t j = 0; j < g->inputs.len; j++)
                    hc_sb_printf(&sb, "%s%s", j ? ", " : "", g->inputs.data[j]->name);
                st = hc_error_set(err, HC_ERR_INVALID, "the model has no input '%s' (its inputs: "
                                  "%s)", names[i], g->inputs.len ? hc_sb_str(&sb) : "none");
                break;
            }
            if (ndims[i] != t->ndim) {
                hc_print_tensor_shape(&sb, t);
                st = hc_error_set(err, HC_ERR_INVALID, "input '%s' has %d dimensions, the model's "
                                  "has %d: %s", t->name, ndims[i], t->ndim, hc_sb_str(&sb));
                break;
            }
            for (int d = 0; d < t->ndim && st == HC_OK; d++) {
                int64_t got = shapes[i][d];
                const hc_sym *e = t->sym ? t->sym[d] : NULL;
                const char *v = e ? hc_sym_as_var(e) : NULL;
                if (pass == 0 && !e && got != t->shape[d]) {
                    hc_sb_free(&sb);
                    hc_sb_init(&sb);
                    hc_print_tensor_shape(&sb, t);
                    st = hc_error_set(err, HC_ERR_INVALID, "input '%s', dimension %d: %lld given, "
                                      "the model's is %lld (%s)", t->name, d, (long long)got,
                                      (long long)t->shape[d], hc_sb_str(&sb));
                    break;
                }
                if (pass == 0 && !e) continue;
                if (pass == 0 && v) {
                    size_t k = 0;
                    while (k < ns && strcmp(g->sym_names.data[k], v)) k++;
                    HC_ASSERT(k < ns);
                    if (values[k] < 0) {
                        values[k] = got, from_in[k] = i, from_dim[k] = d;
                    } else if (values[k] != got) {
                        st = hc_error_set(err, HC_ERR_INVALID, "input '%s', dimension %d ('%s'): "
                                          "%lld given, but '%s' is %lld from input '%s', dimension "
                                          "%d", t->name, d, v, (long long)got, v,
                                          (long long)values[k], names[from_in[k]], from_dim[k]);
                    }
                }
                if (pass == 1 && e && !v) { /* an expression: checked once symbols are bound */
                    int64_t want; /* under the bound symbols only: unbound ones fail eval */
                    if (hc_sym_eval(e, &bound, &want) && want != got) {
                        hc_sb_free(&sb);
                        hc_sb_init(&sb);
                        hc_sym_print(&sb, e);
                        st = hc_error_set(err, HC_ERR_INVALID, "input '%s', dimension %d: %lld "
                                          "given, the model's is %s = %lld", t->name, d,
                                          (long long)got, hc_sb_str(&sb), (long long)want);
                    }
                }
            }
        }
    }
    bool all = true;
    for (size_t k = 0; k < ns; k++) all &= values[k] >= 0;
    if (st == HC_OK && all) {
        hc_sym_binding b = {(int)ns, g->sym_names.data, values};
        st = hc_graph_check_binding(g, &b, err);
    }
    hc_sb_free(&sb);
    free(from_in), free(from_dim), free(bnames), free(bvals);
    return st;
}
