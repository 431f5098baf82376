/* onnx.c — ONNX model import: ModelProto (protobuf-c) -> hc_graph.
 *
 * Order of work: bound the nesting of the wire data, decode the file, refuse the model
 * when any operator is unsupported (one message listing them all), pick the default-
 * domain opset and the versions of the other domains hidetc has operators of, then define
 * every value (initializers, graph inputs, Constant nodes, node outputs) before adding the
 * nodes, so a node may name a value defined later; hc_graph_toposort restores the order.
 *
 * Attribute defaults are not filled in here: op definitions read attributes with
 * hc_node_attr_*(node, name, default) and pass the ONNX spec's default for their opset.
 * The importer copies exactly the attributes the file has. */
#include <string.h>

#include "frontend/onnx_internal.h"
#include "graph/ops/versions.h" /* HC_ONNX_MIN_OPSET, HC_ONNX_MAX_OPSET, op versions */

typedef struct importer {
    hc_onnx_src src;
    const Onnx__GraphProto *gp;
    hc_graph *g;
    int opset;
    /* The version the model imports of each domain of hc_onnx_domains (0: none). */
    int64_t domain_opset[HC_ONNX_NUM_DOMAINS];
    const char **node_names; /* per node of gp: the given or made-up unique name */
    struct name_map *values; /* every value defined so far, by name */
    hc_error *err;
    const hc_onnx_options *over; /* symbolic dimension overrides (may be NULL) */
    /* A subgraph (an If branch): the importer of the graph around it, where names not
     * defined here are looked up; the nesting depth; the prefix of its values' and nodes'
     * names in the one graph everything is imported into. */
    struct importer *parent;
    int depth;
    const char *prefix;
} importer;

/* Subgraphs (If branches) nested deeper than this are refused. */
#define HC_ONNX_MAX_SUBGRAPH_DEPTH 16

static bool is_default_domain(const char *d) {
    return !d || !*d || !strcmp(d, "ai.onnx");
}

/* A node's op kind: its op_type in the default domain, "<domain>.<op_type>" in a domain of
 * hc_onnx_domains; HC_OPK_COUNT when the table has no such op (or a default-domain op_type
 * is a qualified name). */
static hc_op_kind node_op(const Onnx__NodeProto *np) {
    if (is_default_domain(np->domain))
        return np->op_type && strchr(np->op_type, '.') ? HC_OPK_COUNT : hc_op_from_onnx(np->op_type);
    char q[512];
    if (hc_onnx_domain_index(np->domain) < 0 || !np->op_type ||
        snprintf(q, sizeof q, "%s.%s", np->domain, np->op_type) >= (int)sizeof q)
        return HC_OPK_COUNT;
    return hc_op_from_onnx(q);
}

/* The version of the node's domain: a node's `opset`. */
static int node_opset(const importer *im, const Onnx__NodeProto *np) {
    int d = hc_onnx_domain_index(np->domain);
    return d < 0 ? im->opset : (int)im->domain_opset[d];
}

/* ---- opset ------------------------------------------------------------------------ */
static hc_status find_opset(importer *im, const Onnx__ModelProto *m) {
    int64_t v = -1;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (is_default_domain(o->domain) && o->has_version) v = o->version;
    }
    /* IR version 1 and 2 predate opset_import: their operators are opset 1. */
    if (v < 0 && m->n_opset_import == 0) v = 1;
    if (v < 0)
        return hc_error_set(im->err, HC_ERR_INVALID, "%s: the model imports no opset of the "
                            "default ONNX domain", im->src.path);
    if (v < HC_ONNX_MIN_OPSET || v > HC_ONNX_MAX_OPSET)
        return hc_error_set(im->err, HC_ERR_UNSUPPORTED, "%s: opset %lld of the default "
                            "domain is not supported (opsets %d to %d are)", im->src.path,
                            (long long)v, HC_ONNX_MIN_OPSET, HC_ONNX_MAX_OPSET);
    im->opset = (int)v;
    return HC_OK;
}

static bool imports_default_domain(const Onnx__ModelProto *m) {
    for (size_t i = 0; i < m->n_opset_import; i++)
        if (is_default_domain(m->opset_import[i]->domain)) return true;
    return false;
}

static bool uses_default_domain(const Onnx__GraphProto *gp) {
    for (size_t i = 0; i < gp->n_node; i++)
        if (is_default_domain(gp->node[i]->domain)) return true;
    return false;
}

/* The versions of the domains of hc_onnx_domains the model imports, then the default
 * domain's opset (find_opset). A model of other domains' nodes alone needs no default
 * opset: the ops their lowerings make are read at the newest one. */
static hc_status find_opsets(importer *im, const Onnx__ModelProto *m) {
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        int d = hc_onnx_domain_index(o->domain);
        if (d >= 0 && o->has_version && o->version > 0) im->domain_opset[d] = o->version;
    }
    if (m->n_opset_import && !imports_default_domain(m) && !uses_default_domain(im->gp)) {
        im->opset = HC_ONNX_MAX_OPSET;
        return HC_OK;
    }
    return find_opset(im, m);
}

/* A node of a domain of hc_onnx_domains: the model must import that domain at a version
 * hidetc accepts. */
static hc_status check_domain_version(importer *im, size_t i) {
    const Onnx__NodeProto *np = im->gp->node[i];
    int d = hc_onnx_domain_index(np->domain);
    const hc_onnx_domain *dm = &hc_onnx_domains[d];
    int64_t v = im->domain_opset[d];
    if (!v)
        return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (%s.%s): the model does not "
                            "import the domain %s (its opset_import has no version of it)",
                            im->src.path, im->node_names[i], np->domain, np->op_type, dm->name);
    if (v < dm->min_version || v > dm->max_version) {
        char have[64];
        if (dm->min_version == dm->max_version)
            snprintf(have, sizeof have, "version %d is", dm->min_version);
        else
            snprintf(have, sizeof have, "versions %d to %d are", dm->min_version, dm->max_version);
        return hc_error_set(im->err, HC_ERR_UNSUPPORTED, "%s: node '%s' (%s.%s): version %lld of "
                            "the domain %s is not supported (%s)", im->src.path,
                            im->node_names[i], np->domain, np->op_type, (long long)v, dm->name,
                            have);
    }
    return HC_OK;
}

/* Each node's operator must be defined at the model's opset, and the version that opset
 * selects (its latest since-version at or below it) must be one hidetc implements. */
static hc_status check_versions(importer *im) {
    const Onnx__GraphProto *gp = im->gp;
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        bool dflt = is_default_domain(np->domain);
        if (!dflt) {
            hc_status s = check_domain_version(im, i);
            if (s) return s;
        }
        hc_op_kind k = node_op(np);
        int opset = node_opset(im, np);
        int v = hc_op_onnx_version(k, opset);
        if (v < 0 || hc_op_onnx_version_supported(k, v)) continue;
        /* "opset 16" of the default domain; "version 1 of the domain D" of another one */
        const char *label = dflt ? np->op_type : hc_op_onnx_name(k);
        char in_set[300], first[300];
        if (dflt) snprintf(in_set, sizeof in_set, "opset %d", opset);
        else snprintf(in_set, sizeof in_set, "version %d of the domain %.200s", opset, np->domain);
        snprintf(first, sizeof first, "%s %d", dflt ? "opset" : "version",
                 hc_op_onnx_first_version(k));
        if (v == 0)
            return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (%s): %s is not "
                                "defined in %s (it was added in %s)", im->src.path,
                                im->node_names[i], label, label, in_set, first);
        hc_sb sb;
        hc_sb_init(&sb);
        hc_op_onnx_versions_print(&sb, k);
        hc_status s = hc_error_set(im->err, HC_ERR_UNSUPPORTED, "%s: node '%s' (%s): version "
                                   "%d of %s (selected by %s) is not supported "
                                   "(versions %s are)", im->src.path, im->node_names[i],
                                   label, v, label, in_set, hc_sb_str(&sb));
        hc_sb_free(&sb);
        return s;
    }
    return HC_OK;
}

/* ---- name tables ------------------------------------------------------------------- */
/* Open-addressing map from names to tensors (or to nothing, for node names): models have
 * thousands of values, and a linear search per node input would be quadratic. */
typedef struct name_map {
    const char **keys;
    hc_tensor **vals;
    size_t cap, len;
} name_map;

static size_t name_hash(const char *s) {
    size_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static size_t name_map_slot(const name_map *m, const char *key) {
    size_t i = name_hash(key) & (m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], key)) i = (i + 1) & (m->cap - 1);
    return i;
}

