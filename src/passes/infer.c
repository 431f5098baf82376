/* infer.c — shape inference with constant propagation, and constant folding.
 *
 * Both walk the graph in topological order and evaluate, with the reference
 * interpreter, every node whose value is known at compile time; its outputs become
 * constants and the node goes away. Inference folds only small values (shape
 * computations), so that a later node's infer can read them; folding takes larger ones. */
#include <string.h>

#include "graph/ops/quant.h"
#include "graph/ops/rnn.h"
#include "passes/pass_util.h"

/* Inference folds outputs up to this many elements: enough for any shape subgraph,
 * small enough that the interpreter stays cheap. */
#define INFER_FOLD_LIMIT (1 << 20)
/* Folding proper: weight transforms (a transposed or scaled weight) but not the whole
 * model when everything happens to be constant. */
#define FOLD_LIMIT (1 << 24)

static bool inputs_const(const hc_node *n) {
    for (int i = 0; i < n->ninputs; i++)
        if (n->inputs[i] && !n->inputs[i]->data) return false;
    return true;
}

static int64_t outputs_numel(const hc_node *n) {
    int64_t s = 0;
    for (int i = 0; i < n->noutputs; i++)
        if (n->outputs[i]) s += hc_tensor_numel(n->outputs[i]);
    return s;
}

static bool all_outputs_data(const hc_node *n) {
    int present = 0;
    for (int i = 0; i < n->noutputs; i++) {
        if (!n->outputs[i]) continue;
        if (!n->outputs[i]->data) return false;
        present++;
    }
    return present > 0;
}

/* Shape and Size depend on their input's shape only. */
static bool reads_shape_only(const hc_node *n) {
    return n->op == HC_OPK_SHAPE || n->op == HC_OPK_SIZE;
}

static bool foldable(const hc_node *n, int64_t limit) {
    for (int i = 0; i < n->noutputs; i++)
        if (n->outputs[i] && !n->outputs[i]->shape_known) return false;
    if (reads_shape_only(n)) return !n->inputs[0]->sym; /* symbolic: its symval */
    /* ops without a Task of their own (lowered by a pass: RNN, quantized, losses,
     * Attention) fold once lowered */
    if (!inputs_const(n) || hc_op_is_recurrent(n->op) || hc_op_is_quantized(n->op) ||
        n->op == HC_OPK_NLL_LOSS || n->op == HC_OPK_SOFTMAX_CROSS_ENTROPY_LOSS ||
        n->op == HC_OPK_ATTENTION ||
        (n->op == HC_OPK_BATCH_NORMALIZATION && hc_node_attr_int(n, "training_mode", 0)))
        return false;
    /* sources (ConstantOfShape, Range, ...) fold even when inference would not, but not
     * beyond folding's own limit: a hostile ConstantOfShape of 130M elements (found by the
     * onnx fuzzer) would be a gigabyte at compile time; unfolded, it is a kernel */
    int64_t size = outputs_numel(n);
    return (hc_op_class_of(n->op) == HC_OPC_SOURCE && size <= FOLD_LIMIT) || size <= limit;
}

/* x transposed by perm into y (ONNX Transpose: y dim d is x dim perm[d]), any dtype. */
static void permute(const hc_tensor *x, const int *perm, const hc_tensor *y, void *out) {
    size_t es = (size_t)hc_dtype_size(x->dtype);
    int64_t xstride[HC_MAX_DIMS], step[HC_MAX_DIMS], idx[HC_MAX_DIMS] = {0};
    int nd = x->ndim;
    for (int d = nd - 1, s = 1; d >= 0; s *= (int)x->shape[d], d--) xstride[d] = s;
    for (int d = 0; d < nd; d++) step[d] = xstride[perm[d]];
    int64_t n = hc_tensor_numel(y), off = 0;
    for (int64_t i = 0; i < n; i++) {
        memcpy((char *)out + (size_t)i * es, (const char *)x->data + (size_t)off * es, es);
        for (int d = nd - 1; d >= 0; d--) { /* odometer over y's index, x's offset with it */
            off += step[d];
            if (++idx[d] < y->shape[d]) break;
            off -= step[d] * y->shape[d];
            idx[d] = 0;
        }
    }
}

