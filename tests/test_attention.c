/* test_attention.c — the fused attention op ATTENTION_FUSED (src/graph/ops/nn_attention.c)
 * and its CPU template (src/target/cpu/templates/attention_cpu.c):
 *  1. every candidate of the template's levels 0 and 1 (and a sample of level 2), plus
 *     hand-made configs (1 and 3 threads, small row chunks, both Q K^T forms), compiled
 *     and run against the reference interpreter on the op's Task, on awkward shapes: one
 *     query row, primes (7, 13, 131), keys that are not a multiple of the key tile, head
 *     sizes 1, 17, 64, 80, GQA, causal with an offset, windows, bias broadcasts, rows
 *     whose bias is all -inf, nonpad (0, partial, full); outputs pre-filled with NaN;
 *     on injected AVX-512 (16 lanes) and AVX2 (8 lanes) targets (the AVX-512 one only
 *     where the host runs it);
 *     the op's Task itself also through the CPU auto-scheduler (plain C);
 *  2. the space (default first, no duplicates, all valid, `max` bounds the writes) and
 *     the hook's fallbacks (f64, the plain-C target: no template);
 *  3. the lower_attention pass: ONNX Attention becomes one ATTENTION_FUSED node on the CPU
 *     (f32) and keeps the two matmuls around ATTENTION_CORE on f64 and on a GPU target;
 *  4. the fuse_attention pass: MatMul(Q, Transpose(K)) / c + mask -> Softmax -> MatMul(P, V)
 *     (and Mul by a scalar, no mask, the mask first) becomes one ATTENTION_FUSED node, the
 *     reference evaluator agreeing before and after; a probability read elsewhere, a
 *     softmax over another axis, a non-constant scale and f64 are left alone.
 * tests/test_gpu.c runs the Task's GPU program (the auto-scheduler's) on PoCL. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "target/cpu/cpu.h"
#include "target/cpu/jit.h"
#include "target/cpu/templates/attention.h"
#include "passes/pass_util.h"
#include "test.h"

static hc_rng rng = {19};

typedef struct acase {
    const char *name;
    int64_t B, Hq, Hk, Sq, T, D, Dv;
    int bias;            /* 0 none; 1 [B, Hq, Sq, T]; 2 [1, 1, 1, T]; 3 [B, 1, Sq, 1]; 4 [1, Hq, Sq, T] */
    bool dead;           /* some bias rows all -inf */
    bool nonpad;         /* nonpad = {0, T/2, T, ...} per batch */
    bool causal;
    int64_t offset, left, right;
    double softcap;
} acase;

static const acase cases[] = {
    {"bert_s16_d64", 1, 4, 4, 16, 16, 64, 64, 0, false, false, false, 0, -1, -1, 0},
    {"decode_t37", 2, 4, 4, 1, 37, 64, 64, 0, false, false, false, 0, -1, -1, 0},
    {"primes_7_13", 1, 3, 3, 7, 13, 17, 17, 1, false, false, false, 0, -1, -1, 0},
    {"d1_dv5", 2, 2, 1, 5, 11, 1, 5, 2, false, false, false, 0, -1, -1, 0},
    {"d80_t131", 1, 2, 2, 13, 131, 80, 80, 0, false, false, false, 0, -1, -1, 0},
    {"gqa_causal_off", 2, 6, 2, 7, 13, 8, 3, 0, false, false, true, 6, -1, -1, 0},
    {"causal_square", 1, 2, 2, 131, 131, 16, 16, 0, false, false, true, 0, -1, -1, 0},
    {"window_lr", 1, 2, 1, 19, 23, 9, 12, 1, false, false, false, 4, 3, 2, 0},
    {"window_left_causal", 1, 1, 1, 29, 29, 32, 32, 0, false, false, true, 0, 5, -1, 0},
    {"dead_rows_softcap", 2, 2, 2, 9, 20, 16, 24, 3, true, false, false, 0, -1, -1, 2.0},
    {"dead_full_bias", 1, 3, 3, 6, 17, 5, 7, 4, true, false, false, 0, -1, -1, 0},
    {"nonpad_causal", 3, 2, 2, 4, 19, 12, 12, 0, false, true, true, 0, -1, -1, 0},
    {"nonpad_bias_decode", 3, 4, 2, 1, 33, 64, 64, 2, false, true, false, 0, -1, -1, 0},
    {"one_key", 1, 2, 1, 17, 1, 8, 4, 1, true, false, false, 0, -1, -1, 0},
};

