/* test_conv_dw.c — the grouped / depthwise conv template (src/target/cpu/templates/conv_dw_cpu.c)
 * through Conv's schedule hooks: every candidate of levels 0..2, and explicit thread
 * counts, compiled with the JIT and checked against the reference interpreter on awkward
 * shapes (1x1, primes, tails, strides, dilation, asymmetric pads, multipliers, batches);
 * the access contract of the program; and the fallbacks (NULL for what it does not take). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "target/cpu/cpu.h"
#include "graph/graph.h"
#include "target/cpu/jit.h"
#include "target/cpu/templates/conv_dw.h"
#include "test.h"

static hc_error err;

/* Conv's template on the CPU target (target/cpu/templates/registry.c): the direct conv
 * template's schedule and space. A missing template is a failure. */
static const hc_template *conv_template(const hc_target *tg) {
    const hc_template *p = hc_target_template(tg, HC_OPK_CONV);
    CHECK_MSG(p && p->op == HC_OPK_CONV && p->schedule && p->space, "no Conv template on %s",
              tg->name);
    return p && p->schedule && p->space ? p : NULL;
}
static hc_func *schedule_conv(hc_arena *a, const hc_node *n, const hc_task *t,
                              const hc_target *tg, const char *fname, const hc_sched_opts *o,
                              hc_error *e) {
    const hc_template *p = conv_template(tg);
    return p ? p->schedule(a, n, t, tg, fname, o, e) : NULL;
}
static int space_conv(const hc_node *n, const hc_target *tg, int level) {
    const hc_template *p = conv_template(tg);
    return p ? p->space(n, tg, level) : 0;
}

static hc_rng rng = {77};

#define NARGS(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define INTS(nm, ...) {.name = nm, .kind = HC_ATTR_INTS, .n = NARGS(__VA_ARGS__), \
                       .ints = (int64_t[]){__VA_ARGS__}}
#define INT(nm, v) {.name = nm, .kind = HC_ATTR_INT, .i = (v)}
#define STR(nm, v) {.name = nm, .kind = HC_ATTR_STRING, .s = (v)}

typedef struct dcase {
    const char *name;
    int64_t n, c, h, w, m, group, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
    bool bias;
    const char *auto_pad; /* NULL: explicit pads */
} dcase;

/* A one-Conv graph for case k (dtype dt, rank 4 unless `one_d`). */
static hc_node *conv_node(hc_graph *g, const dcase *k, hc_dtype dt) {
    hc_tensor *in[3];
    in[0] = hc_graph_add_input(g, "x", dt, 4, (int64_t[]){k->n, k->c, k->h, k->w});
    in[1] = hc_graph_add_input(g, "w", dt, 4, (int64_t[]){k->m, k->c / k->group, k->kh, k->kw});
    if (k->bias) in[2] = hc_graph_add_input(g, "b", dt, 1, (int64_t[]){k->m});
    hc_attr at[5] = {INT("group", k->group), INTS("strides", k->sh, k->sw),
                     INTS("dilations", k->dh, k->dw), INTS("pads", k->pt, k->pl, k->pb, k->pr)};
    int na = 4;
    if (k->auto_pad) at[3] = (hc_attr)STR("auto_pad", k->auto_pad);
    hc_tensor *y = hc_graph_tensor(g, "y", dt, 0, NULL);
    hc_node *n = hc_graph_add_node(g, HC_OPK_CONV, k->name, k->bias ? 3 : 2, in, 1, &y, na, at,
                                   &err);
    HC_ASSERT_MSG(n, err.msg);
    HC_ASSERT_MSG(hc_op_get(HC_OPK_CONV)->infer(n, &err) == HC_OK, err.msg);
    return n;
}

static float *rand_buf(int64_t n) {
    float *p = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) p[i] = (float)hc_rng_uniform(&rng, -2, 2);
    return p;
}

/* ---- the access contract ---------------------------------------------------------- */
typedef struct access_scan {
    const hc_func *f;
    int y_stores, bad;
} access_scan;

static bool is_param(const access_scan *s, const hc_var *v, int i) {
    return s->f->params[i] == v;
}

