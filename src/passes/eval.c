/* eval.c — evaluation with the reference interpreter: one node (constant folding) or a
 * whole graph (the oracle that passes, the runtime and model tests are checked against). */
#include <string.h>

#include "passes/pass_util.h"

hc_status hc_eval_node(const hc_node *n, void *const *in, void *const *out, hc_error *err) {
    const hc_op_def *def = hc_op_get(n->op);
    if (!def)
        return hc_error_set(err, HC_ERR_UNSUPPORTED, "node '%s': operator %s is not supported",
                            n->name, hc_op_name(n->op));
    hc_arena a;
    hc_arena_init(&a);
    hc_error e = {0};
    hc_task *t = def->task(&a, n, &e);
    hc_status st;
    if (!t) {
        st = e.status != HC_OK ? e.status : HC_ERR_INVALID;
        if (e.msg[0]) hc_error_set(err, st, "%s", e.msg);
        else hc_error_set(err, st, "node '%s': no task", n->name);
    } else {
        st = hc_interpret_task(t, in, out, err);
    }
    hc_arena_free(&a);
    return st;
}

typedef struct eval_state {
    const hc_graph *g;
    void **buf;      /* per tensor id: its value while live */
    char *owned;     /* buffers malloc'ed here */
    int *last_use;   /* per tensor id: index of the last node reading it */
} eval_state;

static void *value_of(const eval_state *s, const hc_tensor *t) {
    if (t->data) return t->data;
    return t->id >= 0 ? s->buf[t->id] : NULL;
}

static void release_dead(eval_state *s, const hc_node *n, int k) {
    for (int j = 0; j < n->ninputs; j++) {
        const hc_tensor *t = n->inputs[j];
        if (!t || t->id < 0 || s->last_use[t->id] != k || !s->owned[t->id]) continue;
        if (hc_pass_is_graph_output(s->g, t)) continue;
        free(s->buf[t->id]);
        s->buf[t->id] = NULL;
        s->owned[t->id] = 0;
    }
}

static hc_status eval_one(eval_state *s, const hc_node *n, int k, hc_error *err) {
    void *in[HC_MANY + 1] = {0}, *out[HC_MANY + 1] = {0};
    int ni = 0, no = 0;
    HC_ASSERT(n->ninputs <= HC_MANY && n->noutputs <= HC_MANY);
    for (int j = 0; j < n->ninputs; j++) {
        const hc_tensor *t = n->inputs[j];
        if (!t) continue;
        if (!(in[ni++] = value_of(s, t)))
            return hc_error_set(err, HC_ERR_INVALID, "node '%s' reads '%s' before it is computed",
                                n->name, t->name);
    }
    for (int j = 0; j < n->noutputs; j++) {
        hc_tensor *t = n->outputs[j];
        if (!t) continue;
        if (!t->shape_known)
            return hc_error_set(err, HC_ERR_INVALID,
                                "node '%s': output '%s' has no inferred shape", n->name, t->name);
        size_t nb = hc_tensor_nbytes(t);
        free(s->owned[t->id] ? s->buf[t->id] : NULL);
        s->buf[t->id] = hc_xcalloc(1, nb ? nb : 1);
        s->owned[t->id] = 1;
        out[no++] = s->buf[t->id];
    }
    hc_status st = hc_eval_node(n, in, out, err);
    if (st == HC_OK) release_dead(s, n, k);
    return st;
}

static hc_status copy_outputs(const eval_state *s, void *const *outputs, hc_error *err) {
    for (size_t i = 0; i < s->g->outputs.len; i++) {
        const hc_tensor *t = s->g->outputs.data[i];
        const void *v = value_of(s, t);
        if (!v)
            return hc_error_set(err, HC_ERR_INVALID, "graph output '%s' is never computed",
                                t->name);
        memcpy(outputs[i], v, hc_tensor_nbytes(t));
    }
    return HC_OK;
}

hc_status hc_graph_eval_reference(const hc_graph *g, void *const *inputs, void *const *outputs,
                                  hc_error *err) {
    size_t nt = g->tensors.len + 1;
    eval_state s = {.g = g};
    s.buf = hc_xcalloc(nt, sizeof(void *));
    s.owned = hc_xcalloc(nt, 1);
    s.last_use = hc_xmalloc(nt * sizeof(int));
    for (size_t i = 0; i < nt; i++) s.last_use[i] = -1;
    for (size_t k = 0; k < g->nodes.len; k++) {
        const hc_node *n = g->nodes.data[k];
        for (int j = 0; j < n->ninputs; j++)
            if (n->inputs[j] && n->inputs[j]->id >= 0) s.last_use[n->inputs[j]->id] = (int)k;
    }
    for (size_t i = 0; i < g->inputs.len; i++) s.buf[g->inputs.data[i]->id] = inputs[i];
    hc_status st = HC_OK;
    for (size_t k = 0; k < g->nodes.len && st == HC_OK; k++)
        st = eval_one(&s, g->nodes.data[k], (int)k, err);
    if (st == HC_OK) st = copy_outputs(&s, outputs, err);
    for (size_t i = 0; i < nt; i++)
        if (s.owned[i]) free(s.buf[i]);
    free(s.buf);
    free(s.owned);
    free(s.last_use);
    return st;
}