static hc_tensor *name_map_get(const name_map *m, const char *key) {
    if (!m->cap) return NULL;
    size_t i = name_map_slot(m, key);
    return m->keys[i] ? m->vals[i] : NULL;
}

static bool name_map_has(const name_map *m, const char *key) {
    return m->cap && m->keys[name_map_slot(m, key)];
}

static void name_map_grow(name_map *m) {
    name_map bigger = {NULL, NULL, m->cap ? 2 * m->cap : 64, 0};
    bigger.keys = hc_xcalloc(bigger.cap, sizeof *bigger.keys);
    bigger.vals = hc_xcalloc(bigger.cap, sizeof *bigger.vals);
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->keys[i]) continue;
        size_t j = name_map_slot(&bigger, m->keys[i]);
        bigger.keys[j] = m->keys[i], bigger.vals[j] = m->vals[i];
    }
    bigger.len = m->len;
    free(m->keys);
    free(m->vals);
    *m = bigger;
}

/* Insert key (not copied: it must outlive the map); false when it was present. */
static bool name_map_put(name_map *m, const char *key, hc_tensor *val) {
    if (2 * (m->len + 1) > m->cap) name_map_grow(m);
    size_t i = name_map_slot(m, key);
    if (m->keys[i]) return false;
    m->keys[i] = key, m->vals[i] = val, m->len++;
    return true;
}

static void name_map_free(name_map *m) {
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* Names are made unique: a model may repeat a name, or name a node like another one's
 * made-up name. */
static void make_node_names(importer *im) {
    const Onnx__GraphProto *gp = im->gp;
    name_map set = {0};
    im->node_names = HC_NEW_ARRAY(&im->g->arena, const char *, gp->n_node + 1);
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        const char *op = np->op_type && *np->op_type ? np->op_type : "node";
        const char *name = np->name && *np->name
                               ? hc_arena_strdup(&im->g->arena, np->name)
                               : hc_arena_printf(&im->g->arena, "%s_%zu", op, i);
        for (int k = 1; !name_map_put(&set, name, NULL); k++)
            name = hc_arena_printf(&im->g->arena, "%s_%zu_%d", op, i, k);
        im->node_names[i] = im->prefix ? hc_arena_printf(&im->g->arena, "%s%s", im->prefix, name)
                                       : name;
    }
    name_map_free(&set);
}

/* ---- unsupported operators ----------------------------------------------------------- */
static bool node_supported(const Onnx__NodeProto *np) {
    hc_op_kind k = node_op(np); /* another domain's: a row "<domain>.<op_type>" */
    if (!is_default_domain(np->domain)) return k != HC_OPK_COUNT && hc_op_get(k) != NULL;
    if (!strcmp(np->op_type, "Constant")) return true; /* the importer folds it */
    if (!strcmp(np->op_type, "If")) return true;       /* the importer inlines it */
    if (!strcmp(np->op_type, "Loop") || !strcmp(np->op_type, "Scan"))
        return true; /* bodies kept, unrolled during shape inference (passes/loop.c) */
    return k != HC_OPK_COUNT && hc_op_get(k) != NULL;
}

static const char *op_label(hc_arena *a, const Onnx__NodeProto *np) {
    if (is_default_domain(np->domain)) return np->op_type;
    return hc_arena_printf(a, "%s.%s", np->domain, np->op_type);
}

/* Append "Foo (node 'a')" or "Bar (nodes 'b1', 'b2', ... and N more)" for the op type
 * of node `first` and every later unsupported node of that type. */
static void list_op_nodes(importer *im, hc_sb *sb, size_t first, const char *label,
                          bool *listed) {
    enum { MAX_NAMES = 4 };
    const Onnx__GraphProto *gp = im->gp;
    size_t count = 0;
    for (size_t j = first; j < gp->n_node; j++)
        if (!listed[j] && !strcmp(op_label(&im->g->arena, gp->node[j]), label)) count++;
    hc_sb_printf(sb, "%s (node%s ", label, count > 1 ? "s" : "");
    size_t shown = 0;
    for (size_t j = first; j < gp->n_node; j++) {
        if (listed[j] || strcmp(op_label(&im->g->arena, gp->node[j]), label)) continue;
        listed[j] = true;
        if (shown < MAX_NAMES)
            hc_sb_printf(sb, "%s'%s'", shown ? ", " : "", im->node_names[j]);
        shown++;
    }
    if (shown > MAX_NAMES) hc_sb_printf(sb, " and %zu more", shown - MAX_NAMES);
    hc_sb_putc(sb, ')');
}

static hc_status check_operators(importer *im) {
    const Onnx__GraphProto *gp = im->gp;
    for (size_t i = 0; i < gp->n_node; i++)
        if (!gp->node[i]->op_type || !*gp->node[i]->op_type)
            return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' has no op_type",
                                im->src.path, im->node_names[i]);
    bool *listed = hc_xcalloc(gp->n_node + 1, 1);
    hc_sb sb;
    hc_sb_init(&sb);
    int ntypes = 0;
    for (size_t i = 0; i < gp->n_node; i++) {
        if (listed[i] || node_supported(gp->node[i])) continue;
        hc_sb_puts(&sb, ntypes++ ? ", " : "");
        list_op_nodes(im, &sb, i, op_label(&im->g->arena, gp->node[i]), listed);
    }
    hc_status s = HC_OK;
    if (ntypes)
        s = hc_error_set(im->err, HC_ERR_UNSUPPORTED, "%s: unsupported operator%s: %s",
                         im->src.path, ntypes > 1 ? "s" : "", hc_sb_str(&sb));
    hc_sb_free(&sb);
    free(listed);
    return s;
}

/* ---- values --------------------------------------------------------------------------- */
/* Every value has one definition: refuse a second one (SSA, as ONNX requires). */
static hc_status check_new_value(importer *im, const char *name, const char *what) {
    if (!name || !*name)
        return hc_error_set(im->err, HC_ERR_INVALID, "%s: %s has no name", im->src.path, what);
    if (name_map_has(im->values, name))
        return hc_error_set(im->err, HC_ERR_INVALID, "%s: value '%s' (%s) is defined twice",
                            im->src.path, name, what);
    return HC_OK;
}

/* t under the ONNX name `key` (t's own name carries a subgraph's prefix). */
static void define_as(importer *im, const char *key, hc_tensor *t) {
    bool fresh = name_map_put(im->values, hc_arena_strdup(&im->g->arena, key), t);
    HC_ASSERT(fresh);
}

static void define(importer *im, hc_tensor *t) { define_as(im, t->name, t); }

/* The graph's name for ONNX value `name` of this (sub)graph. */
static const char *value_name(importer *im, const char *name) {
    return im->prefix ? hc_arena_printf(&im->g->arena, "%s%s", im->prefix, name) : name;
}

/* A value of this graph or of a graph around it (subgraphs see the outer scopes). */
static hc_tensor *lookup(const importer *im, const char *name) {
    for (; im; im = im->parent) {
        hc_tensor *t = name_map_get(im->values, name);
        if (t) return t;
    }
    return NULL;
}

static hc_status add_constant(importer *im, const char *name, const Onnx__TensorProto *tp,
                              const char *what) {
    hc_onnx_dense d;
    hc_status s = hc_onnx_decode_tensor(&im->src, tp, what, &d, im->err);
    if (s) return s;
    define_as(im, name, hc_graph_constant(im->g, value_name(im, name), d.dtype, d.ndim, d.shape,
                                          d.data));
    free(d.data);
    return HC_OK;
}

static hc_status import_initializers(importer *im) {
    const Onnx__GraphProto *gp = im->gp;
    char what[300];
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        snprintf(what, sizeof what, "initializer %zu", i);
        hc_status s = check_new_value(im, tp->name, what);
        if (s) return s;
        snprintf(what, sizeof what, "initializer '%.200s'", tp->name);
        if ((s = add_constant(im, tp->name, tp, what))) return s;
    }
    if (gp->n_sparse_initializer)
        return hc_error_set(im->err, HC_ERR_UNSUPPORTED, "%s: sparse initializers are not "
                            "supported", im->src.path);
    return HC_OK;
}

static const char *type_kind_name(Onnx__TypeProto__ValueCase c) {
    switch (c) {
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE: return "a sequence";
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE: return "a map";
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE: return "an optional";
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE: return "a sparse tensor";
    default: return "of no type";
    }
}

#define HC_DYNAMIC_HINT "hidetc compiles static shapes: fix it with --dim NAME=N or " \
    "--shape INPUT=D0,D1,... (C: session options dims/shapes; Python: dims=, shapes=)"