/* Folds that only move data, done directly: the interpreter would take seconds on a
 * model's weights (exporters emit Transpose(W) before MatMul). false: not handled. */
static bool fold_data_movement(hc_graph *g, hc_node *n) {
    hc_tensor *x = n->inputs[0], *y = n->outputs[0];
    if (!x || !x->data || !y || n->noutputs != 1 || x->dtype != y->dtype) return false;
    switch (n->op) {
    case HC_OPK_RESHAPE: case HC_OPK_FLATTEN: case HC_OPK_SQUEEZE: case HC_OPK_UNSQUEEZE:
    case HC_OPK_IDENTITY:
        y->data = x->data; /* same bytes in the same order; constants are immutable */
        break;
    case HC_OPK_TRANSPOSE: {
        int cnt = 0, perm[HC_MAX_DIMS];
        const int64_t *p = hc_node_attr_ints(n, "perm", &cnt);
        if (y->ndim != x->ndim || (p && cnt != x->ndim)) return false;
        for (int d = 0; d < x->ndim; d++) perm[d] = p ? (int)p[d] : x->ndim - 1 - d;
        for (int d = 0; d < x->ndim; d++)
            if (perm[d] < 0 || perm[d] >= x->ndim || y->shape[d] != x->shape[perm[d]])
                return false;
        size_t nb = hc_tensor_nbytes(y);
        void *out = hc_arena_alloc(&g->arena, nb ? nb : 1);
        permute(x, perm, y, out);
        y->data = out;
        break;
    }
    default: return false;
    }
    y->producer = NULL;
    return true;
}

/* Evaluate n and store its outputs as constants in the graph's arena. */
static hc_status fold_node(hc_graph *g, hc_node *n, hc_error *err) {
    if (n->ninputs >= 1 && fold_data_movement(g, n)) return HC_OK;
    void *in[HC_MANY + 1] = {0}, *out[HC_MANY + 1] = {0};
    void *scratch[HC_MANY + 1] = {0};
    int ni = 0, no = 0, ns = 0;
    HC_ASSERT(n->ninputs <= HC_MANY && n->noutputs <= HC_MANY);
    for (int i = 0; i < n->ninputs; i++) {
        hc_tensor *t = n->inputs[i];
        if (!t) continue;
        if (t->data) {
            in[ni++] = t->data;
        } else { /* Shape/Size: the values are not read, any buffer of the right size does */
            size_t nb = hc_tensor_nbytes(t);
            in[ni++] = scratch[ns++] = hc_xcalloc(1, nb ? nb : 1);
        }
    }
    for (int i = 0; i < n->noutputs; i++) {
        hc_tensor *t = n->outputs[i];
        if (!t) continue;
        size_t nb = hc_tensor_nbytes(t);
        out[no++] = hc_arena_alloc(&g->arena, nb ? nb : 1);
    }
    hc_status st = hc_eval_node(n, in, out, err);
    for (int i = 0; i < ns; i++) free(scratch[i]);
    if (st != HC_OK) return st;
    no = 0;
    for (int i = 0; i < n->noutputs; i++) {
        hc_tensor *t = n->outputs[i];
        if (!t) continue;
        t->data = out[no++];
        t->producer = NULL;
    }
    return HC_OK;
}

hc_status hc_pass_fold_if_known(hc_graph *g, hc_node *n, bool *folded, hc_error *err) {
    *folded = false;
    if (!foldable(n, INFER_FOLD_LIMIT)) return HC_OK;
    hc_status st = fold_node(g, n, err);
    *folded = st == HC_OK;
    return st;
}

/* A node of an If branch (the importer names them "If/then/..." or "If/else/..."). */
static bool in_branch(const hc_node *n) {
    return n->op == HC_OPK_IF_SELECT ||
           (n->name && (strstr(n->name, "/then/") || strstr(n->name, "/else/")));
}

/* After inference: the Ifs whose condition became constant keep one branch; the failures
 * of nodes left dead by that were not errors (an untaken branch may not fit the shapes:
 * ONNX runs only the taken one). The first failure still alive is. */