static hc_expr *scan_expr(hc_mutator *m, hc_expr *e) {
    access_scan *s = m->ctx;
    int np = s->f->nparams;
    if (e->kind == HC_E_LOAD && is_param(s, e->u.load.buf, np - 1)) s->bad++; /* Y re-read */
    if (e->kind == HC_E_CALL) {
        hc_prim p = e->u.call.prim;
        if (p == HC_PRIM_VSTORE || p == HC_PRIM_VSTORE_MASK) {
            hc_expr *ptr = e->u.call.args[0];
            if (ptr->kind == HC_E_ADDRESS && is_param(s, ptr->u.load.buf, np - 1)) s->y_stores++;
            for (int i = 0; i < np - 1 && ptr->kind == HC_E_ADDRESS; i++)
                if (is_param(s, ptr->u.load.buf, i)) s->bad++; /* stores into an input */
        }
        if ((p == HC_PRIM_VLOAD || p == HC_PRIM_VLOAD_MASK) &&
            e->u.call.args[0]->kind == HC_E_ADDRESS &&
            is_param(s, e->u.call.args[0]->u.load.buf, np - 1))
            s->bad++;
    }
    return e;
}

static hc_stmt *scan_stmt(hc_mutator *m, hc_stmt *st) {
    access_scan *s = m->ctx;
    if (st->kind == HC_S_STORE)
        for (int i = 0; i < s->f->nparams; i++)
            if (is_param(s, st->u.store.buf, i)) s->bad++; /* the template only vstores Y */
    return st;
}

/* Y written only by VSTORE(_MASK) of an address, never loaded; inputs never written. */
static void check_contract(const hc_func *f) {
    access_scan s = {f, 0, 0};
    hc_mutator m = {.ctx = &s, .expr = scan_expr, .stmt = scan_stmt};
    hc_mutate_stmt(&m, f->body);
    CHECK_MSG(s.bad == 0 && s.y_stores > 0, "%s: %d bad accesses, %d stores of Y", f->name,
              s.bad, s.y_stores);
}

/* ---- one case: all candidates of levels 0..2 and explicit thread counts ------------ */
#define MAX_FUNCS 200

