/* node_task.c — the Task of a graph node, symbolic where the node's tensors are
 * (docs/dynamic.md, "Kernels with symbolic extents").
 *
 * An operator's Task builder sees the node's tensors; for a symbolic tensor its input
 * tnodes carry the dimension expressions, and the task constructors (task.c) carry them
 * through. A builder that does arithmetic on a symbolic dimension's hint value instead
 * would build a kernel for the hint alone. So no symbolic Task is trusted: it is
 * specialized at a second binding of the symbols and compared with the static Task the
 * same builder makes when the tensors have that binding's shapes. They must be the same
 * program up to the names of axes; else the node is refused, with its name and why. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse/fuse.h"

static bool node_symbolic(const hc_node *n) {
    for (int i = 0; i < n->ninputs; i++)
        if (n->inputs[i] && n->inputs[i]->sym) return true;
    for (int i = 0; i < n->noutputs; i++)
        if (n->outputs[i] && n->outputs[i]->sym) return true;
    return false;
}

static hc_graph *node_graph(const hc_node *n) {
    for (int i = 0; i < n->noutputs; i++)
        if (n->outputs[i] && n->outputs[i]->graph) return n->outputs[i]->graph;
    for (int i = 0; i < n->ninputs; i++)
        if (n->inputs[i] && n->inputs[i]->graph) return n->inputs[i]->graph;
    return NULL;
}

/* The graph's tensors are authoritative for the outputs' dims: a builder that made an
 * output from the node's (hint) shape gets the expressions here; its value is then
 * checked like any other. */
static void output_syms(const hc_node *n, hc_task *t) {
    int k = 0;
    for (int i = 0; i < n->noutputs && k < t->noutputs; i++) {
        const hc_tensor *x = n->outputs[i];
        if (!x) continue;
        hc_tnode *o = t->outputs[k++];
        if (!x->sym || o->ndim != x->ndim) continue;
        for (int d = 0; d < o->ndim; d++)
            if (x->sym[d] && !o->sym[d] && o->shape[d] == x->shape[d]) o->sym[d] = x->sym[d];
    }
}

/* A second binding that keeps the graph's constraints: twice the hints (their divisors
 * kept), else the hints + 1, else + 3. false when none does, with the constraint the
 * first one broke in why. */
static bool second_binding(const hc_graph *g, int64_t *v, char *why, size_t cap) {
    int ns = (int)g->sym_names.len;
    for (int attempt = 0; attempt < 3; attempt++) {
        for (int k = 0; k < ns; k++) {
            int64_t h = g->sym_hints.data[k];
            v[k] = attempt == 0 ? 2 * h : attempt == 1 ? h + 1 : h + 3;
        }
        hc_sym_binding b = {ns, g->sym_names.data, v};
        hc_error e = {0};
        if (hc_graph_check_binding(g, &b, &e) == HC_OK) return true;
        if (attempt == 0) snprintf(why, cap, "%.400s", e.msg);
    }
    return false;
}

/* Builders read shape-like inputs (Slice's ends, Reshape's shape) as constants: where a
 * builder needs one that is symbolic (symval), it gets its values under b as data for the
 * build, taken away by detach_values. Returns how many were attached (their tensors in
 * ts). Only then: a builder given data folds it (a Gather of a Shape's value would become
 * the hint's number). */
static int attach_values(hc_arena *a, const hc_node *n, const hc_sym_binding *b, hc_tensor **ts) {
    int k = 0;
    for (int i = 0; i < n->ninputs; i++) {
        hc_tensor *t = n->inputs[i];
        if (!t || t->data || !t->symval || !hc_dtype_is_int(t->dtype)) continue;
        int64_t cnt = hc_tensor_numel(t);
        void *d = hc_arena_alloc(a, hc_tensor_nbytes(t) + 8);
        bool ok = true;
        for (int64_t e = 0; e < cnt && ok; e++) {
            int64_t v;
            ok = t->symval[e] && hc_sym_eval(t->symval[e], b, &v);
            if (ok) hc_elem_set(d, t->dtype, e, (double)v);
        }
        if (!ok) continue;
        t->data = d;
        ts[k++] = t;
    }
    return k;
}

static void detach_values(hc_tensor **ts, int k) {
    for (int i = 0; i < k; i++) ts[i]->data = NULL;
}

typedef struct saved {
    hc_tensor *t;
    int64_t shape[HC_MAX_DIMS];
} saved;

/* Set every symbolic tensor of n to its shape under b (restored by restore()). */
static int rebind(const hc_node *n, const hc_sym_binding *b, saved *sv, bool *ok) {
    int k = 0;
    *ok = true;
    for (int pass = 0; pass < 2; pass++) {
        int cnt = pass ? n->noutputs : n->ninputs;
        for (int i = 0; i < cnt; i++) {
            hc_tensor *t = pass ? n->outputs[i] : n->inputs[i];
            if (!t || !t->sym) continue;
            bool seen = false;
            for (int j = 0; j < k; j++) seen |= sv[j].t == t;
            if (seen) continue;
            sv[k].t = t;
            memcpy(sv[k].shape, t->shape, sizeof t->shape);
            k++;
            for (int d = 0; d < t->ndim; d++)
                if (t->sym[d] && !hc_sym_eval(t->sym[d], b, &t->shape[d])) *ok = false;
        }
    }
    return k;
}

