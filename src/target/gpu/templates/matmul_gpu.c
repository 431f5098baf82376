/* matmul_gpu.c — the paper's f32 SIMT matmul for the GPU targets, written with task
 * mappings (Hidet, ASPLOS 2023, section 4; docs/gpu.md has the picture).
 *
 * C[b] = A[b] B[b] (numpy batch broadcasting, as the MatMul node has it). A block computes
 * a BM x BN tile of C; its threads are assigned by the composition
 *
 *     spatial(WM, WN) warps . repeat(OM, ON) . spatial(4, 8) lanes . repeat(IM, IN)
 *
 * (BM = WM*OM*4*IM, BN = WN*ON*8*IN): a warp owns OM x ON sub-tiles of 4*IM x 8*IN, a lane
 * an IM x IN register tile in each. The program nests the four levels as mappings on
 * warp_id, lane_id and two unrolled repeats, so each thread's accumulators are a register
 * tensor indexed by its repeat positions (constants after unrolling: they stay in
 * registers). Along K, tiles of BK move global -> shared (each copy a mapping over all the
 * block's threads, consecutive threads on consecutive elements: coalesced), double-
 * buffered: tile t+1 is loaded while tile t is used, one barrier per step. Per k of a
 * tile, a thread loads its A and B fragments from shared memory into registers and adds
 * their outer product. Rows, columns and k beyond the matrix are predicated (loads give
 * 0, stores are skipped), so any M, N, K works. Each C element is stored once, with its
 * final value: the epilogue fusion rewrites that store.
 *
 * The space is enumerated from the target's caps (threads per block, registers per thread,
 * shared memory per block), never from the shape. */
#include <string.h>

#include "graph/ops/nn_internal.h"
#include "ir/mapping.h"
#include "target/gpu/gpu.h"
#include "target/gpu/templates/templates_gpu.h"

typedef struct mm_cfg {
    int wm, wn; /* warps */
    int om, on; /* warp repeats */
    int im, in; /* thread repeats */
    int bk;
} mm_cfg;

static int cfg_bm(const mm_cfg *c) { return c->wm * c->om * 4 * c->im; }
static int cfg_bn(const mm_cfg *c) { return c->wn * c->on * 8 * c->in; }
static int cfg_threads(const mm_cfg *c) { return c->wm * c->wn * 32; }
/* A's tile is stored k-major with its rows padded by AS_PAD floats: the copy writes
 * As[k][i] with k fastest across threads, and a row length of BM + 4 puts the 8 k of a
 * warp's stores 4 banks apart (conflict-free for BK 8) where BM alone (a multiple of 32)
 * would put them all in one bank. */
#define AS_PAD 4

static int64_t cfg_smem(const mm_cfg *c) {
    return 2 * (int64_t)c->bk * (cfg_bm(c) + AS_PAD + cfg_bn(c)) * 4;
}
/* registers a thread needs: accumulators, both fragments, and about 24 for addresses */
static int cfg_regs(const mm_cfg *c) {
    int tm = c->om * c->im, tn = c->on * c->in;
    return tm * tn + tm + tn + 24;
}

static bool cfg_fits(const mm_cfg *c, const hc_target *t) {
    int threads = cfg_threads(c);
    int maxt = t->caps.max_threads_per_block > 0 ? t->caps.max_threads_per_block : 1024;
    int regs = t->caps.regs_per_thread > 0 ? t->caps.regs_per_thread : 255;
    int64_t smem = t->caps.smem_per_block > 0 ? t->caps.smem_per_block : 48 * 1024;
    /* the copies: every thread moves whole elements of both tiles */
    int64_t file = t->caps.regs_per_block > 0 ? t->caps.regs_per_block : 65536;
    return threads <= maxt && cfg_regs(c) <= regs && (int64_t)threads * cfg_regs(c) <= file &&
           cfg_smem(c) <= smem &&
           (cfg_bm(c) * c->bk) % threads == 0 && (cfg_bn(c) * c->bk) % threads == 0;
}

typedef struct mm_geo {
    hc_nn_mm_dims d;
    int64_t batch;
} mm_geo;