static void run_case(const dcase *k, const hc_target *tg) {
    hc_graph *g = hc_graph_new("dw", 13);
    hc_node *n = conv_node(g, k, HC_F32);
    const hc_op_def *d = hc_op_get(HC_OPK_CONV);
    hc_arena a;
    hc_arena_init(&a);
    hc_task *t = d->task(&a, n, &err);
    HC_ASSERT_MSG(t, err.msg);
    hc_func *fs[MAX_FUNCS];
    int nf = 0;
    int counts[3];
    for (int level = 0; level <= 2; level++) {
        counts[level] = space_conv(n, tg, level);
        /* a large level 2 (dense convs): an even sample of 24 candidates, the first and the
         * last among them */
        int step = level == 2 && counts[level] > 24 ? (counts[level] + 22) / 23 : 1;
        for (int c = 0; c < counts[level] && nf < MAX_FUNCS;
             c = c + step < counts[level] || c == counts[level] - 1 ? c + step
                                                                    : counts[level] - 1) {
            hc_sched_opts o = {.level = level, .candidate = c, .write_once = true};
            const char *fn = hc_arena_printf(&a, "dw_l%d_c%d", level, c);
            hc_func *f = schedule_conv(&a, n, t, tg, fn, &o, &err);
            CHECK_MSG(f != NULL, "%s level %d candidate %d", k->name, level, c);
            if (f) fs[nf++] = f;
        }
    }
    CHECK_MSG(counts[0] == 1 && counts[1] >= 1 && counts[2] >= counts[1], "%s: %d %d %d",
              k->name, counts[0], counts[1], counts[2]);
    /* an out-of-range candidate is an error naming the node */
    hc_sched_opts bad = {.level = 1, .candidate = counts[1]};
    err = (hc_error){0};
    CHECK(schedule_conv(&a, n, t, tg, "bad", &bad, &err) == NULL && err.status != HC_OK &&
          strstr(err.msg, k->name));
    /* the hook with NULL opts is the default config */
    hc_func *def = schedule_conv(&a, n, t, tg, "dw_default", NULL, &err);
    CHECK(def != NULL && nf + 4 <= MAX_FUNCS);
    if (def && nf < MAX_FUNCS) fs[nf++] = def;
    /* threads 1, 2 and 3 with the default register block */
    hc_conv_dw_shape s = {k->n, k->c, k->h, k->w, k->m, k->group, k->kh, k->kw, k->sh, k->sw,
                          k->dh, k->dw, 0, 0, 0, 0, n->outputs[0]->shape[2],
                          n->outputs[0]->shape[3], k->bias};
    if (!k->auto_pad) s.pt = k->pt, s.pl = k->pl, s.pb = k->pb, s.pr = k->pr;
    else { /* SAME_UPPER: the extra pad at the end */
        int64_t th = HC_MAX((s.oh - 1) * s.sh + (s.kh - 1) * s.dh + 1 - s.h, 0);
        int64_t tw = HC_MAX((s.ow - 1) * s.sw + (s.kw - 1) * s.dw + 1 - s.w, 0);
        s.pt = th / 2, s.pb = th - th / 2, s.pl = tw / 2, s.pr = tw - tw / 2;
    }
    CHECK(hc_conv_dw_validate_shape(&s, &err) == HC_OK);
    for (int th = 1; th <= 3; th++) {
        hc_conv_dw_config c = hc_conv_dw_default_config(tg, &s);
        c.threads = th;
        hc_func *f = hc_conv_dw_cpu(&a, hc_arena_printf(&a, "dw_t%d", th), &s, &c, tg, &err);
        CHECK_MSG(f != NULL, "%s threads %d: %s", k->name, th, err.msg);
        if (f && nf < MAX_FUNCS) fs[nf++] = f;
    }
    for (int i = 0; i < nf; i++) check_contract(fs[i]);

    char *src = hc_codegen_c(&a, hc_module_new(&a, "conv_dw", nf, fs), tg);
    hc_jit_lib *lib = NULL;
    CHECK_MSG(hc_jit_build(src, NULL, &lib, &err) == HC_OK, "%s: %s", k->name, err.msg);
    free(src);
    int64_t ny = hc_tensor_numel(n->outputs[0]);
    void *in[3];
    for (int i = 0; i < n->ninputs; i++) in[i] = rand_buf(hc_tensor_numel(n->inputs[i]));
    float *ref = malloc(sizeof(float) * (size_t)ny), *out = malloc(sizeof(float) * (size_t)ny);
    CHECK(hc_interpret_task(t, in, (void *[]){ref}, &err) == HC_OK);
    int wrong = 0;
    for (int i = 0; lib && i < nf; i++) {
        for (int64_t j = 0; j < ny; j++) out[j] = NAN; /* every element must be written */
        void *args[4];
        int na = 0;
        for (int j = 0; j < n->ninputs; j++) args[na++] = in[j];
        args[na++] = out;
        hc_packed_fn fn = (hc_packed_fn)hc_jit_symbol(
            lib, hc_arena_printf(&a, "%s__packed", fs[i]->name));
        CHECK(fn != NULL);
        if (!fn) continue;
        fn(args);
        double e = max_rel_err(out, ref, ny);
        if (e > 1e-4) {
            wrong++;
            fprintf(stderr, "%s (%s) %s: max error %g\n", k->name, tg->name, fs[i]->name, e);
        }
    }
    CHECK_MSG(wrong == 0, "%s: %d of %d programs wrong", k->name, wrong, nf);
    printf("%-22s isa %-6s %3d programs (levels: %d, %d, %d)\n", k->name,
           hc_isa_name(tg->caps.isa), nf, counts[0], counts[1], counts[2]);
    for (int i = 0; i < n->ninputs; i++) free(in[i]);
    free(ref), free(out);
    if (lib) hc_jit_close(lib);
    hc_arena_free(&a);
    hc_graph_free(g);
}

