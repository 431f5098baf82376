/* test_gpu.c — the GPU targets on this machine: every scheduled GPU program (the matmul
 * template's candidates, the auto-scheduler's programs for reductions, norms, pools,
 * injective ops) runs through the OpenCL target on PoCL and is checked against the
 * reference interpreter, on awkward shapes (1, primes, tails of the tiles); the CUDA twin
 * of each is compiled by NVRTC for sm_80 and sm_90. Without an OpenCL device (or without
 * NVRTC) those checks print "skipped" and are not counted; with neither the test exits 77
 * (ctest: skipped). The launch table, lowering guards and the space's pruning are checked
 * on their own. */
#include <stdlib.h>
#include <string.h>

#include "fuse/fuse.h"
#include "ir/mapping.h"
#include "models/builtin.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "target/gpu/gpu.h"
#include "task/task.h"
#include "test.h"
#include "graph_build.h"

static const hc_target *ocl, *sm80, *sm90;
static bool have_ocl, have_nvrtc;
static int nvrtc_compiled, ocl_programs;

/* ---- a program through both dialects -------------------------------------------------- */
static char *emit(hc_arena *a, const hc_target *t, hc_func *f) {
    hc_module *m = hc_module_new(a, "test_gpu", 1, &f);
    hc_module *lm = t->lower(a, m, t);
    hc_error err = {0};
    CHECK_MSG(hc_verify_module(lm, &err) == HC_OK, "%s: lowered module: %s", f->name, err.msg);
    return t->emit(a, lm, t);
}

static void nvrtc_check(hc_arena *a, hc_func *f, const char *label) {
    if (!have_nvrtc) return;
    const hc_target *ts[2] = {sm80, sm90};
    const char *arch[2] = {"sm_80", "sm_90"};
    for (int i = 0; i < 2; i++) {
        char *src = emit(a, ts[i], f), *ptx = NULL;
        hc_error err = {0};
        hc_status st = hc_nvrtc_compile(src, arch[i], &ptx, &err);
        CHECK_MSG(st == HC_OK, "%s: NVRTC %s: %.2000s", label, arch[i], err.msg);
        if (st == HC_OK) CHECK_MSG(strstr(ptx, ".entry") != NULL, "%s: no kernel in the PTX", label);
        nvrtc_compiled += st == HC_OK;
        free(ptx);
        free(src);
    }
}

/* Runs f (params: n inputs, then outputs) on the OpenCL device. */
static bool ocl_run(hc_arena *a, hc_func *f, int nin, void *const *in, const size_t *in_bytes,
                    int nout, void *const *out, const size_t *out_bytes, const char *label) {
    char *src = emit(a, ocl, f);
    hc_jit_lib *lib = NULL;
    hc_error err = {0};
    hc_status st = ocl->build_one(ocl, 1, (const char *const *)&src, NULL, 1, NULL, NULL, &lib, &err);
    free(src);
    CHECK_MSG(st == HC_OK, "%s: OpenCL build: %.2000s", label, err.msg);
    if (st != HC_OK) return false;
    char sym[300];
    snprintf(sym, sizeof sym, "%s__packed", f->name);
    hc_packed_fn fn = (hc_packed_fn)ocl->symbol(lib, sym);
    CHECK(fn != NULL);
    const hc_executor *ex = ocl->exec;
    void *dev[16] = {0};
    bool ok = fn != NULL;
    for (int i = 0; i < nin + nout && ok; i++) {
        size_t b = i < nin ? in_bytes[i] : out_bytes[i - nin];
        ok = (dev[i] = ex->alloc(b ? b : 1)) != NULL;
        if (ok && i < nin) ok = ex->upload(dev[i], in[i], b, &err) == HC_OK;
    }
    if (ok) {
        ex->launch(fn, dev);
        ok = ex->check(&err) == HC_OK;
        CHECK_MSG(ok, "%s: OpenCL run: %s", label, err.msg);
    }
    for (int i = 0; i < nout && ok; i++)
        ok = ex->download(out[i], dev[nin + i], out_bytes[i], &err) == HC_OK;
    for (int i = 0; i < nin + nout; i++)
        if (dev[i]) ex->release(dev[i]);
    ocl->lib_close(lib);
    ocl_programs += ok;
    return ok;
}