static void bias_shape(const acase *k, int64_t *bs) {
    const int64_t full[4] = {k->B, k->Hq, k->Sq, k->T};
    static const int mask[5][4] = {{0}, {1, 1, 1, 1}, {0, 0, 0, 1}, {1, 0, 1, 0}, {0, 1, 1, 1}};
    for (int d = 0; d < 4; d++) bs[d] = mask[k->bias][d] ? full[d] : 1;
}

static hc_node *attn_node(hc_graph *g, const acase *k, hc_dtype dt, double scale, hc_error *err) {
    hc_tensor *in[5] = {
        hc_graph_add_input(g, "Q", dt, 4, (int64_t[]){k->B, k->Hq, k->Sq, k->D}),
        hc_graph_add_input(g, "K", dt, 4, (int64_t[]){k->B, k->Hk, k->T, k->D}),
        hc_graph_add_input(g, "V", dt, 4, (int64_t[]){k->B, k->Hk, k->T, k->Dv}), NULL, NULL};
    int64_t bs[4];
    bias_shape(k, bs);
    if (k->bias) in[3] = hc_graph_add_input(g, "bias", dt, 4, bs);
    if (k->nonpad) in[4] = hc_graph_add_input(g, "nonpad", HC_I64, 1, (int64_t[]){k->B});
    int nin = k->nonpad ? 5 : k->bias ? 4 : 3;
    hc_attr at[6] = {{.name = "scale", .kind = HC_ATTR_FLOAT, .f = scale},
                     {.name = "softcap", .kind = HC_ATTR_FLOAT, .f = k->softcap},
                     {.name = "causal", .kind = HC_ATTR_INT, .i = k->causal},
                     {.name = "offset", .kind = HC_ATTR_INT, .i = k->offset},
                     {.name = "left", .kind = HC_ATTR_INT, .i = k->left},
                     {.name = "right", .kind = HC_ATTR_INT, .i = k->right}};
    hc_node *n = hc_graph_add_node(g, HC_OPK_ATTENTION_FUSED, k->name, nin, in, 0, NULL, 6, at, err);
    if (!n) return NULL;
    return hc_op_get(HC_OPK_ATTENTION_FUSED)->infer(n, err) == HC_OK ? n : NULL;
}

static float *rand_floats(int64_t n) {
    float *p = malloc(sizeof(float) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) p[i] = (float)hc_rng_uniform(&rng, -2, 2);
    return p;
}

#define MAX_FUNCS 64

static int programs_run;

/* Build the n programs into one library, run each on the inputs with Y pre-filled with NaN
 * and compare with the interpreter's result of t. */
static void check_programs(hc_arena *a, const char *label, const hc_target *tg, const hc_task *t,
                           int nin, void *const *in, int64_t ny, int n, hc_func *const *f) {
    hc_error err = {0};
    float *ref = malloc(sizeof(float) * (size_t)(ny + 1)), *out = malloc(sizeof(float) * (size_t)(ny + 1));
    for (int64_t j = 0; j < ny; j++) ref[j] = NAN;
    hc_status st = hc_interpret_task(t, in, (void *[]){ref}, &err);
    CHECK_MSG(st == HC_OK, "%s: interpreter: %s", label, err.msg);
    char *src = hc_codegen_c(a, hc_module_new(a, "attn", n, f), tg);
    hc_jit_lib *lib = NULL;
    hc_jit_options o = {.cflags = tg->cflags};
    hc_status bst = hc_jit_build_parallel(1, (const char *const *)&src, &o, 0, &lib, &err);
    CHECK_MSG(bst == HC_OK, "%s: build: %s", label, err.msg);
    free(src);
    for (int i = 0; st == HC_OK && bst == HC_OK && i < n; i++) {
        for (int64_t j = 0; j < ny; j++) out[j] = NAN; /* every element must be written */
        void *args[8];
        for (int j = 0; j < nin; j++) args[j] = in[j];
        args[nin] = out;
        hc_packed_fn fn =
            (hc_packed_fn)hc_jit_symbol(lib, hc_arena_printf(a, "%s__packed", f[i]->name));
        CHECK(fn != NULL);
        if (!fn) continue;
        fn(args);
        programs_run++;
        double e = max_rel_err(out, ref, ny);
        CHECK_MSG(e <= 1e-4, "%s: %s: max relative error %g", label, f[i]->name, e);
    }
    if (lib) hc_jit_close(lib);
    free(ref);
    free(out);
}

