/* ops_matmul.c — MatMul nodes on the CPU matmul template (matmul_cpu.c): the template's
 * shape and config for a node, its weight pre-packing, and the rebinding of the
 * template's [batch, m, k] parameters to the node's own tensors. */
#include <string.h>

#include "graph/ops/nn_internal.h"
#include "target/cpu/templates/matmul.h"
#include "target/cpu/templates/registry.h"
#include "target/cpu/templates/select.h"
#include "target/sched_util.h"

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
    /* symbolic shapes (dynamic M or batch): the template's and the task's dims as symbol
     * expressions, constants where fixed; sym false: both read from the params' types */
    bool sym;
    const hc_sym *osym[3][3], *nsym[3][HC_MAX_DIMS];
} rebind_ctx;

static int rebind_find(const rebind_ctx *c, const hc_var *v) {
    for (int i = 0; i < 3; i++)
        if (c->from[i] == v) return i;
    return -1;
}

static hc_expr **rebind_idx(hc_arena *a, const rebind_ctx *c, int p, int n, hc_expr *const *idx) {
    const hc_type *ot = c->from[p]->type, *nt = c->to[p]->type;
    if (c->sym) {
        hc_expr **out = HC_NEW_ARRAY(a, hc_expr *, nt->ndim);
        hc_expr *bidx[3] = {idx[0], idx[1], idx[2]};
        const hc_sym *os[3] = {c->osym[p][0], c->osym[p][1], c->osym[p][2]};
        if (c->bcast[p]) bidx[0] = hc_int(a, 0), os[0] = hc_sym_const(a, 1);
        hc_reshape_index_sym(a, 3, os, bidx, nt->ndim, c->nsym[p], out);
        return out;
    }
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

static bool sym_is(const hc_sym *x, int64_t v) {
    int64_t c;
    return hc_sym_is_const(x, &c) && c == v;
}

/* The product of dims [lo, hi) of t as a symbol expression. */
static const hc_sym *dims_product(hc_arena *a, const hc_tensor *t, int lo, int hi) {
    const hc_sym *p = hc_sym_const(a, 1);
    for (int d = lo; d < hi; d++) p = hc_sym_mul(a, p, hc_tensor_dim(t, d));
    return p;
}

/* The symbol expression of x, NULL when it is a constant. */
static const hc_sym *sym_or_null(const hc_sym *x) {
    int64_t c;
    return hc_sym_is_const(x, &c) ? NULL : x;
}

/* The template shape of a MatMul with symbolic dims (dynamic shapes): the batch and the
 * rows may be symbolic, K and N may not. The cases of the static one below, matched by
 * the dims' expressions (equal for every binding), not by their hint values. */
static bool mm_template_shape_sym(hc_arena *a, const hc_node *n, const hc_nn_mm_dims *d,
                                  hc_matmul_shape *s, hc_matmul_sym *sym, bool *a_shared) {
    const hc_tensor *A = hc_nn_in(n, 0), *B = hc_nn_in(n, 1), *Y = n->outputs[0];
    int ra = A->ndim, rb = B->ndim;
    if (Y->ndim != d->nb + 2 || ra < 2 || rb < 2) return false;
    /* K and N stay constants: the register tiles, K blocks and packed B depend on them */
    if (sym_or_null(hc_tensor_dim(A, ra - 1)) || sym_or_null(hc_tensor_dim(B, rb - 2)) ||
        sym_or_null(hc_tensor_dim(B, rb - 1)))
        return false;
    int64_t batch = 1;
    for (int i = 0; i < d->nb; i++) batch *= d->batch[i];
    const hc_sym *ab = dims_product(a, A, 0, ra - 2), *bb = dims_product(a, B, 0, rb - 2);
    const hc_sym *yb = dims_product(a, Y, 0, d->nb), *m = hc_tensor_dim(A, ra - 2);
    if (hc_sym_equal(ab, yb) && hc_sym_equal(bb, yb)) {
        *s = (hc_matmul_shape){batch, d->m, d->n, d->k};
        *sym = (hc_matmul_sym){sym_or_null(yb), sym_or_null(m)};
        return true;
    }
    if (hc_sym_equal(ab, yb) && sym_is(bb, 1)) { /* one B for every row of every batch */
        *s = (hc_matmul_shape){1, batch * d->m, d->n, d->k};
        *sym = (hc_matmul_sym){NULL, sym_or_null(hc_sym_mul(a, yb, m))};
        return true;
    }
    if (sym_is(ab, 1) && hc_sym_equal(bb, yb)) { /* one A for every batch of B */
        *s = (hc_matmul_shape){batch, d->m, d->n, d->k};
        *sym = (hc_matmul_sym){sym_or_null(yb), sym_or_null(m)};
        *a_shared = s->batch > 1 || sym->batch;
        return true;
    }
    return false;
}

/* The template shape for this MatMul, or false when the template does not fit; sym: its
 * symbolic batches and rows (built in `a`); a_shared: one A for every batch. */
static bool mm_template_shape(hc_arena *a, const hc_node *n, hc_matmul_shape *s,
                              hc_matmul_sym *sym, bool *a_shared) {
    hc_nn_mm_dims d;
    const hc_tensor *A = hc_nn_in(n, 0), *B = hc_nn_in(n, 1);
    *a_shared = false;
    *sym = (hc_matmul_sym){NULL, NULL};
    if (hc_nn_matmul_dims(n, &d, NULL) || A->dtype != HC_F32 || d.a_vec || d.b_vec) return false;
    if (hc_tensor_is_symbolic(A) || hc_tensor_is_symbolic(B) ||
        hc_tensor_is_symbolic(n->outputs[0]))
        return mm_template_shape_sym(a, n, &d, s, sym, a_shared);
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
        *a_shared = batch > 1;
        return true;
    }
    return false;
}

