/* conv_dw_gpu.c — the depthwise conv template for the GPU targets (2-D convs whose output
 * channels each read one input channel: groups == input channels, any multiplier).
 *
 * A block computes a TH x TW tile of one output channel of one image, a thread per output
 * pixel (spatial(TH, TW) on threadIdx). The input window the tile needs,
 * ((TH-1)*sh + (KH-1)*dh + 1) x ((TW-1)*sw + (KW-1)*dw + 1), is copied global -> shared
 * once by all the block's threads (a mapping over the window, consecutive threads on
 * consecutive columns: coalesced; padding and the image's edge read as 0), so each input
 * element is read from global memory once per tile instead of KH*KW times. After a
 * barrier each thread sums its KH x KW window from shared memory with the channel's
 * weights (one address for the whole block: broadcast) and stores its pixel once (tails
 * guarded): bias, ReLU6 and the other epilogues fuse into that store.
 *
 * The space is the tile shape, pruned by the device's threads per block and shared memory;
 * the default is the smallest tile of up to 256 threads that covers the output (in
 * powers of two), so small late-layer outputs (7 x 7) do not run mostly idle threads. */
#include <string.h>

#include "graph/ops/nn_internal.h"
#include "ir/mapping.h"
#include "target/gpu/gpu.h"
#include "target/gpu/templates/templates_gpu.h"

typedef struct dw_geo {
    hc_nn_window w;
    int64_t n, c, m, mg, oh, ow;
    bool bias;
} dw_geo;

typedef struct dw_cfg {
    int th, tw;
} dw_cfg;

static bool dw_geometry(const hc_node *n, dw_geo *g) {
    int64_t cg = 0, mg = 0, m = 0;
    if (n->op != HC_OPK_CONV || hc_nn_conv_geometry(n, false, &g->w, &cg, &mg, &m, NULL) != HC_OK)
        return false;
    if (hc_nn_window_forward(n, &g->w, false, NULL) != HC_OK || g->w.nsp != 2 || cg != 1) return false;
    const hc_tensor *x = hc_nn_in(n, 0);
    if (x->dtype != HC_F32 || hc_nn_in(n, 1)->dtype != HC_F32 || x->ndim != 4) return false;
    g->n = x->shape[0], g->c = x->shape[1], g->m = m, g->mg = mg;
    g->oh = g->w.out[0], g->ow = g->w.out[1];
    g->bias = n->ninputs > 2 && n->inputs[2];
    return g->n > 0 && g->m > 0 && g->oh > 0 && g->ow > 0;
}

static int64_t win(const dw_geo *g, int d, int t) {
    return (int64_t)(t - 1) * g->w.stride[d] + (g->w.kernel[d] - 1) * g->w.dilation[d] + 1;
}

static bool cfg_fits(const dw_cfg *c, const dw_geo *g, const hc_target *t) {
    int maxt = t->caps.max_threads_per_block > 0 ? t->caps.max_threads_per_block : 1024;
    int64_t smem = t->caps.smem_per_block > 0 ? t->caps.smem_per_block : 48 * 1024;
    return c->th * c->tw <= maxt && win(g, 0, c->th) * win(g, 1, c->tw) * 4 <= smem;
}

static int pow2_at_least(int64_t x, int cap) {
    int p = 1;
    while (p < cap && p < x) p *= 2;
    return p;
}

static int dw_space(const dw_geo *g, const hc_target *t, int level, dw_cfg *out, int cap) {
    int tw = pow2_at_least(g->ow, 32), th = pow2_at_least(g->oh, 256 / tw);
    dw_cfg def = {th, tw};
    int n = 0;
    if (cfg_fits(&def, g, t)) {
        if (n < cap) out[n] = def;
        n++;
    }
    if (level == 0) return n;
    static const int tiles[][2] = {{8, 32}, {16, 16}, {4, 64}, {16, 32}, {32, 32}, {8, 8}, {4, 32}};
    for (size_t i = 0; i < HC_ARRAY_LEN(tiles); i++) {
        dw_cfg c = {tiles[i][0], tiles[i][1]};
        if ((c.th == def.th && c.tw == def.tw) || !cfg_fits(&c, g, t)) continue;
        if (n < cap) out[n] = c;
        n++;
    }
    return n;
}