/* ---- single-node graphs through a GPU program, against the interpreter ---------------- */
static size_t tnode_bytes(const hc_tnode *n) {
    return (size_t)(n->ndim ? hc_tnode_numel(n) : 1) * (size_t)hc_dtype_size(n->dtype);
}

static void fill(void *buf, hc_dtype t, int64_t n, hc_rng *r) {
    for (int64_t i = 0; i < n; i++)
        hc_elem_set(buf, t, i, hc_dtype_is_float(t) ? hc_rng_uniform(r, -2, 2)
                                                     : (double)(hc_rng_next(r) % 5));
}

/* Node `n` of g (shapes inferred): its GPU program (template when `templated`, else the
 * auto-scheduler) against the interpreter on its task; tolerance tol (relative to
 * max(1, |ref|)). */
static void check_node(hc_graph *g, hc_node *n, const hc_target *t, hc_func *f, double tol,
                       const char *label) {
    hc_arena a;
    hc_arena_init(&a);
    hc_error err = {0};
    hc_task *task = hc_fuse_node_task(&a, n, &err);
    CHECK_MSG(task != NULL, "%s: task: %s", label, err.msg);
    if (!f && task) f = hc_gpu_auto_schedule(&a, task, t, &err);
    CHECK_MSG(f != NULL, "%s: schedule: %s", label, err.msg);
    if (!task || !f) {
        hc_arena_free(&a);
        return;
    }
    nvrtc_check(&a, f, label);
    if (have_ocl) {
        hc_rng r = {0x5eed};
        void *in[8], *out[4], *ref[4];
        size_t ib[8], ob[4];
        for (int i = 0; i < task->ninputs; i++) {
            ib[i] = tnode_bytes(task->inputs[i]);
            in[i] = calloc(1, ib[i] + 8);
            fill(in[i], task->inputs[i]->dtype, (int64_t)(ib[i] / (size_t)hc_dtype_size(task->inputs[i]->dtype)), &r);
        }
        for (int i = 0; i < task->noutputs; i++) {
            ob[i] = tnode_bytes(task->outputs[i]);
            out[i] = calloc(1, ob[i] + 8);
            ref[i] = calloc(1, ob[i] + 8);
        }
        CHECK_MSG(hc_interpret_task(task, in, ref, &err) == HC_OK, "%s: interpreter: %s", label, err.msg);
        if (ocl_run(&a, f, task->ninputs, in, ib, task->noutputs, out, ob, label))
            for (int i = 0; i < task->noutputs; i++) {
                hc_dtype d = task->outputs[i]->dtype;
                int64_t cnt = (int64_t)(ob[i] / (size_t)hc_dtype_size(d));
                double e = 0;
                for (int64_t j = 0; j < cnt; j++) {
                    double x = hc_elem_get(out[i], d, j), y = hc_elem_get(ref[i], d, j);
                    double dd = fabs(x - y) / fmax(1.0, fabs(y));
                    if (isnan(dd) || dd > e) e = isnan(dd) ? INFINITY : dd;
                }
                CHECK_MSG(e <= tol, "%s: output %d: max rel error %g (tol %g)", label, i, e, tol);
            }
        for (int i = 0; i < task->ninputs; i++) free(in[i]);
        for (int i = 0; i < task->noutputs; i++) free(out[i]), free(ref[i]);
    }
    hc_arena_free(&a);
    (void)g;
}

static hc_graph *graph1(int ndim, const int64_t *shape, hc_tensor **x) {
    hc_graph *g = hc_graph_new("t", 17);
    *x = hc_graph_add_input(g, "x", HC_F32, ndim, shape);
    return g;
}

static void finish_node(hc_graph *g, hc_tensor *y, const char *label) {
    hc_graph_add_output(g, y);
    hc_error err = {0};
    CHECK_MSG(hc_pass_infer_shapes(g, &err) == HC_OK, "%s: %s", label, err.msg);
    check_node(g, y->producer, ocl, NULL, 1e-5, label);
    hc_graph_free(g);
}

