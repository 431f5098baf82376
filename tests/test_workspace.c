/* test_workspace.c — heap temporaries (GLOBAL tensors declared in a function) come from
 * a per-thread workspace that persists across calls (docs/codegen.md): temporaries alive
 * together never share a buffer, a buffer grows when a call needs more, kernels running
 * on several threads at once each get their own, and everything is freed when a thread
 * exits or the library is unloaded. The generated functions allocate nothing. */
#include "target/cpu/cpu.h"
#include "target/cpu/jit.h"
#include "target/cpu/templates/matmul.h"
#include "task/task.h"
#include "test.h"

#include <malloc.h>
#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

static hc_arena A_;
static hc_arena *A = &A_;

#define IDX1(x) ((hc_expr *[]){(x)})
#define REF(v) hc_ref(A, (v))
#define INT(v) hc_int(A, (v))
#define F32(x) hc_cast(A, hc_type_scalar(HC_F32), (x))

enum { NMAX = 70000, WORKERS = 4 };

static hc_var *tensor1(const char *name, int64_t n) {
    return hc_var_new(A, name, hc_type_tensor_c(A, HC_F32, 1, (int64_t[]){n}, HC_SCOPE_GLOBAL));
}
static hc_var *declare_n(hc_builder *b, const char *name, hc_expr *n) {
    return hc_b_declare(b, name, hc_type_tensor(A, HC_F32, 1, (hc_expr *[]){n}, NULL,
                                                HC_SCOPE_GLOBAL), NULL);
}
static hc_expr *ld(hc_var *buf, hc_expr *i) { return hc_load(A, buf, 1, IDX1(i)); }
static void st(hc_builder *b, hc_var *buf, hc_expr *i, hc_expr *v) {
    hc_b_store(b, buf, 1, IDX1(i), v);
}

/* ws(a, o1, o2, n) with temporaries of run-time size n:
 *   t1 = 2a                                   (slot 0, shared by the workers)
 *   worker w of 4: t2 = t1 + w                (slot 1, one per OpenMP thread)
 *     for r < 2: t3 = reverse(t2) * (r + 1)   (slot 2, declared in a nested block)
 *                o1[w n + i] (+)= t3[i], then + t2[i]
 *   t4[i < 2n] = a[i % n] - 1                 (after the workers: slot 1 again)
 *   o2[i] = t4[i] + t4[2n - 1 - i]
 * so o1[w n + i] = 2a[i] + w + 3 (2a[n-1-i] + w), o2[i] = a[i] + a[n-1-i] - 2. A slot
 * shared by t2 and t3, or stale contents read before written, changes the results.
 * `parallel`: the workers are OpenMP threads, else a serial loop of the calling thread. */
static hc_func *f_ws(const char *name, bool parallel) {
    hc_var *a = tensor1("a", NMAX), *o1 = tensor1("o1", WORKERS * NMAX), *o2 = tensor1("o2", NMAX);
    hc_var *n = hc_var_new(A, "n", hc_type_scalar(HC_I64));
    hc_builder b;
    hc_builder_init(&b, A);
    hc_var *t1 = declare_n(&b, "t1", REF(n));
    HC_FOR(&b, i, "i", REF(n), parallel ? hc_parallel(0) : hc_serial()) {
        st(&b, t1, REF(i), hc_mul(A, ld(a, REF(i)), hc_f32(A, 2)));
    }
    HC_FOR(&b, w, "w", INT(WORKERS), parallel ? hc_parallel(WORKERS) : hc_serial()) {
        hc_var *t2 = declare_n(&b, "t2", REF(n));
        HC_FOR(&b, i, "i", REF(n), hc_serial()) {
            st(&b, t2, REF(i), hc_add(A, ld(t1, REF(i)), F32(REF(w))));
        }
        HC_FOR(&b, r, "r", INT(2), hc_serial()) {
            hc_var *t3 = declare_n(&b, "t3", REF(n));
            HC_FOR(&b, i, "i", REF(n), hc_serial()) {
                hc_expr *rev = ld(t2, hc_sub(A, hc_sub(A, REF(n), INT(1)), REF(i)));
                st(&b, t3, REF(i), hc_mul(A, rev, F32(hc_add(A, REF(r), INT(1)))));
            }
            HC_FOR(&b, i, "i", REF(n), hc_serial()) {
                hc_expr *at = hc_add(A, hc_mul(A, REF(w), REF(n)), REF(i));
                hc_b_if_begin(&b, hc_eq(A, REF(r), INT(0)));
                st(&b, o1, at, ld(t3, REF(i)));
                hc_b_else(&b);
                st(&b, o1, at, hc_add(A, hc_add(A, ld(o1, at), ld(t3, REF(i))), ld(t2, REF(i))));
                hc_b_end(&b);
            }
        }
    }
    hc_expr *n2 = hc_mul(A, REF(n), INT(2));
    hc_var *t4 = declare_n(&b, "t4", n2);
    HC_FOR(&b, i, "i", n2, hc_serial()) {
        st(&b, t4, REF(i), hc_sub(A, ld(a, hc_mod(A, REF(i), REF(n))), hc_f32(A, 1)));
    }
    HC_FOR(&b, i, "i", REF(n), hc_serial()) {
        hc_expr *back = hc_sub(A, hc_sub(A, n2, INT(1)), REF(i));
        st(&b, o2, REF(i), hc_add(A, ld(t4, REF(i)), ld(t4, back)));
    }
    return hc_func_new(A, name, HC_FN_CPU_KERNEL, 4, (hc_var *[]){a, o1, o2, n},
                       hc_builder_finish(&b));
}