/* The override of input `name`'s whole shape, or NULL. */
static const hc_onnx_shape *shape_override(importer *im, const char *name) {
    for (int j = 0; im->over && j < im->over->nshapes; j++)
        if (!strcmp(im->over->shapes[j].input, name)) return &im->over->shapes[j];
    return NULL;
}

static const hc_onnx_dim *dim_override(importer *im, const char *sym) {
    for (int j = 0; im->over && j < im->over->ndims; j++)
        if (!strcmp(im->over->dims[j].name, sym)) return &im->over->dims[j];
    return NULL;
}

/* The hint of symbol `sym` (hc_onnx_options.hints, else 16 + 8 * its index), and the
 * symbol added to the graph. */
static int64_t symbol_hint(importer *im, const char *sym) {
    size_t index = im->g->sym_names.len;
    for (size_t j = 0; j < im->g->sym_names.len; j++)
        if (!strcmp(im->g->sym_names.data[j], sym)) index = j;
    int64_t hint = 16 + 8 * (int64_t)index;
    for (int j = 0; j < im->over->nhints; j++)
        if (!strcmp(im->over->hints[j].name, sym)) hint = im->over->hints[j].value;
    hc_graph_symbol(im->g, sym, hint);
    return im->g->sym_hints.data[index];
}

/* keep[d]: the symbol dimension d stays (hc_onnx_options.symbolic), else NULL. */
static hc_status input_dims(importer *im, const char *name, const Onnx__TensorShapeProto *sp,
                            int64_t *shape, int *ndim, const char **syms, const char **keep) {
    const char *path = im->src.path;
    const hc_onnx_shape *so = shape_override(im, name);
    if (!sp && !so)
        return hc_error_set(im->err, HC_ERR_UNSUPPORTED, "%s: input '%s' has no shape; "
                            HC_DYNAMIC_HINT, path, name);
    size_t nd = sp ? sp->n_dim : (size_t)so->ndim;
    if (nd > HC_MAX_DIMS)
        return hc_error_set(im->err, HC_ERR_UNSUPPORTED, "%s: input '%s' has %zu dimensions "
                            "(at most %d are supported)", path, name, nd, HC_MAX_DIMS);
    if (so && (size_t)so->ndim != nd)
        return hc_error_set(im->err, HC_ERR_INVALID, "%s: shape override %s=...: %d dimensions "
                            "given, the input has %zu", path, name, so->ndim, nd);
    *ndim = (int)nd;
    for (size_t i = 0; i < nd; i++) {
        const Onnx__TensorShapeProto__Dimension *d = sp ? sp->dim[i] : NULL;
        bool fixed = d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
                     d->dim_value > 0;
        bool sym = d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                   d->dim_param && *d->dim_param;
        if (d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            d->dim_value < 0)
            return hc_error_set(im->err, HC_ERR_INVALID, "%s: input '%s' has a negative "
                                "dimension (%lld at index %zu)", path, name,
                                (long long)d->dim_value, i);
        syms[i] = sym ? d->dim_param : NULL;
        keep[i] = NULL;
        const hc_onnx_dim *dov = sym ? dim_override(im, d->dim_param) : NULL;
        if (so) {
            if (fixed && so->dims[i] != d->dim_value)
                return hc_error_set(im->err, HC_ERR_INVALID, "%s: shape override %s=...: dimension "
                                    "%zu is %lld in the model, %lld given", path, name, i,
                                    (long long)d->dim_value, (long long)so->dims[i]);
            if (dov && dov->value != so->dims[i])
                return hc_error_set(im->err, HC_ERR_INVALID, "%s: input '%s', dimension %zu "
                                    "('%s'): the shape override gives %lld, the dim override "
                                    "%s=%lld", path, name, i,
                                    d->dim_param, (long long)so->dims[i], d->dim_param,
                                    (long long)dov->value);
            shape[i] = so->dims[i];
        } else if (fixed && im->over && im->over->symbolic && im->over->all_symbolic &&
                   d->dim_value > 1) {
            keep[i] = hc_arena_printf(&im->g->arena, "%s_d%zu", name, i);
            hc_graph_symbol(im->g, keep[i], d->dim_value);
            shape[i] = d->dim_value;
        } else if (fixed) {
            shape[i] = d->dim_value;
        } else if (dov) {
            shape[i] = dov->value;
        } else if (sym && im->over && im->over->symbolic) {
            shape[i] = symbol_hint(im, d->dim_param);
            keep[i] = d->dim_param;
        } else if (sym) {
            return hc_error_set(im->err, HC_ERR_UNSUPPORTED, "%s: input '%s' has a symbolic "
                                "dimension '%s' (dimension %zu); " HC_DYNAMIC_HINT, path, name,
                                d->dim_param, i);
        } else if (d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            shape[i] = 0; /* an empty dimension, as the file says */
        } else if (im->over && im->over->symbolic) {
            keep[i] = hc_arena_printf(&im->g->arena, "%s_d%zu", name, i);
            shape[i] = symbol_hint(im, keep[i]);
        } else {
            return hc_error_set(im->err, HC_ERR_UNSUPPORTED, "%s: input '%s' has an unknown "
                                "dimension (dimension %zu); " HC_DYNAMIC_HINT, path, name, i);
        }
    }
    return HC_OK;
}

static hc_status import_input(importer *im, size_t index, const Onnx__ValueInfoProto *vi) {
    const char *path = im->src.path, *name = vi->name;
    if (!name || !*name)
        return hc_error_set(im->err, HC_ERR_INVALID, "%s: graph input %zu has no name", path,
                            index);
    const hc_tensor *init = name_map_get(im->values, name);
    if (init && init->data) return HC_OK; /* an initializer: a constant, not an input */
    if (init)
        return hc_error_set(im->err, HC_ERR_INVALID, "%s: graph input '%s' is listed twice",
                            path, name);
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return hc_error_set(im->err, HC_ERR_UNSUPPORTED, "%s: input '%s' is %s, only tensors "
                            "are supported", path, name, type_kind_name(tp ? tp->value_case : 0));
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    char buf[32];
    hc_dtype dt = tt->has_elem_type ? hc_onnx_dtype(tt->elem_type) : HC_DTYPE_COUNT;
    if (dt == HC_DTYPE_COUNT)
        return hc_error_set(im->err, HC_ERR_UNSUPPORTED, "%s: input '%s' has element type %s, "
                            "which is not supported", path, name,
                            hc_onnx_dtype_name(tt->has_elem_type ? tt->elem_type : 0, buf));
    int64_t shape[HC_MAX_DIMS];
    const char *syms[HC_MAX_DIMS], *keep[HC_MAX_DIMS];
    int nd = 0;
    hc_status s = input_dims(im, name, tt->shape, shape, &nd, syms, keep);
    if (s) return s;
    for (int i = 1; i <= nd && hc_shape_too_large(dt, nd, shape); i++) /* which dimension */
        if (hc_shape_too_large(dt, i, shape))
            return hc_error_set(im->err, HC_ERR_INVALID, "%s: input '%s' is too large: dimension %d "
                                "(%lld) takes it past 2^40 bytes (or its element count past "
                                "int64)", path, name, i - 1,
                                (long long)shape[i - 1]);
    hc_tensor *t = hc_graph_add_input(im->g, name, dt, nd, shape);
    bool any = false;
    for (int i = 0; i < nd; i++) any |= syms[i] != NULL;
    if (any) {
        t->dim_names = HC_NEW_ARRAY(&im->g->arena, const char *, nd);
        for (int i = 0; i < nd; i++)
            t->dim_names[i] = syms[i] ? hc_arena_strdup(&im->g->arena, syms[i]) : NULL;
    }
    const hc_sym *dims[HC_MAX_DIMS];
    bool symbolic = false;
    for (int i = 0; i < nd; i++) {
        symbolic |= keep[i] != NULL;
        dims[i] = keep[i] ? hc_sym_var(&im->g->arena, hc_graph_symbol(im->g, keep[i], 0))
                          : hc_sym_const(&im->g->arena, shape[i]);
    }
    if (symbolic && !hc_tensor_set_sym_shape(t, nd, dims)) hc_unreachable();
    define(im, t);
    return HC_OK;
}