/* ---- the matmul template --------------------------------------------------------------- */
static void check_matmul(int nda, const int64_t *sa, int ndb, const int64_t *sb, int level,
                         int cand_lo, int cand_hi) {
    hc_graph *g = hc_graph_new("mm", 17);
    hc_tensor *A = hc_graph_add_input(g, "A", HC_F32, nda, sa);
    hc_tensor *B = hc_graph_add_input(g, "B", HC_F32, ndb, sb);
    hc_tensor *C = OP(g, MATMUL, A, B);
    hc_graph_add_output(g, C);
    hc_error err = {0};
    CHECK(hc_pass_infer_shapes(g, &err) == HC_OK);
    hc_node *n = C->producer;
    const hc_template *tp = hc_target_template(ocl, HC_OPK_MATMUL);
    CHECK(tp != NULL);
    int count = tp->space(n, ocl, level);
    CHECK_MSG(count > 0, "matmul space at level %d is empty", level);
    for (int c = cand_lo; c < HC_MIN(cand_hi, count); c++) {
        hc_arena a;
        hc_arena_init(&a);
        hc_task *task = hc_fuse_node_task(&a, n, &err);
        hc_sched_opts o = {.level = level, .candidate = c, .write_once = true};
        hc_func *f = tp->schedule(&a, n, task, ocl, "matmul", &o, &err);
        char label[160];
        snprintf(label, sizeof label, "matmul A%s[%lld..%lld] B[..%lld] level %d cand %d",
                 nda == 3 ? "(batched)" : "", (long long)sa[0], (long long)sa[nda - 1],
                 (long long)sb[ndb - 1], level, c);
        CHECK_MSG(f != NULL, "%s: %s", label, err.msg);
        if (f) check_node(g, n, ocl, f, 2e-5, label);
        hc_arena_free(&a);
    }
    hc_graph_free(g);
}

/* The depthwise template: every candidate of level 1 on one conv. */
static void check_dw(int64_t n, int64_t c, int64_t mult, int64_t h, int64_t w, int64_t k,
                     int64_t stride, int64_t pad, int64_t dil, bool bias) {
    hc_graph *g = hc_graph_new("dw", 17);
    hc_rng r = {11};
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){n, c, h, w});
    hc_tensor *wt = rand_const(g, &r, 4, (int64_t[]){c * mult, 1, k, k});
    hc_attr at[4] = {int_attr("group", c), ints_attr("strides", 2, (int64_t[]){stride, stride}),
                     ints_attr("pads", 4, (int64_t[]){pad, pad, pad, pad}),
                     ints_attr("dilations", 2, (int64_t[]){dil, dil})};
    hc_tensor *y = bias ? OPA(g, CONV, at, 4, x, wt, rand_const(g, &r, 1, (int64_t[]){c * mult}))
                        : OPA(g, CONV, at, 4, x, wt);
    hc_graph_add_output(g, y);
    hc_error err = {0};
    CHECK(hc_pass_infer_shapes(g, &err) == HC_OK);
    const hc_template *tp = hc_target_template(ocl, HC_OPK_CONV);
    int count = tp ? tp->space(y->producer, ocl, 1) : 0;
    CHECK_MSG(count > 1, "depthwise space at level 1: %d", count);
    for (int cand = 0; cand < count; cand++) {
        hc_arena a;
        hc_arena_init(&a);
        hc_task *task = hc_fuse_node_task(&a, y->producer, &err);
        hc_sched_opts o = {.level = 1, .candidate = cand, .write_once = true};
        hc_func *f = tp->schedule(&a, y->producer, task, ocl, "dw", &o, &err);
        char label[160];
        snprintf(label, sizeof label, "depthwise %lldx%lldx%lldx%lld x%lld k%lld s%lld p%lld d%lld%s cand %d",
                 (long long)n, (long long)c, (long long)h, (long long)w, (long long)mult,
                 (long long)k, (long long)stride, (long long)pad, (long long)dil,
                 bias ? " bias" : "", cand);
        CHECK_MSG(f != NULL, "%s: %s", label, err.msg);
        if (f) check_node(g, y->producer, ocl, f, 2e-5, label);
        hc_arena_free(&a);
    }
    hc_graph_free(g);
}

/* f16 and bf16 tensors: every 16-bit pattern widened, and f32 values rounded to the type
 * (every pattern, the midpoints between neighbours: ties to even, and the edges:
 * subnormals, the largest finite, overflow, inf, NaN) as the CPU's conversions do. */