/* The default config (candidate 0 of every level): the largest tile that still gives
 * every SM a block. 128 x 128 tiles of 8 warps with 8 x 8 registers a thread (2 x 2
 * sub-tiles of 4 x 4; 120 registers, no spills for sm_90, two blocks an SM) for large
 * products; 64 x 64 tiles of 4 warps and BK 8 (the paper's middle of the road); smaller
 * ones where 64 x 64 would leave SMs idle (BERT's 128 x 768 GEMMs make 24 blocks of
 * 64 x 64 for 132 SMs, 96 of 32 x 32). */
static mm_cfg mm_default(const hc_target *t, const mm_geo *g) {
    static const mm_cfg tiles[] = {
        {4, 2, 2, 2, 4, 4, 8}, /* 128 x 128, 8 warps */
        {2, 2, 2, 1, 4, 4, 8}, /* 64 x 64, 4 warps */
        {2, 2, 1, 1, 4, 4, 8}, /* 32 x 64, 4 warps */
        {1, 1, 2, 1, 4, 4, 8}, /* 32 x 32, 1 warp */
    };
    int sms = t->caps.num_sms > 0 ? t->caps.num_sms : 1;
    for (size_t i = 0; i + 1 < HC_ARRAY_LEN(tiles); i++) {
        if (!cfg_fits(&tiles[i], t)) continue;
        int bm = tiles[i].wm * tiles[i].om * 4 * tiles[i].im, bn = tiles[i].wn * tiles[i].on * 8 * tiles[i].in;
        if (g->batch * hc_cdiv(g->d.m, bm) * hc_cdiv(g->d.n, bn) >= sms) return tiles[i];
    }
    return tiles[HC_ARRAY_LEN(tiles) - 1];
}

/* The space at a level: candidate 0 is the default. Level 1 varies the tile and the
 * warps; level 2 also the thread tile and BK. Configs that the caps do not admit are
 * pruned. Returns the count; fills out[0..cap). */
static int mm_space(const hc_target *t, const mm_geo *g, int level, mm_cfg *out, int cap) {
    const mm_cfg def = mm_default(t, g);
    int n = 0;
    if (cfg_fits(&def, t)) {
        if (n < cap) out[n] = def;
        n++;
    }
    if (level == 0) return n;
    static const int warps[][2] = {{1, 1}, {1, 2}, {2, 1}, {2, 2}, {2, 4}, {4, 2}};
    static const int reps[][2] = {{1, 1}, {1, 2}, {2, 1}, {2, 2}};
    static const int thr1[][2] = {{4, 4}};
    static const int thr2[][2] = {{2, 2}, {4, 2}, {2, 4}, {4, 4}, {8, 4}, {4, 8}};
    static const int bks1[] = {8};
    static const int bks2[] = {8, 16};
    int nthr = level == 1 ? 1 : 6, nbk = level == 1 ? 1 : 2;
    for (size_t w = 0; w < HC_ARRAY_LEN(warps); w++)
        for (size_t r = 0; r < HC_ARRAY_LEN(reps); r++)
            for (int th = 0; th < nthr; th++)
                for (int b = 0; b < nbk; b++) {
                    const int *tt = level == 1 ? thr1[th] : thr2[th];
                    mm_cfg c = {warps[w][0], warps[w][1], reps[r][0], reps[r][1], tt[0], tt[1],
                                level == 1 ? bks1[b] : bks2[b]};
                    if (!memcmp(&c, &def, sizeof c) || !cfg_fits(&c, t)) continue;
                    /* prune tiles that are too small to reuse shared data (paper: a block
                     * tile of at least 32 x 32) */
                    if (cfg_bm(&c) < 32 || cfg_bn(&c) < 32) continue;
                    if (n < cap) out[n] = c;
                    n++;
                }
    return n;
}

/* ---- the node's geometry ------------------------------------------------------------- */

static bool mm_geometry(const hc_node *n, mm_geo *g) {
    if (hc_nn_matmul_dims(n, &g->d, NULL) != HC_OK || g->d.a_vec || g->d.b_vec) return false;
    if (hc_nn_in(n, 0)->dtype != HC_F32 || hc_nn_in(n, 1)->dtype != HC_F32) return false;
    g->batch = 1;
    for (int i = 0; i < g->d.nb; i++) g->batch *= g->d.batch[i];
    return true;
}

