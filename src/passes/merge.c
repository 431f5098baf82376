/* merge.c — the merge_matmuls pass: MatMuls that read the same activations A with
 * constant weights of the same K become one MatMul over the weights side by side, and
 * Slices of its output take the place of theirs:
 *
 *   Y_i = MatMul(A, W_i) [+ b_i]   ->   Y = MatMul(A, [W_0 .. W_n-1]) [+ [b_0 .. b_n-1]];
 *                                       Y_i = Slice(Y, last axis, N_0 + .. + N_i-1, + N_i)
 *
 * BERT's query, key and value projections (three 768 x 768 matmuls of one LayerNorm
 * output) become one 768 x 2304 matmul, as GPT-2's c_attn already is: A is read once, the
 * matmul's N is 3x longer, and the Slices fuse as prologues into the kernels that read
 * them (the attention reads Q, K and V from the matmul's output in place, split.c). A bias
 * is merged too where every member has one (an Add of a constant of shape [N_i], either
 * operand order, the MatMul's only reader), so that it stays the merged matmul's epilogue.
 * Members: 2-D f32 constant weights [K, N_i] of one K, A f32 of rank 2 or more; a group
 * of 2 to 8. Runs before fuse_attention (which does not look at Q's, K's and V's
 * producers). */
#include <stdlib.h>
#include <string.h>

#include "passes/pass_util.h"

enum { MAX_MEMBERS = 8 };

/* The Add that adds a constant [N] bias to t, t's only reader; NULL otherwise. *bias gets
 * the constant. */
static hc_node *bias_add(const hc_graph *g, const hc_tensor *t, const hc_tensor **bias) {
    hc_node *add = hc_pass_is_graph_output(g, t) ? NULL : hc_graph_sole_reader(g, t);
    if (!add || add->op != HC_OPK_ADD || add->ninputs != 2 || add->noutputs != 1) return NULL;
    const hc_tensor *b = add->inputs[0] == t ? add->inputs[1] : add->inputs[0];
    if (b == t || !b->data || !b->shape_known || b->dtype != HC_F32 || b->ndim != 1 ||
        b->shape[0] != t->shape[t->ndim - 1] || !add->outputs[0] || !add->outputs[0]->shape_known ||
        add->outputs[0]->ndim != t->ndim)
        return NULL;
    *bias = b;
    return add;
}

/* Whether n is a member candidate: MatMul(A, W) with W a 2-D f32 constant [K, N] and A a
 * non-constant f32 of rank >= 2 with a known last dim K. */
static bool candidate(const hc_node *n) {
    if (n->op != HC_OPK_MATMUL || n->ninputs != 2 || n->noutputs != 1 || !n->outputs[0])
        return false;
    const hc_tensor *a = n->inputs[0], *w = n->inputs[1], *y = n->outputs[0];
    return a && w && a->shape_known && w->shape_known && y->shape_known && !a->data &&
           a->dtype == HC_F32 && a->ndim >= 2 && y->ndim == a->ndim && w->data &&
           w->dtype == HC_F32 && w->ndim == 2 && a->shape[a->ndim - 1] == w->shape[0] &&
           !(a->sym && a->sym[a->ndim - 1]) && y->dtype == HC_F32 &&
           y->shape[y->ndim - 1] == w->shape[1];
}

/* Merge the group m[0 .. cnt-1] (candidates of one A and K). */
static hc_status merge(hc_graph *g, hc_node **m, int cnt, hc_error *err) {
    const hc_tensor *bias[MAX_MEMBERS] = {NULL};
    hc_node *add[MAX_MEMBERS] = {NULL};
    int with_bias = 0;
    for (int i = 0; i < cnt; i++)
        with_bias += (add[i] = bias_add(g, m[i]->outputs[0], &bias[i])) != NULL;
    bool biased = with_bias == cnt;
    int64_t k = m[0]->inputs[1]->shape[0], total = 0;
    for (int i = 0; i < cnt; i++) total += m[i]->inputs[1]->shape[1];
    hc_rewrite c = {.g = g, .n = m[0], .err = err};
    int64_t wshape[2] = {k, total};
    hc_tensor *w = hc_graph_constant(g, hc_rw_fresh(&c, "wcat"), HC_F32, 2, wshape, NULL);
    float *wd = w->data;
    for (int64_t r = 0, col = 0; r < k; r++)
        for (int i = 0; i < cnt; i++) {
            const hc_tensor *wi = m[i]->inputs[1];
            int64_t ni = wi->shape[1];
            memcpy(wd + col, (const float *)wi->data + r * ni, (size_t)ni * sizeof(float));
            col += ni;
        }
    hc_tensor *in[2] = {m[0]->inputs[0], w};
    hc_tensor *y = hc_rw_emit(&c, HC_OPK_MATMUL, 2, in, 0, NULL);
    if (y && biased) {
        hc_tensor *b = hc_graph_constant(g, hc_rw_fresh(&c, "bcat"), HC_F32, 1, &total, NULL);
        float *bd = b->data;
        for (int64_t i = 0, col = 0; i < cnt; col += bias[i]->shape[0], i++)
            memcpy(bd + col, bias[i]->data, (size_t)bias[i]->shape[0] * sizeof(float));
        in[0] = y, in[1] = b;
        y = hc_rw_emit(&c, HC_OPK_ADD, 2, in, 0, NULL);
    }
    if (!y) return err->status ? err->status : HC_ERR_INVALID;
    int64_t axis = y->ndim - 1, start = 0;
    for (int i = 0; i < cnt; i++) {
        int64_t end = start + m[i]->inputs[1]->shape[1];
        hc_rewrite r = {.g = g, .n = biased ? add[i] : m[i], .err = err};
        hc_status st = hc_rw_replace(&r, 0, hc_rw_slice(&r, y, axis, start, end));
        if (st != HC_OK) return st;
        start = end;
    }
    return HC_OK;
}

hc_status hc_pass_merge_matmuls(hc_graph *g, hc_error *err) {
    size_t n0 = g->nodes.len;
    char *done = hc_xcalloc(n0 + 1, 1);
    bool any = false;
    hc_status st = HC_OK;
    for (size_t i = 0; i < n0 && st == HC_OK; i++) {
        hc_node *first = g->nodes.data[i];
        if (done[i] || !candidate(first)) continue;
        hc_node *m[MAX_MEMBERS] = {first};
        int cnt = 1;
        for (size_t j = i + 1; j < n0 && cnt < MAX_MEMBERS; j++) {
            hc_node *n = g->nodes.data[j];
            if (!done[j] && candidate(n) && n->inputs[0] == first->inputs[0] &&
                n->inputs[1]->shape[0] == first->inputs[1]->shape[0])
                m[cnt++] = n, done[j] = 1;
        }
        if (cnt < 2) continue;
        st = merge(g, m, cnt, err);
        any = true;
    }
    free(done);
    if (st != HC_OK || !any) return st;
    st = hc_graph_toposort(g, err);
    if (st == HC_OK) hc_graph_remove_dead(g);
    return st;
}
