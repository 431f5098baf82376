/* graph.c — the graph IR: the op table derived from ops.h, tensors, nodes, attributes,
 * topological order, dead-node removal, printing, and the helpers op implementations
 * share. */
#include "graph/graph.h"

#include <pthread.h>
#include <string.h>

/* ---- op table ------------------------------------------------------------------ */
typedef struct op_row {
    const char *name, *onnx;
    int imin, imax, omin, omax;
    hc_op_class cls;
} op_row;

static const op_row op_rows[] = {
#define X(n, onnx, imin, imax, omin, omax, kind)                                          \
    {#n, onnx, imin, imax, omin, omax, HC_OPC_##kind},
    HC_OPS(X)
#undef X
};
_Static_assert(HC_ARRAY_LEN(op_rows) == HC_OPK_COUNT, "one row per op kind");

static const op_row *row(hc_op_kind op) {
    HC_ASSERT((unsigned)op < HC_OPK_COUNT);
    return &op_rows[op];
}

const char *hc_op_name(hc_op_kind op) { return row(op)->name; }
const char *hc_op_onnx_name(hc_op_kind op) { return row(op)->onnx; }
hc_op_class hc_op_class_of(hc_op_kind op) { return row(op)->cls; }
bool hc_op_is_reshape_like(hc_op_kind op) {
    return op == HC_OPK_RESHAPE || op == HC_OPK_FLATTEN || op == HC_OPK_SQUEEZE ||
           op == HC_OPK_UNSQUEEZE;
}
int hc_op_min_inputs(hc_op_kind op) { return row(op)->imin; }
int hc_op_max_inputs(hc_op_kind op) { return row(op)->imax; }
int hc_op_min_outputs(hc_op_kind op) { return row(op)->omin; }
int hc_op_max_outputs(hc_op_kind op) { return row(op)->omax; }

hc_op_kind hc_op_from_onnx(const char *op_type) {
    if (!op_type || !*op_type) return HC_OPK_COUNT;
    for (int i = 0; i < HC_OPK_COUNT; i++)
        if (strcmp(op_rows[i].onnx, op_type) == 0) return (hc_op_kind)i;
    return HC_OPK_COUNT;
}

/* The category tables are scanned once into a direct lookup; an op defined twice is a
 * programming error caught here rather than a silent shadowing. */
static const hc_op_def *op_defs[HC_OPK_COUNT];
static pthread_once_t op_defs_once = PTHREAD_ONCE_INIT;

static void add_defs(const hc_op_def *table) {
    for (const hc_op_def *d = table; d->infer; d++) {
        HC_ASSERT((unsigned)d->op < HC_OPK_COUNT);
        HC_ASSERT_MSG(!op_defs[d->op], "operator defined in two tables");
        op_defs[d->op] = d;
    }
}

static void build_op_defs(void) {
    add_defs(hc_ops_nn);
    add_defs(hc_ops_math);
    add_defs(hc_ops_shape);
    add_defs(hc_ops_internal);
    add_defs(hc_ops_nchwc);
}

const hc_op_def *hc_op_get(hc_op_kind op) {
    if ((unsigned)op >= HC_OPK_COUNT) return NULL;
    pthread_once(&op_defs_once, build_op_defs);
    return op_defs[op];
}

/* ---- tensors ------------------------------------------------------------------- */
int64_t hc_tensor_numel(const hc_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

size_t hc_tensor_nbytes(const hc_tensor *t) {
    return (size_t)hc_tensor_numel(t) * (size_t)hc_dtype_size(t->dtype);
}

double hc_tensor_const_at(const hc_tensor *t, int64_t i) {
    HC_ASSERT(t->data && i >= 0 && i < hc_tensor_numel(t));
    return hc_elem_get(t->data, t->dtype, i);
}

static int64_t const_int_at(const hc_tensor *t, int64_t i) {
    const void *p = t->data;
    switch (t->dtype) {
    case HC_BOOL: return ((const uint8_t *)p)[i] != 0;
    case HC_I8: return ((const int8_t *)p)[i];
    case HC_I16: return ((const int16_t *)p)[i];
    case HC_I32: return ((const int32_t *)p)[i];
    case HC_I64: return ((const int64_t *)p)[i];
    case HC_U8: return ((const uint8_t *)p)[i];
    case HC_U16: return ((const uint16_t *)p)[i];
    case HC_U32: return ((const uint32_t *)p)[i];
    case HC_U64: return (int64_t)((const uint64_t *)p)[i];
    default: hc_unreachable();
    }
}

int64_t hc_tensor_const_ints(const hc_tensor *t, int64_t *out, int64_t max) {
    if (!t || !t->data) return -1;
    if (!hc_dtype_is_int(t->dtype) && t->dtype != HC_BOOL) return -1;
    int64_t n = hc_tensor_numel(t);
    for (int64_t i = 0; i < n && i < max; i++) out[i] = const_int_at(t, i);
    return n;
}

bool hc_shape_too_large(hc_dtype dtype, int ndim, const int64_t *shape) {
    int64_t bytes = hc_dtype_size(dtype) > 0 ? hc_dtype_size(dtype) : 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return true;
        if (shape[i] == 0) return false; /* empty, whatever the other dimensions */
    }
    for (int i = 0; i < ndim; i++)
        if (__builtin_mul_overflow(bytes, shape[i], &bytes) || bytes > HC_MAX_TENSOR_BYTES)
            return true;
    return false;
}

void hc_print_shape(hc_sb *sb, int ndim, const int64_t *shape) {
    hc_sb_putc(sb, '[');
    for (int i = 0; i < ndim; i++) hc_sb_printf(sb, "%s%lld", i ? ", " : "", (long long)shape[i]);
    hc_sb_putc(sb, ']');
}

/* ---- graphs -------------------------------------------------------------------- */
hc_graph *hc_graph_new(const char *name, int opset) {
    hc_graph *g = hc_xcalloc(1, sizeof *g);
    hc_arena_init(&g->arena);
    g->name = hc_arena_strdup(&g->arena, name ? name : "graph");
    g->opset = opset;
    return g;
}

/* ---- node names: an open-addressing set of the strings (in the graph's arena) ------ */
struct hc_name_set {
    const char **keys;
    size_t cap, len;
};

static size_t name_hash(const char *s) {
    size_t h = 1469598103934665603u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static bool name_set_has(const struct hc_name_set *set, const char *name) {
    if (!set || !set->cap) return false;
    for (size_t i = name_hash(name) & (set->cap - 1);; i = (i + 1) & (set->cap - 1)) {
        if (!set->keys[i]) return false;
        if (!strcmp(set->keys[i], name)) return true;
    }
}

static void name_set_add(hc_graph *g, const char *name) {
    struct hc_name_set *set = g->node_names;
    if (!set) set = g->node_names = hc_xcalloc(1, sizeof *set);
    if (2 * (set->len + 1) > set->cap) {
        struct hc_name_set bigger = {NULL, set->cap ? 2 * set->cap : 64, set->len};
        bigger.keys = hc_xcalloc(bigger.cap, sizeof *bigger.keys);
        for (size_t i = 0; i < set->cap; i++) {
            if (!set->keys[i]) continue;
            size_t j = name_hash(set->keys[i]) & (bigger.cap - 1);
            while (bigger.keys[j]) j = (j + 1) & (bigger.cap - 1);
            bigger.keys[j] = set->keys[i];
        }
        free(set->keys);
        *set = bigger;
    }
    size_t i = name_hash(name) & (set->cap - 1);
    for (; set->keys[i]; i = (i + 1) & (set->cap - 1))
        if (!strcmp(set->keys[i], name)) return;
    set->keys[i] = name, set->len++;
}

void hc_graph_free(hc_graph *g) {
    if (!g) return;
    if (g->node_names) free(g->node_names->keys), free(g->node_names);
    hc_vec_free(&g->tensors);
    hc_vec_free(&g->nodes);
    hc_vec_free(&g->inputs);
    hc_vec_free(&g->outputs);
    hc_vec_free(&g->sym_names);
    hc_vec_free(&g->sym_hints);
    hc_vec_free(&g->constraints);
    hc_arena_free(&g->arena);
    free(g);
}

hc_tensor *hc_graph_find_tensor(const hc_graph *g, const char *name) {
    for (size_t i = 0; i < g->tensors.len; i++)
        if (strcmp(g->tensors.data[i]->name, name) == 0) return g->tensors.data[i];
    return NULL;
}

static bool node_name_taken(const hc_graph *g, const char *name) {
    /* nodes come in through hc_graph_add_node (a loaded model file's summary graph is
     * never added to), so a name missing from the set is free */
    if (!name_set_has(g->node_names, name)) return false;
    for (size_t i = 0; i < g->nodes.len; i++)
        if (strcmp(g->nodes.data[i]->name, name) == 0) return true;
    return false;
}

/* base, base_1, base_2, ... : the first name `taken` rejects. */
static const char *unique_name(hc_graph *g, const char *base,
                               bool (*taken)(const hc_graph *, const char *)) {
    if (!taken(g, base)) return hc_arena_strdup(&g->arena, base);
    for (int k = 1;; k++) {
        char *s = hc_arena_printf(&g->arena, "%s_%d", base, k);
        if (!taken(g, s)) return s;
    }
}

static bool tensor_name_taken(const hc_graph *g, const char *name) {
    return hc_graph_find_tensor(g, name) != NULL;
}

hc_tensor *hc_graph_tensor(hc_graph *g, const char *name, hc_dtype dtype, int ndim,
                           const int64_t *shape) {
    HC_ASSERT(ndim >= 0 && ndim <= HC_MAX_DIMS);
    hc_tensor *t = HC_NEW(&g->arena, hc_tensor);
    if (name) {
        t->name = hc_arena_strdup(&g->arena, name);
    } else {
        char base[32];
        snprintf(base, sizeof base, "t%zu", g->tensors.len);
        t->name = unique_name(g, base, tensor_name_taken);
    }
    t->dtype = dtype;
    t->ndim = ndim;
    t->graph = g;
    if (shape) {
        memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
        t->shape_known = true;
    }
    t->id = (int)g->tensors.len;
    hc_vec_push(&g->tensors, t);
    return t;
}

hc_tensor *hc_graph_constant(hc_graph *g, const char *name, hc_dtype dtype, int ndim,
                             const int64_t *shape, const void *data) {
    HC_ASSERT(shape || ndim == 0);
    static const int64_t scalar[1] = {1};
    hc_tensor *t = hc_graph_tensor(g, name, dtype, ndim, shape ? shape : scalar);
    size_t nbytes = hc_tensor_nbytes(t);
    /* at least one byte so that a zero-element constant is still "constant" */
    t->data = hc_arena_alloc(&g->arena, nbytes ? nbytes : 1);
    if (data && nbytes) memcpy(t->data, data, nbytes);
    return t;
}

hc_tensor *hc_graph_add_input(hc_graph *g, const char *name, hc_dtype dtype, int ndim,
                              const int64_t *shape) {
    hc_tensor *t = hc_graph_tensor(g, name, dtype, ndim, shape);
    hc_vec_push(&g->inputs, t);
    return t;
}

void hc_graph_add_output(hc_graph *g, hc_tensor *t) { hc_vec_push(&g->outputs, t); }

/* ---- nodes --------------------------------------------------------------------- */
static hc_tensor *copy_tensor_attr(hc_graph *g, const hc_tensor *src) {
    /* not pushed to g->tensors: attribute tensors are values, not graph edges */
    hc_tensor *t = HC_NEW(&g->arena, hc_tensor);
    *t = *src;
    t->name = hc_arena_strdup(&g->arena, src->name ? src->name : "");
    t->producer = NULL;
    t->id = -1;
    t->graph = g;
    t->sym = t->symval = NULL; /* attribute tensors are constants */
    if (src->data) {
        size_t nbytes = hc_tensor_nbytes(src);
        t->data = hc_arena_alloc(&g->arena, nbytes ? nbytes : 1);
        if (nbytes) memcpy(t->data, src->data, nbytes);
    }
    return t;
}

static void copy_attr(hc_graph *g, hc_attr *dst, const hc_attr *src) {
    hc_arena *a = &g->arena;
    *dst = *src;
    dst->name = hc_arena_strdup(a, src->name);
    if (src->s) dst->s = hc_arena_strdup(a, src->s);
    if (src->t) dst->t = copy_tensor_attr(g, src->t);
    size_t n = src->n > 0 ? (size_t)src->n : 0;
    if (src->ints) dst->ints = hc_arena_memdup(a, src->ints, n * sizeof(int64_t));
    if (src->floats) dst->floats = hc_arena_memdup(a, src->floats, n * sizeof(double));
    if (src->strings) {
        dst->strings = HC_NEW_ARRAY(a, const char *, n);
        for (size_t i = 0; i < n; i++)
            dst->strings[i] = src->strings[i] ? hc_arena_strdup(a, src->strings[i]) : NULL;
    }
}

static hc_status check_arity(const char *name, hc_op_kind op, int nin, hc_tensor *const *in,
                             int nout, hc_error *err) {
    const op_row *r = row(op);
    const char *opn = r->onnx[0] ? r->onnx : r->name;
    if (nin < r->imin || (r->imax != HC_MANY && nin > r->imax))
        return hc_error_set(err, HC_ERR_INVALID,
                            "node '%s' (%s): %d inputs, expected %d to %d", name, opn, nin,
                            r->imin, r->imax);
    if (nout < r->omin || (r->omax != HC_MANY && nout > r->omax))
        return hc_error_set(err, HC_ERR_INVALID,
                            "node '%s' (%s): %d outputs, expected %d to %d", name, opn, nout,
                            r->omin, r->omax);
    /* the inputs below imin are required; so is every input of a variadic op (ONNX has no
     * optional variadic inputs: Concat, Sum, Einsum, ... with an empty name is an error) */
    for (int i = 0; i < nin; i++)
        if ((i < r->imin || r->imax == HC_MANY) && (!in || !in[i]))
            return hc_error_set(err, HC_ERR_INVALID, "node '%s' (%s): required input %d missing",
                                name, opn, i);
    return HC_OK;
}

static void make_outputs(hc_graph *g, hc_node *n, int nout, hc_tensor *const *outputs) {
    n->noutputs = nout;
    n->outputs = HC_NEW_ARRAY(&g->arena, hc_tensor *, nout > 0 ? nout : 1);
    for (int i = 0; i < nout; i++) {
        hc_tensor *t = outputs ? outputs[i] : NULL;
        if (!outputs) {
            char base[256];
            if (nout == 1) snprintf(base, sizeof base, "%s_out", n->name);
            else snprintf(base, sizeof base, "%s_out%d", n->name, i);
            t = hc_graph_tensor(g, unique_name(g, base, tensor_name_taken), HC_F32, 0, NULL);
        }
        if (t) t->producer = n;
        n->outputs[i] = t;
    }
}

hc_node *hc_graph_add_node(hc_graph *g, hc_op_kind op, const char *name, int ninputs,
                           hc_tensor *const *inputs, int noutputs, hc_tensor *const *outputs,
                           int nattrs, const hc_attr *attrs, hc_error *err) {
    if ((unsigned)op >= HC_OPK_COUNT) {
        hc_error_set(err, HC_ERR_INVALID, "node '%s': unknown op kind %d", name ? name : "?",
                     (int)op);
        return NULL;
    }
    if (!outputs && noutputs <= 0) noutputs = row(op)->omin;
    const char *base = name && *name ? name : hc_arena_printf(&g->arena, "%s_%zu",
                                                                row(op)->name, g->nodes.len);
    if (check_arity(base, op, ninputs, inputs, noutputs, err) != HC_OK) return NULL;
    hc_node *n = HC_NEW(&g->arena, hc_node);
    n->op = op;
    n->name = unique_name(g, base, node_name_taken);
    name_set_add(g, n->name);
    n->opset = g->opset;
    n->ninputs = ninputs;
    n->inputs = HC_NEW_ARRAY(&g->arena, hc_tensor *, ninputs > 0 ? ninputs : 1);
    for (int i = 0; i < ninputs; i++) n->inputs[i] = inputs[i];
    make_outputs(g, n, noutputs, outputs);
    n->nattrs = nattrs;
    n->attrs = HC_NEW_ARRAY(&g->arena, hc_attr, nattrs > 0 ? nattrs : 1);
    for (int i = 0; i < nattrs; i++) copy_attr(g, &n->attrs[i], &attrs[i]);
    hc_vec_push(&g->nodes, n);
    return n;
}

int hc_node_num_present_inputs(const hc_node *n) {
    int c = 0;
    for (int i = 0; i < n->ninputs; i++) c += n->inputs[i] != NULL;
    return c;
}

static int num_present_outputs(const hc_node *n) {
    int c = 0;
    for (int i = 0; i < n->noutputs; i++) c += n->outputs[i] != NULL;
    return c;
}

/* ---- attributes ---------------------------------------------------------------- */
const hc_attr *hc_node_attr(const hc_node *n, const char *name) {
    for (int i = 0; i < n->nattrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

int64_t hc_node_attr_int(const hc_node *n, const char *name, int64_t dflt) {
    const hc_attr *a = hc_node_attr(n, name);
    if (!a) return dflt;
    if (a->kind == HC_ATTR_INT) return a->i;
    if (a->kind == HC_ATTR_FLOAT) return (int64_t)a->f;
    return dflt;
}

double hc_node_attr_float(const hc_node *n, const char *name, double dflt) {
    const hc_attr *a = hc_node_attr(n, name);
    if (!a) return dflt;
    if (a->kind == HC_ATTR_FLOAT) return a->f;
    if (a->kind == HC_ATTR_INT) return (double)a->i;
    return dflt;
}

const char *hc_node_attr_string(const hc_node *n, const char *name, const char *dflt) {
    const hc_attr *a = hc_node_attr(n, name);
    return a && a->kind == HC_ATTR_STRING && a->s ? a->s : dflt;
}

const int64_t *hc_node_attr_ints(const hc_node *n, const char *name, int *count) {
    const hc_attr *a = hc_node_attr(n, name);
    if (!a || a->kind != HC_ATTR_INTS) {
        if (count) *count = 0;
        return NULL;
    }
    if (count) *count = a->n;
    return a->ints;
}

const double *hc_node_attr_floats(const hc_node *n, const char *name, int *count) {
    const hc_attr *a = hc_node_attr(n, name);
    if (!a || a->kind != HC_ATTR_FLOATS) {
        if (count) *count = 0;
        return NULL;
    }
    if (count) *count = a->n;
    return a->floats;
}

/* ---- order and liveness -------------------------------------------------------- */
/* Producer node index of every tensor id (-1: none in the graph). */
static int *producer_index(const hc_graph *g) {
    int *prod = hc_xmalloc(sizeof(int) * (g->tensors.len + 1));
    for (size_t i = 0; i < g->tensors.len; i++) prod[i] = -1;
    for (size_t i = 0; i < g->nodes.len; i++) {
        hc_node *n = g->nodes.data[i];
        for (int j = 0; j < n->noutputs; j++)
            if (n->outputs[j]) prod[n->outputs[j]->id] = (int)i;
    }
    return prod;
}

static bool is_graph_input(const hc_graph *g, const hc_tensor *t) {
    for (size_t i = 0; i < g->inputs.len; i++)
        if (g->inputs.data[i] == t) return true;
    return false;
}

/* A tensor a node may read without a producer: a graph input or a constant. */
static hc_status check_source(const hc_graph *g, const hc_node *n, const hc_tensor *t,
                              hc_error *err) {
    if (t->data || is_graph_input(g, t)) return HC_OK;
    return hc_error_set(err, HC_ERR_INVALID,
                        "node '%s' reads tensor '%s', which no node produces and which is "
                        "neither a graph input nor a constant",
                        n->name, t->name);
}

typedef struct topo_state {
    const hc_graph *g;
    const int *prod;
    char *mark; /* 0 new, 1 on the stack, 2 placed */
    hc_node **order;
    size_t norder;
    int *stack, *next_input; /* explicit DFS stack: deep chains must not overflow */
} topo_state;

/* Iterative DFS from node `root`: producers are placed before their consumers. */
static hc_status topo_visit(topo_state *s, int root, hc_error *err) {
    int sp = 0;
    s->stack[sp++] = root;
    s->mark[root] = 1;
    s->next_input[root] = 0;
    while (sp > 0) {
        int v = s->stack[sp - 1];
        hc_node *n = s->g->nodes.data[v];
        if (s->next_input[v] == n->ninputs) {
            s->mark[v] = 2;
            s->order[s->norder++] = n;
            sp--;
            continue;
        }
        hc_tensor *t = n->inputs[s->next_input[v]++];
        if (!t) continue;
        int p = t->id >= 0 ? s->prod[t->id] : -1;
        if (p < 0) {
            if (check_source(s->g, n, t, err) != HC_OK) return HC_ERR_INVALID;
            continue;
        }
        if (s->mark[p] == 1)
            return hc_error_set(err, HC_ERR_INVALID, "graph has a cycle through node '%s'",
                                s->g->nodes.data[p]->name);
        if (s->mark[p] == 2) continue;
        s->mark[p] = 1;
        s->next_input[p] = 0;
        s->stack[sp++] = p;
    }
    return HC_OK;
}

hc_status hc_graph_toposort(hc_graph *g, hc_error *err) {
    size_t nn = g->nodes.len;
    topo_state s = {.g = g, .prod = producer_index(g)};
    s.mark = hc_xcalloc(nn + 1, 1);
    s.order = hc_xmalloc(sizeof(hc_node *) * (nn + 1));
    s.stack = hc_xmalloc(sizeof(int) * (nn + 1));
    s.next_input = hc_xmalloc(sizeof(int) * (nn + 1));
    hc_status st = HC_OK;
    for (size_t i = 0; i < nn && st == HC_OK; i++)
        if (!s.mark[i]) st = topo_visit(&s, (int)i, err);
    if (st == HC_OK) {
        HC_ASSERT(s.norder == nn);
        if (nn) memcpy(g->nodes.data, s.order, sizeof(hc_node *) * nn);
    }
    free((void *)s.prod);
    free(s.mark);
    free(s.order);
    free(s.stack);
    free(s.next_input);
    return st;
}

void hc_graph_remove_dead(hc_graph *g) {
    char *used = hc_xcalloc(g->tensors.len + 1, 1);
    for (size_t i = 0; i < g->outputs.len; i++)
        if (g->outputs.data[i]->id >= 0) used[g->outputs.data[i]->id] = 1;
    /* reverse topological order: a node's consumers are decided before it */
    char *live = hc_xcalloc(g->nodes.len + 1, 1);
    for (size_t k = g->nodes.len; k-- > 0;) {
        hc_node *n = g->nodes.data[k];
        for (int j = 0; j < n->noutputs; j++)
            if (n->outputs[j] && used[n->outputs[j]->id]) live[k] = 1;
        if (!live[k]) continue;
        for (int j = 0; j < n->ninputs; j++)
            if (n->inputs[j] && n->inputs[j]->id >= 0) used[n->inputs[j]->id] = 1;
    }
    size_t w = 0;
    for (size_t k = 0; k < g->nodes.len; k++) {
        hc_node *n = g->nodes.data[k];
        if (live[k]) {
            g->nodes.data[w++] = n;
            continue;
        }
        for (int j = 0; j < n->noutputs; j++)
            if (n->outputs[j] && n->outputs[j]->producer == n) n->outputs[j]->producer = NULL;
    }
    g->nodes.len = w;
    free(used);
    free(live);
}

void hc_graph_replace_uses(hc_graph *g, hc_tensor *from, hc_tensor *to) {
    for (size_t i = 0; i < g->nodes.len; i++) {
        hc_node *n = g->nodes.data[i];
        for (int j = 0; j < n->ninputs; j++)
            if (n->inputs[j] == from) n->inputs[j] = to;
    }
    for (size_t i = 0; i < g->outputs.len; i++)
        if (g->outputs.data[i] == from) g->outputs.data[i] = to;
}

int hc_graph_num_uses(const hc_graph *g, const hc_tensor *t) {
    int c = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const hc_node *n = g->nodes.data[i];
        for (int j = 0; j < n->ninputs; j++) c += n->inputs[j] == t;
    }
    return c;
}

hc_node *hc_graph_sole_reader(const hc_graph *g, const hc_tensor *t) {
    hc_node *reader = NULL;
    int c = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        hc_node *n = g->nodes.data[i];
        for (int j = 0; j < n->ninputs; j++)
            if (n->inputs[j] == t) c++, reader = n;
    }
    return c == 1 ? reader : NULL;
}

/* ---- printing ------------------------------------------------------------------ */
static void print_tensor_type(hc_sb *sb, const hc_tensor *t) {
    if (t->shape_known) hc_print_shape(sb, t->ndim, t->shape);
    else hc_sb_puts(sb, "[?]");
    hc_sb_printf(sb, " %s", hc_dtype_name(t->dtype));
}

static void print_attr(hc_sb *sb, const hc_attr *a) {
    hc_sb_printf(sb, "%s=", a->name);
    switch (a->kind) {
    case HC_ATTR_INT: hc_sb_printf(sb, "%lld", (long long)a->i); break;
    case HC_ATTR_FLOAT: hc_sb_printf(sb, "%g", a->f); break;
    case HC_ATTR_STRING: hc_sb_printf(sb, "\"%s\"", a->s ? a->s : ""); break;
    case HC_ATTR_TENSOR:
        hc_sb_puts(sb, "tensor ");
        if (a->t) print_tensor_type(sb, a->t);
        break;
    case HC_ATTR_INTS: hc_print_shape(sb, a->n, a->ints); break;
    case HC_ATTR_FLOATS:
        hc_sb_putc(sb, '[');
        for (int i = 0; i < a->n; i++) hc_sb_printf(sb, "%s%g", i ? ", " : "", a->floats[i]);
        hc_sb_putc(sb, ']');
        break;
    case HC_ATTR_STRINGS:
        hc_sb_putc(sb, '[');
        for (int i = 0; i < a->n; i++)
            hc_sb_printf(sb, "%s\"%s\"", i ? ", " : "", a->strings[i] ? a->strings[i] : "");
        hc_sb_putc(sb, ']');
        break;
    }
}

static const char *op_display_name(hc_op_kind op) {
    return row(op)->onnx[0] ? row(op)->onnx : row(op)->name;
}

static void print_node(hc_sb *sb, const hc_node *n) {
    hc_sb_puts(sb, "  ");
    bool first = true;
    for (int i = 0; i < n->noutputs; i++) {
        if (!n->outputs[i]) continue;
        hc_sb_printf(sb, "%s%%%s", first ? "" : ", ", n->outputs[i]->name);
        first = false;
    }
    hc_sb_printf(sb, " = %s(", op_display_name(n->op));
    for (int i = 0; i < n->ninputs; i++)
        hc_sb_printf(sb, "%s%s%s", i ? ", " : "", n->inputs[i] ? "%" : "",
                     n->inputs[i] ? n->inputs[i]->name : "_");
    hc_sb_putc(sb, ')');
    if (n->nattrs) {
        hc_sb_puts(sb, " {");
        for (int i = 0; i < n->nattrs; i++) {
            if (i) hc_sb_puts(sb, ", ");
            print_attr(sb, &n->attrs[i]);
        }
        hc_sb_putc(sb, '}');
    }
    hc_sb_puts(sb, "  #");
    for (int i = 0; i < n->noutputs; i++) {
        if (!n->outputs[i]) continue;
        hc_sb_putc(sb, ' ');
        print_tensor_type(sb, n->outputs[i]);
    }
    hc_sb_putc(sb, '\n');
}

/* Constants read by some node, each listed once (in tensor order). */
static void print_constants(hc_sb *sb, const hc_graph *g) {
    char *seen = hc_xcalloc(g->tensors.len + 1, 1);
    for (size_t i = 0; i < g->nodes.len; i++) {
        const hc_node *n = g->nodes.data[i];
        for (int j = 0; j < n->ninputs; j++)
            if (n->inputs[j] && n->inputs[j]->data && n->inputs[j]->id >= 0)
                seen[n->inputs[j]->id] = 1;
    }
    for (size_t i = 0; i < g->outputs.len; i++)
        if (g->outputs.data[i]->data && g->outputs.data[i]->id >= 0)
            seen[g->outputs.data[i]->id] = 1;
    for (size_t i = 0; i < g->tensors.len; i++) {
        if (!seen[i]) continue;
        hc_sb_printf(sb, "  const %%%s: ", g->tensors.data[i]->name);
        print_tensor_type(sb, g->tensors.data[i]);
        hc_sb_putc(sb, '\n');
    }
    free(seen);
}

void hc_graph_print(hc_sb *sb, const hc_graph *g) {
    hc_sb_printf(sb, "graph %s (opset %d) {\n", g->name, g->opset);
    for (size_t i = 0; i < g->inputs.len; i++) {
        hc_sb_printf(sb, "  input %%%s: ", g->inputs.data[i]->name);
        print_tensor_type(sb, g->inputs.data[i]);
        hc_sb_putc(sb, '\n');
    }
    print_constants(sb, g);
    for (size_t i = 0; i < g->nodes.len; i++) print_node(sb, g->nodes.data[i]);
    hc_sb_puts(sb, "  return");
    for (size_t i = 0; i < g->outputs.len; i++)
        hc_sb_printf(sb, "%s %%%s", i ? "," : "", g->outputs.data[i]->name);
    hc_sb_puts(sb, "\n}\n");
}

/* DOT strings: quotes and backslashes escaped. */
static void dot_str(hc_sb *sb, const char *s) {
    hc_sb_putc(sb, '"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') hc_sb_putc(sb, '\\');
        hc_sb_putc(sb, *s);
    }
    hc_sb_putc(sb, '"');
}

static void dot_edge_label(hc_sb *sb, const hc_tensor *t) {
    hc_sb sh;
    hc_sb_init(&sh);
    if (t->shape_known) hc_print_shape(&sh, t->ndim, t->shape);
    hc_sb_printf(&sh, " %s", hc_dtype_name(t->dtype));
    hc_sb_puts(sb, " [label=");
    dot_str(sb, hc_sb_str(&sh));
    hc_sb_puts(sb, "];\n");
    hc_sb_free(&sh);
}

/* Graph inputs and outputs are ellipses, nodes boxes; constants are counted in the node
 * label rather than drawn (a model has hundreds of weights). */
void hc_graph_dot(hc_sb *sb, const hc_graph *g) {
    hc_sb_puts(sb, "digraph ");
    dot_str(sb, g->name);
    hc_sb_puts(sb, " {\n  node [fontname=\"Helvetica\"];\n");
    for (size_t i = 0; i < g->inputs.len; i++) {
        hc_sb_printf(sb, "  t%d [shape=ellipse, label=", g->inputs.data[i]->id);
        dot_str(sb, g->inputs.data[i]->name);
        hc_sb_puts(sb, "];\n");
    }
    for (size_t i = 0; i < g->nodes.len; i++) {
        const hc_node *n = g->nodes.data[i];
        int nconst = 0;
        for (int j = 0; j < n->ninputs; j++) nconst += n->inputs[j] && n->inputs[j]->data;
        char *label = hc_xmalloc(strlen(n->name) + 64);
        sprintf(label, "%s\n%s", op_display_name(n->op), n->name);
        if (nconst) sprintf(label + strlen(label), "\n+%d const", nconst);
        hc_sb_printf(sb, "  n%zu [shape=box, label=", i);
        dot_str(sb, label);
        hc_sb_puts(sb, "];\n");
        free(label);
    }
    int *prod = producer_index(g);
    for (size_t i = 0; i < g->nodes.len; i++) {
        const hc_node *n = g->nodes.data[i];
        for (int j = 0; j < n->ninputs; j++) {
            const hc_tensor *t = n->inputs[j];
            if (!t || t->data) continue;
            int p = t->id >= 0 ? prod[t->id] : -1;
            if (p >= 0) hc_sb_printf(sb, "  n%d -> n%zu", p, i);
            else hc_sb_printf(sb, "  t%d -> n%zu", t->id, i);
            dot_edge_label(sb, t);
        }
    }
    for (size_t i = 0; i < g->outputs.len; i++) {
        const hc_tensor *t = g->outputs.data[i];
        hc_sb_printf(sb, "  out%zu [shape=ellipse, label=", i);
        dot_str(sb, t->name);
        hc_sb_puts(sb, "];\n");
        int p = t->id >= 0 ? prod[t->id] : -1;
        if (p >= 0) hc_sb_printf(sb, "  n%d -> out%zu", p, i);
        else hc_sb_printf(sb, "  t%d -> out%zu", t->id, i);
        dot_edge_label(sb, t);
    }
    free(prod);
    hc_sb_puts(sb, "}\n");
}

/* ---- helpers for op implementations ---------------------------------------------- */
static _Thread_local bool static_tnodes;

bool hc_node_tnodes_static(bool on) {
    bool was = static_tnodes;
    static_tnodes = on;
    return was;
}

const hc_sym *const *hc_node_output_sym(const hc_node *n, int i) {
    return static_tnodes || !n->outputs[i] ? NULL : n->outputs[i]->sym;
}

hc_tnode **hc_node_input_tnodes(hc_arena *a, const hc_node *n, int *count) {
    int np = hc_node_num_present_inputs(n);
    hc_tnode **tn = HC_NEW_ARRAY(a, hc_tnode *, np > 0 ? np : 1);
    int k = 0;
    for (int i = 0; i < n->ninputs; i++) {
        const hc_tensor *t = n->inputs[i];
        if (!t) continue;
        tn[k] = hc_tensor_input(a, t->name, t->dtype, t->ndim, t->shape);
        if (t->sym && !static_tnodes) hc_tnode_set_sym(tn[k], t->sym);
        k++;
    }
    if (count) *count = k;
    return tn;
}

hc_task *hc_node_task(hc_arena *a, const hc_node *n, int ninputs, hc_tnode *const *inputs,
                      int noutputs, hc_tnode *const *outputs) {
    HC_ASSERT(noutputs == num_present_outputs(n));
    return hc_task_new(a, n->name, ninputs, inputs, noutputs, outputs);
}

void hc_node_set_output(hc_node *n, int i, hc_dtype dtype, int ndim, const int64_t *shape) {
    HC_ASSERT(i >= 0 && i < n->noutputs);
    HC_ASSERT(ndim >= 0 && ndim <= HC_MAX_DIMS);
    hc_tensor *t = n->outputs[i];
    if (!t) return;
    t->dtype = dtype;
    t->ndim = ndim;
    if (ndim) memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
    t->shape_known = true;
}

hc_status hc_node_axis(const hc_node *n, int64_t axis, int rank, int *out, hc_error *err) {
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank)
        return hc_error_set(err, HC_ERR_INVALID,
                            "node '%s' (%s): axis %lld out of range for rank %d",
                            n->name, op_display_name(n->op), (long long)axis, rank);
    *out = (int)a;
    return HC_OK;
}