/* Index of element (row, col) of batch b (flat over the broadcast batch dims) in tensor
 * var x of the node's own shape: its leading dims are the batch dims aligned right, size-1
 * ones broadcast. */
static void mm_index(hc_arena *a, const mm_geo *g, const hc_var *x, hc_expr *b, hc_expr *row,
                     hc_expr *col, hc_expr **idx) {
    int nd = x->type->ndim, lead = nd - 2;
    int64_t stride = 1;
    for (int i = g->d.nb - 1; i >= 0; i--) { /* batch dim i of the output */
        int xd = lead - (g->d.nb - i); /* x's dim aligned with it */
        if (xd >= 0) {
            int64_t ext = 0;
            hc_expr_is_const_int(x->type->shape[xd], &ext);
            hc_expr *bi = hc_mod(a, hc_div(a, b, hc_int(a, stride)), hc_int(a, g->d.batch[i]));
            idx[xd] = ext == 1 ? hc_int(a, 0) : bi;
        }
        stride *= g->d.batch[i];
    }
    idx[nd - 2] = row;
    idx[nd - 1] = col;
}

/* ---- the program ---------------------------------------------------------------------- */
typedef struct mm_build {
    hc_arena *a;
    hc_builder *b;
    const mm_geo *g;
    const mm_cfg *c;
    hc_var *A, *B, *C, *As, *Bs, *acc, *af, *bf;
    hc_expr *bb, *m0, *n0; /* batch, the tile's first row and column */
    int threads;
} mm_build;

static hc_expr *ix(hc_arena *a, int64_t v) { return hc_int(a, v); }

/* tile (buffer buf) <- the K tile starting at k0: As[buf][k][i] = A[m0 + i][k0 + k] and
 * Bs[buf][k][j] = B[k0 + k][n0 + j], 0 outside the matrices */
static void load_tiles(mm_build *m, hc_expr *buf, hc_expr *k0) {
    hc_arena *a = m->a;
    const mm_cfg *c = m->c;
    int64_t BM = cfg_bm(c), BN = cfg_bn(c), BK = c->bk, M = m->g->d.m, N = m->g->d.n,
            K = m->g->d.k;
    hc_expr *tid = hc_ref(a, hc_var_builtin(a, HC_BUILTIN_THREAD_IDX_X));
    hc_var *v[2];
    const char *an[2] = {"li", "lk"}, *bn[2] = {"lk", "lj"};
    /* A: k is contiguous in memory: the innermost task dim gets consecutive threads */
    hc_b_for_map_begin(m->b, hc_map_auto(a, 2, (int64_t[]){BM, BK}, m->threads, NULL), tid, 2, v, an);
    {
        hc_expr *r = hc_add(a, m->m0, hc_ref(a, v[0])), *k = hc_add(a, k0, hc_ref(a, v[1]));
        hc_expr *idx[HC_MAX_DIMS];
        mm_index(a, m->g, m->A, m->bb, r, k, idx);
        hc_expr *ok = hc_and(a, hc_lt(a, r, ix(a, M)), hc_lt(a, k, ix(a, K)));
        hc_expr *val = hc_select(a, ok, hc_load(a, m->A, m->A->type->ndim, idx), hc_f32(a, 0));
        hc_b_store(m->b, m->As, 3, (hc_expr *[]){buf, hc_ref(a, v[1]), hc_ref(a, v[0])}, val);
    }
    hc_b_end(m->b);
    hc_b_for_map_begin(m->b, hc_map_auto(a, 2, (int64_t[]){BK, BN}, m->threads, NULL), tid, 2, v, bn);
    {
        hc_expr *k = hc_add(a, k0, hc_ref(a, v[0])), *col = hc_add(a, m->n0, hc_ref(a, v[1]));
        hc_expr *idx[HC_MAX_DIMS];
        mm_index(a, m->g, m->B, m->bb, k, col, idx);
        hc_expr *ok = hc_and(a, hc_lt(a, k, ix(a, K)), hc_lt(a, col, ix(a, N)));
        hc_expr *val = hc_select(a, ok, hc_load(a, m->B, m->B->type->ndim, idx), hc_f32(a, 0));
        hc_b_store(m->b, m->Bs, 3, (hc_expr *[]){buf, hc_ref(a, v[0]), hc_ref(a, v[1])}, val);
    }
    hc_b_end(m->b);
}