static int space_matmul(const hc_node *n, const hc_target *target, int level) {
    hc_matmul_shape s;
    hc_matmul_sym sym;
    bool shared;
    hc_arena tmp;
    hc_arena_init(&tmp);
    int count = mm_template_shape(&tmp, n, &s, &sym, &shared) ? hc_matmul_space(target, &s, level, NULL, 0)
                                                        : 0;
    hc_arena_free(&tmp);
    return count;
}

/* The config of candidate opts->candidate at opts->level (the default without opts), with
 * the operands pre-packed that opts->prepacked names. false with err set on a bad
 * candidate. */
static bool mm_config(const hc_node *n, const hc_target *target, const hc_matmul_shape *s,
                      const hc_matmul_sym *sym, bool a_shared, const hc_sched_opts *opts,
                      hc_matmul_config *cfg, hc_error *err) {
    *cfg = hc_matmul_default_config(target, s); /* symbolic dims: at their hints */
    if (!HC_CPU_SELECT_CONFIG(*cfg, hc_matmul_space, target, s, n, opts, err)) return false;
    bool a_const = hc_nn_in(n, 0)->data != NULL, b_const = hc_nn_in(n, 1)->data != NULL;
    /* constant A, a B of few columns, on Zen 4 (matmul_cpu.c), with its own thread split;
     * the same in prepack_matmul's call, which takes the packed layout (mr, kc) from this
     * config */
    bool narrow =
        opts && opts->candidate == 0 && hc_matmul_narrow_pays(target, s, a_const, b_const);
    if (narrow) *cfg = hc_matmul_narrow_config(target, s);
    /* the default's thread split (candidate 0) weighs the packing of an operand read
     * through a prologue: each thread column packs the A rows, each thread row its B
     * columns; a split that repeats an im2col's packing loses (Inception-V3's 17x17 convs:
     * rows split, both threads packed all of B; --tune 2 split the columns) */
    unsigned pro = opts ? opts->prologued & 3u : 0;
    double ac = pro & 1u ? HC_MATMUL_PROLOGUE_PACK_COST : HC_MATMUL_PACK_COST;
    double bc = pro & 2u ? HC_MATMUL_PROLOGUE_PACK_COST : HC_MATMUL_PACK_COST;
    /* An operand pre-packed at compile time (weights) costs the threads no packing, where
     * hc_matmul_default_config's split counted it all the same: it split the columns of
     * BERT's and GPT-2's matmuls (M = 128 tokens: each thread packed all of A, and packed
     * half of a B that is read in place), where --tune 2 split the rows on an AVX-512 Xeon
     * (QKV, FFN-in, FFN-out). Split by rows, each thread packs half of A and writes whole
     * rows of C, which the next kernel (LayerNorm, the next matmul's A) reads by rows.
     * Taken only where the other split leaves each thread one block (B: the rows split
     * gives each thread at most mc rows, so it reads its B panels once): BERT's FFN-in at
     * batch 8 (512 rows a thread in blocks of 168 would re-read a 4.5 MiB B block 4 times)
     * keeps its columns split.
     * Median latency, old and new default in the same rounds (bench/ab.py, Xeon, 30 runs):
     * BERT 116.7 -> 112.1 ms, GPT-2 170.9 -> 162.1; HIDETC_ISA=avx2: 220.2 -> 211.6 and
     * 291.0 -> 285.3. The packed layout (mr, nr, kc) does not depend on the split. */
    unsigned pre = opts ? opts->prepacked & 3u : 0;
    int threads = cfg->tb * cfg->tm * cfg->tn;
    if ((pre & 1u) && hc_matmul_part_extent(s->n, cfg->nr, threads) <= cfg->nc) ac = 0;
    if ((pre & 2u) && hc_matmul_part_extent(s->m, cfg->mr, threads) <= cfg->mc) bc = 0;
    if ((pro || ac == 0 || bc == 0) && opts && opts->candidate == 0) {
        /* an operand read in place through a computing prologue runs the prologue again
         * for every register tile across it: packed, it runs once per block. MobileNet-V2's
         * features.2 projection (M = 24 output channels: 3 row tiles over a FROM_NCHWC
         * prologue of B) read B in place by the pack_b rule; packed (what --tune 2 picked
         * too), per-kernel minima over 10 alternated rounds on an AVX-512 Xeon, two runs:
         * 0.190 -> 0.112 ms (tuned 0.113) and 0.220 -> 0.148 (the other kernels within 1%) */
        if ((pro & 2u) && !cfg->pack_b && hc_cdiv(s->m, cfg->mr) > 1) cfg->pack_b = true;
        if ((pro & 1u) && !cfg->pack_a && hc_cdiv(s->n, cfg->nr) > 1) cfg->pack_a = true;
        if (!narrow) {
            hc_matmul_config_set_threads_costed(cfg, s, threads, ac, bc);
            cfg->rows_first = hc_matmul_rows_first_pays(cfg, s, target);
        }
    }
    /* The output feeds a depthwise conv whose threads take contiguous channel planes: the
     * default splits the rows (output channels) across the threads the same way, so each
     * thread reads its own writes from its L2. MobileNet-V2's 28x28 expand convs on Zen 3
     * (--tune 2's pick, bench/results/ab_zen3.md): the depthwise after them 0.067 ->
     * 0.037 ms. */
    if (opts && opts->rows_to_consumer && opts->candidate == 0 && s->batch == 1 &&
        threads > 1 && s->m >= (int64_t)threads * cfg->mr) {
        cfg->tb = 1, cfg->tm = threads, cfg->tn = 1;
        cfg->rows_first = hc_matmul_rows_first_pays(cfg, s, target);
    }
    /* A symbolic batch may be 1 (latency) whatever its hint: the threads split each
     * matrix, as for a batch they do not divide (split over the hint's batches, batch 1
     * ran on one thread: ResNet-50's NCHW convs at a symbolic batch, 1.5x slower). */
    if (sym && sym->batch && cfg->tb > 1) {
        hc_matmul_shape one = *s;
        one.batch = 1;
        hc_matmul_config_set_threads_costed(cfg, &one, cfg->tb * cfg->tm * cfg->tn, ac, bc);
    }
    /* constant weights as B on a core where a B micro-panel of half of L1 pays
     * (hc_matmul_half_l1_panel_pays: the transformers' linear layers on Sapphire/Emerald
     * Rapids); kc sets the packed layout, which prepack_matmul takes from this config, so
     * the rule reads only what prepack_matmul's call sees alike */
    if (opts && opts->candidate == 0) {
        /* and where a thread's C exceeds half of L2, all of K in one block (same inputs) */
        bool half = hc_matmul_half_l1_panel_pays(cfg, s, target, a_const, b_const);
        bool one = !half && hc_matmul_one_kblock_pays(cfg, s, target, a_const, b_const);
        if (half) hc_matmul_config_set_kc(cfg, s, target, 0.5);
        if (one) hc_matmul_config_set_one_kblock(cfg, s, target);
        if (half || one) cfg->rows_first = hc_matmul_rows_first_pays(cfg, s, target);
        /* or, where the default's A block is a few row tiles, a B block kept in L2 */
        if (!half && !one && (opts->prepacked & 2u) &&
            hc_matmul_b_stationary_pays(cfg, s, target, a_const, b_const))
            hc_matmul_config_set_b_stationary(cfg, s, target);
    }
    /* AMX split products (hc_matmul_amx_pays): the default where B is constant weights,
     * pre-packed into its split; prepack_matmul's call for B sees alike */
    if (opts && opts->candidate == 0 && (opts->prepacked & 2u) && !(opts->prepacked & 1u) &&
        !(sym && (sym->m || sym->batch)) &&
        hc_nn_in(n, 1)->dtype == HC_F32 &&
        hc_matmul_amx_pays(s, target, hc_nn_in(n, 0)->data != NULL, hc_nn_in(n, 1)->data))
        *cfg = hc_matmul_amx_config(target, s);
    cfg->c_write_once = opts && opts->write_once;
    cfg->pre_a = opts && (opts->prepacked & 1u);
    cfg->pre_b = opts && (opts->prepacked & 2u);
    /* the template's batch index selects nothing in an A shared by every batch */
    cfg->a_shared = a_shared;
    return true;
}