static void check_half(hc_dtype h) {
    if (!have_ocl) return;
    const char *label = h == HC_F16 ? "f16" : "bf16";
    int64_t n = 65536 * 2 + 16;
    float *src = malloc(sizeof(float) * (size_t)n);
    uint16_t *pat = malloc(sizeof(uint16_t) * 65536);
    for (int i = 0; i < 65536; i++) pat[i] = (uint16_t)i;
    for (int i = 0; i < 65536; i++) {
        src[i] = (float)hc_elem_get(pat, h, i);
        float next = (float)hc_elem_get(pat, h, (i + 1) & 0xffff);
        src[65536 + i] = (src[i] + next) / 2; /* a tie (or a NaN/inf neighbour's value) */
    }
    const float edges[16] = {65504.0f, 65519.0f, 65520.0f, 1e9f, -1e9f, 5.96e-8f, 2.98e-8f,
                             2.99e-8f, 1e-10f, -0.0f, INFINITY, -INFINITY, NAN, 3.4e38f,
                             6.1035156e-05f, 6.09e-05f};
    memcpy(src + 2 * 65536, edges, sizeof edges);
    hc_arena a;
    hc_arena_init(&a);
    int64_t s1 = n, s2 = 65536;
    for (int dir = 0; dir < 2; dir++) { /* 0: f32 -> half, 1: half -> f32 */
        hc_tnode *x = hc_tensor_input(&a, "x", dir ? h : HC_F32, 1, dir ? &s2 : &s1);
        hc_tnode *y = hc_compute_cast(&a, "y", x, dir ? HC_F32 : h);
        hc_task *task = hc_task1(&a, "half", 1, &x, y);
        hc_error err = {0};
        hc_func *f = hc_gpu_auto_schedule(&a, task, ocl, &err);
        CHECK_MSG(f != NULL, "%s: %s", label, err.msg);
        if (!f) continue;
        nvrtc_check(&a, f, label);
        int64_t cnt = dir ? 65536 : n;
        size_t ib = (size_t)cnt * (dir ? 2 : 4), ob = (size_t)cnt * (dir ? 4 : 2);
        void *out = calloc(1, ob), *ref = calloc(1, ob);
        const void *in = dir ? (const void *)pat : (const void *)src;
        if (ocl_run(&a, f, 1, (void *const[]){(void *)in}, &ib, 1, &out, &ob, label)) {
            int bad = 0;
            for (int64_t i = 0; i < cnt; i++) {
                if (dir) {
                    float got = ((float *)out)[i], want = (float)hc_elem_get(pat, h, i);
                    bad += !(got == want || (isnan(got) && isnan(want))) ||
                           (got == 0 && signbit(got) != signbit(want));
                } else {
                    hc_elem_set(ref, h, i, src[i]);
                    uint16_t g = ((uint16_t *)out)[i], w = ((uint16_t *)ref)[i];
                    bool nan = isnan(src[i]);
                    bad += nan ? !isnan(hc_elem_get(out, h, i)) : g != w;
                }
            }
            CHECK_MSG(bad == 0, "%s %s: %d of %lld values differ from the CPU's conversion",
                      label, dir ? "widened" : "rounded", bad, (long long)cnt);
        }
        free(out), free(ref);
    }
    hc_arena_free(&a);
    free(src), free(pat);
}

/* The space is pruned by the device's capabilities. */
static void test_space_caps(void) {
    hc_graph *g = hc_graph_new("mm", 17);
    hc_tensor *A = hc_graph_add_input(g, "A", HC_F32, 2, (int64_t[]){64, 64});
    hc_tensor *C = OP(g, MATMUL, A, A);
    hc_graph_add_output(g, C);
    CHECK(hc_pass_infer_shapes(g, NULL) == HC_OK);
    const hc_template *tp = hc_target_template(ocl, HC_OPK_MATMUL);
    hc_target big = hc_target_gpu_describe(HC_GPU_CUDA, 132, 48 * 1024, 255, 1024);
    hc_target small_smem = hc_target_gpu_describe(HC_GPU_CUDA, 132, 8 * 1024, 255, 1024);
    hc_target few_threads = hc_target_gpu_describe(HC_GPU_CUDA, 132, 48 * 1024, 255, 64);
    int nb = tp->space(C->producer, &big, 2), ns = tp->space(C->producer, &small_smem, 2),
        nt = tp->space(C->producer, &few_threads, 2);
    CHECK_MSG(nb > ns && ns > 0, "space: %d configs with 48 KiB, %d with 8 KiB", nb, ns);
    CHECK_MSG(nt > 0 && nt < nb, "space: %d configs with 64 threads a block, %d with 1024", nt, nb);
    CHECK_EQ_INT(tp->space(C->producer, &big, 0), 1);
    CHECK(tp->space(C->producer, &big, 1) < nb);
    hc_graph_free(g);
}