/* The thread's position: warp (wm, wn) of spatial(WM, WN) on warp_id, lane (lm, ln) of
 * spatial(4, 8) on lane_id. Opens two mappings (the caller closes them). */
static void open_thread(mm_build *m, hc_expr **wrow, hc_expr **wcol, hc_expr **lrow,
                        hc_expr **lcol) {
    hc_arena *a = m->a;
    hc_var *w[2], *l[2];
    const char *wn[2] = {"wm", "wn"}, *ln[2] = {"lm", "ln"};
    hc_b_for_map_begin(m->b, hc_map_spatial2(a, m->c->wm, m->c->wn),
                       hc_ref(a, hc_var_builtin(a, HC_BUILTIN_WARP_ID)), 2, w, wn);
    hc_b_for_map_begin(m->b, hc_map_spatial2(a, 4, 8),
                       hc_ref(a, hc_var_builtin(a, HC_BUILTIN_LANE_ID)), 2, l, ln);
    *wrow = hc_ref(a, w[0]), *wcol = hc_ref(a, w[1]);
    *lrow = hc_ref(a, l[0]), *lcol = hc_ref(a, l[1]);
}

/* A repeat mapping, fully unrolled, on no worker: its vars in v. */
static void open_repeat(mm_build *m, int64_t r0, int64_t r1, hc_var **v, const char *n0,
                        const char *n1) {
    hc_loop_attr u[2] = {hc_unroll(0), hc_unroll(0)};
    const char *names[2] = {n0, n1};
    hc_b_for_map_begin(m->b, hc_map_repeat(m->a, 2, (int64_t[]){r0, r1}, u), ix(m->a, 0), 2, v,
                       names);
}

/* The row (column) in the tile of repeat positions o, i of warp w, lane l: the
 * composition's task index ((w * O + o) * 4 + l) * I + i. */
static hc_expr *tile_pos(hc_arena *a, hc_expr *w, int64_t O, hc_expr *o, int64_t L, hc_expr *l,
                         int64_t I, hc_expr *i) {
    return hc_add(a, hc_mul(a, hc_add(a, hc_mul(a, hc_add(a, hc_mul(a, w, ix(a, O)), o), ix(a, L)), l),
                            ix(a, I)),
                  i);
}

static void compute_step(mm_build *m, hc_expr *buf) {
    hc_arena *a = m->a;
    const mm_cfg *c = m->c;
    hc_expr *wr, *wc, *lr, *lc;
    hc_var *kk = hc_b_for_begin(m->b, "kk", ix(a, c->bk), hc_unroll(0));
    open_thread(m, &wr, &wc, &lr, &lc);
    hc_var *r[2];
    open_repeat(m, c->om, c->im, r, "om", "im"); /* A fragment */
    {
        hc_expr *row = tile_pos(a, wr, c->om, hc_ref(a, r[0]), 4, lr, c->im, hc_ref(a, r[1]));
        hc_expr *fi = hc_add(a, hc_mul(a, hc_ref(a, r[0]), ix(a, c->im)), hc_ref(a, r[1]));
        hc_b_store(m->b, m->af, 1, &fi, hc_load(a, m->As, 3, (hc_expr *[]){buf, hc_ref(a, kk), row}));
    }
    hc_b_end(m->b);
    open_repeat(m, c->on, c->in, r, "on", "in"); /* B fragment */
    {
        hc_expr *col = tile_pos(a, wc, c->on, hc_ref(a, r[0]), 8, lc, c->in, hc_ref(a, r[1]));
        hc_expr *fj = hc_add(a, hc_mul(a, hc_ref(a, r[0]), ix(a, c->in)), hc_ref(a, r[1]));
        hc_b_store(m->b, m->bf, 1, &fj, hc_load(a, m->Bs, 3, (hc_expr *[]){buf, hc_ref(a, kk), col}));
    }
    hc_b_end(m->b);
    hc_var *p[2];
    open_repeat(m, c->om * c->im, c->on * c->in, p, "fi", "fj"); /* the outer product */
    {
        hc_expr *i = hc_ref(a, p[0]), *j = hc_ref(a, p[1]);
        hc_expr *prod = hc_mul(a, hc_load(a, m->af, 1, &i), hc_load(a, m->bf, 1, &j));
        hc_b_store(m->b, m->acc, 2, (hc_expr *[]){i, j},
                   hc_add(a, hc_load(a, m->acc, 2, (hc_expr *[]){i, j}), prod));
    }
    hc_b_end(m->b);
    hc_b_end(m->b), hc_b_end(m->b), hc_b_end(m->b); /* lanes, warps, kk */
}