static void run_case(const acase *k, const hc_target *tg, const char *tname) {
    hc_error err = {0};
    hc_graph *g = hc_graph_new("attention", 23);
    double scale = 1.0 / sqrt((double)k->D);
    hc_node *n = attn_node(g, k, HC_F32, scale, &err);
    CHECK_MSG(n != NULL, "%s: %s", k->name, err.msg);
    if (!n) {
        hc_graph_free(g);
        return;
    }
    hc_arena a;
    hc_arena_init(&a);
    hc_task *t = hc_op_get(HC_OPK_ATTENTION_FUSED)->task(&a, n, &err);
    CHECK_MSG(t != NULL, "%s: task: %s", k->name, err.msg);
    const hc_template *tp = hc_target_template(tg, HC_OPK_ATTENTION_FUSED);
    CHECK(tp && tp->schedule && tp->space);
    if (!t || !tp) {
        hc_arena_free(&a);
        hc_graph_free(g);
        return;
    }
    char label[128];
    snprintf(label, sizeof label, "%s on %s", k->name, tname);
    /* the programs: every candidate of levels 0 and 1, a few of level 2, hand-made configs */
    hc_func *f[MAX_FUNCS];
    int nf = 0;
    int counts[3];
    for (int level = 0; level <= 2; level++) {
        counts[level] = tp->space(n, tg, level);
        int step = level == 2 ? HC_MAX(counts[level] / 3, 1) : 1;
        for (int c = 0; c < counts[level] && nf < MAX_FUNCS - 8; c += step) {
            hc_sched_opts o = {.level = level, .candidate = c};
            hc_func *p = tp->schedule(&a, n, t, tg, hc_arena_printf(&a, "at_l%d_c%d", level, c),
                                      &o, &err);
            CHECK_MSG(p != NULL, "%s level %d candidate %d: %s", label, level, c, err.msg);
            if (p) f[nf++] = p;
        }
    }
    CHECK_MSG(counts[0] == 1 && counts[1] >= 2 && counts[2] >= 2,
              "%s: space sizes %d %d %d", label, counts[0], counts[1], counts[2]);
    hc_attn_shape s = {.B = k->B, .Hq = k->Hq, .Hk = k->Hk, .Sq = k->Sq, .T = k->T, .D = k->D,
                       .Dv = k->Dv, .bias = k->bias != 0, .nonpad = k->nonpad, .scale = scale,
                       .softcap = k->softcap, .causal = k->causal, .offset = k->offset,
                       .left = k->left, .right = k->right};
    bias_shape(k, s.bias_shape);
    hc_attn_config base = hc_attn_default_config(tg, &s);
    /* both Q K^T forms with 1 and 3 threads over chunks of a few rows */
    for (int v = 0; v < 4; v++) {
        hc_attn_config c = base;
        c.pack = v % 2 == 0;
        c.rq = c.pack ? 3 : 2, c.kv = c.pack ? 2 : 5, c.dv = 2;
        c.rows = v < 2 ? 3 : 4;
        c.threads = v < 2 ? 1 : 3;
        hc_func *p = hc_attn_cpu(&a, hc_arena_printf(&a, "at_hand%d", v), &s, &c, tg, &err);
        CHECK_MSG(p != NULL, "%s hand %d: %s", label, v, err.msg);
        if (p) f[nf++] = p;
    }
    /* inputs: the bias with -inf entries (whole rows where k->dead), nonpad 0, T/2, T */
    const hc_tnode *const *ti = (const hc_tnode *const *)t->inputs;
    void *in[5];
    for (int i = 0; i < t->ninputs; i++) {
        int64_t numel = 1;
        for (int d = 0; d < ti[i]->ndim; d++) numel *= ti[i]->shape[d];
        if (ti[i]->dtype == HC_I64) {
            int64_t *np = malloc(sizeof(int64_t) * (size_t)numel);
            for (int64_t b = 0; b < numel; b++) np[b] = (b % 3 == 0) ? 0 : b % 3 == 1 ? k->T / 2 + 1 : k->T;
            in[i] = np;
            continue;
        }
        float *x = rand_floats(numel);
        if (i == 3) { /* the bias */
            int64_t last = ti[i]->shape[3];
            for (int64_t e = 0; e < numel; e++) {
                if (hc_rng_uniform(&rng, 0, 1) < 0.2) x[e] = -INFINITY;
                if (k->dead && (e / last) % 3 == 1) x[e] = -INFINITY;
            }
        }
        in[i] = x;
    }
    int64_t ny = k->B * k->Hq * k->Sq * k->Dv;
    check_programs(&a, label, tg, t, t->ninputs, in, ny, nf, f);
    for (int i = 0; i < t->ninputs; i++) free(in[i]);
    hc_arena_free(&a);
    hc_graph_free(g);
}