/* Whether input `input`'s packed form would depend on a symbol (then it is not packed). */
static bool packed_is_symbolic(const hc_matmul_sym *sym, bool a_shared, int input) {
    return input == 0 ? sym->m || (sym->batch && !a_shared) : sym->batch != NULL;
}

static int64_t prepack_matmul(const hc_node *n, const hc_target *target, const hc_sched_opts *opts,
                              int input, const void *src, void *dst) {
    hc_matmul_shape s;
    hc_matmul_config cfg;
    hc_matmul_sym sym;
    bool shared;
    if (input != 0 && input != 1) return 0;
    hc_arena tmp;
    hc_arena_init(&tmp);
    int64_t size = 0;
    hc_sched_opts o = opts ? *opts : (hc_sched_opts){0};
    o.prepacked = 1u << input;
    if (mm_template_shape(&tmp, n, &s, &sym, &shared) && hc_nn_in(n, input)->dtype == HC_F32 &&
        !packed_is_symbolic(&sym, shared, input) && mm_config(n, target, &s, &sym, shared, &o, &cfg, NULL)) {
        if (src && dst) hc_matmul_prepack(&s, &cfg, input, src, dst);
        size = hc_matmul_packed_size(&s, &cfg, input);
    }
    hc_arena_free(&tmp);
    return size;
}