static hc_expr *ix(hc_arena *a, int64_t v) { return hc_int(a, v); }

static hc_func *dw_program(hc_arena *a, const hc_task *task, const dw_geo *g, const dw_cfg *c,
                           const char *fname) {
    int np = task->ninputs + 1;
    hc_var *params[4];
    for (int i = 0; i < np; i++) {
        const hc_tnode *tn = i < task->ninputs ? task->inputs[i] : task->outputs[0];
        params[i] = hc_var_new(a, tn->name, hc_type_tensor_c(a, HC_F32, tn->ndim, tn->shape,
                                                             HC_SCOPE_GLOBAL));
    }
    hc_var *X = params[0], *W = params[1], *B = g->bias ? params[2] : NULL, *Y = params[np - 1];
    const hc_nn_window *w = &g->w;
    int64_t IH = win(g, 0, c->th), IW = win(g, 1, c->tw);
    int64_t gy = hc_cdiv(g->oh, c->th), gx = hc_cdiv(g->ow, c->tw);
    int threads = c->th * c->tw;
    hc_builder b;
    hc_builder_init(&b, a);
    hc_b_comment(&b, hc_arena_printf(a, "depthwise conv: %dx%d output tiles, %lldx%lld input "
                                     "window in shared memory", c->th, c->tw, (long long)IH,
                                     (long long)IW));
    hc_var *blk[4];
    const char *bn[4] = {"bn", "bm", "by", "bx"};
    hc_b_for_map_begin(&b, hc_map_spatial(a, 4, (int64_t[]){g->n, g->m, gy, gx}),
                       hc_ref(a, hc_var_builtin(a, HC_BUILTIN_BLOCK_IDX_X)), 4, blk, bn);
    hc_expr *nn = hc_ref(a, blk[0]), *mm = hc_ref(a, blk[1]);
    hc_expr *ch = g->mg > 1 ? hc_div(a, mm, ix(a, g->mg)) : mm; /* the input channel */
    hc_expr *oy0 = hc_mul(a, hc_ref(a, blk[2]), ix(a, c->th));
    hc_expr *ox0 = hc_mul(a, hc_ref(a, blk[3]), ix(a, c->tw));
    /* the window's first input row and column */
    hc_expr *iy0 = hc_sub(a, hc_mul(a, oy0, ix(a, w->stride[0])), ix(a, w->pad_begin[0]));
    hc_expr *ix0 = hc_sub(a, hc_mul(a, ox0, ix(a, w->stride[1])), ix(a, w->pad_begin[1]));
    hc_var *S = hc_b_declare(&b, "xs", hc_type_tensor_c(a, HC_F32, 2, (int64_t[]){IH, IW},
                                                         HC_SCOPE_SHARED), NULL);
    hc_expr *tid = hc_ref(a, hc_var_builtin(a, HC_BUILTIN_THREAD_IDX_X));
    /* the window: a repeat over rows of a spatial over columns, all threads */
    int64_t cols = HC_MIN(IW, threads), rows = threads / cols;
    const hc_mapping *cp = hc_map_compose(a, hc_map_repeat2(a, hc_cdiv(IH, rows), hc_cdiv(IW, cols)),
                                          hc_map_spatial2(a, rows, cols));
    hc_var *v[2];
    const char *cn[2] = {"wy", "wx"};
    hc_b_for_map_begin(&b, cp, tid, 2, v, cn);
    {
        hc_expr *wy = hc_ref(a, v[0]), *wx = hc_ref(a, v[1]);
        hc_b_if_begin(&b, hc_and(a, hc_lt(a, wy, ix(a, IH)), hc_lt(a, wx, ix(a, IW))));
        hc_expr *iy = hc_add(a, iy0, wy), *ixx = hc_add(a, ix0, wx);
        hc_expr *ok = hc_and(a, hc_and(a, hc_le(a, ix(a, 0), iy), hc_lt(a, iy, ix(a, w->in[0]))),
                             hc_and(a, hc_le(a, ix(a, 0), ixx), hc_lt(a, ixx, ix(a, w->in[1]))));
        hc_expr *ld = hc_load(a, X, 4, (hc_expr *[]){nn, ch, iy, ixx});
        hc_b_store(&b, S, 2, (hc_expr *[]){wy, wx}, hc_select(a, ok, ld, hc_f32(a, 0)));
        hc_b_end(&b);
    }
    hc_b_end(&b);
    hc_b_emit(&b, hc_barrier(a, HC_SCOPE_SHARED));
    hc_var *t[2];
    const char *tn[2] = {"ty", "tx"};
    hc_b_for_map_begin(&b, hc_map_spatial2(a, c->th, c->tw), tid, 2, t, tn);
    {
        hc_expr *ty = hc_ref(a, t[0]), *tx = hc_ref(a, t[1]);
        hc_expr *oy = hc_add(a, oy0, ty), *ox = hc_add(a, ox0, tx);
        hc_b_if_begin(&b, hc_and(a, hc_lt(a, oy, ix(a, g->oh)), hc_lt(a, ox, ix(a, g->ow))));
        hc_expr *init = B ? hc_load(a, B, 1, &mm) : hc_f32(a, 0);
        hc_var *acc = hc_b_declare(&b, "acc", hc_type_scalar(HC_F32), init);
        hc_var *k[2];
        const char *kn[2] = {"kh", "kw"};
        hc_loop_attr u[2] = {hc_unroll(0), hc_unroll(0)};
        hc_b_for_map_begin(&b, hc_map_repeat(a, 2, (int64_t[]){w->kernel[0], w->kernel[1]}, u),
                           ix(a, 0), 2, k, kn);
        {
            hc_expr *kh = hc_ref(a, k[0]), *kw = hc_ref(a, k[1]);
            hc_expr *sy = hc_add(a, hc_mul(a, ty, ix(a, w->stride[0])), hc_mul(a, kh, ix(a, w->dilation[0])));
            hc_expr *sx = hc_add(a, hc_mul(a, tx, ix(a, w->stride[1])), hc_mul(a, kw, ix(a, w->dilation[1])));
            hc_expr *prod = hc_mul(a, hc_load(a, S, 2, (hc_expr *[]){sy, sx}),
                                   hc_load(a, W, 4, (hc_expr *[]){mm, ix(a, 0), kh, kw}));
            hc_b_assign(&b, acc, hc_add(a, hc_ref(a, acc), prod));
        }
        hc_b_end(&b);
        hc_b_store(&b, Y, 4, (hc_expr *[]){nn, mm, oy, ox}, hc_ref(a, acc));
        hc_b_end(&b);
    }
    hc_b_end(&b);
    hc_b_end(&b); /* blocks */
    return hc_func_new(a, fname, HC_FN_CUDA_KERNEL, np, params, hc_builder_finish(&b));
}

static int space_dw(const hc_node *n, const hc_target *t, int level) {
    dw_geo g;
    return dw_geometry(n, &g) ? dw_space(&g, t, level, NULL, 0) : 0;
}

static hc_func *schedule_dw(hc_arena *a, const hc_node *n, const hc_task *task,
                            const hc_target *target, const char *fname,
                            const hc_sched_opts *opts, hc_error *err) {
    dw_geo g;
    if (!dw_geometry(n, &g) || task->noutputs != 1 || task->ninputs != (g.bias ? 3 : 2)) return NULL;
    int level = opts ? opts->level : 0, cand = opts ? opts->candidate : 0;
    dw_cfg all[16];
    int count = dw_space(&g, target, level, all, 16);
    if (count == 0) return NULL; /* no tile fits this device: the auto-scheduler takes it */
    if (cand < 0 || cand >= count) {
        hc_error_set(err, HC_ERR_INVALID, "node '%s': depthwise candidate %d of %d at level %d",
                     n->name, cand, count, level);
        return NULL;
    }
    return dw_program(a, task, &g, &all[cand], fname);
}

const hc_template hc_gpu_conv_dw_template = {"conv_dw", HC_OPK_CONV, schedule_dw, space_dw, NULL};