/* The Task itself through the CPU auto-scheduler (what a target without the template runs),
 * on the plain-C target. */
static void run_task_case(const acase *k) {
    hc_error err = {0};
    hc_graph *g = hc_graph_new("attention", 23);
    hc_node *n = attn_node(g, k, HC_F32, 0.3, &err);
    hc_arena a;
    hc_arena_init(&a);
    hc_task *t = n ? hc_op_get(HC_OPK_ATTENTION_FUSED)->task(&a, n, &err) : NULL;
    const hc_target *sc = hc_target_cpu(HC_ISA_SCALAR);
    hc_func *f = t ? sc->auto_schedule(&a, t, sc, &err) : NULL;
    CHECK_MSG(f != NULL, "%s: auto-scheduler: %s", k->name, err.msg);
    if (f) {
        void *in[5];
        for (int i = 0; i < t->ninputs; i++) {
            int64_t numel = hc_tnode_numel(t->inputs[i]);
            if (t->inputs[i]->dtype == HC_I64) {
                int64_t *np = malloc(sizeof(int64_t) * (size_t)numel);
                for (int64_t b = 0; b < numel; b++) np[b] = (b * 5) % (k->T + 1);
                in[i] = np;
            } else {
                in[i] = rand_floats(numel);
            }
        }
        char label[96];
        snprintf(label, sizeof label, "%s auto-scheduled", k->name);
        check_programs(&a, label, sc, t, t->ninputs, in, hc_tnode_numel(t->outputs[0]), 1, &f);
        for (int i = 0; i < t->ninputs; i++) free(in[i]);
    }
    hc_arena_free(&a);
    hc_graph_free(g);
}

/* ---- 2. the space and the fallbacks ------------------------------------------------------ */
static bool cfg_eq(const hc_attn_config *x, const hc_attn_config *y) {
    return x->lanes == y->lanes && x->pack == y->pack && x->rq == y->rq && x->kv == y->kv &&
           x->dv == y->dv && x->rows == y->rows && x->threads == y->threads;
}

static void test_space(const hc_target *tg) {
    const acase *k = &cases[0];
    hc_attn_shape s = {.B = 1, .Hq = 12, .Hk = 12, .Sq = 128, .T = 128, .D = 64, .Dv = 64,
                       .scale = 0.125, .left = -1, .right = -1};
    (void)k;
    for (int level = 0; level <= 2; level++) {
        int n = hc_attn_space(tg, &s, level, NULL, 0);
        CHECK(n >= 1);
        hc_attn_config *all = calloc((size_t)n + 1, sizeof *all);
        all[n].rq = -7; /* max bounds the writes */
        CHECK_EQ_INT(hc_attn_space(tg, &s, level, all, n), n);
        CHECK(all[n].rq == -7);
        hc_attn_config d = hc_attn_default_config(tg, &s);
        CHECK(cfg_eq(&all[0], &d));
        for (int i = 0; i < n; i++) {
            hc_error e = {0};
            CHECK_MSG(hc_attn_validate(&all[i], &e) == HC_OK && hc_attn_tile_fits(tg, &all[i]),
                      "level %d candidate %d: %s", level, i, e.msg);
            for (int j = 0; j < i; j++) CHECK(!cfg_eq(&all[i], &all[j]));
        }
        free(all);
    }
    /* a decode step does not pack K^T; a prompt does */
    CHECK(hc_attn_default_config(tg, &s).pack);
    s.Sq = 1;
    CHECK(!hc_attn_default_config(tg, &s).pack);
    /* bad shapes and configs */
    hc_error e = {0};
    s.Hk = 5;
    CHECK(hc_attn_validate_shape(&s, &e) != HC_OK);
    s.Hk = 12;
    hc_attn_config c = hc_attn_default_config(tg, &s);
    c.rq = 8, c.kv = 16;
    CHECK(!hc_attn_tile_fits(tg, &c));
    hc_arena a;
    hc_arena_init(&a);
    CHECK(hc_attn_cpu(&a, "bad", &s, &c, tg, &e) == NULL && e.status == HC_ERR_INVALID);
    /* keys beyond the scratch limit: the template does not apply */
    s.T = (int64_t)HC_ATTN_MAX_SCRATCH;
    CHECK(!hc_attn_applies(tg, &s) && hc_attn_space(tg, &s, 0, NULL, 0) == 0);
    hc_arena_free(&a);
}

