/* hidetc kernel matmul --target opencl|cuda — the GPU matmul template for one shape:
 * candidate C of its space at level L, scheduled for a MatMul node, lowered and emitted
 * (--print-ir, --print-source), built, run on random data on the device, checked against
 * the reference and optionally timed. Output as for the CPU (cmd_kernel.c):
 *   max_error: X (tolerance T)
 *   median_ms: X gflops: Y          (last line, with --bench) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fuse/fuse.h"
#include "graph/graph.h"
#include "passes/passes.h"
#include "task/task.h"

#define INTERP_MAX_MACS ((int64_t)1 << 22)

typedef struct gpu_mm {
    hc_arena a;
    hc_graph *g;
    hc_func *f;
    int64_t na, nb, nc;
} gpu_mm;

static hc_status build_program(gpu_mm *p, const hc_target *t, int64_t batch, int64_t m,
                               int64_t n, int64_t k, int level, int cand, hc_error *err) {
    hc_arena_init(&p->a);
    p->g = hc_graph_new("kernel_matmul", 17);
    int nd = batch > 1 ? 3 : 2;
    int64_t sa[3] = {batch, m, k}, sb[3] = {batch, k, n};
    hc_tensor *A = hc_graph_add_input(p->g, "A", HC_F32, nd, nd == 3 ? sa : sa + 1);
    hc_tensor *B = hc_graph_add_input(p->g, "B", HC_F32, nd, nd == 3 ? sb : sb + 1);
    hc_node *node = hc_graph_add_node(p->g, HC_OPK_MATMUL, "matmul", 2, (hc_tensor *[]){A, B}, 0,
                                      NULL, 0, NULL, err);
    if (!node) return err->status;
    hc_graph_add_output(p->g, node->outputs[0]);
    if (hc_pass_infer_shapes(p->g, err) != HC_OK) return err->status;
    const hc_template *tp = hc_target_template(t, HC_OPK_MATMUL);
    int count = tp && tp->space ? tp->space(node, t, level) : 0;
    if (cand < 0 || cand >= count)
        return hc_error_set(err, HC_ERR_INVALID, "--candidate %d: the space at level %d has %d "
                            "candidates", cand, level, count);
    hc_task *task = hc_fuse_node_task(&p->a, node, err);
    if (!task) return err->status;
    hc_sched_opts o = {.level = level, .candidate = cand, .write_once = true};
    p->f = tp->schedule(&p->a, node, task, t, "matmul", &o, err);
    if (!p->f) return err->status ? err->status
                                  : hc_error_set(err, HC_ERR_UNSUPPORTED, "the template declined");
    p->na = batch * m * k, p->nb = batch * k * n, p->nc = batch * m * n;
    return HC_OK;
}

static void fill(float *x, int64_t n, uint64_t seed) {
    hc_rng r = {seed};
    for (int64_t i = 0; i < n; i++) x[i] = (float)hc_rng_uniform(&r, -1.0, 1.0);
}

/* C = A B per batch, accumulated in double. */
static void reference(int64_t batch, int64_t M, int64_t N, int64_t K, const float *A,
                      const float *B, float *C) {
#pragma omp parallel for schedule(static)
    for (int64_t bi = 0; bi < batch * M; bi++) {
        int64_t b = bi / M, i = bi % M;
        double *row = calloc((size_t)N + 1, sizeof *row);
        for (int64_t p = 0; p < K; p++) {
            double av = A[(b * M + i) * K + p];
            const float *brow = B + (b * K + p) * N;
            for (int64_t j = 0; j < N; j++) row[j] += av * brow[j];
        }
        for (int64_t j = 0; j < N; j++) C[(b * M + i) * N + j] = (float)row[j];
        free(row);
    }
}

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static int fail(const char *what, const hc_error *err) {
    fprintf(stderr, "hidetc kernel: %s%s%s\n", what, err ? ": " : "", err ? err->msg : "");
    return 1;
}

