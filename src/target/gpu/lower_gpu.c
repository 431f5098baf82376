/* lower_gpu.c — GPU target lowering: a GPU program (gpu.h) becomes one kernel per stage.
 *
 *  1. The top level of the body is split at global barriers into stages; tensors declared
 *     there with global scope are the program's scratch (extra params of every stage).
 *  2. Each stage's launch is read off its mappings: the grid (block) size on each axis is
 *     the largest worker count of a mapping on blockIdx (threadIdx); a mapping on warp_id
 *     needs warps * warp_size threads, one on lane_id a warp.
 *  3. A mapping with fewer workers than the launch gives its worker range a guard (its
 *     surplus workers skip it). A guard around a barrier would deadlock: such a program is
 *     a template bug (assert).
 *  4. The generic lowering: mappings to index arithmetic, unrolling, register promotion. */
#include <string.h>

#include "ir/mapping.h"
#include "target/gpu/gpu.h"

typedef struct launch {
    int64_t grid[3], block[3];
    int64_t warps, lanes;
} launch;

static int builtin_axis(hc_builtin b, hc_builtin x) { return (int)b - (int)x; }

static const hc_var *worker_builtin(const hc_expr *w) {
    return w && w->kind == HC_E_VAR && w->u.var->builtin != HC_BUILTIN_NONE ? w->u.var : NULL;
}

static void scan_launch(const hc_stmt *s, launch *l) {
    if (!s) return;
    switch (s->kind) {
    case HC_S_SEQ:
        for (int i = 0; i < s->u.seq.n; i++) scan_launch(s->u.seq.stmts[i], l);
        return;
    case HC_S_LET: scan_launch(s->u.let.body, l); return;
    case HC_S_IF:
        scan_launch(s->u.if_.then_s, l);
        scan_launch(s->u.if_.else_s, l);
        return;
    case HC_S_FOR: scan_launch(s->u.for_.body, l); return;
    case HC_S_FOR_MAPPING: {
        const hc_var *b = worker_builtin(s->u.fmap.worker);
        int64_t n = hc_map_num_workers(s->u.fmap.mapping);
        if (b) {
            hc_builtin k = b->builtin;
            if (k >= HC_BUILTIN_THREAD_IDX_X && k <= HC_BUILTIN_THREAD_IDX_Z) {
                int d = builtin_axis(k, HC_BUILTIN_THREAD_IDX_X);
                l->block[d] = HC_MAX(l->block[d], n);
            } else if (k >= HC_BUILTIN_BLOCK_IDX_X && k <= HC_BUILTIN_BLOCK_IDX_Z) {
                int d = builtin_axis(k, HC_BUILTIN_BLOCK_IDX_X);
                l->grid[d] = HC_MAX(l->grid[d], n);
            } else if (k == HC_BUILTIN_WARP_ID) {
                l->warps = HC_MAX(l->warps, n);
            } else if (k == HC_BUILTIN_LANE_ID) {
                l->lanes = HC_MAX(l->lanes, n);
            }
        }
        scan_launch(s->u.fmap.body, l);
        return;
    }
    default: return;
    }
}

typedef struct guard_ctx {
    const launch *l;
    int warp_size;
    const char *fname;
} guard_ctx;

/* The number of workers the launch runs on builtin b. */
static int64_t launched(const guard_ctx *g, hc_builtin b) {
    const launch *l = g->l;
    if (b >= HC_BUILTIN_THREAD_IDX_X && b <= HC_BUILTIN_THREAD_IDX_Z)
        return l->block[builtin_axis(b, HC_BUILTIN_THREAD_IDX_X)];
    if (b >= HC_BUILTIN_BLOCK_IDX_X && b <= HC_BUILTIN_BLOCK_IDX_Z)
        return l->grid[builtin_axis(b, HC_BUILTIN_BLOCK_IDX_X)];
    if (b == HC_BUILTIN_WARP_ID) return l->block[0] / g->warp_size;
    if (b == HC_BUILTIN_LANE_ID) return g->warp_size;
    return 0;
}

static hc_stmt *guard_stmt(hc_mutator *m, hc_stmt *s) {
    const guard_ctx *g = m->ctx;
    if (s->kind != HC_S_FOR_MAPPING) return s;
    const hc_var *b = worker_builtin(s->u.fmap.worker);
    if (!b) return s;
    int64_t n = hc_map_num_workers(s->u.fmap.mapping), have = launched(g, b->builtin);
    if (n >= have) return s;
    HC_ASSERT_MSG(!hc_stmt_has_barrier(s->u.fmap.body),
                  hc_arena_printf(m->a, "GPU program %s: a mapping on %s with %lld of %lld "
                                  "workers contains a barrier", g->fname, hc_builtin_name(b->builtin),
                                  (long long)n, (long long)have));
    return hc_if(m->a, hc_lt(m->a, s->u.fmap.worker, hc_int(m->a, n)), s, NULL);
}

typedef HC_VEC(hc_stmt *) stmt_vec;