/* The launch table: stages, grid and block read off the mappings; a mapping with fewer
 * workers than the launch is guarded. */
static void test_lowering(void) {
    hc_arena a;
    hc_arena_init(&a);
    int64_t n = 100;
    hc_var *x = hc_var_new(&a, "x", hc_type_tensor_c(&a, HC_F32, 1, &n, HC_SCOPE_GLOBAL));
    hc_var *s = hc_var_new(&a, "s", hc_type_tensor_c(&a, HC_F32, 1, &n, HC_SCOPE_GLOBAL));
    hc_builder b;
    hc_builder_init(&b, &a);
    hc_b_emit(&b, hc_declare(&a, s, NULL));
    hc_var *v[1];
    const char *nm[1] = {"i"};
    hc_b_for_map_begin(&b, hc_map_spatial(&a, 1, (int64_t[]){4}), hc_ref(&a, hc_var_builtin(&a, HC_BUILTIN_BLOCK_IDX_X)), 1, v, nm);
    hc_b_for_map_begin(&b, hc_map_spatial(&a, 1, (int64_t[]){25}), hc_ref(&a, hc_var_builtin(&a, HC_BUILTIN_THREAD_IDX_X)), 1, v, nm);
    hc_b_end(&b);
    hc_b_for_map_begin(&b, hc_map_spatial(&a, 1, (int64_t[]){64}), hc_ref(&a, hc_var_builtin(&a, HC_BUILTIN_THREAD_IDX_X)), 1, v, nm);
    hc_b_end(&b), hc_b_end(&b);
    hc_b_emit(&b, hc_barrier(&a, HC_SCOPE_GLOBAL));
    hc_b_for_map_begin(&b, hc_map_spatial(&a, 1, (int64_t[]){3}), hc_ref(&a, hc_var_builtin(&a, HC_BUILTIN_WARP_ID)), 1, v, nm);
    hc_b_end(&b);
    hc_func *f = hc_func_new(&a, "prog", HC_FN_CUDA_KERNEL, 1, &x, hc_builder_finish(&b));
    hc_module *lm = hc_gpu_lower(&a, hc_module_new(&a, "m", 1, &f), ocl);
    CHECK_EQ_INT(lm->nfuncs, 2);
    char *src = hc_gpu_emit(&a, lm, HC_GPU_OPENCL);
    hc_gpu_program *ps = NULL;
    int np = 0;
    hc_error err = {0};
    CHECK(hc_gpu_parse_programs(src, &ps, &np, &err) == HC_OK);
    CHECK_EQ_INT(np, 1);
    if (np == 1) {
        CHECK_EQ_INT(ps[0].nparams, 1);
        CHECK_EQ_INT(ps[0].nscratch, 1);
        CHECK_EQ_INT(ps[0].scratch_bytes[0], 400);
        CHECK_EQ_INT(ps[0].nstages, 2);
        CHECK_EQ_INT(ps[0].stages[0].grid[0], 4);
        CHECK_EQ_INT(ps[0].stages[0].block[0], 64); /* the larger of 25 and 64 */
        CHECK_EQ_INT(ps[0].stages[1].block[0], 96); /* 3 warps */
    }
    CHECK_MSG(strstr(src, "< 25)") != NULL, "no guard for 25 of 64 threads:\n%s", src);
    /* small tensors: indices in int; a tensor of 2^29 elements keeps them 64-bit */
    CHECK_MSG(strstr(src, "((int)get_group_id(0))") != NULL, "indices not in int:\n%s", src);
    free(ps);
    free(src);
    int64_t big = (int64_t)1 << 29;
    hc_var *xb = hc_var_new(&a, "xb", hc_type_tensor_c(&a, HC_F32, 1, &big, HC_SCOPE_GLOBAL));
    hc_builder b2;
    hc_builder_init(&b2, &a);
    hc_b_for_map_begin(&b2, hc_map_spatial(&a, 1, (int64_t[]){64}), hc_ref(&a, hc_var_builtin(&a, HC_BUILTIN_THREAD_IDX_X)), 1, v, nm);
    hc_b_store(&b2, xb, 1, (hc_expr *[]){hc_mul(&a, hc_ref(&a, v[0]), hc_int(&a, 1 << 20))}, hc_f32(&a, 1));
    hc_b_end(&b2);
    hc_func *fb = hc_func_new(&a, "big", HC_FN_CUDA_KERNEL, 1, &xb, hc_builder_finish(&b2));
    src = hc_gpu_emit(&a, hc_gpu_lower(&a, hc_module_new(&a, "m", 1, &fb), ocl), HC_GPU_OPENCL);
    CHECK_MSG(strstr(src, "((long)get_local_id(0))") && !strstr(src, "((int)get_"),
              "a 2^29-element tensor's indices are not 64-bit:\n%s", src);
    free(src);
    hc_arena_free(&a);
}

