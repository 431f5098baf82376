/* ops_matmul.c — MatMul nodes on the CPU matmul template (matmul_cpu.c): the template's
 * shape and config for a node, its weight pre-packing, and the rebinding of the
 * template's [batch, m, k] parameters to the node's own tensors. */
#include <string.h>

#include "graph/ops/nn_internal.h"
#include "target/cpu/templates/matmul.h"
#include "target/cpu/templates/registry.h"
#include "target/cpu/templates/select.h"

/* ---- MatMul on the matmul template -------------------------------------------------- */
/* The template's parameters are [batch, m, k] etc.; the task's are dense tensors of the
 * node's shapes holding the same elements in the same order. The rebind pass gives the
 * kernel parameters of the task's types and turns each 3-index access of an old
 * parameter into an access of the new one at the same element (hc_reshape_index: the
 * row and column dims map to themselves, only batch dims unflatten), so fusion sees
 * the node's own indices. */
typedef struct rebind_ctx {
    hc_var *from[3], *to[3];
    bool bad;      /* a parameter used other than by a 3-index access */
    bool bcast[3]; /* one matrix for every batch (A of a conv's weights at batch > 1) */
} rebind_ctx;

static int rebind_find(const rebind_ctx *c, const hc_var *v) {
    for (int i = 0; i < 3; i++)
        if (c->from[i] == v) return i;
    return -1;
}

static hc_expr **rebind_idx(hc_arena *a, const rebind_ctx *c, int p, int n, hc_expr *const *idx) {
    const hc_type *ot = c->from[p]->type, *nt = c->to[p]->type;
    int64_t os[HC_MAX_DIMS], ns[HC_MAX_DIMS];
    for (int i = 0; i < n; i++) hc_expr_is_const_int(ot->shape[i], &os[i]);
    for (int i = 0; i < nt->ndim; i++) hc_expr_is_const_int(nt->shape[i], &ns[i]);
    hc_expr **out = HC_NEW_ARRAY(a, hc_expr *, nt->ndim);
    hc_expr *bidx[3] = {idx[0], n > 1 ? idx[1] : NULL, n > 2 ? idx[2] : NULL};
    if (c->bcast[p]) /* the batch index selects nothing: [batch, m, k] reads [1, m, k] */
        bidx[0] = hc_int(a, 0), os[0] = 1;
    hc_reshape_index(a, n, os, bidx, nt->ndim, ns, out);
    return out;
}

static hc_expr *rebind_expr(hc_mutator *m, hc_expr *e) {
    rebind_ctx *c = m->ctx;
    if (e->kind == HC_E_VAR && rebind_find(c, e->u.var) >= 0) c->bad = true;
    if (e->kind != HC_E_LOAD && e->kind != HC_E_ADDRESS) return e;
    int p = rebind_find(c, e->u.load.buf);
    if (p < 0) return e;
    if (e->u.load.n != 3) {
        c->bad = true;
        return e;
    }
    hc_var *to = c->to[p];
    hc_expr **idx = rebind_idx(m->a, c, p, 3, e->u.load.idx);
    return e->kind == HC_E_LOAD ? hc_load(m->a, to, to->type->ndim, idx)
                                : hc_address(m->a, to, to->type->ndim, idx);
}

static hc_stmt *rebind_stmt(hc_mutator *m, hc_stmt *s) {
    rebind_ctx *c = m->ctx;
    if (s->kind != HC_S_STORE) return s;
    int p = rebind_find(c, s->u.store.buf);
    if (p < 0) return s;
    if (s->u.store.n != 3) {
        c->bad = true;
        return s;
    }
    hc_var *to = c->to[p];
    hc_expr **idx = rebind_idx(m->a, c, p, 3, s->u.store.idx);
    return hc_store(m->a, to, to->type->ndim, idx, s->u.store.value);
}

/* The template shape for this MatMul, or false when the template does not fit. */
static bool mm_template_shape(const hc_node *n, hc_matmul_shape *s) {
    hc_nn_mm_dims d;
    const hc_tensor *A = hc_nn_in(n, 0), *B = hc_nn_in(n, 1);
    if (hc_nn_matmul_dims(n, &d, NULL) || A->dtype != HC_F32 || d.a_vec || d.b_vec) return false;
    int64_t batch = 1, a_batch = 1, b_batch = 1;
    for (int i = 0; i < d.nb; i++) batch *= d.batch[i];
    for (int i = 0; i < A->ndim - 2; i++) a_batch *= A->shape[i];
    for (int i = 0; i < B->ndim - 2; i++) b_batch *= B->shape[i];
    if (a_batch == batch && b_batch == batch) {
        /* equal element counts with numpy broadcasting means no dim is broadcast */
        *s = (hc_matmul_shape){batch, d.m, d.n, d.k};
        return true;
    }
    if (a_batch == batch && b_batch == 1) { /* one B for every row of every batch of A */
        *s = (hc_matmul_shape){1, batch * d.m, d.n, d.k};
        return true;
    }
    if (a_batch == 1 && b_batch == batch) { /* one A for every batch of B (conv weights) */
        *s = (hc_matmul_shape){batch, d.m, d.n, d.k};
        return true;
    }
    return false;
}