/*  name                   n  c   h   w   m  grp kh kw sh sw dh dw pt pl pb pr bias */
static const dcase cases[] = {
    {"dw_1x1_spatial", 1, 3, 1, 1, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, NULL},
    {"dw_7x13_k3_s1_p1", 1, 3, 7, 13, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, NULL},
    {"dw_7x13_k5_s2_p2_n3", 3, 32, 7, 13, 32, 32, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2, false, NULL},
    {"dw_13x7_k7_s1_p3", 1, 96, 13, 7, 96, 96, 7, 7, 1, 1, 1, 1, 3, 3, 3, 3, true, NULL},
    {"dw_k1_11x17", 1, 32, 11, 17, 32, 32, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, false, NULL},
    {"dw_dil2_17x19", 1, 3, 17, 19, 3, 3, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, true, NULL},
    {"dw_asym_s2_15x23", 1, 32, 15, 23, 32, 32, 3, 3, 2, 2, 1, 1, 0, 1, 2, 0, true, NULL},
    {"grp_c2_mult2_7x13", 1, 6, 7, 13, 12, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, NULL},
    {"grp_c2_s2_n3", 3, 8, 9, 11, 16, 4, 3, 3, 2, 2, 1, 1, 1, 0, 1, 2, false, NULL},
    {"dw_mult2_9x10", 1, 3, 9, 10, 6, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, NULL},
    {"dw_wide_n3_9x40", 3, 32, 9, 40, 32, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, NULL},
    {"dw_wide_s2_5x71", 1, 3, 5, 71, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, NULL},
    {"dw_tf_s2_16x16", 1, 32, 16, 16, 32, 32, 3, 3, 2, 2, 1, 1, 0, 0, 1, 1, true, NULL},
    {"dw_rect_k3x5_s1x2_d2x1", 1, 3, 11, 29, 3, 3, 3, 5, 1, 2, 2, 1, 1, 2, 3, 0, true, NULL},
    {"dw_k1x9_s3", 1, 3, 9, 37, 3, 3, 1, 9, 3, 3, 1, 1, 0, 4, 0, 4, false, NULL},
    {"dw_same_upper_8x9_s2", 1, 32, 8, 9, 32, 32, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, true, "SAME_UPPER"},
    {"dw_big_pad_5x5", 1, 3, 5, 5, 3, 3, 3, 3, 1, 1, 1, 1, 4, 5, 3, 2, true, NULL},
    /* group 1 (dense): several output channels per register block, channel tails */
    {"g1_c3_m7_k7_s2_p3", 1, 3, 23, 29, 7, 1, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, true, NULL},
    {"g1_c5_m13_k3_s1_p1", 1, 5, 17, 37, 13, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, NULL},
    {"g1_c4_m11_k3_nopad_n2", 2, 4, 13, 11, 11, 1, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, false, NULL},
    {"g1_c1_m1_k5_p2", 1, 1, 7, 19, 1, 1, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, true, NULL},
    {"g1_c6_m9_k1x7_p0x3", 1, 6, 9, 17, 9, 1, 1, 7, 1, 1, 1, 1, 0, 3, 0, 3, false, NULL},
    {"g1_c3_m8_k3_s2_asym", 1, 3, 15, 33, 8, 1, 3, 3, 2, 2, 1, 1, 0, 1, 1, 0, true, NULL},
    {"grp2_c8_m14_k3", 1, 8, 9, 21, 14, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, NULL},
    /* flat blocks by default (stride 1): a 5x5 on 35-wide rows, and a one-row kernel */
    {"g1_c6_m10_k5_p2_w35", 1, 6, 8, 35, 10, 1, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, true, NULL},
    {"g1_c4_m9_k1x3_dil2_w5", 1, 4, 3, 5, 9, 1, 1, 3, 1, 1, 1, 2, 0, 1, 0, 2, false, NULL},
};