static void store_c(mm_build *m) {
    hc_arena *a = m->a;
    const mm_cfg *c = m->c;
    hc_expr *wr, *wc, *lr, *lc;
    open_thread(m, &wr, &wc, &lr, &lc);
    hc_var *ro[2], *ri[2];
    open_repeat(m, c->om, c->on, ro, "om", "on");
    open_repeat(m, c->im, c->in, ri, "im", "in");
    hc_expr *row = hc_add(a, m->m0, tile_pos(a, wr, c->om, hc_ref(a, ro[0]), 4, lr, c->im, hc_ref(a, ri[0])));
    hc_expr *col = hc_add(a, m->n0, tile_pos(a, wc, c->on, hc_ref(a, ro[1]), 8, lc, c->in, hc_ref(a, ri[1])));
    hc_expr *fi = hc_add(a, hc_mul(a, hc_ref(a, ro[0]), ix(a, c->im)), hc_ref(a, ri[0]));
    hc_expr *fj = hc_add(a, hc_mul(a, hc_ref(a, ro[1]), ix(a, c->in)), hc_ref(a, ri[1]));
    hc_b_if_begin(m->b, hc_and(a, hc_lt(a, row, ix(a, m->g->d.m)), hc_lt(a, col, ix(a, m->g->d.n))));
    hc_expr *idx[HC_MAX_DIMS];
    mm_index(a, m->g, m->C, m->bb, row, col, idx);
    hc_b_store(m->b, m->C, m->C->type->ndim, idx, hc_load(a, m->acc, 2, (hc_expr *[]){fi, fj}));
    hc_b_end(m->b);
    hc_b_end(m->b), hc_b_end(m->b), hc_b_end(m->b), hc_b_end(m->b);
}