/* ---- attributes ------------------------------------------------------------------------- */
static int attr_type(const Onnx__AttributeProto *ap) {
    if (ap->has_type && ap->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
        return ap->type;
    /* IR version 1 had no type field: the one content field present tells. */
    if (ap->has_f) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
    if (ap->has_i) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    if (ap->has_s) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
    if (ap->t) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
    if (ap->g) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH;
    if (ap->n_floats) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS;
    if (ap->n_ints) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
    if (ap->n_strings) return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS;
    return ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED;
}

static const char *bytes_str(hc_arena *a, ProtobufCBinaryData b) {
    char *s = hc_arena_alloc(a, b.len + 1);
    if (b.len) memcpy(s, b.data, b.len);
    return s;
}

/* A TENSOR attribute: a constant tensor that is not one of the graph's values. */
static hc_status attr_tensor(importer *im, const char *what, const Onnx__TensorProto *tp,
                             hc_tensor **out) {
    hc_onnx_dense d;
    hc_status s = hc_onnx_decode_tensor(&im->src, tp, what, &d, im->err);
    if (s) return s;
    hc_tensor *t = HC_NEW(&im->g->arena, hc_tensor);
    t->name = hc_arena_strdup(&im->g->arena, tp->name ? tp->name : "");
    t->dtype = d.dtype;
    t->ndim = d.ndim;
    memcpy(t->shape, d.shape, sizeof d.shape);
    t->shape_known = true;
    /* Empty tensors still get data: a non-NULL pointer is what makes a tensor constant. */
    t->data = hc_arena_alloc(&im->g->arena, d.nbytes ? d.nbytes : 1);
    if (d.nbytes) memcpy(t->data, d.data, d.nbytes);
    t->id = -1;
    free(d.data);
    *out = t;
    return HC_OK;
}

static hc_status convert_attr(importer *im, const char *node, const char *op,
                              const Onnx__AttributeProto *ap, hc_attr *out) {
    hc_arena *a = &im->g->arena;
    const char *path = im->src.path;
    if (!ap->name || !*ap->name)
        return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (%s): an attribute has no "
                            "name", path, node, op);
    if (ap->ref_attr_name && *ap->ref_attr_name)
        return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (%s): attribute '%s' refers "
                            "to a function attribute outside a function", path, node, op,
                            ap->name);
    out->name = hc_arena_strdup(a, ap->name);
    char what[400];
    switch (attr_type(ap)) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT:
        out->kind = HC_ATTR_FLOAT, out->f = ap->f;
        return HC_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT:
        out->kind = HC_ATTR_INT, out->i = ap->i;
        return HC_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        out->kind = HC_ATTR_STRING, out->s = bytes_str(a, ap->s);
        return HC_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR:
        if (!ap->t) break;
        out->kind = HC_ATTR_TENSOR;
        snprintf(what, sizeof what, "node '%.150s' (%.60s): attribute '%.100s'", node, op,
                 ap->name);
        return attr_tensor(im, what, ap->t, &out->t);
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        out->kind = HC_ATTR_INTS, out->n = (int)ap->n_ints;
        out->ints = hc_arena_memdup(a, ap->ints, ap->n_ints * sizeof(int64_t));
        return HC_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        out->kind = HC_ATTR_FLOATS, out->n = (int)ap->n_floats;
        out->floats = HC_NEW_ARRAY(a, double, ap->n_floats + 1);
        for (size_t i = 0; i < ap->n_floats; i++) out->floats[i] = ap->floats[i];
        return HC_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS:
        out->kind = HC_ATTR_STRINGS, out->n = (int)ap->n_strings;
        out->strings = HC_NEW_ARRAY(a, const char *, ap->n_strings + 1);
        for (size_t i = 0; i < ap->n_strings; i++) out->strings[i] = bytes_str(a, ap->strings[i]);
        return HC_OK;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED:
        break;
    default:
        return hc_error_set(im->err, HC_ERR_UNSUPPORTED, "%s: node '%s' (%s): attribute '%s' "
                            "has a kind (graph, sparse tensor, type or list of those) that is "
                            "not supported", path, node, op, ap->name);
    }
    return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (%s): attribute '%s' has no "
                        "value", path, node, op, ap->name);
}

/* ---- Constant nodes --------------------------------------------------------------------- */
static hc_status constant_value(importer *im, const char *node, const Onnx__AttributeProto *ap,
                                const char *out_name) {
    hc_attr v = {0};
    hc_status s = convert_attr(im, node, "Constant", ap, &v);
    if (s) return s;
    int64_t n = v.n;
    hc_graph *g = im->g;
    hc_tensor *t = NULL;
    const char *vn = value_name(im, out_name);
    if (!strcmp(v.name, "value") && v.kind == HC_ATTR_TENSOR) {
        t = hc_graph_constant(g, vn, v.t->dtype, v.t->ndim, v.t->shape, v.t->data);
    } else if (!strcmp(v.name, "value_float") && v.kind == HC_ATTR_FLOAT) {
        float f = (float)v.f;
        t = hc_graph_constant(g, vn, HC_F32, 0, NULL, &f);
    } else if (!strcmp(v.name, "value_int") && v.kind == HC_ATTR_INT) {
        t = hc_graph_constant(g, vn, HC_I64, 0, NULL, &v.i);
    } else if (!strcmp(v.name, "value_ints") && v.kind == HC_ATTR_INTS) {
        t = hc_graph_constant(g, vn, HC_I64, 1, &n, v.ints);
    } else if (!strcmp(v.name, "value_floats") && v.kind == HC_ATTR_FLOATS) {
        float *f = HC_NEW_ARRAY(&g->arena, float, n + 1);
        for (int64_t i = 0; i < n; i++) f[i] = (float)v.floats[i];
        t = hc_graph_constant(g, vn, HC_F32, 1, &n, f);
    } else {
        return hc_error_set(im->err, HC_ERR_UNSUPPORTED, "%s: node '%s' (Constant): attribute "
                            "'%s' is not supported (value, value_float(s) and value_int(s) "
                            "are)", im->src.path, node, v.name);
    }
    define_as(im, out_name, t);
    return HC_OK;
}

static hc_status import_constant(importer *im, size_t index) {
    const Onnx__NodeProto *np = im->gp->node[index];
    const char *node = im->node_names[index], *path = im->src.path;
    if (np->n_input != 0 || np->n_output != 1 || np->n_attribute != 1)
        return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (Constant) has %zu inputs, "
                            "%zu outputs and %zu attributes (expected 0, 1 and 1)", path,
                            node, np->n_input, np->n_output, np->n_attribute);
    hc_status s = check_new_value(im, np->output[0], "output of a Constant node");
    if (s) return s;
    return constant_value(im, node, np->attribute[0], np->output[0]);
}

/* ---- nodes ------------------------------------------------------------------------------ */
static hc_status define_outputs(importer *im, size_t index) {
    const Onnx__NodeProto *np = im->gp->node[index];
    if (!strcmp(np->op_type, "Constant") && is_default_domain(np->domain))
        return import_constant(im, index);
    char what[300];
    snprintf(what, sizeof what, "an output of node '%.200s'", im->node_names[index]);
    for (size_t j = 0; j < np->n_output; j++) {
        if (!*np->output[j]) continue; /* an omitted optional output */
        hc_status s = check_new_value(im, np->output[j], what);
        if (s) return s;
        /* The dtype is a placeholder until shape inference sets it. */
        define_as(im, np->output[j],
                  hc_graph_tensor(im->g, value_name(im, np->output[j]), HC_F32, 0, NULL));
    }
    return HC_OK;
}

/* ---- opsets 1 to 6: versions whose attributes became inputs or changed type --------- */
/* A node of a version older than 7 whose only difference from a later version is the form
 * of its attributes is rewritten into that later form here, so that the op definitions
 * see one form: Reshape-1's `shape` attribute becomes the constant shape input (Reshape-5),
 * Cast-1's type name in `to` its code (Cast-6), Pad-1's `paddings` the `pads` (Pad-2),
 * Concat-1's missing axis 1 (Concat-4), Upsample-1's height_scale and width_scale the
 * scales of a 4-D input (Upsample-7), Split-1's constant `split` input the attribute
 * (Split-2). Semantic differences are marked for the op definitions to check:
 * legacy_broadcast (0: the inputs' shapes must be equal, 1: B broadcasts to A as its
 * suffix) on the binary ops and Gemm, legacy_training (is_test is 0) on BatchNormalization
 * and Dropout (docs/onnx.md, "Opsets 1 to 6"). `consumed_inputs`, an in-place hint of
 * version 1, is ignored. */
static const char *const cast1_names[] = {
    NULL,     "FLOAT",  "UINT8",  "INT8",    "UINT16", "INT16",  "INT32",     "INT64",
    "STRING", "BOOL",   "FLOAT16", "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128"};

static hc_attr *find_attr(hc_attr *attrs, int nattrs, const char *name) {
    for (int i = 0; i < nattrs; i++)
        if (attrs[i].name && !strcmp(attrs[i].name, name)) return &attrs[i];
    return NULL;
}