static void test_fallbacks(void) {
    hc_error err = {0};
    hc_graph *g = hc_graph_new("attention", 23);
    hc_node *n = attn_node(g, &cases[2], HC_F64, 0.5, &err);
    CHECK_MSG(n != NULL, "%s", err.msg);
    const hc_target *tg = hc_target_cpu(HC_ISA_AVX2);
    const hc_template *tp = hc_target_template(tg, HC_OPK_ATTENTION_FUSED);
    CHECK(tp && n && tp->space(n, tg, 0) == 0); /* f64: the auto-scheduler */
    hc_arena a;
    hc_arena_init(&a);
    hc_task *t = n ? hc_op_get(HC_OPK_ATTENTION_FUSED)->task(&a, n, &err) : NULL;
    CHECK(t != NULL && tp->schedule(&a, n, t, tg, "f64", NULL, &err) == NULL && err.status == HC_OK);
    /* the plain-C target has no vectors for it */
    hc_graph *g2 = hc_graph_new("attention", 23);
    hc_node *n2 = attn_node(g2, &cases[2], HC_F32, 0.5, &err);
    const hc_target *sc = hc_target_cpu(HC_ISA_SCALAR);
    const hc_template *tp2 = hc_target_template(sc, HC_OPK_ATTENTION_FUSED);
    CHECK(n2 && (!tp2 || tp2->space(n2, sc, 0) == 0));
    /* bad inputs are errors of the node */
    hc_graph *g3 = hc_graph_new("attention", 23);
    hc_tensor *in[4] = {hc_graph_add_input(g3, "Q", HC_F32, 4, (int64_t[]){1, 4, 3, 8}),
                        hc_graph_add_input(g3, "K", HC_F32, 4, (int64_t[]){1, 3, 5, 8}),
                        hc_graph_add_input(g3, "V", HC_F32, 4, (int64_t[]){1, 3, 5, 8}),
                        hc_graph_add_input(g3, "bias", HC_F32, 4, (int64_t[]){1, 1, 2, 5})};
    hc_node *n3 = hc_graph_add_node(g3, HC_OPK_ATTENTION_FUSED, "bad", 3, in, 0, NULL, 0, NULL, &err);
    CHECK(n3 && hc_op_get(HC_OPK_ATTENTION_FUSED)->infer(n3, &err) != HC_OK && strstr(err.msg, "bad"));
    hc_arena_free(&a);
    hc_graph_free(g);
    hc_graph_free(g2);
    hc_graph_free(g3);
}

/* ---- 3. the lower_attention pass ------------------------------------------------------------ */
static int count_op(const hc_graph *g, hc_op_kind k) {
    int c = 0;
    for (size_t i = 0; i < g->nodes.len; i++) c += g->nodes.data[i]->op == k;
    return c;
}