static float in_a[NMAX];

/* Run ws with size n and compare with the formulas above; returns the number of bad
 * elements (so threads can report without touching the shared counters). */
static int run_ws(hc_packed_fn fn, int64_t n) {
    float *o1 = malloc(sizeof(float) * WORKERS * NMAX), *o2 = malloc(sizeof(float) * NMAX);
    for (int64_t i = 0; i < WORKERS * n; i++) o1[i] = NAN;
    for (int64_t i = 0; i < n; i++) o2[i] = NAN;
    fn((void *[]){in_a, o1, o2, &n});
    int bad = 0;
    for (int w = 0; w < WORKERS; w++)
        for (int64_t i = 0; i < n; i++) {
            float x = in_a[i], y = in_a[n - 1 - i];
            float want = (2 * x + (float)w) + (2 * y + (float)w) + 2 * (2 * y + (float)w);
            bad += !(fabsf(o1[w * n + i] - want) <= 1e-5f * (1 + fabsf(want)));
        }
    for (int64_t i = 0; i < n; i++) bad += o2[i] != (in_a[i] - 1) + (in_a[n - 1 - i] - 1);
    free(o1), free(o2);
    return bad;
}

/* The functions of a generated module (everything after the workspace prelude) neither
 * allocate nor free: that is the point. */
static void check_no_allocation(const char *src) {
    const char *body = strstr(src, "static inline void *hc_ws_get(");
    CHECK(body != NULL);
    if (!body) return;
    body = strchr(body, '}');
    CHECK(body && !strstr(body, "alloc(") && !strstr(body, "free("));
}

/* Bytes of mmapped heap; with M_MMAP_THRESHOLD fixed at 64 KiB below, every buffer of a
 * temporary of 16 Ki floats or more is one mapping, so this counts the workspaces. */
static size_t mapped_bytes(void) { return mallinfo2().hblkhd; }

typedef struct user {
    hc_packed_fn fn;
    int64_t n;
    int bad;
    pthread_barrier_t *done;
} user;

static void *user_thread(void *p) {
    user *u = p;
    for (int rep = 0; rep < 3; rep++) u->bad += run_ws(u->fn, u->n - rep);
    if (u->done) pthread_barrier_wait(u->done); /* the main thread looks at the memory */
    if (u->done) pthread_barrier_wait(u->done);
    return NULL;
}

/* Run the serial kernel on `nusers` threads at once (thread i: sizes n0 + step i, then 1
 * and 2 less) and join them; returns the mapped bytes while all were alive. */