/* ---- the auto-scheduler's programs ----------------------------------------------------- */
static void test_auto_scheduler(void) {
    hc_tensor *x, *y;
    hc_graph *g;
    /* softmax rows: a block per row (long rows) and a thread per row (short ones) */
    g = graph1(2, (int64_t[]){7, 300}, &x);
    finish_node(g, OPA(g, SOFTMAX, (hc_attr[]){int_attr("axis", -1)}, 1, x), "softmax 7x300");
    g = graph1(3, (int64_t[]){5, 3, 13}, &x);
    finish_node(g, OPA(g, SOFTMAX, (hc_attr[]){int_attr("axis", 1)}, 1, x), "softmax axis 1");
    /* reductions: over all elements (0-d), a middle axis, keepdims */
    g = graph1(2, (int64_t[]){37, 41}, &x);
    finish_node(g, OPA(g, REDUCE_SUM, (hc_attr[]){int_attr("keepdims", 0)}, 1, x), "reduce all");
    g = graph1(3, (int64_t[]){3, 131, 5}, &x);
    finish_node(g, OPA(g, REDUCE_MEAN, ((hc_attr[]){ints_attr("axes", 1, (int64_t[]){1}), int_attr("keepdims", 1)}), 2, x), "reduce mean axis 1");
    g = graph1(2, (int64_t[]){1, 1}, &x);
    finish_node(g, OPA(g, REDUCE_MAX, (hc_attr[]){int_attr("keepdims", 0)}, 1, x), "reduce max 1x1");
    /* layer norm over 257: a norm's three reduce-and-scale steps as stages */
    g = graph1(2, (int64_t[]){3, 257}, &x);
    {
        hc_rng r = {3};
        hc_tensor *sc = rand_const(g, &r, 1, (int64_t[]){257}), *bi = rand_const(g, &r, 1, (int64_t[]){257});
        finish_node(g, OPA(g, LAYER_NORMALIZATION, (hc_attr[]){int_attr("axis", -1)}, 1, x, sc, bi), "layernorm");
    }
    /* pooling: max 3x3 stride 2 padded, global average (a block per channel) */
    g = graph1(4, (int64_t[]){2, 3, 11, 13}, &x);
    finish_node(g, OPA(g, MAX_POOL, ((hc_attr[]){ints_attr("kernel_shape", 2, (int64_t[]){3, 3}),
                                                  ints_attr("strides", 2, (int64_t[]){2, 2}),
                                                  ints_attr("pads", 4, (int64_t[]){1, 1, 1, 1})}), 3, x), "maxpool");
    g = graph1(4, (int64_t[]){1, 5, 17, 19}, &x);
    finish_node(g, OP(g, GLOBAL_AVERAGE_POOL, x), "global average pool");
    /* depthwise conv: the auto-scheduler's program (the template has its own checks) */
    g = graph1(4, (int64_t[]){1, 6, 9, 7}, &x);
    {
        hc_rng r = {4};
        hc_tensor *w = rand_const(g, &r, 4, (int64_t[]){6, 1, 3, 3});
        finish_node(g, OPA(g, CONV, ((hc_attr[]){int_attr("group", 6), ints_attr("pads", 4, (int64_t[]){1, 1, 1, 1})}), 2, x, w), "depthwise conv");
    }
    /* injective: broadcast add, transpose, argmax (i64 out), tanh */
    g = graph1(3, (int64_t[]){2, 1, 7}, &x);
    {
        hc_tensor *z = hc_graph_add_input(g, "z", HC_F32, 2, (int64_t[]){5, 1});
        finish_node(g, OP(g, ADD, x, z), "broadcast add");
    }
    g = graph1(3, (int64_t[]){3, 5, 7}, &x);
    finish_node(g, OPA(g, TRANSPOSE, (hc_attr[]){ints_attr("perm", 3, (int64_t[]){2, 0, 1})}, 1, x), "transpose");
    g = graph1(2, (int64_t[]){4, 129}, &x);
    finish_node(g, OPA(g, ARG_MAX, (hc_attr[]){int_attr("axis", 1)}, 1, x), "argmax");
    g = graph1(1, (int64_t[]){1000}, &x);
    y = OP(g, TANH, x);
    finish_node(g, OP(g, ERF, y), "tanh . erf");
    /* the fused attention op's Task (the CPU's template has its own checks): GQA, causal
     * with an offset, a broadcast bias with -inf rows, nonpad */
    g = graph1(4, (int64_t[]){2, 4, 5, 8}, &x);
    {
        hc_tensor *k = hc_graph_add_input(g, "k", HC_F32, 4, (int64_t[]){2, 2, 7, 8});
        hc_tensor *v = hc_graph_add_input(g, "v", HC_F32, 4, (int64_t[]){2, 2, 7, 3});
        hc_tensor *m = hc_graph_add_input(g, "m", HC_F32, 4, (int64_t[]){2, 1, 5, 7});
        hc_tensor *np = hc_graph_add_input(g, "np", HC_I64, 1, (int64_t[]){2});
        hc_attr at[4] = {{.name = "scale", .kind = HC_ATTR_FLOAT, .f = 0.35},
                         {.name = "softcap", .kind = HC_ATTR_FLOAT, .f = 1.5}, int_attr("causal", 1),
                         int_attr("offset", 2)};
        finish_node(g, OPA(g, ATTENTION_FUSED, at, 4, x, k, v, m, np), "attention fused");
        g = graph1(4, (int64_t[]){1, 3, 9, 16}, &x);
        k = hc_graph_add_input(g, "k", HC_F32, 4, (int64_t[]){1, 3, 11, 16});
        v = hc_graph_add_input(g, "v", HC_F32, 4, (int64_t[]){1, 3, 11, 16});
        hc_attr wa[3] = {{.name = "scale", .kind = HC_ATTR_FLOAT, .f = 0.25}, int_attr("left", 2),
                         int_attr("right", 1)};
        finish_node(g, OPA(g, ATTENTION_FUSED, wa, 3, x, k, v), "attention fused window");
    }
}