static void restore(saved *sv, int k) {
    for (int j = 0; j < k; j++) memcpy(sv[j].t->shape, sv[j].shape, sizeof sv[j].shape);
}

static hc_status check_symbolic(const hc_node *n, const hc_op_def *def, const hc_task *t,
                                bool values, hc_error *err) {
    hc_graph *g = node_graph(n);
    if (!g || g->sym_names.len > 64) return HC_OK; /* not made by a graph: nothing to check against */
    int64_t v2[64];
    char why2[512] = "";
    if (!second_binding(g, v2, why2, sizeof why2))
        return hc_error_set(err, HC_ERR_UNSUPPORTED,
                            "node '%s' (%s): the model's constraints pin its symbols to the "
                            "hint values (%s), so its kernel cannot be symbolic; fix them "
                            "with --dim or --shape", n->name, hc_op_onnx_name(n->op), why2);
    hc_sym_binding b2 = {(int)g->sym_names.len, g->sym_names.data, v2};
    hc_arena tmp;
    hc_arena_init(&tmp);
    saved sv[2 * HC_MAX_DIMS + 64];
    bool ok = true;
    hc_status st = HC_OK;
    if (n->ninputs + n->noutputs > (int)HC_ARRAY_LEN(sv)) ok = false;
    int k = ok ? rebind(n, &b2, sv, &ok) : 0;
    hc_error e = {0};
    hc_task *ts = NULL;
    if (ok) {
        hc_tensor *vals[HC_MAX_DIMS * 8];
        bool was = hc_node_tnodes_static(true);
        int nv = 0;
        if (values && n->ninputs <= (int)HC_ARRAY_LEN(vals)) nv = attach_values(&tmp, n, &b2, vals);
        ts = def->task(&tmp, n, &e);
        hc_node_tnodes_static(was);
        detach_values(vals, nv);
    }
    restore(sv, k);
    hc_task *sp = ts ? hc_task_specialize(&tmp, t, &b2, &e) : NULL;
    const char *why = NULL;
    if (!sp || !hc_task_same(sp, ts, &why)) {
        const char *dbg = getenv("HIDETC_SYM_DEBUG"); /* both tasks on stderr */
        if (dbg && !strcmp(dbg, "1") && sp && ts) {
            hc_sb p;
            hc_sb_init(&p);
            hc_sb_puts(&p, "symbolic task, specialized:\n");
            hc_print_task(&p, sp);
            hc_sb_puts(&p, "static task:\n");
            hc_print_task(&p, ts);
            fprintf(stderr, "%s", hc_sb_str(&p));
            hc_sb_free(&p);
        }
        hc_sb sb;
        hc_sb_init(&sb);
        for (int i = 0; i < b2.n; i++)
            hc_sb_printf(&sb, "%s%s=%lld", i ? ", " : "", b2.names[i], (long long)b2.values[i]);
        st = hc_error_set(err, HC_ERR_UNSUPPORTED,
                          "node '%s' (%s): its kernel is not symbolic in the model's "
                          "dimensions yet (%s at %s); fix them with --dim or --shape",
                          n->name, hc_op_onnx_name(n->op)[0] ? hc_op_onnx_name(n->op)
                                                             : hc_op_name(n->op),
                          why ? why : e.msg[0] ? e.msg : "its task differs",
                          sb.buf ? sb.buf : "");
        hc_sb_free(&sb);
    }
    hc_arena_free(&tmp);
    return st;
}

hc_task *hc_fuse_node_task(hc_arena *a, const hc_node *n, hc_error *err) {
    const hc_op_def *def = hc_op_get(n->op);
    if (!def || !def->task) {
        hc_error_set(err, HC_ERR_UNSUPPORTED, "node '%s': operator %s is not implemented",
                     n->name, hc_op_name(n->op));
        return NULL;
    }
    if (!node_symbolic(n)) return def->task(a, n, err);
    hc_graph *g = node_graph(n);
    hc_error e0 = {0};
    hc_task *t = def->task(a, n, &e0);
    bool values = false;
    if (!t && g) { /* a shape-like input that must be a constant: its values at the hints */
        hc_tensor *vals[HC_MAX_DIMS * 8];
        int nv = 0;
        hc_sym_binding hb = hc_graph_hint_binding(g);
        if (n->ninputs <= (int)HC_ARRAY_LEN(vals)) nv = attach_values(a, n, &hb, vals);
        if ((values = nv > 0)) t = def->task(a, n, &e0);
        detach_values(vals, nv);
    }
    if (!t) {
        if (err) *err = e0;
        return NULL;
    }
    output_syms(n, t);
    hc_error e = {0};
    if (check_symbolic(n, def, t, values, &e) != HC_OK) {
        if (err) *err = e;
        return NULL;
    }
    return t;
}