static hc_status settle_branches(hc_graph *g, hc_node *const *failed, int nfailed,
                                 const hc_error *first, hc_error *err) {
    for (size_t k = 0; k < g->nodes.len; k++) {
        hc_node *n = g->nodes.data[k];
        if (n->op == HC_OPK_IF_SELECT && n->inputs[0]->data && n->outputs[0]->shape_known)
            hc_pass_bypass(g, n->outputs[0],
                           n->inputs[hc_tensor_const_at(n->inputs[0], 0) != 0 ? 1 : 2]);
    }
    hc_graph_remove_dead(g);
    for (int i = 0; i < nfailed; i++)
        for (size_t k = 0; k < g->nodes.len; k++)
            if (g->nodes.data[k] == failed[i]) {
                *err = *first;
                return first->status;
            }
    return HC_OK;
}

static hc_status run(hc_graph *g, bool infer, int64_t limit, hc_error *err) {
    hc_status st = hc_graph_toposort(g, err);
    if (st != HC_OK) return st;
    char *folded = hc_xcalloc(g->nodes.len + 1, 1);
    HC_VEC(hc_node *) failed = {0};
    hc_error first = {0};
    for (size_t k = 0; k < g->nodes.len && st == HC_OK; k++) {
        hc_node *n = g->nodes.data[k];
        if (n->op == HC_OPK_LOOP || n->op == HC_OPK_SCAN) {
            if (!infer) continue; /* only inference unrolls them */
            size_t before = g->nodes.len;
            char *uf = NULL;
            st = hc_pass_unroll(g, n, &uf, err);
            if (st != HC_OK) { /* nodes of the iterations made so far stay: flags for them */
                free(uf);
                folded = hc_xrealloc(folded, g->nodes.len + 1);
                memset(folded + before, 0, g->nodes.len - before + 1);
                break;
            }
            /* the unrolled nodes next, so that they are inferred before n's readers */
            size_t added = g->nodes.len - before;
            hc_node **nodes = g->nodes.data;
            hc_node **tmp = hc_xmalloc(sizeof(hc_node *) * (added + 1));
            memcpy(tmp, nodes + before, sizeof(hc_node *) * added);
            memmove(nodes + k + 1 + added, nodes + k + 1, sizeof(hc_node *) * (before - k - 1));
            memcpy(nodes + k + 1, tmp, sizeof(hc_node *) * added);
            free(tmp);
            folded = hc_xrealloc(folded, g->nodes.len + 1);
            memmove(folded + k + 1 + added, folded + k + 1, before - k - 1);
            for (size_t i = 0; i < added; i++) folded[k + 1 + i] = uf && uf[i];
            free(uf);
            folded[k] = 1; /* n itself goes */
            continue;
        }
        if (folded[k]) continue; /* unrolled and folded already */
        if (infer) st = hc_pass_infer_node(n, err);
        if (st != HC_OK && in_branch(n)) { /* maybe an untaken branch: decided below */
            if (!failed.len) first = *err;
            hc_vec_push(&failed, n);
            st = HC_OK;
            continue;
        }
        /* symbolic inference found the outputs constant (a Shape of fixed dimensions) */
        if (st == HC_OK && infer && hc_node_reads_symbols(n) && all_outputs_data(n)) {
            for (int i = 0; i < n->noutputs; i++)
                if (n->outputs[i]) n->outputs[i]->producer = NULL;
            folded[k] = 1;
            continue;
        }
        if (st != HC_OK || !foldable(n, limit)) continue;
        st = fold_node(g, n, err);
        folded[k] = st == HC_OK;
    }
    /* also on failure: a caller may bind a missing value and run inference again */
    hc_pass_remove_nodes(g, folded);
    free(folded);
    if (st == HC_OK && failed.len) st = settle_branches(g, failed.data, (int)failed.len, &first, err);
    hc_vec_free(&failed);
    return st;
}

hc_status hc_pass_infer_shapes(hc_graph *g, hc_error *err) {
    return run(g, true, INFER_FOLD_LIMIT, err);
}

hc_status hc_pass_fold_constants(hc_graph *g, hc_error *err) {
    return run(g, false, FOLD_LIMIT, err);
}