/* The auto-scheduled and templated programs of the built-in tiny models, as CUDA C for
 * sm_80 and sm_90, through NVRTC. */
static void test_model_sources(void) {
    if (!have_nvrtc) return;
    const char *models[] = {"resnet18-tiny", "bert-tiny"};
    const hc_target *ts[2] = {sm80, sm90};
    const char *arch[2] = {"sm_80", "sm_90"};
    for (size_t i = 0; i < HC_ARRAY_LEN(models); i++)
        for (int k = 0; k < 2; k++) {
            hc_error err = {0};
            hc_graph *g = NULL;
            CHECK_MSG(hc_builtin_model(models[i], &g, &err) == HC_OK, "%s: %s", models[i], err.msg);
            if (!g) continue;
            hc_compile_options o = {.target = ts[k], .schedule_only = true, .emit_source = true};
            hc_model *m = NULL;
            CHECK_MSG(hc_model_compile(g, &o, &m, &err) == HC_OK, "%s: %s", models[i], err.msg);
            if (!m) continue;
            char *ptx = NULL;
            const char *src = hc_model_source(m);
            CHECK_MSG(src && strstr(src, "__global__"), "%s: no CUDA source", models[i]);
            hc_status st = src ? hc_nvrtc_compile(src, arch[k], &ptx, &err) : HC_ERR_INVALID;
            CHECK_MSG(st == HC_OK, "%s for %s: %.3000s", models[i], arch[k], err.msg);
            nvrtc_compiled += st == HC_OK;
            free(ptx);
            hc_model_free(m);
        }
}

/* The GPU target's check hook: programs over the stage limit are an error, not an abort
 * in the lowering (a 17-stage cubic Resize was one while the limit was 16). */