static int space_matmul(const hc_node *n, const hc_target *target, int level) {
    hc_matmul_shape s;
    if (!mm_template_shape(n, &s)) return 0;
    return hc_matmul_space(target, &s, level, NULL, 0);
}

/* The config of candidate opts->candidate at opts->level (the default without opts), with
 * the operands pre-packed that opts->prepacked names. false with err set on a bad
 * candidate. */
static bool mm_config(const hc_node *n, const hc_target *target, const hc_matmul_shape *s,
                      const hc_sched_opts *opts, hc_matmul_config *cfg, hc_error *err) {
    *cfg = hc_matmul_default_config(target, s);
    if (!HC_CPU_SELECT_CONFIG(*cfg, hc_matmul_space, target, s, n, opts, err)) return false;
    cfg->c_write_once = opts && opts->write_once;
    cfg->pre_a = opts && (opts->prepacked & 1u);
    cfg->pre_b = opts && (opts->prepacked & 2u);
    /* the template's batch index selects nothing in an A shared by every batch */
    cfg->a_shared = s->batch > 1 && hc_tensor_numel(hc_nn_in(n, 0)) == s->m * s->k;
    return true;
}

static int64_t prepack_matmul(const hc_node *n, const hc_target *target, const hc_sched_opts *opts,
                              int input, const void *src, void *dst) {
    hc_matmul_shape s;
    hc_matmul_config cfg;
    if ((input != 0 && input != 1) || !mm_template_shape(n, &s) ||
        hc_nn_in(n, input)->dtype != HC_F32)
        return 0;
    hc_sched_opts o = opts ? *opts : (hc_sched_opts){0};
    o.prepacked = 1u << input;
    if (!mm_config(n, target, &s, &o, &cfg, NULL)) return 0;
    if (src && dst) hc_matmul_prepack(&s, &cfg, input, src, dst);
    return hc_matmul_packed_size(&s, &cfg, input);
}

static hc_func *schedule_matmul(hc_arena *a, const hc_node *n, const hc_task *t,
                                const hc_target *target, const char *fname,
                                const hc_sched_opts *opts, hc_error *err) {
    hc_matmul_shape s;
    hc_matmul_config cfg;
    if (!mm_template_shape(n, &s) || t->ninputs != 2 || t->noutputs != 1) return NULL;
    if (!mm_config(n, target, &s, opts, &cfg, err)) return NULL;
    hc_error e2 = {0};
    hc_func *f = hc_matmul_cpu(a, fname, &s, &cfg, target, &e2);
    if (!f || f->nparams != 3) return NULL; /* the auto-scheduler still handles it */
    rebind_ctx c = {{f->params[0], f->params[1], f->params[2]}, {NULL}, false, {false}};
    c.bcast[0] = cfg.a_shared;
    const hc_tnode *tn[3] = {t->inputs[0], t->inputs[1], t->outputs[0]};
    for (int i = 0; i < 3; i++) {
        if ((i == 0 && cfg.pre_a) || (i == 1 && cfg.pre_b)) { /* packed: 1-D, kept as is */
            c.to[i] = f->params[i];
            c.from[i] = NULL;
            continue;
        }
        const hc_type *ty = hc_type_tensor_c(a, HC_F32, tn[i]->ndim, tn[i]->shape,
                                             HC_SCOPE_GLOBAL);
        c.to[i] = hc_var_new(a, f->params[i]->name, ty);
    }
    hc_mutator m = {.a = a, .ctx = &c, .expr = rebind_expr, .stmt = rebind_stmt};
    hc_stmt *body = hc_mutate_stmt(&m, f->body);
    if (c.bad) return NULL;
    return hc_func_new(a, f->name, HC_FN_CPU_KERNEL, 3, c.to, body);
}

const hc_template hc_cpu_template_matmul = {"matmul", HC_OPK_MATMUL, schedule_matmul,
                                             space_matmul, prepack_matmul};