static size_t user_wave(hc_packed_fn fn, int nusers, int64_t n0, int64_t step) {
    pthread_t th[8];
    user u[8];
    pthread_barrier_t done;
    pthread_barrier_init(&done, NULL, (unsigned)nusers + 1);
    for (int i = 0; i < nusers; i++) {
        u[i] = (user){.fn = fn, .n = n0 + step * i, .done = &done};
        pthread_create(&th[i], NULL, user_thread, &u[i]);
    }
    pthread_barrier_wait(&done);
    size_t busy = mapped_bytes();
    pthread_barrier_wait(&done);
    for (int i = 0; i < nusers; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(u[i].bad, 0);
    }
    pthread_barrier_destroy(&done);
    return busy;
}

static void test_program(void) {
    const hc_target *t = hc_target_host();
    for (int i = 0; i < NMAX; i++) in_a[i] = (float)((i * 37 % 101) - 50) / 16.0f;
    mallopt(M_MMAP_THRESHOLD, 64 * 1024);
    /* every parallel region gets WORKERS threads: libgomp ends its surplus workers when
     * a region asks for fewer threads than the last one, and the memory counts below
     * would then depend on when they exit */
    omp_set_num_threads(WORKERS);
    size_t base = mapped_bytes();

    hc_func *fs[2] = {f_ws("ws", true), f_ws("ws_serial", false)};
    char *src = hc_codegen_c(A, hc_module_new(A, "ws", 2, fs), t);
    CHECK(strstr(src, "HC_WS_SLOTS = 3 ") != NULL); /* t1, t2, t3 alive together */
    CHECK(strstr(src, "hc_ws_get(2, ") != NULL && strstr(src, "hc_ws_get(3, ") == NULL);
    check_no_allocation(src);
    hc_jit_options opt = {.cflags = t->cflags};
    hc_error err;
    for (int load = 0; load < 2; load++) { /* the second load comes from the cache */
        hc_jit_lib *lib = NULL;
        CHECK_MSG(hc_jit_build(src, &opt, &lib, &err) == HC_OK, "%s", err.msg);
        if (!lib) break;
        hc_packed_fn fn = (hc_packed_fn)hc_jit_symbol(lib, "ws__packed");
        hc_packed_fn serial = (hc_packed_fn)hc_jit_symbol(lib, "ws_serial__packed");
        CHECK(fn != NULL && serial != NULL);
        if (!fn || !serial) break;
        /* sizes that grow, shrink and grow again; each twice (the second call reuses) */
        static const int64_t sizes[] = {1, 7, 1000, 3, 65537, 13, 40009, NMAX};
        for (size_t i = 0; i < HC_ARRAY_LEN(sizes); i++)
            for (int rep = 0; rep < 2; rep++) CHECK_EQ_INT(run_ws(fn, sizes[i]), 0);
        size_t grown = mapped_bytes();
        /* the main thread's t1..t4 and the t2, t3 of each OpenMP thread, at NMAX */
        size_t need = (size_t)(4 + 2 * (WORKERS - 1)) * NMAX * sizeof(float);
        bool counted = grown >= need; /* false when a sanitizer owns malloc */
        for (int rep = 0; rep < 3; rep++) {
            CHECK_EQ_INT(run_ws(fn, NMAX), 0);
            CHECK_EQ_INT(run_ws(fn, 5000), 0);
            CHECK_EQ_INT(run_ws(serial, NMAX - rep), 0);
        }
        if (counted) { /* nothing more after the largest call: bounded by it */
            CHECK_MSG(grown < need + need / 2, "%zu bytes mapped for %zu", grown, need);
            CHECK_EQ_INT(mapped_bytes(), grown);
        }

        /* user threads at once: each has its own workspace (t1, t4 and t3 of 4 n floats
         * at least); when they exit, their workspaces stay for the next threads */
        enum { USERS = 3 };
        size_t busy = user_wave(serial, USERS, 20011, 9000);
        if (counted) {
            CHECK(busy >= grown + USERS * 4 * sizeof(float) * 20011);
            CHECK_EQ_INT(mapped_bytes(), busy);
            user_wave(serial, USERS, 20009, -5000); /* none larger */
            CHECK_EQ_INT(mapped_bytes(), busy); /* the second wave allocated nothing */
        }
        CHECK_EQ_INT(run_ws(fn, 999), 0);
        /* unloading frees every workspace: the main thread's, the OpenMP workers', the
         * exited threads' */
        hc_jit_close(lib);
        if (counted) {
            size_t after = mapped_bytes();
            CHECK_MSG(after == base, "%zu mapped bytes after unloading, %zu before loading",
                      after, base);
        } else if (load == 0) {
            printf("mallinfo2 does not see the heap (sanitizer?): memory checks skipped\n");
        }
    }
    free(src);
}