static hc_status legacy_adapt(importer *im, size_t index, hc_op_kind op, int *nin,
                              hc_tensor ***ins, int *nattrs, hc_attr **attrs) {
    const Onnx__NodeProto *np = im->gp->node[index];
    const char *node = im->node_names[index], *path = im->src.path;
    if (!is_default_domain(np->domain)) return HC_OK;
    int v = hc_op_onnx_version(op, im->opset);
    if (v <= 0 || v >= 7) return HC_OK;
    hc_arena *a = &im->g->arena;
    /* room for one more attribute and one more input */
    hc_attr *at = HC_NEW_ARRAY(a, hc_attr, *nattrs + 1);
    memcpy(at, *attrs, sizeof(hc_attr) * (size_t)*nattrs);
    hc_tensor **in = HC_NEW_ARRAY(a, hc_tensor *, *nin + 2);
    memcpy(in, *ins, sizeof(hc_tensor *) * (size_t)*nin);
    *attrs = at, *ins = in;
    if (op == HC_OPK_RESHAPE && v < 5) {
        hc_attr *s = find_attr(at, *nattrs, "shape");
        if (!s || s->kind != HC_ATTR_INTS || *nin != 1)
            return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (Reshape-1): expected "
                                "one input and the ints attribute 'shape'", path, node);
        int64_t cnt = s->n;
        hc_tensor *t = hc_graph_constant(im->g, NULL, HC_I64,
                                         1, &cnt, s->ints);
        in[(*nin)++] = t;
        s->name = "legacy_shape";
    } else if (op == HC_OPK_CAST && v < 6) {
        hc_attr *to = find_attr(at, *nattrs, "to");
        if (to && to->kind == HC_ATTR_STRING) {
            int64_t code = 0;
            for (size_t k = 1; k < HC_ARRAY_LEN(cast1_names); k++)
                if (!strcmp(to->s, cast1_names[k])) code = (int64_t)k;
            if (!code)
                return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (Cast-1): 'to' is "
                                    "'%s', not a type name", path, node, to->s);
            to->kind = HC_ATTR_INT, to->i = code;
        }
    } else if (op == HC_OPK_PAD && v < 2) {
        hc_attr *p = find_attr(at, *nattrs, "paddings");
        if (p && !find_attr(at, *nattrs, "pads")) p->name = "pads";
    } else if (op == HC_OPK_CONCAT && v < 4) {
        if (!find_attr(at, *nattrs, "axis"))
            at[(*nattrs)++] = (hc_attr){.name = "axis", .kind = HC_ATTR_INT, .i = 1};
    } else if (op == HC_OPK_UPSAMPLE && v < 7) {
        hc_attr *h = find_attr(at, *nattrs, "height_scale");
        hc_attr *w = find_attr(at, *nattrs, "width_scale");
        if (!h || !w || h->kind != HC_ATTR_FLOAT || w->kind != HC_ATTR_FLOAT)
            return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (Upsample-1): the float "
                                "attributes height_scale and width_scale are required", path,
                                node);
        hc_attr *m = find_attr(at, *nattrs, "mode");
        if (m && m->kind == HC_ATTR_STRING && !strcmp(m->s, "bilinear")) m->s = "linear";
        double *sc = HC_NEW_ARRAY(a, double, 4);
        sc[0] = sc[1] = 1, sc[2] = h->f, sc[3] = w->f;
        at[(*nattrs)++] = (hc_attr){.name = "scales", .kind = HC_ATTR_FLOATS, .n = 4, .floats = sc};
        h->name = "legacy_height_scale", w->name = "legacy_width_scale";
    } else if (op == HC_OPK_ADD || op == HC_OPK_SUB || op == HC_OPK_MUL || op == HC_OPK_DIV ||
               op == HC_OPK_POW || op == HC_OPK_AND || op == HC_OPK_OR || op == HC_OPK_XOR ||
               op == HC_OPK_EQUAL || op == HC_OPK_LESS || op == HC_OPK_GREATER ||
               op == HC_OPK_GEMM) {
        /* the op definitions check legacy broadcasting on this mark (not on the opset, which
         * the nodes that passes derive from this one inherit) */
        hc_attr *b = find_attr(at, *nattrs, "broadcast");
        at[(*nattrs)++] = (hc_attr){.name = "legacy_broadcast", .kind = HC_ATTR_INT,
                                    .i = b && b->kind == HC_ATTR_INT && b->i != 0};
    } else if (op == HC_OPK_BATCH_NORMALIZATION || op == HC_OPK_DROPOUT) {
        hc_attr *t = find_attr(at, *nattrs, "is_test");
        at[(*nattrs)++] = (hc_attr){.name = "legacy_training", .kind = HC_ATTR_INT,
                                    .i = !(t && t->kind == HC_ATTR_INT && t->i != 0)};
    } else if (op == HC_OPK_SPLIT && v < 2 && *nin > 1 && in[1]) {
        hc_tensor *s = in[1];
        if (find_attr(at, *nattrs, "split"))
            return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (Split-1): 'split' is "
                                "both an input and an attribute", path, node);
        if (!s->data || s->ndim != 1 || (s->dtype != HC_I64 && s->dtype != HC_I32))
            return hc_error_set(im->err, HC_ERR_UNSUPPORTED, "%s: node '%s' (Split-1): the "
                                "split input '%s' must be a constant 1-D integer tensor", path,
                                node, np->input[1]);
        int64_t cnt = s->shape[0];
        int64_t *v64 = HC_NEW_ARRAY(a, int64_t, cnt + 1);
        for (int64_t k = 0; k < cnt; k++)
            v64[k] = s->dtype == HC_I64 ? ((const int64_t *)s->data)[k]
                                        : ((const int32_t *)s->data)[k];
        at[(*nattrs)++] = (hc_attr){.name = "split", .kind = HC_ATTR_INTS, .n = (int)cnt,
                                    .ints = v64};
        *nin = 1;
    }
    return HC_OK;
}

static hc_status add_if(importer *im, size_t index, hc_tensor **ins, hc_tensor **outs);
static hc_status add_loop(importer *im, size_t index, hc_tensor **ins, hc_tensor **outs);

static hc_status add_node(importer *im, size_t index) {
    const Onnx__NodeProto *np = im->gp->node[index];
    if (!strcmp(np->op_type, "Constant") && is_default_domain(np->domain)) return HC_OK;
    const char *node = im->node_names[index], *path = im->src.path;
    hc_arena *a = &im->g->arena;
    const char *label = op_label(a, np);
    hc_tensor **ins = HC_NEW_ARRAY(a, hc_tensor *, np->n_input + 1);
    hc_tensor **outs = HC_NEW_ARRAY(a, hc_tensor *, np->n_output + 1);
    hc_attr *attrs = HC_NEW_ARRAY(a, hc_attr, np->n_attribute + 1);
    for (size_t j = 0; j < np->n_input; j++) {
        if (!*np->input[j]) continue; /* omitted optional input */
        ins[j] = lookup(im, np->input[j]);
        if (!ins[j])
            return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (%s): input '%s' is not "
                                "defined by any node, initializer or graph input", path, node,
                                label, np->input[j]);
    }
    hc_op_kind op = node_op(np);
    for (size_t j = 0; j < np->n_output; j++) {
        outs[j] = *np->output[j] ? lookup(im, np->output[j]) : NULL;
        if (!outs[j] && (int)j < hc_op_min_outputs(op))
            return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (%s): required output "
                                "%zu has no name", path, node, label, j);
    }
    if (op == HC_OPK_IF) return add_if(im, index, ins, outs);
    if (op == HC_OPK_LOOP || op == HC_OPK_SCAN) return add_loop(im, index, ins, outs);
    for (size_t j = 0; j < np->n_attribute; j++) {
        hc_status s = convert_attr(im, node, label, np->attribute[j], &attrs[j]);
        if (s) return s;
    }
    int nin = (int)np->n_input, nattrs = (int)np->n_attribute;
    hc_status ls = legacy_adapt(im, index, op, &nin, &ins, &nattrs, &attrs);
    if (ls) return ls;
    hc_error e = {0};
    hc_node *n = hc_graph_add_node(im->g, op, node, nin, ins, (int)np->n_output, outs, nattrs,
                                   attrs, &e);
    if (!n)
        return hc_error_set(im->err, e.status ? e.status : HC_ERR_INVALID, "%s: %s", path,
                            e.msg);
    n->opset = node_opset(im, np);
    return HC_OK;
}

/* ---- If: both branches imported into the graph, the outputs selected --------------- */
/* Import branch `gp` of If node `node` into im's graph (its values and nodes prefixed
 * "node/tag/", outer names seen through im); its outputs, gp->n_output of them, in out. */