/* The name of the last input hc_node_need_const found non-constant on this thread. */
static _Thread_local char need_const_name[1024];
static _Thread_local bool need_const_set;

hc_status hc_node_need_const(const hc_node *n, int i, hc_error *err) {
    if (i < 0 || i >= n->ninputs || !n->inputs[i])
        return hc_error_set(err, HC_ERR_INVALID, "node '%s' (%s): input %d is missing", n->name,
                            op_display_name(n->op), i);
    const hc_tensor *t = n->inputs[i];
    if (t->data) return HC_OK;
    snprintf(need_const_name, sizeof need_const_name, "%s", t->name);
    need_const_set = true;
    return hc_error_set(err, HC_ERR_UNSUPPORTED,
                        "node '%s' (%s): input %d ('%s') must be a compile-time constant", n->name,
                        op_display_name(n->op), i, t->name);
}

const char *hc_last_need_const(void) { return need_const_set ? need_const_name : NULL; }

void hc_clear_need_const(void) {
    need_const_set = false;
    need_const_name[0] = 0;
}

hc_status hc_node_fail(const hc_node *n, hc_status st, hc_error *err, const char *fmt, ...) {
    char msg[3000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return hc_error_set(err, st, "node '%s' (%s): %s", n->name ? n->name : "?",
                        hc_op_onnx_name(n->op), msg);
}