/* The top-level statements of a body (SEQs flattened). */
static void flatten(hc_stmt *s, stmt_vec *out) {
    if (!s) return;
    if (s->kind == HC_S_SEQ) {
        for (int i = 0; i < s->u.seq.n; i++) flatten(s->u.seq.stmts[i], out);
        return;
    }
    hc_vec_push(out, s);
}

static bool is_scratch(const hc_stmt *s) {
    return s->kind == HC_S_DECLARE && s->u.decl.var->type->kind == HC_TY_TENSOR &&
           s->u.decl.var->type->scope == HC_SCOPE_GLOBAL;
}

static hc_func *make_stage(hc_arena *a, const hc_func *f, int stage, int nscratch,
                           hc_var *const *scratch, int n, hc_stmt *const *stmts, int warp_size) {
    hc_stmt *body = hc_seq(a, n, stmts);
    launch l = {.grid = {1, 1, 1}, .block = {1, 1, 1}};
    scan_launch(body, &l);
    l.block[0] = HC_MAX(l.block[0], HC_MAX(l.warps * warp_size, l.lanes));
    guard_ctx g = {&l, warp_size, f->name};
    hc_mutator mu = {.a = a, .ctx = &g, .stmt = guard_stmt};
    body = hc_mutate_stmt(&mu, body);
    int np = f->nparams + nscratch;
    hc_var **params = HC_NEW_ARRAY(a, hc_var *, np + 1);
    memcpy(params, f->params, sizeof(hc_var *) * (size_t)f->nparams);
    if (nscratch) memcpy(params + f->nparams, scratch, sizeof(hc_var *) * (size_t)nscratch);
    hc_func *k = hc_func_new(a, hc_arena_printf(a, "%s_s%d", f->name, stage), HC_FN_CUDA_KERNEL,
                             np, params, body);
    for (int d = 0; d < 3; d++) {
        k->grid_dim[d] = hc_int(a, l.grid[d]);
        k->block_dim[d] = hc_int(a, l.block[d]);
    }
    k->program = f->name;
    k->stage = stage;
    k->nscratch = nscratch;
    return hc_lower_func_with(a, k, true);
}

/* The stages and scratch tensors hc_gpu_lower makes of f (the same count). */
static void count_stages(const hc_func *f, int *stages, int *scratch) {
    stmt_vec top = {0};
    flatten(f->body, &top);
    int stage = 0, ns = 0;
    bool cur = false;
    for (size_t j = 0; j <= top.len; j++) {
        hc_stmt *s = j < top.len ? top.data[j] : NULL;
        if (s && is_scratch(s)) {
            ns++;
            continue;
        }
        if (s && !(s->kind == HC_S_BARRIER && s->u.barrier.scope == HC_SCOPE_GLOBAL)) {
            cur = true;
            continue;
        }
        if (cur || (!s && stage == 0)) stage++;
        cur = false;
    }
    hc_vec_free(&top);
    *stages = stage, *scratch = ns;
}

hc_status hc_gpu_check_program(const hc_func *f, const hc_target *t, hc_error *err) {
    (void)t;
    int stages, scratch;
    count_stages(f, &stages, &scratch);
    if (stages > HC_GPU_MAX_STAGES || scratch > HC_GPU_MAX_SCRATCH)
        return hc_error_set(err, HC_ERR_UNSUPPORTED, "its GPU program has %d grid-wide stages "
                            "and %d scratch tensors (at most %d and %d)", stages, scratch,
                            HC_GPU_MAX_STAGES, HC_GPU_MAX_SCRATCH);
    return HC_OK;
}

hc_module *hc_gpu_lower(hc_arena *a, const hc_module *m, const hc_target *t) {
    int warp = t->caps.warp_size > 0 ? t->caps.warp_size : 32;
    HC_VEC(hc_func *) out = {0};
    for (int i = 0; i < m->nfuncs; i++) {
        const hc_func *f = m->funcs[i];
        stmt_vec top = {0}, cur = {0};
        HC_VEC(hc_var *) scratch = {0};
        flatten(f->body, &top);
        int stage = 0;
        for (size_t j = 0; j <= top.len; j++) {
            hc_stmt *s = j < top.len ? top.data[j] : NULL;
            if (s && is_scratch(s)) {
                hc_vec_push(&scratch, s->u.decl.var);
                continue;
            }
            if (s && !(s->kind == HC_S_BARRIER && s->u.barrier.scope == HC_SCOPE_GLOBAL)) {
                hc_vec_push(&cur, s);
                continue;
            }
            if (cur.len || (!s && stage == 0)) /* a program of no statements: one empty stage */
                hc_vec_push(&out, make_stage(a, f, stage++, (int)scratch.len, scratch.data,
                                             (int)cur.len, cur.data, warp));
            cur.len = 0;
        }
        HC_ASSERT_MSG(stage <= HC_GPU_MAX_STAGES && scratch.len <= HC_GPU_MAX_SCRATCH,
                      "GPU program: too many stages or scratch tensors");
        hc_vec_free(&top);
        hc_vec_free(&cur);
        hc_vec_free(&scratch);
    }
    hc_module *r = hc_module_new(a, m->name, (int)out.len, out.data);
    hc_vec_free(&out);
    return r;
}