static hc_status import_branch(importer *im, const char *node, const char *tag,
                               const Onnx__GraphProto *gp, hc_tensor **out) {
    const char *path = im->src.path;
    if (im->depth + 1 > HC_ONNX_MAX_SUBGRAPH_DEPTH)
        return hc_error_set(im->err, HC_ERR_UNSUPPORTED, "%s: node '%s' (If): subgraphs nested "
                            "deeper than %d", path, node, HC_ONNX_MAX_SUBGRAPH_DEPTH);
    if (gp->n_input)
        return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (If): %s has %zu inputs (an "
                            "If branch takes none)", path, node, tag, gp->n_input);
    name_map values = {0};
    importer sub = {.src = im->src, .gp = gp, .g = im->g, .opset = im->opset, .values = &values,
                    .err = im->err, .parent = im, .depth = im->depth + 1,
                    .prefix = hc_arena_printf(&im->g->arena, "%s/%s/", node, tag)};
    memcpy(sub.domain_opset, im->domain_opset, sizeof sub.domain_opset);
    make_node_names(&sub);
    hc_status s = check_operators(&sub);
    if (!s) s = check_versions(&sub);
    if (!s) s = import_initializers(&sub);
    for (size_t i = 0; !s && i < gp->n_node; i++) s = define_outputs(&sub, i);
    for (size_t i = 0; !s && i < gp->n_node; i++) s = add_node(&sub, i);
    for (size_t i = 0; !s && i < gp->n_output; i++) {
        const char *name = gp->output[i]->name;
        out[i] = name && *name ? lookup(&sub, name) : NULL;
        if (!out[i])
            s = hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (If): %s output %zu ('%s') "
                             "is not defined", path, node, tag, i, name ? name : "");
    }
    name_map_free(&values);
    return s;
}

/* If: every output is IF_SELECT(cond, then's, else's): both branches are computed and the
 * condition picks (ONNX ops have no side effects); a constant condition leaves one branch
 * (the simplify pass bypasses the select and the other branch is dead). */
static hc_status add_if(importer *im, size_t index, hc_tensor **ins, hc_tensor **outs) {
    const Onnx__NodeProto *np = im->gp->node[index];
    const char *node = im->node_names[index], *path = im->src.path;
    const Onnx__GraphProto *br[2] = {NULL, NULL};
    for (size_t j = 0; j < np->n_attribute; j++) {
        const Onnx__AttributeProto *ap = np->attribute[j];
        const char *an = ap->name ? ap->name : "";
        int k = !strcmp(an, "then_branch") ? 0 : !strcmp(an, "else_branch") ? 1 : -1;
        if (k < 0 || !ap->g)
            return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (If): attribute '%s' (a "
                                "then_branch or else_branch graph expected)", path, node, an);
        br[k] = ap->g;
    }
    if (!br[0] || !br[1])
        return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (If): needs then_branch and "
                            "else_branch", path, node);
    if (np->n_input != 1 || !ins[0])
        return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (If): one input (cond) "
                            "expected", path, node);
    for (int k = 0; k < 2; k++)
        if (br[k]->n_output != np->n_output)
            return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (If): %s has %zu outputs, "
                                "the node %zu", path, node, k ? "else_branch" : "then_branch",
                                br[k]->n_output, np->n_output);
    hc_arena *a = &im->g->arena;
    hc_tensor **t = HC_NEW_ARRAY(a, hc_tensor *, np->n_output + 1);
    hc_tensor **e = HC_NEW_ARRAY(a, hc_tensor *, np->n_output + 1);
    hc_status s = import_branch(im, node, "then", br[0], t);
    if (!s) s = import_branch(im, node, "else", br[1], e);
    for (size_t j = 0; !s && j < np->n_output; j++) {
        if (!outs[j]) continue;
        hc_tensor *in3[3] = {ins[0], t[j], e[j]}, *o[1] = {outs[j]};
        hc_error err = {0};
        const char *nm = np->n_output > 1 ? hc_arena_printf(a, "%s/%zu", node, j) : node;
        hc_node *n = hc_graph_add_node(im->g, HC_OPK_IF_SELECT, nm, 3, in3, 1, o, 0, NULL, &err);
        if (!n) return hc_error_set(im->err, err.status ? err.status : HC_ERR_INVALID, "%s: %s", path, err.msg);
        n->opset = im->opset;
    }
    return s;
}

/* ---- Loop and Scan: bodies kept as bytes, inlined per iteration ------------------- */
/* Names gp (and the graphs nested in it) reads without defining them: the outer values a
 * body captures. */
static void defined_names(const Onnx__GraphProto *gp, name_map *def) {
    for (size_t i = 0; i < gp->n_input; i++)
        if (gp->input[i]->name) name_map_put(def, gp->input[i]->name, NULL);
    for (size_t i = 0; i < gp->n_initializer; i++)
        if (gp->initializer[i]->name) name_map_put(def, gp->initializer[i]->name, NULL);
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        for (size_t j = 0; j < np->n_output; j++)
            if (*np->output[j]) name_map_put(def, np->output[j], NULL);
        for (size_t j = 0; j < np->n_attribute; j++)
            if (np->attribute[j]->g) defined_names(np->attribute[j]->g, def);
    }
}

typedef HC_VEC(const char *) name_list;

static void used_names(const Onnx__GraphProto *gp, const name_map *def, name_map *seen,
                       name_list *free_names) {
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        for (size_t j = 0; j < np->n_input; j++) {
            const char *s = np->input[j];
            if (*s && !name_map_has(def, s) && name_map_put(seen, s, NULL)) hc_vec_push(free_names, s);
        }
        for (size_t j = 0; j < np->n_attribute; j++)
            if (np->attribute[j]->g) used_names(np->attribute[j]->g, def, seen, free_names);
    }
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *s = gp->output[i]->name;
        if (s && *s && !name_map_has(def, s) && name_map_put(seen, s, NULL)) hc_vec_push(free_names, s);
    }
}