static void test_pass(void) {
    for (int v = 0; v < 3; v++) {
        hc_error err = {0};
        hc_dtype dt = v == 1 ? HC_F64 : HC_F32;
        hc_graph *g = hc_graph_new("attention", 23);
        hc_tensor *in[4] = {hc_graph_add_input(g, "Q", dt, 4, (int64_t[]){1, 4, 6, 8}),
                            hc_graph_add_input(g, "K", dt, 4, (int64_t[]){1, 2, 9, 8}),
                            hc_graph_add_input(g, "V", dt, 4, (int64_t[]){1, 2, 9, 8}),
                            hc_graph_add_input(g, "M", dt, 2, (int64_t[]){6, 9})};
        hc_attr at = {.name = "is_causal", .kind = HC_ATTR_INT, .i = 1};
        hc_node *n = hc_graph_add_node(g, HC_OPK_ATTENTION, "attn", 4, in, 1, NULL, 1, &at, &err);
        CHECK_MSG(n != NULL, "%s", err.msg);
        if (n) hc_graph_add_output(g, n->outputs[0]);
        hc_optimize_options o = {.target = hc_target_cpu(HC_ISA_AVX2)};
        bool runnable;
        if (v == 2) /* the GPU target (its description: no device is needed) */
            CHECK(hc_target_find("cuda:sm_90", &o.target, &runnable, &err) == HC_OK);
        CHECK_MSG(hc_pass_infer_shapes(g, &err) == HC_OK, "%s", err.msg);
        CHECK_MSG(hc_pass_lower_attention_with(g, &o, &err) == HC_OK, "%s", err.msg);
        int fused = count_op(g, HC_OPK_ATTENTION_FUSED), core = count_op(g, HC_OPK_ATTENTION_CORE);
        int mm = count_op(g, HC_OPK_MATMUL);
        if (v == 0) CHECK_MSG(fused == 1 && core == 0 && mm == 0, "f32 cpu: %d %d %d", fused, core, mm);
        else CHECK_MSG(fused == 0 && core == 1 && mm == 2, "variant %d: %d %d %d", v, fused, core, mm);
        hc_graph_free(g);
    }
}

/* ---- 4. the fuse_attention pass ------------------------------------------------------------ */
typedef struct mcase {
    const char *name;
    int scale;       /* 0 none, 1 Div by a constant, 2 Mul by a constant (first), 3 Div by an input */
    int mask;        /* 0 none, 1 Add(S, M [B, 1, 1, T]), 2 Add(M [Sq, T], S), Where(cond, S,
                        fill) with a constant cond: 3 causal [1, 1, Sq, T] fill finfo.min,
                        4 random [Sq, T] fill finfo.min, 5 random fill -inf, 6 causal fill -inf */
    bool p_output;   /* P is a graph output too */
    int64_t axis;    /* the softmax's */
    hc_dtype dt;
    bool fuses;
} mcase;