static void test_stage_limit(void) {
    hc_arena a;
    hc_arena_init(&a);
    for (int n = HC_GPU_MAX_STAGES - 1; n <= HC_GPU_MAX_STAGES + 1; n++) {
        /* n + 1 stages: n grid-wide barriers between n + 1 statements */
        hc_stmt **st = HC_NEW_ARRAY(&a, hc_stmt *, 2 * n + 2);
        int k = 0;
        hc_var *v = hc_var_new(&a, "t", hc_type_scalar(HC_INDEX_TYPE));
        for (int i = 0; i <= n; i++) {
            st[k++] = hc_declare(&a, v, hc_int(&a, i));
            if (i < n) st[k++] = hc_barrier(&a, HC_SCOPE_GLOBAL);
        }
        hc_func *f = hc_func_new(&a, "stages", HC_FN_CUDA_KERNEL, 0, NULL, hc_seq(&a, k, st));
        hc_error err = {0};
        hc_status s = hc_gpu_check_program(f, NULL, &err);
        CHECK_MSG((s == HC_OK) == (n + 1 <= HC_GPU_MAX_STAGES), "%d stages: %s", n + 1, err.msg);
        if (s) CHECK(strstr(err.msg, "grid-wide stages") != NULL);
    }
    hc_arena_free(&a);
}

int main(void) {
    hc_error why = {0};
    test_stage_limit();
    bool r80 = false, r90 = false;
    CHECK(hc_target_find("opencl", &ocl, &have_ocl, &why) == HC_OK);
    if (!have_ocl) printf("skipped: OpenCL runs: %s\n", why.msg);
    CHECK(hc_target_find("cuda:sm_80", &sm80, &r80, NULL) == HC_OK);
    CHECK(hc_target_find("cuda:sm_90", &sm90, &r90, NULL) == HC_OK);
    have_nvrtc = hc_nvrtc_available();
    if (!have_nvrtc) printf("skipped: NVRTC compiles: libnvrtc not found\n");
    test_space_caps();
    test_lowering();
    test_auto_scheduler();
    check_half(HC_F16);
    check_half(HC_BF16);
    test_model_sources();
    /* every level-1 candidate on one awkward shape; the default on the awkward ones */
    check_matmul(2, (int64_t[]){67, 45}, 2, (int64_t[]){45, 83}, 1, 0, 1000);
    int64_t shapes[][3] = {{1, 1, 1}, {1, 7, 3}, {13, 1, 5}, {129, 65, 33}, {64, 64, 64}, {3, 200, 1}};
    for (size_t i = 0; i < HC_ARRAY_LEN(shapes); i++)
        check_matmul(2, (int64_t[]){shapes[i][0], shapes[i][2]}, 2,
                     (int64_t[]){shapes[i][2], shapes[i][1]}, 0, 0, 1);
    check_matmul(3, (int64_t[]){3, 17, 9}, 3, (int64_t[]){3, 9, 31}, 0, 0, 1);   /* batched */
    check_matmul(3, (int64_t[]){2, 33, 10}, 2, (int64_t[]){10, 7}, 0, 0, 1);     /* B shared */
    check_matmul(4, (int64_t[]){2, 1, 5, 6}, 3, (int64_t[]){3, 6, 4}, 0, 0, 1); /* broadcast */
    check_matmul(2, (int64_t[]){40, 50}, 2, (int64_t[]){50, 60}, 2, 0, 6);      /* level 2 */
    check_dw(1, 6, 1, 13, 11, 3, 1, 1, 1, true);   /* MobileNet's 3x3, odd sizes */
    check_dw(2, 3, 2, 9, 17, 3, 2, 1, 1, false);   /* stride 2, multiplier 2 */
    check_dw(1, 2, 1, 7, 7, 5, 1, 4, 2, true);     /* 5x5 dilated, pads past the window */
    check_dw(1, 1, 1, 1, 1, 1, 1, 0, 1, false);    /* 1x1 everything */
    printf("%d OpenCL programs checked against the interpreter, %d CUDA compiles (NVRTC)\n",
           ocl_programs, nvrtc_compiled);
    if (!have_ocl && !have_nvrtc) {
        printf("SKIP: neither an OpenCL device nor NVRTC on this machine\n");
        return 77;
    }
    TEST_DONE();
}