static hc_status add_loop(importer *im, size_t index, hc_tensor **ins, hc_tensor **outs) {
    const Onnx__NodeProto *np = im->gp->node[index];
    const char *node = im->node_names[index], *path = im->src.path, *op = np->op_type;
    hc_arena *a = &im->g->arena;
    bool loop = !strcmp(op, "Loop");
    const Onnx__GraphProto *body = NULL;
    /* body, captures, num_formal, domain_opsets, Scan-8's sequence_lens and batch_major */
    hc_attr *attrs = HC_NEW_ARRAY(a, hc_attr, np->n_attribute + 6);
    int na = 0;
    for (size_t j = 0; j < np->n_attribute; j++) {
        const Onnx__AttributeProto *ap = np->attribute[j];
        if (ap->name && !strcmp(ap->name, "body")) {
            body = ap->g;
            continue;
        }
        hc_status s = convert_attr(im, node, op, ap, &attrs[na]);
        if (s) return s;
        na++;
    }
    if (!body)
        return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (%s): no body graph", path, node, op);
    int nin = (int)np->n_input;
    hc_tensor **in = HC_NEW_ARRAY(a, hc_tensor *, np->n_input + 256);
    for (int j = 0; j < nin; j++) in[j] = ins[j];
    if (loop) {
        if (nin < 2 || !in[0])
            return hc_error_set(im->err, HC_ERR_UNSUPPORTED, "%s: node '%s' (Loop): a trip count M "
                                "is needed (a loop bounded by its condition alone is not "
                                "supported)", path, node);
        if (!in[1]) { /* no condition: true */
            bool t = true;
            in[1] = hc_graph_constant(im->g, hc_arena_printf(a, "%s/cond", node), HC_BOOL, 0, NULL, &t);
        }
    }
    if (!loop && hc_op_onnx_version(HC_OPK_SCAN, im->opset) == 8) {
        /* Scan-8: batch-major inputs after an optional sequence_lens, which must be a
         * constant (its values become the attribute; loop.c checks them) */
        if (nin < 1)
            return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (Scan-8): no inputs",
                                path, node);
        if (in[0]) {
            hc_tensor *sl = in[0];
            if (!sl->data || sl->ndim != 1 || (sl->dtype != HC_I32 && sl->dtype != HC_I64))
                return hc_error_set(im->err, HC_ERR_UNSUPPORTED, "%s: node '%s' (Scan-8): "
                                    "sequence_lens '%s' must be a constant 1-D integer tensor",
                                    path, node, np->input[0]);
            int64_t cnt = sl->shape[0];
            int64_t *v = HC_NEW_ARRAY(a, int64_t, cnt + 1);
            for (int64_t k = 0; k < cnt; k++)
                v[k] = (int64_t)hc_tensor_const_at(sl, k);
            attrs[na++] = (hc_attr){.name = "sequence_lens", .kind = HC_ATTR_INTS, .n = (int)cnt,
                                    .ints = v};
        }
        attrs[na++] = (hc_attr){.name = "batch_major", .kind = HC_ATTR_INT, .i = 1};
        for (int j = 1; j < nin; j++) in[j - 1] = in[j];
        nin--;
    }
    for (int j = 0; j < nin; j++)
        if (!in[j])
            return hc_error_set(im->err, HC_ERR_UNSUPPORTED, "%s: node '%s' (%s): input %d is "
                                "omitted", path, node, op, j);
    /* the outer values the body reads become inputs of the node */
    name_map def = {0}, seen = {0};
    name_list fr = {0};
    defined_names(body, &def);
    used_names(body, &def, &seen, &fr);
    const char **cap = HC_NEW_ARRAY(a, const char *, fr.len + 1);
    hc_status s = HC_OK;
    if (fr.len > 250)
        s = hc_error_set(im->err, HC_ERR_UNSUPPORTED, "%s: node '%s' (%s): the body reads %zu outer "
                         "values (at most 250)", path, node, op, fr.len);
    for (size_t i = 0; !s && i < fr.len; i++) {
        hc_tensor *t = lookup(im, fr.data[i]);
        if (!t)
            s = hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' (%s): the body reads '%s', "
                             "which is not defined", path, node, op, fr.data[i]);
        cap[i] = hc_arena_strdup(a, fr.data[i]);
        in[nin + (int)i] = t;
    }
    size_t ncap = fr.len;
    hc_vec_free(&fr);
    name_map_free(&def);
    name_map_free(&seen);
    if (s) return s;
    size_t size = onnx__graph_proto__get_packed_size(body);
    hc_tensor *bt = HC_NEW(a, hc_tensor);
    memset(bt, 0, sizeof *bt);
    bt->name = "body", bt->dtype = HC_U8, bt->ndim = 1, bt->shape[0] = (int64_t)size;
    bt->shape_known = true;
    bt->data = hc_arena_alloc(a, size ? size : 1);
    onnx__graph_proto__pack(body, bt->data);
    attrs[na++] = (hc_attr){.name = "body", .kind = HC_ATTR_TENSOR, .t = bt};
    attrs[na++] = (hc_attr){.name = "captures", .kind = HC_ATTR_STRINGS, .n = (int)ncap, .strings = cap};
    attrs[na++] = (hc_attr){.name = "num_formal", .kind = HC_ATTR_INT, .i = nin};
    /* the body's nodes of other domains need the versions the model imports */
    attrs[na++] = (hc_attr){.name = "domain_opsets", .kind = HC_ATTR_INTS, .n = HC_ONNX_NUM_DOMAINS,
                            .ints = hc_arena_memdup(a, im->domain_opset, sizeof im->domain_opset)};
    hc_error e = {0};
    hc_op_kind k = loop ? HC_OPK_LOOP : HC_OPK_SCAN;
    hc_node *n = hc_graph_add_node(im->g, k, node, nin + (int)ncap, in, (int)np->n_output, outs,
                                   na, attrs, &e);
    if (!n) return hc_error_set(im->err, e.status ? e.status : HC_ERR_INVALID, "%s: %s", path, e.msg);
    n->opset = im->opset;
    im->g->inline_body = hc_onnx_inline_body;
    return HC_OK;
}

hc_status hc_onnx_inline_body(hc_graph *g, const hc_node *n, const char *prefix, int nformal,
                              hc_tensor *const *formal, int nout, hc_tensor **outs, hc_error *err) {
    const hc_attr *ba = hc_node_attr(n, "body");
    int ncap = 0;
    const hc_attr *ca = hc_node_attr(n, "captures");
    int64_t nf = hc_node_attr_int(n, "num_formal", 0);
    if (!ba || ba->kind != HC_ATTR_TENSOR || !ca)
        return hc_node_fail(n, HC_ERR_INVALID, err, "has no body to inline");
    ncap = ca->n;
    const char *path = hc_arena_printf(&g->arena, "body of '%s'", n->name);
    Onnx__GraphProto *gp = onnx__graph_proto__unpack(NULL, (size_t)ba->t->shape[0], ba->t->data);
    if (!gp) return hc_node_fail(n, HC_ERR_INVALID, err, "its body does not decode");
    hc_status s = HC_OK;
    if ((int)gp->n_input != nformal || (int)gp->n_output != nout)
        s = hc_node_fail(n, HC_ERR_INVALID, err, "the body has %zu inputs and %zu outputs, %d and %d "
                         "expected", gp->n_input, gp->n_output, nformal, nout);
    name_map values = {0};
    importer sub = {.src = {path, NULL}, .gp = gp, .g = g, .opset = n->opset, .values = &values,
                    .err = err, .depth = 1, .prefix = prefix};
    int ndom = 0;
    const int64_t *dom = hc_node_attr_ints(n, "domain_opsets", &ndom);
    if (dom && ndom == HC_ONNX_NUM_DOMAINS) memcpy(sub.domain_opset, dom, sizeof sub.domain_opset);
    for (int i = 0; !s && i < nformal; i++) {
        const char *nm = gp->input[i]->name;
        if (!nm || !*nm || !name_map_put(&values, hc_arena_strdup(&g->arena, nm), formal[i]))
            s = hc_node_fail(n, HC_ERR_INVALID, err, "body input %d has no name or is repeated", i);
    }
    for (int i = 0; !s && i < ncap; i++)
        if (!name_map_has(&values, ca->strings[i]))
            name_map_put(&values, ca->strings[i], n->inputs[nf + i]);
    if (!s) {
        make_node_names(&sub);
        s = check_operators(&sub);
    }
    if (!s) s = check_versions(&sub);
    if (!s) s = import_initializers(&sub);
    for (size_t i = 0; !s && i < gp->n_node; i++) s = define_outputs(&sub, i);
    for (size_t i = 0; !s && i < gp->n_node; i++) s = add_node(&sub, i);
    for (int i = 0; !s && i < nout; i++) {
        const char *nm = gp->output[i]->name;
        outs[i] = nm && *nm ? lookup(&sub, nm) : NULL;
        if (!outs[i]) s = hc_node_fail(n, HC_ERR_INVALID, err, "body output %d ('%s') is not defined",
                                       i, nm ? nm : "");
    }
    name_map_free(&values);
    onnx__graph_proto__free_unpacked(gp, NULL);
    return s;
}

static hc_status import_outputs(importer *im) {
    const Onnx__GraphProto *gp = im->gp;
    if (gp->n_output == 0)
        return hc_error_set(im->err, HC_ERR_INVALID, "%s: the graph has no outputs",
                            im->src.path);
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = gp->output[i]->name;
        if (!name || !*name)
            return hc_error_set(im->err, HC_ERR_INVALID, "%s: graph output %zu has no name",
                                im->src.path, i);
        hc_tensor *t = name_map_get(im->values, name);
        if (!t)
            return hc_error_set(im->err, HC_ERR_INVALID, "%s: graph output '%s' is not defined "
                                "by any node, initializer or graph input", im->src.path, name);
        hc_graph_add_output(im->g, t);
    }
    return HC_OK;
}

/* Counts in the file become ints in the graph: refuse what would not fit. */
static hc_status check_counts(importer *im) {
    const Onnx__GraphProto *gp = im->gp;
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        bool big = np->n_input > HC_MANY || np->n_output > HC_MANY || np->n_attribute > 4096;
        for (size_t j = 0; !big && j < np->n_attribute; j++) {
            const Onnx__AttributeProto *ap = np->attribute[j];
            size_t lim = (size_t)1 << 30;
            big = ap->n_ints > lim || ap->n_floats > lim || ap->n_strings > lim;
        }
        if (big)
            return hc_error_set(im->err, HC_ERR_INVALID, "%s: node '%s' has too many inputs, "
                                "outputs or attribute values", im->src.path, im->node_names[i]);
    }
    return HC_OK;
}

/* Every override must name a symbol or an input of the model: a typo is an error, not a
 * silently ignored option. */
/* The shape of a tensor-typed value, NULL for any other type (the type is a oneof: its
 * tensor_type member is valid only when value_case says so). */
static const Onnx__TensorShapeProto *value_shape(const Onnx__TypeProto *tp) {
    return tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type
               ? tp->tensor_type->shape
               : NULL;
}