static hc_func *schedule_matmul(hc_arena *a, const hc_node *n, const hc_task *t,
                                const hc_target *target, const char *fname,
                                const hc_sched_opts *opts, hc_error *err) {
    hc_matmul_shape s;
    hc_matmul_config cfg;
    hc_matmul_sym sym;
    bool shared;
    if (!mm_template_shape(a, n, &s, &sym, &shared) || t->ninputs != 2 || t->noutputs != 1)
        return NULL;
    if (!mm_config(n, target, &s, &sym, shared, opts, &cfg, err)) return NULL;
    hc_error e2 = {0};
    hc_func *f = hc_matmul_cpu_sym(a, fname, &s, &sym, &cfg, target, &e2);
    if (!f || f->nparams != 3) return NULL; /* the auto-scheduler still handles it */
    rebind_ctx c = {{f->params[0], f->params[1], f->params[2]}, {NULL}, false, {false}};
    c.bcast[0] = cfg.a_shared;
    const hc_tnode *tn[3] = {t->inputs[0], t->inputs[1], t->outputs[0]};
    c.sym = sym.m || sym.batch;
    if (c.sym) { /* the template's [batch, m, k] etc. and the task's dims, as expressions */
        const hc_sym *nb = sym.batch ? sym.batch : hc_sym_const(a, s.batch);
        const hc_sym *m = sym.m ? sym.m : hc_sym_const(a, s.m);
        const hc_sym *k = hc_sym_const(a, s.k), *nn = hc_sym_const(a, s.n);
        const hc_sym *os[3][3] = {{nb, m, k}, {nb, k, nn}, {nb, m, nn}};
        memcpy(c.osym, os, sizeof os);
        for (int i = 0; i < 3; i++)
            for (int d = 0; d < tn[i]->ndim; d++) c.nsym[i][d] = hc_tnode_dim_sym(a, tn[i], d);
    }
    for (int i = 0; i < 3; i++) {
        if ((i == 0 && cfg.pre_a) || (i == 1 && cfg.pre_b)) { /* packed: 1-D, kept as is */
            c.to[i] = f->params[i];
            c.from[i] = NULL;
            continue;
        }
        const hc_type *ty = c.sym ? hc_as_buffer_type(a, tn[i])
                                  : hc_type_tensor_c(a, HC_F32, tn[i]->ndim, tn[i]->shape,
                                                     HC_SCOPE_GLOBAL);
        c.to[i] = hc_var_new(a, f->params[i]->name, ty);
    }
    hc_mutator m = {.a = a, .ctx = &c, .expr = rebind_expr, .stmt = rebind_stmt};
    hc_stmt *body = hc_mutate_stmt(&m, f->body);
    if (c.bad) return NULL;
    hc_func *g = hc_func_new(a, f->name, HC_FN_CPU_KERNEL, 3, c.to, body);
    HC_CPU_DESCRIBE_CONFIG(a, g, hc_matmul_config_print, cfg);
    return g;
}

/* symbolic: a symbolic M (rows of A and C) and symbolic batch dims; K and N fixed */
const hc_template hc_cpu_template_matmul = {"matmul", HC_OPK_MATMUL, schedule_matmul,
                                             space_matmul, prepack_matmul, true};