/* ---- fallbacks: NULL (the auto-scheduler) for what the template does not take ---------- */
static void test_fallbacks(void) {
    const hc_target *tg = hc_target_host();
    hc_arena a;
    hc_arena_init(&a);
    /* f64 (group 1 and depthwise), 1-D */
    const dcase g1 = {"g1", 1, 1, 5, 5, 2, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, NULL};
    const dcase dwk = {"f64", 1, 4, 5, 5, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, NULL};
    for (int i = 0; i < 2; i++) {
        hc_graph *g = hc_graph_new("fb", 13);
        hc_node *n = conv_node(g, i ? &dwk : &g1, HC_F64);
        hc_task *t = hc_op_get(HC_OPK_CONV)->task(&a, n, &err);
        HC_ASSERT_MSG(t, err.msg);
        err = (hc_error){0};
        CHECK(schedule_conv(&a, n, t, tg, "fb", NULL, &err) == NULL && err.status == HC_OK);
        CHECK_EQ_INT(space_conv(n, tg, 1), 0);
        hc_graph_free(g);
    }
    hc_graph *g = hc_graph_new("fb1d", 13);
    hc_tensor *in[2] = {hc_graph_add_input(g, "x", HC_F32, 3, (int64_t[]){1, 4, 9}),
                        hc_graph_add_input(g, "w", HC_F32, 3, (int64_t[]){4, 1, 3})};
    hc_tensor *y = hc_graph_tensor(g, "y", HC_F32, 0, NULL);
    hc_attr at[1] = {INT("group", 4)};
    hc_node *n = hc_graph_add_node(g, HC_OPK_CONV, "conv1d", 2, in, 1, &y, 1, at, &err);
    HC_ASSERT(n && hc_op_get(HC_OPK_CONV)->infer(n, &err) == HC_OK);
    hc_task *t = hc_op_get(HC_OPK_CONV)->task(&a, n, &err);
    CHECK(t && schedule_conv(&a, n, t, tg, "fb", NULL, &err) == NULL);
    CHECK_EQ_INT(space_conv(n, tg, 2), 0);
    hc_graph_free(g);
    /* bad shapes and configs are errors, not programs */
    hc_conv_dw_shape s = {1, 4, 5, 5, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 5, 6, false};
    CHECK(hc_conv_dw_validate_shape(&s, &err) != HC_OK); /* ow should be 5 */
    s.ow = 5;
    CHECK(hc_conv_dw_validate_shape(&s, &err) == HC_OK);
    hc_conv_dw_config c = hc_conv_dw_default_config(tg, &s);
    c.rb = 0;
    CHECK(hc_conv_dw_cpu(&a, "x", &s, &c, tg, &err) == NULL && err.status != HC_OK);
    c = hc_conv_dw_default_config(tg, &s);
    c.lanes = c.lanes == 4 ? 8 : 4;
    CHECK(hc_conv_dw_cpu(&a, "x", &s, &c, tg, &err) == NULL && err.status != HC_OK);
    hc_arena_free(&a);
}