static hc_func *mm_program(hc_arena *a, const hc_task *t, const mm_geo *g, const mm_cfg *c,
                           const char *fname) {
    hc_var *params[3];
    const hc_tnode *tn[3] = {t->inputs[0], t->inputs[1], t->outputs[0]};
    for (int i = 0; i < 3; i++)
        params[i] = hc_var_new(a, tn[i]->name,
                               hc_type_tensor_c(a, HC_F32, tn[i]->ndim, tn[i]->shape, HC_SCOPE_GLOBAL));
    hc_builder b;
    hc_builder_init(&b, a);
    mm_build m = {.a = a, .b = &b, .g = g, .c = c, .A = params[0], .B = params[1], .C = params[2],
                  .threads = cfg_threads(c)};
    int64_t BM = cfg_bm(c), BN = cfg_bn(c), BK = c->bk;
    int64_t gm = hc_cdiv(g->d.m, BM), gn = hc_cdiv(g->d.n, BN), KT = hc_cdiv(g->d.k, BK);
    int64_t tm = c->om * c->im, tnn = c->on * c->in;
    hc_b_comment(&b, hc_arena_printf(a, "matmul %lldx%lldx%lld (batch %lld): %lldx%lld tiles of "
                                     "spatial(%d,%d).repeat(%d,%d).spatial(4,8).repeat(%d,%d), BK %lld",
                                     (long long)g->d.m, (long long)g->d.n, (long long)g->d.k,
                                     (long long)g->batch, (long long)BM, (long long)BN, c->wm,
                                     c->wn, c->om, c->on, c->im, c->in, (long long)BK));
    hc_var *blk[3];
    const char *bnames[3] = {"bb", "bi", "bj"};
    hc_b_for_map_begin(&b, hc_map_spatial(a, 3, (int64_t[]){g->batch, gm, gn}),
                       hc_ref(a, hc_var_builtin(a, HC_BUILTIN_BLOCK_IDX_X)), 3, blk, bnames);
    m.bb = hc_ref(a, blk[0]);
    m.m0 = hc_mul(a, hc_ref(a, blk[1]), ix(a, BM));
    m.n0 = hc_mul(a, hc_ref(a, blk[2]), ix(a, BN));
    m.As = hc_b_declare(&b, "As", hc_type_tensor_c(a, HC_F32, 3, (int64_t[]){2, BK, BM + AS_PAD},
                                                   HC_SCOPE_SHARED), NULL);
    m.Bs = hc_b_declare(&b, "Bs", hc_type_tensor_c(a, HC_F32, 3, (int64_t[]){2, BK, BN}, HC_SCOPE_SHARED), NULL);
    m.acc = hc_b_declare(&b, "acc", hc_type_tensor_c(a, HC_F32, 2, (int64_t[]){tm, tnn}, HC_SCOPE_REGISTER), NULL);
    m.af = hc_b_declare(&b, "af", hc_type_tensor_c(a, HC_F32, 1, &tm, HC_SCOPE_REGISTER), NULL);
    m.bf = hc_b_declare(&b, "bf", hc_type_tensor_c(a, HC_F32, 1, &tnn, HC_SCOPE_REGISTER), NULL);
    { /* acc = 0 */
        hc_var *p[2];
        open_repeat(&m, tm, tnn, p, "fi", "fj");
        hc_b_store(&b, m.acc, 2, (hc_expr *[]){hc_ref(a, p[0]), hc_ref(a, p[1])}, hc_f32(a, 0));
        hc_b_end(&b);
    }
    load_tiles(&m, ix(a, 0), ix(a, 0));
    hc_b_emit(&b, hc_barrier(a, HC_SCOPE_SHARED));
    hc_var *kt = hc_b_for_begin(&b, "kt", ix(a, KT), hc_serial());
    hc_expr *cur = hc_mod(a, hc_ref(a, kt), ix(a, 2));
    hc_b_if_begin(&b, hc_lt(a, hc_add(a, hc_ref(a, kt), ix(a, 1)), ix(a, KT)));
    load_tiles(&m, hc_sub(a, ix(a, 1), cur), hc_mul(a, hc_add(a, hc_ref(a, kt), ix(a, 1)), ix(a, BK)));
    hc_b_end(&b);
    compute_step(&m, cur);
    hc_b_emit(&b, hc_barrier(a, HC_SCOPE_SHARED));
    hc_b_end(&b); /* kt */
    store_c(&m);
    hc_b_end(&b); /* blocks */
    hc_stmt *body = hc_builder_finish(&b);
    return hc_func_new(a, fname, HC_FN_CUDA_KERNEL, 3, params, body);
}

/* ---- the template ------------------------------------------------------------------- */
static int space_matmul(const hc_node *n, const hc_target *t, int level) {
    mm_geo g;
    return mm_geometry(n, &g) ? mm_space(t, &g, level, NULL, 0) : 0;
}

static hc_func *schedule_matmul(hc_arena *a, const hc_node *n, const hc_task *t,
                                const hc_target *target, const char *fname,
                                const hc_sched_opts *opts, hc_error *err) {
    mm_geo g;
    if (!mm_geometry(n, &g) || t->ninputs != 2 || t->noutputs != 1) return NULL;
    if (g.d.m == 0 || g.d.n == 0 || g.batch == 0) return NULL; /* nothing to compute */
    int level = opts ? opts->level : 0, cand = opts ? opts->candidate : 0;
    int count = mm_space(target, &g, level, NULL, 0);
    if (cand < 0 || cand >= count) {
        hc_error_set(err, HC_ERR_INVALID, "node '%s': matmul candidate %d of %d at level %d",
                     n->name, cand, count, level);
        return NULL;
    }
    mm_cfg *all = hc_xmalloc(sizeof *all * (size_t)count);
    mm_space(target, &g, level, all, count);
    mm_cfg c = all[cand];
    free(all);
    return mm_program(a, t, &g, &c, fname);
}

const hc_template hc_gpu_matmul_template = {"matmul", HC_OPK_MATMUL, schedule_matmul,
                                            space_matmul, NULL};