static void run_match_case(const mcase *k) {
    hc_error err = {0};
    const int64_t B = 2, H = 3, Sq = 5, T = 7, D = 8;
    /* axis 99: no axis attribute, opset 11 (default axis 1) */
    bool old = strncmp(k->name, "opset11", 7) == 0;
    hc_graph *g = hc_graph_new("match", old ? 11 : 17);
    hc_tensor *q = hc_graph_add_input(g, "Q", k->dt, 4, (int64_t[]){B, H, Sq, D});
    /* the keys as the exports have them: [B, T, H, D], transposed by (0, 2, 3, 1) */
    hc_tensor *kx = hc_graph_add_input(g, "K", k->dt, 4, (int64_t[]){B, T, H, D});
    hc_tensor *v = hc_graph_add_input(g, "V", k->dt, 4, (int64_t[]){B, H, T, D});
    hc_tensor *m = NULL, *c = NULL;
    if (k->mask == 1) m = hc_graph_add_input(g, "M", k->dt, 4, (int64_t[]){B, 1, 1, T});
    if (k->mask == 2) m = hc_graph_add_input(g, "M", k->dt, 2, (int64_t[]){Sq, T});
    if (k->scale == 3) c = hc_graph_add_input(g, "c", k->dt, 1, (int64_t[]){1});
    else c = hc_pass_const_float(g, "c", k->dt, 0, NULL, (double[]){2.5});
    hc_attr perm = {.name = "perm", .kind = HC_ATTR_INTS, .n = 4, .ints = (int64_t[]){0, 2, 3, 1}};
    hc_node *kt = hc_graph_add_node(g, HC_OPK_TRANSPOSE, "kt", 1, &kx, 0, NULL, 1, &perm, &err);
    hc_node *s = hc_graph_add_node(g, HC_OPK_MATMUL, "qk", 2, (hc_tensor *[]){q, kt->outputs[0]},
                                   0, NULL, 0, NULL, &err);
    hc_tensor *z = s->outputs[0];
    if (k->scale == 1 || k->scale == 3)
        z = hc_graph_add_node(g, HC_OPK_DIV, "div", 2, (hc_tensor *[]){z, c}, 0, NULL, 0, NULL, &err)->outputs[0];
    if (k->scale == 2)
        z = hc_graph_add_node(g, HC_OPK_MUL, "mul", 2, (hc_tensor *[]){c, z}, 0, NULL, 0, NULL, &err)->outputs[0];
    if (k->mask == 1)
        z = hc_graph_add_node(g, HC_OPK_ADD, "add", 2, (hc_tensor *[]){z, m}, 0, NULL, 0, NULL, &err)->outputs[0];
    if (k->mask == 2)
        z = hc_graph_add_node(g, HC_OPK_ADD, "add", 2, (hc_tensor *[]){m, z}, 0, NULL, 0, NULL, &err)->outputs[0];
    if (k->mask >= 3) { /* GPT-2's form */
        bool causal = k->mask == 3 || k->mask == 6;
        uint8_t cv[5 * 7];
        for (int64_t i = 0; i < Sq; i++)
            for (int64_t j = 0; j < T; j++)
                cv[i * T + j] = causal ? j <= i + T - Sq : hc_rng_uniform(&rng, 0, 1) < 0.6;
        for (int64_t j = 0; k->mask == 4 && j < T; j++) cv[j] = 0; /* row 0 masked whole */
        for (int64_t i = 0; k->mask == 5 && i < Sq; i++) cv[i * T] = 1; /* none (NaN there) */
        hc_tensor *cond = causal ? hc_graph_constant(g, "cond", HC_BOOL, 4, (int64_t[]){1, 1, Sq, T}, cv)
                                 : hc_graph_constant(g, "cond", HC_BOOL, 2, (int64_t[]){Sq, T}, cv);
        double fv = k->mask >= 5 ? -INFINITY : -3.4028234663852886e38;
        hc_tensor *fill = hc_pass_const_float(g, "fill", k->dt, 0, NULL, &fv);
        z = hc_graph_add_node(g, HC_OPK_WHERE, "where", 3, (hc_tensor *[]){cond, z, fill}, 0, NULL, 0,
                              NULL, &err)->outputs[0];
    }
    hc_attr ax = {.name = "axis", .kind = HC_ATTR_INT, .i = k->axis};
    hc_tensor *p = hc_graph_add_node(g, HC_OPK_SOFTMAX, "sm", 1, &z, 0, NULL, k->axis == 99 ? 0 : 1,
                                     &ax, &err)->outputs[0];
    hc_tensor *y = hc_graph_add_node(g, HC_OPK_MATMUL, "pv", 2, (hc_tensor *[]){p, v}, 0, NULL, 0,
                                     NULL, &err)->outputs[0];
    hc_graph_add_output(g, y);
    if (k->p_output) hc_graph_add_output(g, p);
    CHECK_MSG(hc_pass_infer_shapes(g, &err) == HC_OK, "%s: %s", k->name, err.msg);
    /* the reference before */
    int nin = (int)g->inputs.len, nout = (int)g->outputs.len;
    void *in[8], *want[2], *got[2];
    int64_t ny[2];
    size_t es = hc_dtype_size(k->dt);
    for (int i = 0; i < nin; i++) {
        hc_tensor *t = g->inputs.data[i];
        int64_t n = hc_tensor_numel(t);
        in[i] = malloc(es * (size_t)(n + 1));
        for (int64_t e = 0; e < n; e++) {
            double x = hc_rng_uniform(&rng, -2, 2);
            if (t == m && e % 5 == 1 && (k->axis == -1 || k->axis == 3)) x = -INFINITY; /* no column all -inf */
            if (t == c) x = 0.7;
            hc_elem_set(in[i], k->dt, e, x);
        }
    }
    for (int o = 0; o < nout; o++) {
        ny[o] = hc_tensor_numel(g->outputs.data[o]);
        want[o] = calloc((size_t)ny[o] + 1, es), got[o] = calloc((size_t)ny[o] + 1, es);
    }
    CHECK_MSG(hc_graph_eval_reference(g, in, want, &err) == HC_OK, "%s: %s", k->name, err.msg);
    hc_optimize_options o = {.target = hc_target_cpu(HC_ISA_AVX2)};
    CHECK_MSG(hc_graph_optimize_with(g, &o, &err) == HC_OK, "%s: %s", k->name, err.msg);
    int fused = count_op(g, HC_OPK_ATTENTION_FUSED), sm = count_op(g, HC_OPK_SOFTMAX);
    CHECK_MSG(k->fuses ? fused == 1 && sm == 0 : fused == 0 && sm == 1, "%s: %d fused, %d softmax",
              k->name, fused, sm);
    for (size_t i = 0; i < g->nodes.len; i++) { /* a causal cond is the causal attribute */
        const hc_node *f = g->nodes.data[i];
        if (f->op != HC_OPK_ATTENTION_FUSED) continue;
        bool causal = k->mask == 3 || k->mask == 6;
        CHECK_MSG(hc_node_attr_int(f, "causal", 0) == causal && (!causal || (f->ninputs == 3 &&
                  hc_node_attr_int(f, "offset", -1) == T - Sq)), "%s: causal %lld", k->name,
                  (long long)hc_node_attr_int(f, "causal", 0));
    }
    CHECK_MSG(hc_graph_eval_reference(g, in, got, &err) == HC_OK, "%s: %s", k->name, err.msg);
    for (int oi = 0; oi < nout && k->dt == HC_F32; oi++) {
        double e = max_rel_err(got[oi], want[oi], ny[oi]);
        CHECK_MSG(e < 1e-5, "%s: output %d differs by %g", k->name, oi, e);
    }
    for (int i = 0; i < nin; i++) free(in[i]);
    for (int oi = 0; oi < nout; oi++) free(want[oi]), free(got[oi]);
    hc_graph_free(g);
}