/* Candidate 0 is the default at every level; candidates are distinct. */
static void test_space(void) {
    const hc_target *tg = hc_target_host();
    hc_conv_dw_shape s = {1, 144, 56, 56, 144, 144, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 56, 56, true};
    hc_conv_dw_config d = hc_conv_dw_default_config(tg, &s), all[256];
    for (int level = 0; level <= 2; level++) {
        int n = hc_conv_dw_space(tg, &s, level, all, 256);
        CHECK(n >= 1 && n <= 256);
        CHECK(memcmp(&all[0], &d, sizeof d) == 0);
        int dups = 0;
        for (int i = 0; i < n; i++) {
            CHECK(hc_conv_dw_validate(&all[i], &err) == HC_OK);
            for (int j = 0; j < i; j++) dups += memcmp(&all[i], &all[j], sizeof d) == 0;
        }
        CHECK_EQ_INT(dups, 0);
        if (level == 0) CHECK_EQ_INT(n, 1);
        hc_sb sb;
        hc_sb_init(&sb);
        hc_conv_dw_config_print(&sb, &all[n - 1]);
        printf("level %d: %d candidates, last %s\n", level, n, hc_sb_str(&sb));
        hc_sb_free(&sb);
    }
    /* flat blocks: the default where they pad least (17-wide rows: 32 lanes a row with 16
     * lanes, 24 with 8, 19 flat), offered from level 1 for stride 1 (Inception's 35-wide
     * 5x5), never for stride 2 */
    hc_conv_dw_shape f3 = {1, 32, 17, 17, 48, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 17, 17, true};
    hc_conv_dw_shape f5 = {1, 48, 35, 35, 64, 1, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 35, 35, true};
    hc_conv_dw_shape s2 = {1, 3, 35, 35, 64, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 18, 18, true};
    /* on stated machines (the rule reads the lanes): AVX-512 (16 lanes) and AVX2 (8) take
     * flat blocks for f3; plain C (4 lanes, 16 registers: one-vector rows, 20 lanes a row
     * against 19 flat, under 5% less padding) keeps rows */
    const hc_target machines[] = {
        hc_target_cpu_describe(HC_ISA_AVX512, 2, 48 << 10, 2 << 20, 105 << 20),
        hc_target_cpu_describe(HC_ISA_AVX2, 2, 32 << 10, 1 << 20, 32 << 20),
        hc_target_cpu_describe(HC_ISA_SCALAR, 2, 32 << 10, 1 << 20, 32 << 20),
    };
    for (size_t mi = 0; mi < HC_ARRAY_LEN(machines); mi++) {
        const hc_target *m = &machines[mi];
        const char *isa = hc_isa_name(m->caps.isa);
        CHECK_MSG(hc_conv_dw_default_config(m, &f3).flat == (m->caps.isa != HC_ISA_SCALAR), "%s",
                  isa);
        CHECK_MSG(!hc_conv_dw_default_config(m, &s2).flat, "%s", isa);
        int n5 = hc_conv_dw_space(m, &f5, 1, all, 256), flat = 0, rows = 0;
        for (int i = 0; i < n5; i++) flat += all[i].flat, rows += !all[i].flat;
        CHECK_MSG(flat > 1 && rows > 1, "%s: %d flat, %d rows", isa, flat, rows);
        int n2 = hc_conv_dw_space(m, &s2, 2, all, 256);
        for (int i = 0; i < n2; i++) CHECK_MSG(!all[i].flat, "%s", isa);
    }
}

/* Depthwise register blocks on stated machines: with 32 registers 2 vectors x 4, 3 or 2
 * rows (the fewest padded rows); with 16 (AVX2) at most 4 accumulators, 4 x 1 unless
 * 2 x 2 pads less (14-wide rows: 2 vectors, 14 rows in blocks of 2), except a plane of
 * at most 8 one-vector rows: one block (7x7: 7 x 1). */
static void test_dw_blocks(void) {
    const hc_target avx512 = hc_target_cpu_describe(HC_ISA_AVX512, 2, 48 << 10, 2 << 20, 105 << 20);
    const hc_target avx2 = hc_target_cpu_describe(HC_ISA_AVX2, 2, 32 << 10, 1 << 20, 32 << 20);
    static const struct {
        int64_t c, hw;
        int rb512, nv512, rb2, nv2;
    } cases[] = {
        {32, 112, 4, 2, 4, 1}, {144, 56, 4, 2, 4, 1}, {192, 28, 4, 2, 4, 1},
        {576, 14, 2, 1, 2, 2}, {960, 7, 4, 1, 7, 1},  {96, 15, 3, 1, 3, 1},
        {64, 8, 4, 1, 8, 1},   {64, 9, 3, 1, 3, 1},   {64, 25, 2, 2, 1, 2},
    };
    for (size_t i = 0; i < HC_ARRAY_LEN(cases); i++) {
        int64_t c = cases[i].c, hw = cases[i].hw;
        hc_conv_dw_shape s = {1, c, hw, hw, c, c, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, hw, hw, true};
        hc_conv_dw_config d512 = hc_conv_dw_default_config(&avx512, &s);
        hc_conv_dw_config d2 = hc_conv_dw_default_config(&avx2, &s);
        CHECK_MSG(d512.rb == cases[i].rb512 && d512.nv == cases[i].nv512,
                  "avx512 %lldx%lld: %d x %d", (long long)hw, (long long)hw, d512.rb, d512.nv);
        CHECK_MSG(d2.rb == cases[i].rb2 && d2.nv == cases[i].nv2, "avx2 %lldx%lld: %d x %d",
                  (long long)hw, (long long)hw, d2.rb, d2.nv);
        CHECK(d2.rb * d2.nv <= 8 && d512.rb * d512.nv <= 8);
    }
}

