/* compose.c — one Task for a whole group: the members' computations chained, each
 * member's input accesses redirected to the tensor node that computes that input inside
 * the group (or to a task input for a group input). The rule-based auto-scheduler then
 * inlines the injective intermediates into their consumers. */
#include "fuse/fuse.h"

typedef struct tmap {
    HC_VEC(const hc_tnode *) from;
    HC_VEC(hc_tnode *) to;
} tmap;

static hc_tnode *tmap_get(const tmap *m, const hc_tnode *t) {
    for (size_t i = 0; i < m->from.len; i++)
        if (m->from.data[i] == t) return m->to.data[i];
    return NULL;
}

static hc_expr *redirect(hc_mutator *mu, hc_expr *e) {
    if (e->kind != HC_E_TENSOR_ACCESS) return e;
    hc_tnode *to = tmap_get(mu->ctx, e->u.access.tensor);
    HC_ASSERT_MSG(to, "compose: access to a tensor node outside the member's task");
    return hc_tensor_access(mu->a, to, e->u.access.n, e->u.access.idx);
}

hc_task *hc_fuse_compose(hc_arena *a, const hc_group *grp, hc_error *err) {
    int nm = hc_group_size(grp);
    const hc_node **mem = HC_NEW_ARRAY(a, const hc_node *, nm);
    int k = 0;
    for (int i = 0; i < grp->nprologue; i++) mem[k++] = grp->prologue[i];
    mem[k++] = grp->anchor;
    for (int i = 0; i < grp->nepilogue; i++) mem[k++] = grp->epilogue[i];
    /* tensor -> tnode computing it in the composed task */
    HC_VEC(const hc_tensor *) tens = {0};
    HC_VEC(hc_tnode *) tnodes = {0};
    hc_tnode **ins = HC_NEW_ARRAY(a, hc_tnode *, grp->ninputs + 1);
    for (int i = 0; i < grp->ninputs; i++) {
        const hc_tensor *t = grp->inputs[i];
        ins[i] = hc_tensor_input(a, t->name, t->dtype, t->ndim, t->shape);
        if (t->sym) hc_tnode_set_sym(ins[i], t->sym);
        hc_vec_push(&tens, t);
        hc_vec_push(&tnodes, ins[i]);
    }
    hc_task *res = NULL;
    /* members in an order where producers come first: prologues are in graph order and
     * precede what they feed except when they feed an epilogue; place by readiness */
    bool *done = HC_NEW_ARRAY(a, bool, nm);
    for (int placed = 0; placed < nm;) {
        int pick = -1;
        for (int j = 0; j < nm && pick < 0; j++) {
            if (done[j]) continue;
            bool ready = true;
            for (int i = 0; i < mem[j]->ninputs && ready; i++) {
                const hc_tensor *t = mem[j]->inputs[i];
                if (!t) continue;
                bool have = false;
                for (size_t q = 0; q < tens.len && !have; q++) have = tens.data[q] == t;
                if (!have) ready = false;
            }
            if (ready) pick = j;
        }
        if (pick < 0) {
            hc_error_set(err, HC_ERR_INVALID, "compose: group of '%s' has an unordered member",
                         grp->anchor->name);
            goto out;
        }
        done[pick] = true, placed++;
        const hc_node *n = mem[pick];
        hc_task *t = hc_fuse_node_task(a, n, err);
        if (!t) goto out;
        tmap m = {0};
        int slot = 0;
        for (int i = 0; i < n->ninputs; i++) {
            const hc_tensor *x = n->inputs[i];
            if (!x) continue;
            hc_tnode *src = NULL;
            for (size_t q = 0; q < tens.len && !src; q++)
                if (tens.data[q] == x) src = tnodes.data[q];
            hc_vec_push(&m.from, t->inputs[slot]);
            hc_vec_push(&m.to, src);
            slot++;
        }
        int nc;
        hc_tnode **cn = hc_task_compute_nodes(a, t, &nc);
        hc_mutator mu = {.a = a, .ctx = &m, .expr = redirect};
        for (int c = 0; c < nc; c++) {
            hc_expr *v = hc_mutate_expr(&mu, cn[c]->value);
            hc_tnode *copy = hc_compute_with_axes(a, cn[c]->name, cn[c]->ndim, cn[c]->shape,
                                                  cn[c]->axes, v);
            copy->dtype = cn[c]->dtype;
            hc_tnode_set_sym(copy, cn[c]->sym);
            hc_vec_push(&m.from, cn[c]);
            hc_vec_push(&m.to, copy);
        }
        int o = 0;
        for (int i = 0; i < n->noutputs; i++) {
            const hc_tensor *y = n->outputs[i];
            if (!y) continue;
            hc_vec_push(&tens, y);
            hc_vec_push(&tnodes, tmap_get(&m, t->outputs[o]));
            o++;
        }
        hc_vec_free(&m.from);
    hc_vec_free(&m.to);
    }
    hc_tnode **outs = HC_NEW_ARRAY(a, hc_tnode *, grp->noutputs + 1);
    for (int i = 0; i < grp->noutputs; i++) {
        for (size_t q = 0; q < tens.len; q++)
            if (tens.data[q] == grp->outputs[i]) outs[i] = tnodes.data[q];
        HC_ASSERT(outs[i] && outs[i]->kind == HC_TN_COMPUTE);
    }
    res = hc_task_new(a, grp->anchor->name, grp->ninputs, ins, grp->noutputs, outs);
out:
    hc_vec_free(&tens);
    hc_vec_free(&tnodes);
    return res;
}