/* The matmul template's temporaries: the partial sums Cs (one for all threads: C stored
 * once, several K blocks) and the packed panels Ap, Bp (one per thread), in one module of
 * several shapes run largest-in-the-middle, against the interpreter. */
static float *random_buffer(int64_t n, uint64_t seed) {
    float *x = malloc(sizeof(float) * (size_t)(n ? n : 1));
    hc_rng r = {seed};
    for (int64_t i = 0; i < n; i++) x[i] = (float)hc_rng_uniform(&r, -1, 1);
    return x;
}

static void test_matmul(void) {
    const hc_target *t = hc_target_host();
    static const hc_matmul_shape shapes[] = {
        {1, 1, 1, 97}, {2, 37, 53, 211}, {1, 131, 97, 300}, {3, 5, 17, 61}, {1, 64, 129, 128}};
    enum { NS = HC_ARRAY_LEN(shapes) };
    hc_func *fs[NS];
    hc_matmul_config cfg[NS];
    for (int i = 0; i < NS; i++) {
        hc_matmul_config c = hc_matmul_default_config(t, &shapes[i]);
        c.kc = 24 + 8 * i; /* several K blocks */
        c.mc = c.mr * (1 + i % 3);
        c.pack_a = c.pack_b = c.c_write_once = true;
        hc_matmul_config_set_threads(&c, &shapes[i], 3);
        cfg[i] = c;
        char name[16];
        snprintf(name, sizeof name, "mm%d", i);
        hc_error err;
        fs[i] = hc_matmul_cpu(A, hc_arena_strdup(A, name), &shapes[i], &c, t, &err);
        CHECK_MSG(fs[i] != NULL, "%s", err.msg);
        if (!fs[i]) return;
    }
    char *src = hc_codegen_c(A, hc_module_new(A, "mm", NS, fs), t);
    CHECK(strstr(src, "Cs_") != NULL && strstr(src, "hc_ws_get(2, ") != NULL);
    check_no_allocation(src);
    hc_jit_options opt = {.cflags = t->cflags};
    hc_jit_lib *lib = NULL;
    hc_error err;
    CHECK_MSG(hc_jit_build(src, &opt, &lib, &err) == HC_OK, "%s", err.msg);
    free(src);
    if (!lib) return;
    for (int rep = 0; rep < 2; rep++)
        for (int i = 0; i < NS; i++) {
            const hc_matmul_shape *s = &shapes[i];
            int64_t na = s->batch * s->m * s->k, nb = s->batch * s->k * s->n;
            int64_t nc = s->batch * s->m * s->n;
            float *X = random_buffer(na, 10 + i + rep), *Y = random_buffer(nb, 20 + i);
            float *C = malloc(sizeof(float) * (size_t)nc), *R = malloc(sizeof(float) * (size_t)nc);
            for (int64_t j = 0; j < nc; j++) C[j] = NAN;
            char name[16];
            snprintf(name, sizeof name, "mm%d", i);
            hc_matmul_kernel k;
            CHECK_MSG(hc_matmul_kernel_from_lib(lib, name, &k, &err) == HC_OK, "%s", err.msg);
            hc_arena a;
            hc_arena_init(&a);
            CHECK_MSG(hc_interpret_task(hc_matmul_task(&a, s), (void *[]){X, Y}, (void *[]){R},
                                        &err) == HC_OK,
                      "%s", err.msg);
            if (k.fn) hc_matmul_run(&k, X, Y, C);
            int bad = 0;
            for (int64_t j = 0; j < nc; j++)
                bad += !(fabs((double)C[j] - (double)R[j]) <= 1e-5 + 2e-6 * (double)s->k);
            CHECK_MSG(bad == 0, "mm%d (rep %d, kc %lld): %d bad elements", i, rep,
                      (long long)cfg[i].kc, bad);
            hc_arena_free(&a);
            free(X), free(Y), free(C), free(R);
        }
    hc_jit_close(lib);
}

int main(void) {
    hc_arena_init(A);
    test_program();
    test_matmul();
    hc_arena_free(A);
    TEST_DONE();
}