int kernel_matmul_gpu(const hc_target *t, bool runnable, int64_t batch, int64_t m, int64_t n,
                      int64_t k, int level, int cand, bool print_ir, bool print_source,
                      bool do_bench) {
    gpu_mm p = {0};
    hc_error err = {0};
    int rc = 0;
    if (build_program(&p, t, batch, m, n, k, level, cand, &err) != HC_OK) {
        rc = fail("matmul", &err);
        goto out;
    }
    printf("matmul batch=%lld m=%lld n=%lld k=%lld target=%s candidate %d of level %d\n",
           (long long)batch, (long long)m, (long long)n, (long long)k, t->name, cand, level);
    if (print_ir) {
        hc_sb sb;
        hc_sb_init(&sb);
        hc_print_func(&sb, p.f);
        fputs(hc_sb_str(&sb), stdout);
        hc_sb_free(&sb);
    }
    hc_module *mod = hc_module_new(&p.a, "kernel_matmul", 1, &p.f);
    char *src = t->emit(&p.a, t->lower(&p.a, mod, t), t);
    if (print_source) fputs(src, stdout);
    if (!runnable) {
        free(src);
        goto out;
    }
    hc_jit_lib *lib = NULL;
    hc_status st = t->build_one(t, 1, (const char *const *)&src, NULL, 1, NULL, NULL, &lib, &err);
    free(src);
    if (st != HC_OK) {
        rc = fail("build", &err);
        goto out;
    }
    hc_packed_fn fn = (hc_packed_fn)t->symbol(lib, "matmul__packed");
    const hc_executor *ex = t->exec;
    float *A = hc_xmalloc(sizeof(float) * (size_t)(p.na + 1)),
          *B = hc_xmalloc(sizeof(float) * (size_t)(p.nb + 1)),
          *C = hc_xmalloc(sizeof(float) * (size_t)(p.nc + 1)),
          *R = hc_xmalloc(sizeof(float) * (size_t)(p.nc + 1));
    fill(A, p.na, 1), fill(B, p.nb, 2);
    for (int64_t i = 0; i < p.nc; i++) C[i] = NAN; /* every element must be written */
    void *dA = ex->alloc(sizeof(float) * (size_t)(p.na + 1)),
         *dB = ex->alloc(sizeof(float) * (size_t)(p.nb + 1)),
         *dC = ex->alloc(sizeof(float) * (size_t)(p.nc + 1));
    void *args[3] = {dA, dB, dC};
    if (!fn || !dA || !dB || !dC) {
        rc = fail(!fn ? "matmul program not found in the built module" : "out of device memory",
                  NULL);
    } else if (ex->upload(dA, A, sizeof(float) * (size_t)p.na, &err) ||
               ex->upload(dB, B, sizeof(float) * (size_t)p.nb, &err) ||
               ex->upload(dC, C, sizeof(float) * (size_t)p.nc, &err)) {
        rc = fail("upload", &err);
    } else {
        ex->launch(fn, args);
        if (ex->check(&err) || ex->download(C, dC, sizeof(float) * (size_t)p.nc, &err)) {
            rc = fail("run", &err);
        } else {
            reference(batch, m, n, k, A, B, R);
            double maxerr = 0, tol = 1e-5 + 2e-6 * (double)k; /* |inputs| <= 1 */
            for (int64_t i = 0; i < p.nc; i++) {
                double e = fabs((double)C[i] - (double)R[i]);
                if (!(e <= maxerr)) maxerr = isnan(e) ? INFINITY : e;
            }
            printf("reference: double-accumulating loop\n");
            printf("max_error: %.3g (tolerance %.3g)\n", maxerr, tol);
            if (!(maxerr <= tol)) rc = fail("result exceeds the tolerance", NULL);
        }
    }
    if (!rc && do_bench) { /* batches of launches between syncs: the clock is the host's */
        double flops = 2.0 * (double)batch * (double)m * (double)n * (double)k;
        enum { MAX_SAMPLES = 200 };
        static double ms[MAX_SAMPLES];
        int reps = 1, ns = 0;
        for (int i = 0; i < 3; i++) ex->launch(fn, args);
        ex->check(NULL);
        double t0 = hc_now_ms();
        ex->launch(fn, args);
        ex->check(NULL);
        double one = hc_now_ms() - t0;
        reps = one > 0 ? (int)HC_MAX(1, HC_MIN(100, 2.0 / one)) : 100; /* >= ~2 ms a sample */
        double start = hc_now_ms();
        while (ns < MAX_SAMPLES && (ns < 10 || hc_now_ms() - start < 1000)) {
            t0 = hc_now_ms();
            for (int r = 0; r < reps; r++) ex->launch(fn, args);
            if (ex->check(&err)) {
                rc = fail("run", &err);
                break;
            }
            ms[ns++] = (hc_now_ms() - t0) / reps;
        }
        if (!rc) {
            qsort(ms, (size_t)ns, sizeof ms[0], cmp_double);
            double med = ns % 2 ? ms[ns / 2] : 0.5 * (ms[ns / 2 - 1] + ms[ns / 2]);
            printf("runs: %d x %d launches\n", ns, reps);
            printf("median_ms: %.4f gflops: %.2f\n", med, flops / med * 1e-6);
        }
    }
    ex->release(dA), ex->release(dB), ex->release(dC);
    free(A), free(B), free(C), free(R);
    t->lib_close(lib);
out:
    if (p.g) hc_graph_free(p.g);
    hc_arena_free(&p.a);
    return rc;
}