/* Dense blocks (several output channels per group) on stated machines: with 32 registers
 * 8 channels x 2 vectors (1 x 2 or 2 x 1, whichever pads less); with 16 (AVX2) 6
 * channels x 1 row x 1 vector, fewer where the group has fewer; every block fits. */
static void test_dense_blocks(void) {
    const hc_target avx512 = hc_target_cpu_describe(HC_ISA_AVX512, 2, 48 << 10, 2 << 20, 105 << 20);
    const hc_target avx2 = hc_target_cpu_describe(HC_ISA_AVX2, 2, 32 << 10, 512 << 10, 32 << 20);
    static const struct {
        int64_t c, hw, m, k, st, pad;
        int mb512, rbnv512, mb2;
    } cases[] = {
        {3, 224, 64, 7, 2, 3, 8, 2, 6}, /* ResNet-50's stem */
        {3, 224, 32, 3, 2, 1, 8, 2, 6}, /* MobileNet-V2's */
        {3, 299, 32, 3, 2, 0, 8, 2, 6}, /* Inception-V3's 1a */
        {3, 17, 4, 3, 2, 1, 4, 1, 4},   /* 4 output channels: all of them (9 columns: one
                                         * vector of 16 lanes, one row pads none) */
    };
    for (size_t i = 0; i < HC_ARRAY_LEN(cases); i++) {
        int64_t hw = cases[i].hw, k = cases[i].k, st = cases[i].st, p = cases[i].pad;
        int64_t o = (hw + 2 * p - k) / st + 1;
        hc_conv_dw_shape s = {1, cases[i].c, hw, hw, cases[i].m, 1, k, k, st, st, 1, 1,
                              p, p, p, p, o, o, true};
        hc_conv_dw_config d512 = hc_conv_dw_default_config(&avx512, &s);
        hc_conv_dw_config d2 = hc_conv_dw_default_config(&avx2, &s);
        CHECK_MSG(d512.mb == cases[i].mb512 && d512.rb * d512.nv == cases[i].rbnv512,
                  "avx512 case %zu: %d x %d x %d", i, d512.mb, d512.rb, d512.nv);
        CHECK_MSG(d2.mb == cases[i].mb2 && d2.rb == 1 && d2.nv == 1,
                  "avx2 case %zu: %d x %d x %d", i, d2.mb, d2.rb, d2.nv);
        CHECK(d2.mb * (d2.rb * d2.nv + 1) + 1 <= 16 && d512.mb * (d512.rb * d512.nv + 1) + 1 <= 32);
        hc_error err = {0};
        CHECK_MSG(hc_conv_dw_validate(&d2, &err) == HC_OK, "%s", err.msg);
    }
}

int main(void) {
    /* the CPU target's template table wires Conv to the direct conv template */
    const hc_template *conv = hc_target_template(hc_target_default(), HC_OPK_CONV);
    CHECK(conv && conv->op == HC_OPK_CONV && conv->schedule && conv->space &&
          !strcmp(conv->name, "conv_direct"));
    test_space();
    test_dw_blocks();
    test_dense_blocks();
    test_fallbacks();
    const hc_target *host = hc_target_host();
    for (size_t i = 0; i < HC_ARRAY_LEN(cases); i++) run_case(&cases[i], host);
    /* the narrower vector widths on a few cases (the host runs them) */
    static const hc_isa lower[] = {HC_ISA_AVX2, HC_ISA_SCALAR};
    for (size_t j = 0; j < HC_ARRAY_LEN(lower); j++) {
        if (lower[j] >= host->caps.isa) continue;
        const hc_target *tg = hc_target_cpu(lower[j]);
        run_case(&cases[2], tg);
        run_case(&cases[7], tg);
        run_case(&cases[13], tg);
        run_case(&cases[17], tg);
        run_case(&cases[18], tg);
    }
    TEST_DONE();
}