static void test_match(void) {
    static const mcase mc[] = {
        {"div_mask", 1, 1, false, -1, HC_F32, true},
        {"mul_first_no_mask", 2, 0, false, 3, HC_F32, true},
        {"no_scale_mask_first_2d", 0, 2, false, -1, HC_F32, true},
        {"probs_read_elsewhere", 1, 1, true, -1, HC_F32, false},
        {"softmax_axis_2", 1, 1, false, 2, HC_F32, false},
        {"scale_not_constant", 3, 1, false, -1, HC_F32, false},
        {"f64", 1, 1, false, -1, HC_F64, false},
        {"opset11_default_axis", 1, 1, false, 99, HC_F32, false},
        {"opset11_axis_3", 1, 1, false, 3, HC_F32, true},
        {"gpt2_causal_where", 1, 3, false, -1, HC_F32, true},
        {"where_random_min", 2, 4, false, -1, HC_F32, true},
        {"where_random_inf", 1, 5, false, -1, HC_F32, false},
        {"where_causal_inf", 1, 6, false, -1, HC_F32, true},
    };
    for (size_t i = 0; i < HC_ARRAY_LEN(mc); i++) run_match_case(&mc[i]);
}

int main(void) {
    setenv("HIDETC_VERIFY", "1", 1);
    const hc_target *host = hc_target_host();
    const hc_target *tg[2] = {hc_target_cpu(HC_ISA_AVX512), hc_target_cpu(HC_ISA_AVX2)};
    const char *names[2] = {"avx512", "avx2"};
    test_fallbacks();
    test_pass();
    test_match();
    run_task_case(&cases[5]);  /* GQA, causal with an offset */
    run_task_case(&cases[9]);  /* softcap, -inf rows */
    run_task_case(&cases[11]); /* nonpad */
    for (int i = 0; i < 2; i++) {
        hc_isa want = i == 0 ? HC_ISA_AVX512 : HC_ISA_AVX2; /* hc_target_cpu clamps to the CPU */
        if (tg[i]->caps.isa != want || want > host->caps.isa) {
            printf("attention: %s skipped (the host cannot run it)\n", names[i]);
            continue;
        }
        CHECK_EQ_INT(hc_target_f32_lanes(tg[i]), i == 0 ? 16 : 8);
        test_space(tg[i]);
        for (size_t k = 0; k < HC_ARRAY_LEN(cases); k++) run_case(&cases[k], tg[i], names[i]);
    }
    printf("attention: %d programs run against the interpreter\n", programs_run);
    TEST_DONE();
}