/* Whether some graph input has a dimension whose dim_param is `name`. */
static bool has_dim_param(const Onnx__GraphProto *gp, const char *name) {
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__TensorShapeProto *sp = value_shape(gp->input[i]->type);
        for (size_t d = 0; sp && d < sp->n_dim; d++)
            if (sp->dim[d]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                sp->dim[d]->dim_param && !strcmp(sp->dim[d]->dim_param, name))
                return true;
    }
    return false;
}

static hc_status check_overrides_used(importer *im) {
    const hc_onnx_options *o = im->over;
    if (!o) return HC_OK;
    const Onnx__GraphProto *gp = im->gp;
    hc_sb have;
    hc_sb_init(&have);
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        const Onnx__TensorShapeProto *sp = value_shape(vi->type);
        for (size_t d = 0; sp && d < sp->n_dim; d++)
            if (sp->dim[d]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                sp->dim[d]->dim_param && *sp->dim[d]->dim_param &&
                !strstr(have.buf ? have.buf : "", sp->dim[d]->dim_param))
                hc_sb_printf(&have, "%s%s", have.len ? ", " : "", sp->dim[d]->dim_param);
    }
    hc_status s = HC_OK;
    /* --dim overrides, then --dim-hint hints: each must name a symbol of the inputs */
    for (int k = 0; k < 2 && !s; k++) {
        int count = k ? o->nhints : o->ndims;
        for (int j = 0; j < count && !s; j++) {
            const char *nm = k ? o->hints[j].name : o->dims[j].name;
            if (!has_dim_param(gp, nm))
                s = hc_error_set(im->err, HC_ERR_INVALID, "%s: dim %s %s=...: the model's inputs "
                                 "have no symbolic dimension '%s' (they have: %s)", im->src.path,
                                 k ? "hint" : "override", nm, nm, have.len ? have.buf : "none");
        }
    }
    for (int j = 0; j < o->nshapes && !s; j++) {
        bool used = false;
        for (size_t i = 0; i < gp->n_input && !used; i++) {
            const hc_tensor *init = name_map_get(im->values, gp->input[i]->name);
            used = gp->input[i]->name && !strcmp(gp->input[i]->name, o->shapes[j].input) &&
                   !(init && init->data);
        }
        if (!used) {
            hc_sb ins;
            hc_sb_init(&ins);
            for (size_t i = 0; i < gp->n_input; i++)
                if (!name_map_get(im->values, gp->input[i]->name) ||
                    !name_map_get(im->values, gp->input[i]->name)->data)
                    hc_sb_printf(&ins, "%s%s", ins.len ? ", " : "", gp->input[i]->name);
            s = hc_error_set(im->err, HC_ERR_INVALID, "%s: shape override %s=...: the model has no "
                             "input '%s' (its inputs: %s)", im->src.path, o->shapes[j].input,
                             o->shapes[j].input, ins.len ? ins.buf : "none");
            hc_sb_free(&ins);
        }
    }
    hc_sb_free(&have);
    return s;
}

static hc_status import_graph(importer *im, const Onnx__ModelProto *m) {
    const Onnx__GraphProto *gp = im->gp;
    make_node_names(im);
    /* Operators first: a model of another domain's ops is "unsupported operators", not
     * "no default opset". */
    hc_status s = check_operators(im);
    if (!s) s = find_opsets(im, m);
    if (!s) im->g->opset = im->opset;
    if (!s) s = check_versions(im);
    if (!s) s = check_counts(im);
    if (!s) s = import_initializers(im);
    if (!s) s = check_overrides_used(im); /* a typo first: before "symbolic dimension" */
    for (size_t i = 0; !s && i < gp->n_input; i++) s = import_input(im, i, gp->input[i]);
    for (size_t i = 0; !s && i < gp->n_node; i++) s = define_outputs(im, i);
    for (size_t i = 0; !s && i < gp->n_node; i++) s = add_node(im, i);
    if (!s) s = import_outputs(im);
    if (s) return s;
    hc_error e = {0};
    if (im->g->nodes.len && hc_graph_toposort(im->g, &e))
        return hc_error_set(im->err, e.status, "%s: %s", im->src.path, e.msg);
    return HC_OK;
}

hc_status hc_onnx_load(const char *path, hc_graph **out, hc_error *err) {
    return hc_onnx_load_with(path, NULL, out, err);
}

hc_status hc_onnx_load_with(const char *path, const hc_onnx_options *o, hc_graph **out,
                            hc_error *err) {
    hc_error local;
    if (!err) err = &local;
    *out = NULL;
    char *bytes = NULL;
    size_t size = 0;
    hc_status s = hc_read_file(path, &bytes, &size, err);
    if (s) return s;
    s = hc_onnx_load_memory_with(bytes, size, path, o, out, err);
    free(bytes);
    return s;
}

hc_status hc_onnx_load_memory(const void *bytes, size_t size, const char *path, hc_graph **out,
                              hc_error *err) {
    return hc_onnx_load_memory_with(bytes, size, path, NULL, out, err);
}

hc_status hc_onnx_load_memory_with(const void *bytes, size_t size, const char *path,
                                   const hc_onnx_options *o, hc_graph **out, hc_error *err) {
    hc_error local;
    if (!err) err = &local;
    *out = NULL;
    hc_status s = HC_OK;
    if (!hc_onnx_nesting_ok(&onnx__model_proto__descriptor, (const uint8_t *)bytes, size, 0))
        return hc_error_set(err, HC_ERR_INVALID, "%s: not a valid ONNX model (messages nested "
                            "too deeply)", path);
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, size, (const uint8_t *)bytes);
    if (!m)
        return hc_error_set(err, HC_ERR_INVALID, "%s: not a valid ONNX model (protobuf "
                            "decoding failed: truncated or malformed file)", path);
    name_map values = {0};
    importer im = {.src = {path, NULL}, .gp = m->graph, .values = &values, .err = err,
                   .over = o && (o->ndims || o->nshapes || o->symbolic) ? o : NULL};
    if (!m->graph)
        s = hc_error_set(err, HC_ERR_INVALID, "%s: not an ONNX model (no graph)", path);
    if (!s) {
        im.g = hc_graph_new(m->graph->name && *m->graph->name ? m->graph->name : "model", 0);
        s = import_graph(&im, m);
    }
    free(im.src.dir);
    name_map_free(&values);
    onnx__model_proto__free_unpacked(m, NULL);
    if (s) {
        if (im.g) hc_graph_free(im.g);
        return s;
    }
    *out = im.g;
    return HC_OK;
}

/* ---- override arguments ------------------------------------------------------------ */
static bool parse_i64(const char *s, const char *end, int64_t *v) {
    if (s == end || end - s > 18) return false;
    int64_t x = 0;
    for (const char *p = s; p < end; p++) {
        if (*p < '0' || *p > '9') return false;
        x = x * 10 + (*p - '0');
    }
    *v = x;
    return true;
}

static const char *split_name(const char *arg, char *buf, size_t cap) {
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || (size_t)(eq - arg) >= cap) return NULL;
    memcpy(buf, arg, (size_t)(eq - arg));
    buf[eq - arg] = 0;
    return eq + 1;
}

bool hc_onnx_parse_dim(const char *arg, hc_onnx_dim *d, char *name_buf, size_t cap, hc_error *err) {
    const char *v = split_name(arg, name_buf, cap);
    int64_t x = 0;
    if (!v || !parse_i64(v, v + strlen(v), &x) || x < 1) {
        hc_error_set(err, HC_ERR_INVALID, "--dim expects NAME=N with N a positive integer, got "
                     "'%s'", arg);
        return false;
    }
    *d = (hc_onnx_dim){name_buf, x};
    return true;
}

bool hc_onnx_parse_shape(const char *arg, hc_onnx_shape *s, char *name_buf, size_t cap,
                         hc_error *err) {
    const char *v = split_name(arg, name_buf, cap);
    memset(s, 0, sizeof *s);
    s->input = name_buf;
    bool ok = v != NULL;
    while (ok && *v) {
        const char *e = strchr(v, ',');
        if (!e) e = v + strlen(v);
        ok = s->ndim < HC_MAX_DIMS && parse_i64(v, e, &s->dims[s->ndim]);
        s->ndim++;
        v = *e ? e + 1 : e;
        if (ok && e[0] == ',' && !e[1]) ok = false; /* a trailing comma */
    }
    if (!ok || !s->ndim) {
        hc_error_set(err, HC_ERR_INVALID, "--shape expects INPUT=D0,D1,... (at most %d "
                     "non-negative sizes), got '%s'", HC_MAX_DIMS, arg);
        return false;
    }
    return true;
}
