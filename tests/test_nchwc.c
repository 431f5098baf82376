/* test_nchwc.c — the channel-blocked layout NCHW{b}c (docs/nchwc.md):
 *  1. the CONV_NCHWC template (src/target/cpu/templates/conv_nchwc_cpu.c) through the op's
 *     schedule hook, every candidate of levels 0 and 1 and an even sample of level 2, plus
 *     hand-made configs (threads 1, 2, 3, row tiles, output-channel chunks, wide and narrow
 *     tiles), dense and depthwise, compiled with the JIT and checked against the reference
 *     interpreter on awkward shapes (1x1 images, primes, tails of pixel tiles and output
 *     blocks, strides, dilations, asymmetric and oversized pads, batches), outputs
 *     pre-filled with NaN; a few cases again with blocks of 8 (AVX2) and 4 (plain C);
 *  2. the access contract of every program, read off the IR (and the checker itself on
 *     hand-built programs that break it);
 *  3. bad shapes and configs are errors, the schedule space (default first, no duplicates,
 *     all valid, `max` bounds the writes), the hook's fallbacks (NULL without an error) and
 *     the op's inference errors;
 *  4. WINO_INPUT_NCHWC / WINO_OUTPUT_NCHWC and 5. MAX_POOL_NCHWC / AVERAGE_POOL_NCHWC
 *     through their hooks and with threads 1..3, against the interpreter;
 *  6. TO_NCHWC / FROM_NCHWC by the interpreter (the reorder, the round trip, bad blocks);
 *  7. the layout pass on small graphs (a conv chain with a residual, an Inception-like
 *     block with a channel Concat, Pad and pools, a MobileNet-like block with depthwise
 *     convs and Clip, channels that are not a multiple of the block, per-channel
 *     constants, and a mix: batch 2, SAME_UPPER, Sum, LeakyRelu, Concat on axis -3): the
 *     structure it leaves (Winograd off, then forced), the reference evaluator before and
 *     after (the pass alone and the whole pipeline), and the compiled models with the
 *     blocked layout on (also with Winograd forced) and off. */
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "target/cpu/cpu.h"
#include "fuse/fuse.h"
#include "graph/graph.h"
#include "target/cpu/jit.h"
#include "passes/pass_util.h"
#include "runtime/runtime.h"
#include "target/cpu/templates/conv_nchwc.h"
#include "target/cpu/templates/pool_nchwc.h"
#include "target/cpu/templates/winograd.h"
#include "test.h"
#include "graph_build.h"

/* The CPU target's template for node n's op (target/cpu/templates/registry.c): its
 * schedule, and its space (NULL: one candidate). A missing template is a failure. */
static const hc_template *node_template(const hc_node *n, const hc_target *tg) {
    const hc_template *p = hc_target_template(tg, n->op);
    CHECK_MSG(p && p->op == n->op && p->schedule, "%s: no template for op %d", n->name,
              (int)n->op);
    return p && p->schedule ? p : NULL;
}
static hc_func *schedule_node(hc_arena *a, const hc_node *n, const hc_task *t,
                              const hc_target *tg, const char *fname, const hc_sched_opts *o,
                              hc_error *e) {
    const hc_template *p = node_template(n, tg);
    return p ? p->schedule(a, n, t, tg, fname, o, e) : NULL;
}
static int space_node(const hc_node *n, const hc_target *tg, int level) {
    const hc_template *p = node_template(n, tg);
    return !p ? 0 : p->space ? p->space(n, tg, level) : 1;
}

static double seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static hc_rng rng = {2024};

#define NARGS(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t))
#define INTS(nm, ...) {.name = nm, .kind = HC_ATTR_INTS, .n = NARGS(__VA_ARGS__), \
                       .ints = (int64_t[]){__VA_ARGS__}}
#define INT(nm, v) {.name = nm, .kind = HC_ATTR_INT, .i = (v)}

static float *rand_buf(int64_t n) {
    float *p = malloc(sizeof(float) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) p[i] = (float)hc_rng_uniform(&rng, -2, 2);
    return p;
}

/* A one-node graph: node `op` on the given inputs, inferred. NULL (with err) when the
 * graph or the inference rejects it. */
static hc_node *one_node(hc_graph *g, hc_op_kind op, const char *name, int nin,
                         hc_tensor *const *in, int nattrs, const hc_attr *attrs, hc_error *err) {
    hc_node *n = hc_graph_add_node(g, op, name, nin, in, 0, NULL, nattrs, attrs, err);
    if (!n) return NULL;
    return hc_op_get(op)->infer(n, err) == HC_OK ? n : NULL;
}

static int count_op(const hc_graph *g, hc_op_kind k) {
    int c = 0;
    for (size_t i = 0; i < g->nodes.len; i++) c += g->nodes.data[i]->op == k;
    return c;
}
/* ops of kind k whose first output has rank `ndim` */
static int count_op_rank(const hc_graph *g, hc_op_kind k, int ndim) {
    int c = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const hc_node *n = g->nodes.data[i];
        c += n->op == k && n->outputs[0] && n->outputs[0]->ndim == ndim;
    }
    return c;
}
/* reorders that should have cancelled: TO(FROM(y)) or FROM(TO(x)) */
static int count_reorder_pairs(const hc_graph *g) {
    int c = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const hc_node *n = g->nodes.data[i];
        const hc_node *p = n->ninputs > 0 && n->inputs[0] ? n->inputs[0]->producer : NULL;
        if (!p) continue;
        c += (n->op == HC_OPK_TO_NCHWC && p->op == HC_OPK_FROM_NCHWC) ||
             (n->op == HC_OPK_FROM_NCHWC && p->op == HC_OPK_TO_NCHWC);
    }
    return c;
}

/* ---- the access contract ---------------------------------------------------------- */
/* Per parameter: which accesses are allowed. */
enum { ACC_LOAD = 1, ACC_VLOAD = 2, ACC_VLOAD_MASK = 4, ACC_VSTORE = 8 };

typedef struct contract {
    int allow[4];      /* per parameter: ACC_* bits */
    bool lane0[4];     /* vector accesses at index 0 of the last dimension */
} contract;

typedef struct access_scan {
    const hc_func *f;
    const contract *c;
    int addr[4], vec_ok[4], loads[4], bad;
    char why[160];
} access_scan;

static int param_index(const access_scan *s, const hc_var *v) {
    for (int i = 0; i < s->f->nparams; i++)
        if (s->f->params[i] == v) return i;
    return -1;
}

static void flag(access_scan *s, const char *what, int p) {
    if (!s->bad++) snprintf(s->why, sizeof s->why, "%s of parameter %d (%s)", what, p,
                            s->f->params[p]->name);
}

static bool const_zero(const hc_expr *e) {
    return e->kind == HC_E_CONST && e->u.c.i == 0;
}

static hc_expr *scan_expr(hc_mutator *m, hc_expr *e) {
    access_scan *s = m->ctx;
    int p;
    switch (e->kind) {
    case HC_E_VAR:
        if ((p = param_index(s, e->u.var)) >= 0) flag(s, "bare reference", p);
        break;
    case HC_E_LOAD:
        if ((p = param_index(s, e->u.load.buf)) >= 0) {
            s->loads[p]++;
            if (!(s->c->allow[p] & ACC_LOAD)) flag(s, "scalar load", p);
        }
        break;
    case HC_E_ADDRESS:
        if ((p = param_index(s, e->u.load.buf)) >= 0) s->addr[p]++;
        break;
    case HC_E_CALL: {
        if (e->u.call.nargs < 1 || e->u.call.args[0]->kind != HC_E_ADDRESS) break;
        const hc_expr *ptr = e->u.call.args[0];
        if ((p = param_index(s, ptr->u.load.buf)) < 0) break;
        int bit = 0;
        switch (e->u.call.prim) {
        case HC_PRIM_VLOAD: bit = ACC_VLOAD; break;
        case HC_PRIM_VLOAD_MASK: bit = ACC_VLOAD_MASK; break;
        case HC_PRIM_VSTORE: bit = ACC_VSTORE; break;
        default: break;
        }
        if (!bit || !(s->c->allow[p] & bit)) {
            flag(s, hc_prim_name(e->u.call.prim), p);
            break;
        }
        if (s->c->lane0[p] && !const_zero(ptr->u.load.idx[ptr->u.load.n - 1])) {
            flag(s, "vector access not at lane 0", p);
            break;
        }
        s->vec_ok[p]++;
        break;
    }
    default:
        break;
    }
    return e;
}

static hc_stmt *scan_stmt(hc_mutator *m, hc_stmt *st) {
    access_scan *s = m->ctx;
    int p;
    if (st->kind == HC_S_STORE && (p = param_index(s, st->u.store.buf)) >= 0)
        flag(s, "scalar store", p);
    return st;
}

/* Violations of the contract (the first described in why[160]): every access to a
 * parameter is one the contract allows; every ADDRESS of a parameter is the pointer of an
 * allowed vector access; the output (last parameter) is stored, every input is read. */
static int contract_violations(const hc_func *f, const contract *c, char *why) {
    access_scan s = {.f = f, .c = c};
    hc_mutator m = {.ctx = &s, .expr = scan_expr, .stmt = scan_stmt};
    hc_mutate_stmt(&m, f->body);
    for (int p = 0; p < f->nparams && p < 4; p++) {
        if (s.addr[p] != s.vec_ok[p] && !s.bad) flag(&s, "address outside a vector access", p);
        bool out = p == f->nparams - 1;
        if (out && s.vec_ok[p] == 0) flag(&s, "no store", p);
        if (!out && s.vec_ok[p] + s.loads[p] == 0) flag(&s, "no read", p);
    }
    memcpy(why, s.why, sizeof s.why);
    return s.bad;
}

static void check_contract(const hc_func *f, const contract *c, const char *label) {
    char why[160];
    int bad = contract_violations(f, c, why);
    CHECK_MSG(bad == 0, "%s %s: %d contract violations, first: %s", label, f->name, bad, why);
}

/* The checker itself: a program that keeps the contract passes, each kind of breach is
 * caught (X [16] read by VLOAD, Y [2, 16] written by VSTORE at lane 0). */
static void test_contract_checker(void) {
    hc_arena a;
    hc_arena_init(&a);
    const hc_type *vec = hc_type_vector(&a, HC_F32, 16), *vd = hc_type_scalar(HC_VOID);
    const contract c = {{ACC_VLOAD, ACC_VSTORE}, {true, true}};
    for (int v = 0; v < 8; v++) {
        hc_var *X = hc_var_new(&a, "X", hc_type_tensor_c(&a, HC_F32, 1, (int64_t[]){16},
                                                         HC_SCOPE_GLOBAL));
        hc_var *Y = hc_var_new(&a, "Y", hc_type_tensor_c(&a, HC_F32, 2, (int64_t[]){2, 16},
                                                         HC_SCOPE_GLOBAL));
        hc_expr *zero = hc_int(&a, 0), *one = hc_int(&a, 1);
        hc_builder b;
        hc_builder_init(&b, &a);
        hc_expr *x = v == 1 ? hc_load(&a, X, 1, &zero) /* a scalar load of X */
                            : hc_call(&a, HC_PRIM_VLOAD, vec, 1,
                                      (hc_expr *[]){hc_address(&a, X, 1, &zero)});
        if (v == 1) x = hc_call(&a, HC_PRIM_VBROADCAST, vec, 1, &x);
        hc_expr *yrow = v == 2 ? one : zero;
        hc_expr *ylane = v == 3 ? one : zero; /* a store off lane 0 */
        if (v != 4) /* v 4: Y never stored */
            hc_b_eval(&b, hc_call(&a, HC_PRIM_VSTORE, vd, 2,
                                  (hc_expr *[]){hc_address(&a, Y, 2, (hc_expr *[]){yrow, ylane}),
                                                x}));
        if (v == 5) /* Y read back */
            hc_b_eval(&b, hc_call(&a, HC_PRIM_VSTORE, vd, 2,
                                  (hc_expr *[]){hc_address(&a, Y, 2, (hc_expr *[]){one, zero}),
                                                hc_call(&a, HC_PRIM_VLOAD, vec, 1,
                                                        (hc_expr *[]){hc_address(
                                                            &a, Y, 2,
                                                            (hc_expr *[]){zero, zero})})}));
        if (v == 6) /* a scalar store into Y */
            hc_b_store(&b, Y, 2, (hc_expr *[]){one, one}, hc_f32(&a, 1.0));
        if (v == 7) /* a masked store of Y */
            hc_b_eval(&b, hc_call(&a, HC_PRIM_VSTORE_MASK, vd, 3,
                                  (hc_expr *[]){hc_address(&a, Y, 2, (hc_expr *[]){one, zero}),
                                                x, hc_int(&a, 3)}));
        hc_func *f = hc_func_new(&a, "probe", HC_FN_CPU_KERNEL, 2, (hc_var *[]){X, Y},
                                 hc_builder_finish(&b));
        char why[160];
        int bad = contract_violations(f, &c, why);
        /* v 0 keeps the contract, so does v 2 (a store into row 1 at lane 0) */
        CHECK_MSG(v == 0 || v == 2 ? bad == 0 : bad > 0, "probe %d: %d violations (%s)", v, bad,
                  why);
        if (v == 1) { /* with scalar loads allowed */
            contract c2 = c;
            c2.allow[0] |= ACC_LOAD;
            CHECK_EQ_INT(contract_violations(f, &c2, why), 0);
        }
    }
    hc_arena_free(&a);
}

/* The conv's contract: X by scalar LOAD (broadcast) or VLOAD / VLOAD_MASK, W and B by
 * VLOAD, Y by VSTORE only; vectors along the last dim. */
static contract conv_contract(bool bias) {
    contract c = {{ACC_LOAD | ACC_VLOAD | ACC_VLOAD_MASK, ACC_VLOAD, ACC_VLOAD, ACC_VLOAD},
                  {true, true, true, true}};
    if (bias) c.allow[3] = ACC_VSTORE;
    else c.allow[2] = ACC_VSTORE;
    return c;
}

/* ---- a set of programs for one task: deduplicated, compiled, run ----------------------- */
#define MAX_FUNCS 96
#define MAX_SOURCES 4

typedef struct kset {
    hc_func *f[MAX_FUNCS];
    char *body[MAX_FUNCS];
    int n, scheduled;
} kset;

static char *print_body(const hc_func *f) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_print_stmt(&sb, f->body, 0);
    const char *p = hc_sb_str(&sb);
    char *s = malloc(strlen(p) + 1);
    memcpy(s, p, strlen(p) + 1);
    hc_sb_free(&sb);
    return s;
}

/* Adds f unless an identical program is there; returns whether it was new. */
static bool kset_add(kset *k, hc_func *f) {
    k->scheduled++;
    char *b = print_body(f);
    for (int i = 0; i < k->n; i++)
        if (strcmp(k->body[i], b) == 0) {
            free(b);
            return false;
        }
    if (k->n == MAX_FUNCS) {
        free(b);
        CHECK_MSG(false, "more than %d distinct programs", MAX_FUNCS);
        return false;
    }
    k->f[k->n] = f, k->body[k->n] = b, k->n++;
    return true;
}

static void kset_free(kset *k) {
    for (int i = 0; i < k->n; i++) free(k->body[i]);
}

/* Generate C for n programs in a few sources (the compiler's start and the prelude cost
 * per source) and build them in parallel into one library, with the target's compiler
 * flags (plain C for the plain-C target, as under HIDETC_ISA=scalar); NULL on failure. */
static hc_jit_lib *build_funcs(hc_arena *a, const char *label, const hc_target *tg, int n,
                               hc_func *const *f) {
    hc_error err = {0};
    int nsrc = HC_MIN(n, MAX_SOURCES), per = (n + nsrc - 1) / HC_MAX(nsrc, 1);
    char *srcs[MAX_SOURCES] = {0};
    nsrc = (n + per - 1) / per;
    for (int s = 0; s < nsrc; s++) {
        int first = s * per, cnt = HC_MIN(per, n - first);
        srcs[s] = hc_codegen_c(a, hc_module_new(a, "nchwc", cnt, f + first), tg);
    }
    hc_jit_lib *lib = NULL;
    hc_jit_options o = {.cflags = tg->cflags};
    hc_status st = hc_jit_build_parallel(nsrc, (const char *const *)srcs, &o, 0, &lib, &err);
    CHECK_MSG(st == HC_OK, "%s: build: %s", label, err.msg);
    for (int s = 0; s < nsrc; s++) free(srcs[s]);
    return st == HC_OK ? lib : NULL;
}

/* Buffers that end (layout 0) or begin (layout 1) where an inaccessible page does, so
 * that a program reading or writing past either end of a tensor faults; the fault handler
 * names the program. */
typedef struct guarded {
    char *map;
    size_t len;
    float *p;
} guarded;

static guarded guarded_alloc(int64_t n, int layout) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = sizeof(float) * (size_t)HC_MAX(n, 1);
    size_t pages = (bytes + page - 1) / page, len = (pages + 2) * page;
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    HC_ASSERT(m != MAP_FAILED);
    HC_ASSERT(mprotect(m, page, PROT_NONE) == 0 &&
              mprotect(m + (pages + 1) * page, page, PROT_NONE) == 0);
    char *p = layout == 0 ? m + (pages + 1) * page - bytes : m + page;
    return (guarded){m, len, (float *)p};
}

static void guarded_free(guarded *g) { munmap(g->map, g->len); }

static const char *volatile running_program;

static void on_fault(int sig) {
    const char *msg[3] = {"test_nchwc: memory fault in program ",
                          running_program ? running_program : "(none: not in a program)",
                          " (an access outside its tensors)\n"};
    for (int i = 0; i < 3; i++) {
        ssize_t r = write(2, msg[i], strlen(msg[i]));
        (void)r;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Run each of the n programs (built into lib) on the inputs in[i] (in_numel[i] floats,
 * copied into guarded buffers, both layouts) with the output pre-filled with NaN, and
 * compare with the interpreter's result of t. Returns the number of wrong programs. */
static int check_funcs(hc_arena *a, const char *label, hc_jit_lib *lib, const hc_task *t,
                       int nin, void *const *in, const int64_t *in_numel, int64_t ny, int n,
                       hc_func *const *f) {
    hc_error err = {0};
    float *ref = malloc(sizeof(float) * (size_t)(ny + 1));
    for (int64_t j = 0; j < ny; j++) ref[j] = NAN;
    hc_status st = hc_interpret_task(t, in, (void *[]){ref}, &err);
    CHECK_MSG(st == HC_OK, "%s: interpreter: %s", label, err.msg);
    int wrong = 0;
    for (int layout = 0; st == HC_OK && layout < 2; layout++) {
        guarded gin[4], gout = guarded_alloc(ny, layout);
        HC_ASSERT(nin <= 4);
        for (int j = 0; j < nin; j++) {
            gin[j] = guarded_alloc(in_numel[j], layout);
            memcpy(gin[j].p, in[j], sizeof(float) * (size_t)in_numel[j]);
        }
        for (int i = 0; i < n; i++) {
            float *out = gout.p;
            for (int64_t j = 0; j < ny; j++) out[j] = NAN; /* every element must be written */
            void *args[8];
            for (int j = 0; j < nin; j++) args[j] = gin[j].p;
            args[nin] = out;
            hc_packed_fn fn =
                (hc_packed_fn)hc_jit_symbol(lib, hc_arena_printf(a, "%s__packed", f[i]->name));
            CHECK(fn != NULL);
            if (!fn) continue;
            running_program = hc_arena_printf(a, "%s: %s", label, f[i]->name);
            fn(args);
            running_program = NULL;
            double e = max_rel_err(out, ref, ny);
            if (e > 1e-4) {
                wrong++;
                fprintf(stderr, "%s: %s: max relative error %g\n", label, f[i]->name, e);
            }
        }
        for (int j = 0; j < nin; j++) guarded_free(&gin[j]);
        guarded_free(&gout);
    }
    CHECK_MSG(wrong == 0, "%s: %d of %d runs wrong", label, wrong, 2 * n);
    free(ref);
    return wrong;
}

static void run_kset(hc_arena *a, const char *label, const hc_target *tg, const hc_task *t,
                     int nin, void *const *in, const int64_t *in_numel, int64_t ny,
                     const kset *k) {
    hc_jit_lib *lib = build_funcs(a, label, tg, k->n, k->f);
    if (!lib) return;
    check_funcs(a, label, lib, t, nin, in, in_numel, ny, k->n, k->f);
    hc_jit_close(lib);
}

/* Small one-node cases (Winograd transforms, pools) staged, then built all together. */
#define MAX_STAGED 128
typedef struct staged {
    char label[64];
    hc_graph *g;
    hc_node *n;
    hc_task *t;
    kset ks;
} staged;

static void run_staged(hc_arena *a, const hc_target *tg, staged *st, int count) {
    hc_func **all = malloc(sizeof(hc_func *) * (size_t)(count * MAX_FUNCS + 1));
    int n = 0;
    for (int i = 0; i < count; i++)
        for (int j = 0; j < st[i].ks.n; j++) all[n++] = st[i].ks.f[j];
    hc_jit_lib *lib = n ? build_funcs(a, "staged", tg, n, all) : NULL;
    for (int i = 0; i < count; i++) {
        if (lib && st[i].t && st[i].ks.n) {
            int64_t numel = hc_tensor_numel(st[i].n->inputs[0]);
            void *in[1] = {rand_buf(numel)};
            check_funcs(a, st[i].label, lib, st[i].t, 1, in, &numel,
                        hc_tensor_numel(st[i].n->outputs[0]), st[i].ks.n, st[i].ks.f);
            free(in[0]);
        }
        kset_free(&st[i].ks);
        hc_graph_free(st[i].g);
    }
    if (lib) hc_jit_close(lib);
    free(all);
}

/* ---- 1-3. CONV_NCHWC ------------------------------------------------------------------ */
typedef struct ccase {
    const char *name;
    int64_t n, cb, h, w, mb, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
    bool bias, depthwise;
    bool nchw; /* a stem's NCHW input: cb channels */
} ccase;

/* X [n, cb, h, w, b], W [mb, cb, kh, kw, b, b] (depthwise [mb, 1, kh, kw, 1, b]; NCHW
 * input: X [n, cb, h, w], W [mb, cb, kh, kw, 1, b]), B [mb, b] */
static hc_node *conv_node(hc_graph *g, const ccase *k, int64_t b, hc_dtype dt, hc_error *err) {
    hc_tensor *in[3];
    in[0] = hc_graph_add_input(g, "X", dt, k->nchw ? 4 : 5,
                               (int64_t[]){k->n, k->cb, k->h, k->w, b});
    in[1] = k->depthwise
                ? hc_graph_add_input(g, "W", dt, 6, (int64_t[]){k->mb, 1, k->kh, k->kw, 1, b})
                : hc_graph_add_input(g, "W", dt, 6,
                                     (int64_t[]){k->mb, k->cb, k->kh, k->kw, k->nchw ? 1 : b, b});
    if (k->bias) in[2] = hc_graph_add_input(g, "B", dt, 2, (int64_t[]){k->mb, b});
    hc_attr at[4] = {INTS("strides", k->sh, k->sw), INTS("dilations", k->dh, k->dw),
                     INTS("pads", k->pt, k->pl, k->pb, k->pr),
                     INT("group", k->depthwise ? k->cb * b : 1)};
    return one_node(g, HC_OPK_CONV_NCHWC, k->name, k->bias ? 3 : 2, in, 4, at, err);
}

/* A case's template shape; its output size from the window (conv_shape_of: the node's). */
static hc_conv_nchwc_shape ccase_shape(const ccase *k, int b) {
    return (hc_conv_nchwc_shape){
        .n = k->n, .cb = k->cb, .h = k->h, .w = k->w, .mb = k->mb, .kh = k->kh, .kw = k->kw,
        .sh = k->sh, .sw = k->sw, .dh = k->dh, .dw = k->dw, .pt = k->pt, .pl = k->pl,
        .pb = k->pb, .pr = k->pr,
        .oh = (k->h + k->pt + k->pb - (k->kh - 1) * k->dh - 1) / k->sh + 1,
        .ow = (k->w + k->pl + k->pr - (k->kw - 1) * k->dw - 1) / k->sw + 1,
        .block = b, .bias = k->bias, .depthwise = k->depthwise, .nchw_in = k->nchw};
}

static hc_conv_nchwc_shape conv_shape_of(const ccase *k, const hc_node *n, int b) {
    hc_conv_nchwc_shape s = ccase_shape(k, b);
    s.oh = n->outputs[0]->shape[2], s.ow = n->outputs[0]->shape[3];
    return s;
}

/* Level 2 is large: about this many of its candidates (evenly spread, the last included). */
#define LEVEL2_SAMPLE 4

static int conv_programs_total, conv_programs_distinct;

static void run_conv_case(const ccase *k, const hc_target *tg, int max_level) {
    double start = seconds();
    hc_error err = {0};
    int b = hc_target_f32_lanes(tg);
    hc_graph *g = hc_graph_new("conv_nchwc", 17);
    hc_node *n = conv_node(g, k, b, HC_F32, &err);
    CHECK_MSG(n != NULL, "%s: %s", k->name, err.msg);
    if (!n) {
        hc_graph_free(g);
        return;
    }
    const hc_op_def *d = hc_op_get(HC_OPK_CONV_NCHWC);
    hc_arena a;
    hc_arena_init(&a);
    hc_task *t = d->task(&a, n, &err);
    CHECK_MSG(t != NULL, "%s: task: %s", k->name, err.msg);
    hc_conv_nchwc_shape s = conv_shape_of(k, n, b);
    CHECK_MSG(hc_conv_nchwc_validate_shape(&s, &err) == HC_OK, "%s: %s", k->name, err.msg);
    contract ct = conv_contract(k->bias);
    kset ks = {0};
    int counts[3] = {0, 0, 0};
    for (int level = 0; t && level <= max_level; level++) {
        counts[level] = space_node(n, tg, level);
        CHECK_EQ_INT(counts[level], hc_conv_nchwc_space(tg, &s, level, NULL, 0));
        int step = level == 2 && counts[level] > LEVEL2_SAMPLE
                       ? (counts[level] + LEVEL2_SAMPLE - 2) / (LEVEL2_SAMPLE - 1)
                       : 1;
        for (int c = 0; c < counts[level];
             c = c + step < counts[level] || c == counts[level] - 1 ? c + step
                                                                    : counts[level] - 1) {
            hc_sched_opts o = {.level = level, .candidate = c, .write_once = true};
            err = (hc_error){0};
            hc_func *f = schedule_node(&a, n, t, tg, hc_arena_printf(&a, "cv_l%d_c%d", level, c),
                                     &o, &err);
            CHECK_MSG(f != NULL, "%s level %d candidate %d: %s", k->name, level, c, err.msg);
            if (!f) continue;
            check_contract(f, &ct, k->name);
            kset_add(&ks, f);
        }
    }
    CHECK_MSG(counts[0] == 1 && (max_level < 1 || counts[1] >= 1) &&
                  (max_level < 2 || counts[2] >= 1),
              "%s: space sizes %d %d %d", k->name, counts[0], counts[1], counts[2]);
    if (t) {
        /* an out-of-range candidate is an error naming the node */
        hc_sched_opts bad = {.level = 1, .candidate = space_node(n, tg, 1)};
        err = (hc_error){0};
        CHECK(schedule_node(&a, n, t, tg, "bad", &bad, &err) == NULL && err.status != HC_OK &&
              strstr(err.msg, k->name));
        /* NULL opts: the default config, the same program as level 0 */
        hc_func *def = schedule_node(&a, n, t, tg, "cv_default", NULL, &err);
        CHECK_MSG(def != NULL && !kset_add(&ks, def), "%s: NULL opts is not the default",
                  k->name);
        /* hand-made configs: threads 1, 2, 3 with the default tile, row tiles and output
         * chunks with 3 threads (uneven items), wide and narrow tiles */
        hc_conv_nchwc_config dc = hc_conv_nchwc_default_config(tg, &s);
        hc_conv_nchwc_config hand[10];
        int nh = 0;
        for (int th = 1; th <= 3; th++) {
            hand[nh] = dc;
            hand[nh++].threads = th;
        }
        hand[nh++] = (hc_conv_nchwc_config){dc.lanes, 5, 3, 1, 2, 3};
        hand[nh++] = (hc_conv_nchwc_config){dc.lanes, 3, 2, 2, 3, 3};
        hand[nh++] = (hc_conv_nchwc_config){dc.lanes, 1, 1, 3, 1, 2};
        if (hc_conv_nchwc_tile_fits(tg, 28, 1))
            hand[nh++] = (hc_conv_nchwc_config){dc.lanes, 28, 1, 64, 1, 1};
        hand[nh++] = (hc_conv_nchwc_config){dc.lanes, 2, 7, 1, 1, 3};
        /* a tile per output row (every tile takes the in-row body) and one pixel less
         * (tiles in a row and tiles across a row's end, branching per tile) */
        if (s.ow >= 2 && s.ow <= HC_CONV_NCHWC_MAX_PX) {
            hand[nh++] = (hc_conv_nchwc_config){dc.lanes, (int)s.ow, 1, 2, 1, 2};
            hand[nh++] = (hc_conv_nchwc_config){dc.lanes, (int)s.ow - 1, 1, 3, 1, 2};
        }
        for (int i = 0; i < nh; i++) {
            if (!hc_conv_nchwc_tile_fits(tg, hand[i].px, hand[i].ot)) continue;
            err = (hc_error){0};
            hc_func *f = hc_conv_nchwc_cpu(&a, hc_arena_printf(&a, "cv_hand%d", i), &s, &hand[i],
                                           tg, &err);
            CHECK_MSG(f != NULL, "%s hand config %d: %s", k->name, i, err.msg);
            if (!f) continue;
            check_contract(f, &ct, k->name);
            kset_add(&ks, f);
        }
        void *in[3];
        int64_t numel[3];
        for (int i = 0; i < n->ninputs; i++)
            in[i] = rand_buf(numel[i] = hc_tensor_numel(n->inputs[i]));
        char label[96];
        snprintf(label, sizeof label, "%s (%s)", k->name, hc_isa_name(tg->caps.isa));
        run_kset(&a, label, tg, t, n->ninputs, in, numel, hc_tensor_numel(n->outputs[0]), &ks);
        for (int i = 0; i < n->ninputs; i++) free(in[i]);
        printf("%-26s isa %-6s %2d programs (%2d scheduled; levels: %d, %d, %d) %.1f s\n",
               k->name, hc_isa_name(tg->caps.isa), ks.n, ks.scheduled, counts[0], counts[1],
               counts[2], seconds() - start);
        conv_programs_total += ks.scheduled, conv_programs_distinct += ks.n;
    }
    kset_free(&ks);
    hc_arena_free(&a);
    hc_graph_free(g);
}

/*  name                        n cb  h   w mb kh kw sh sw dh dw pt pl pb pr bias   dw */
static const ccase conv_cases[] = {
    /* 1x1 unpadded stride 1: channel blocks 1..3, output blocks 1..7 (tails of ot) */
    {"1x1_cb1_mb1_1x1", 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, true, false},
    {"1x1_cb3_mb5_7x13", 1, 3, 7, 13, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, false, false},
    {"1x1_cb1_mb3_5x71", 1, 1, 5, 71, 3, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, true, false},
    {"1x1_cb2_mb7_1x1_n2", 2, 2, 1, 1, 7, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, false, false},
    /* 1x1 stride 2, batch 3 */
    {"1x1_s2_cb2_mb3_9x11_n3", 3, 2, 9, 11, 3, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, true, false},
    /* reductions without padding (more input than output blocks: rows copied to a scratch) */
    {"1x1_reduce_cb5_mb2_7x13", 1, 5, 7, 13, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, true, false},
    {"1x1_s2_reduce_cb4_mb1_9x11_n2", 2, 4, 9, 11, 1, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, false, false},
    {"3x2_d2_reduce_cb3_mb2_11x7", 1, 3, 11, 7, 2, 3, 2, 1, 1, 2, 1, 0, 0, 0, 0, true, false},
    /* 3x3: pad 1 stride 1 and 2, a 1x1 image, no padding */
    {"3x3_p1_cb1_mb3_13x7", 1, 1, 13, 7, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false},
    {"3x3_p1_cb1_mb1_17x19", 1, 1, 17, 19, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, false},
    {"3x3_s2_p1_cb2_mb2_15x16", 1, 2, 15, 16, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true, false},
    {"3x3_p1_1x1_image", 1, 2, 1, 1, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false},
    {"3x3_nopad_cb2_mb1_6x6", 1, 2, 6, 6, 1, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, false, false},
    /* 1x7 / 7x1 */
    {"1x7_p0x3_cb1_mb2_9x13", 1, 1, 9, 13, 2, 1, 7, 1, 1, 1, 1, 0, 3, 0, 3, true, false},
    {"7x1_p3x0_cb1_mb2_13x9", 1, 1, 13, 9, 2, 7, 1, 1, 1, 1, 1, 3, 0, 3, 0, false, false},
    /* 5x5 pad 2, dilation 2, asymmetric pads, rectangular strides and dilations */
    {"5x5_p2_cb1_mb2_5x7", 1, 1, 5, 7, 2, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, true, false},
    {"3x3_d2_p2_cb1_mb2_11x9", 1, 1, 11, 9, 2, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, false, false},
    {"3x3_asym0120_cb1_mb5_7x6", 1, 1, 7, 6, 5, 3, 3, 1, 1, 1, 1, 0, 1, 2, 0, true, false},
    {"3x3_s2_asym1001_n2", 2, 1, 9, 12, 2, 3, 3, 2, 2, 1, 1, 1, 0, 0, 1, true, false},
    {"3x5_s1x2_d2x1_cb1_mb2", 1, 1, 7, 17, 2, 3, 5, 1, 2, 2, 1, 1, 2, 3, 0, false, false},
    /* pads wider than the window (rows and columns of zeros only) */
    {"3x3_bigpad4532_cb1_mb2_5x5", 1, 1, 5, 5, 2, 3, 3, 1, 1, 1, 1, 4, 5, 3, 2, true, false},
    /* depthwise (group = channels) */
    {"dw_3x3_p1_cb3_13x7", 1, 3, 13, 7, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, true},
    {"dw_3x3_s2_p1_cb2_15x16_n2", 2, 2, 15, 16, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, true},
    {"dw_5x5_p2_cb1_9x11", 1, 1, 9, 11, 1, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, true, true},
    {"dw_3x3_nopad_cb2_7x9", 1, 2, 7, 9, 2, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0, false, true},
    {"dw_3x3_s2_asym0110_n3", 3, 1, 8, 11, 1, 3, 3, 2, 2, 1, 1, 0, 1, 1, 0, true, true},
    {"dw_3x3_p1_1x1_image", 1, 2, 1, 1, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, true},
    {"dw_3x3_bigpad4532_5x5", 1, 2, 5, 5, 2, 3, 3, 1, 1, 1, 1, 4, 5, 3, 2, false, true},
    {"dw_3x3_d2_p2_cb1_9x10", 1, 1, 9, 10, 1, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, true, true},
    /* stems: an NCHW input of cb channels (a scratch of one lane where padded) */
    {"stem_7x7_s2_p3_c3_mb2_23x20", 1, 3, 23, 20, 2, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, true, false, true},
    {"stem_3x3_s2_p1_c3_mb5_15x17_n2", 2, 3, 15, 17, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, false, true},
    {"stem_3x3_s2_nopad_c3_mb3_9x13", 1, 3, 9, 13, 3, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, true, false, true},
    {"stem_5x5_p2_c1_mb3_11x7", 1, 1, 11, 7, 3, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, true, false, true},
    {"stem_3x3_asym1021_c5_mb2_7x9", 1, 5, 7, 9, 2, 3, 3, 1, 1, 1, 1, 1, 0, 2, 1, false, false, true},
    {"stem_1x1_c2_mb1_5x6_n3", 3, 2, 5, 6, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, true, false, true},
};

/* The default's rows per item fit an item's input rows in half of L2 (an injected AVX2
 * target of 512 KiB, Zen 3's, and of 2 MiB): ResNet-50's 256 -> 64 1x1 on 56x56 reads
 * 56 x 256 floats (57 KiB) per row, so 4 rows at 512 KiB, 14 at 2 MiB, at batch 1 (28
 * rows per thread before) and batch 8 (the whole image before); a padded 3x3 the same
 * with its halo rows; a depthwise conv keeps the threads' split (it reads its own
 * channels once). */
static void test_rows_fit_l2(void) {
    hc_target t = *hc_target_cpu_emit_only(HC_ISA_AVX2);
    t.caps.num_cores = 2;
    const int64_t l2s[2] = {512 << 10, 2 << 20};
    const int want[2][2] = {{4, 4}, {14, 14}}; /* [l2][batch 1, 8] */
    for (int i = 0; i < 2; i++) {
        t.caps.l2_bytes = l2s[i];
        for (int k = 0; k < 2; k++) {
            hc_conv_nchwc_shape s = {k ? 8 : 1, 32, 56, 56, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0,
                                     56, 56, 8, true, false};
            hc_conv_nchwc_config c = hc_conv_nchwc_default_config(&t, &s);
            CHECK_MSG(c.rt == want[i][k], "1x1, L2 %lld, batch %lld: rt %d, want %d",
                      (long long)l2s[i], (long long)s.n, c.rt, want[i][k]);
            s.kh = s.kw = 3, s.pt = s.pl = s.pb = s.pr = 1;
            c = hc_conv_nchwc_default_config(&t, &s);
            int64_t bytes = 32 * ((int64_t)c.rt + 2) * 58 * 8 * 4;
            CHECK_MSG(bytes <= l2s[i] / 2 && (c.rt == 1 || 32 * (2 * (int64_t)c.rt + 2) * 58 * 32 > l2s[i] / 2),
                      "3x3, L2 %lld: rt %d reads %lld bytes", (long long)l2s[i], c.rt,
                      (long long)bytes);
        }
    }
    hc_conv_nchwc_shape dw = {1, 12, 56, 56, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 56, 56, 8, true, true};
    t.caps.l2_bytes = 512 << 10;
    hc_conv_nchwc_config c = hc_conv_nchwc_default_config(&t, &dw);
    CHECK_MSG(c.rt == 28 || c.osplit == 2, "depthwise: rt %d os %d", c.rt, c.osplit);
}

/* The default's split over 2 threads (an injected AVX2 target, Zen 3's caches): a dense
 * conv takes one output-channel chunk per thread only where its weights outweigh its
 * input (each chunk streams the whole input), so ResNet-50's 256 -> 64 1x1 on 56x56
 * (3.2 MB of input, 64 KB of weights) splits the rows even though its 8 blocks split
 * into whole groups, and a 512 -> 512 3x3 on 7x7 (9.4 MB of weights) splits the
 * channels; a depthwise conv reads only its own channels, so it takes chunks wherever
 * they split into whole groups. */
static void test_default_split(void) {
    hc_target t = *hc_target_cpu_emit_only(HC_ISA_AVX2);
    t.caps.num_cores = 2, t.caps.l1_bytes = 32 << 10, t.caps.l2_bytes = 512 << 10;
    t.caps.l3_bytes = 32 << 20;
    hc_conv_nchwc_shape big_x = {1, 32, 56, 56, 8, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0,
                                 56, 56, 8, true, false};
    hc_conv_nchwc_config c = hc_conv_nchwc_default_config(&t, &big_x);
    CHECK_MSG(c.osplit == 1 && c.threads == 2, "256 -> 64 1x1 at 56x56: os %d t %d", c.osplit,
              c.threads);
    hc_conv_nchwc_shape big_w = {1, 64, 7, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1,
                                 7, 7, 8, true, false};
    c = hc_conv_nchwc_default_config(&t, &big_w);
    CHECK_MSG(c.osplit == 2, "512 -> 512 3x3 at 7x7: os %d", c.osplit);
    hc_conv_nchwc_shape dw = {1, 12, 28, 28, 12, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1,
                              28, 28, 8, true, true};
    c = hc_conv_nchwc_default_config(&t, &dw);
    CHECK_MSG(c.osplit == 2, "depthwise 96 channels at 28x28: os %d", c.osplit);
}

/* Space: candidate 0 is the default at every level; candidates are distinct and valid;
 * level 0 has one; `max` bounds what is written. */
static void test_space(void) {
    const hc_target *tg = hc_target_host();
    int b = hc_target_f32_lanes(tg);
    hc_error err = {0};
    const hc_conv_nchwc_shape shapes[] = {
        /* ResNet-50's 256 -> 64 1x1 on 56x56, a padded 3x3, a stride-2 3x3, depthwise */
        {1, 256 / b, 56, 56, 64 / b, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 56, 56, b, true, false},
        {1, 64 / b, 28, 28, 128 / b, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 28, 28, b, true, false},
        {2, 1, 15, 15, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8, 8, b, false, false},
        {1, 96 / b, 28, 28, 96 / b, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 28, 28, b, true, true},
        {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, b, false, false},
    };
    for (size_t k = 0; k < HC_ARRAY_LEN(shapes); k++) {
        const hc_conv_nchwc_shape *s = &shapes[k];
        CHECK_MSG(hc_conv_nchwc_validate_shape(s, &err) == HC_OK, "shape %zu: %s", k, err.msg);
        hc_conv_nchwc_config d = hc_conv_nchwc_default_config(tg, s), all[300];
        CHECK(hc_conv_nchwc_validate(&d, &err) == HC_OK);
        CHECK(hc_conv_nchwc_tile_fits(tg, d.px, d.ot));
        for (int level = 0; level <= 2; level++) {
            int n = hc_conv_nchwc_space(tg, s, level, all, 300);
            CHECK_MSG(n >= 1 && n <= 256, "shape %zu level %d: %d candidates", k, level, n);
            if (n < 1 || n > 256) continue;
            CHECK(memcmp(&all[0], &d, sizeof d) == 0);
            if (level == 0) CHECK_EQ_INT(n, 1);
            int dups = 0, invalid = 0;
            for (int i = 0; i < n; i++) {
                invalid += hc_conv_nchwc_validate(&all[i], &err) != HC_OK ||
                           !hc_conv_nchwc_tile_fits(tg, all[i].px, all[i].ot) ||
                           all[i].lanes != b || all[i].ot > s->mb || all[i].rt > s->oh;
                for (int j = 0; j < i; j++) dups += memcmp(&all[i], &all[j], sizeof d) == 0;
            }
            CHECK_MSG(dups == 0 && invalid == 0, "shape %zu level %d: %d duplicates, %d invalid",
                      k, level, dups, invalid);
            /* max bounds the writes */
            hc_conv_nchwc_config few[3];
            memset(few, 0x5a, sizeof few);
            unsigned char sentinel[sizeof few[2]];
            memset(sentinel, 0x5a, sizeof sentinel);
            CHECK_EQ_INT(hc_conv_nchwc_space(tg, s, level, few, 2), n);
            CHECK(memcmp(&few[0], &d, sizeof d) == 0);
            CHECK(memcmp(&few[2], sentinel, sizeof sentinel) == 0);
            if (k == 0 && level > 0) {
                hc_sb sb;
                hc_sb_init(&sb);
                hc_conv_nchwc_config_print(&sb, &all[n - 1]);
                printf("space level %d: %d candidates, last %s\n", level, n, hc_sb_str(&sb));
                hc_sb_free(&sb);
            }
        }
    }
    /* the printed form */
    hc_sb sb;
    hc_sb_init(&sb);
    hc_conv_nchwc_config_print(&sb, &(hc_conv_nchwc_config){16, 6, 4, 56, 1, 2});
    CHECK_STR(hc_sb_str(&sb), "px6 ot4 rt56 os1 t2");
    hc_sb_free(&sb);
}

/* Bad shapes and configs are errors; the hook's fallbacks. */
static void test_conv_errors(void) {
    const hc_target *tg = hc_target_host();
    int b = hc_target_f32_lanes(tg);
    hc_error err = {0};
    const hc_conv_nchwc_shape good = {1, 2, 9, 9, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 9, 9, b,
                                      true, false};
    CHECK(hc_conv_nchwc_validate_shape(&good, &err) == HC_OK);
    hc_conv_nchwc_shape s = good;
    s.ow = 8; /* does not match the window */
    CHECK(hc_conv_nchwc_validate_shape(&s, &err) != HC_OK);
    s = good, s.oh = 10;
    CHECK(hc_conv_nchwc_validate_shape(&s, &err) != HC_OK);
    s = good, s.n = 0;
    CHECK(hc_conv_nchwc_validate_shape(&s, &err) != HC_OK);
    s = good, s.cb = -1;
    CHECK(hc_conv_nchwc_validate_shape(&s, &err) != HC_OK);
    s = good, s.sh = 0;
    CHECK(hc_conv_nchwc_validate_shape(&s, &err) != HC_OK);
    s = good, s.pt = -1;
    CHECK(hc_conv_nchwc_validate_shape(&s, &err) != HC_OK);
    s = good, s.block = 5;
    CHECK(hc_conv_nchwc_validate_shape(&s, &err) != HC_OK);
    s = good, s.depthwise = true; /* mb 3 != cb 2 */
    CHECK(hc_conv_nchwc_validate_shape(&s, &err) != HC_OK);
    s = good, s.nchw_in = true;
    CHECK(hc_conv_nchwc_validate_shape(&s, &err) == HC_OK);
    s.mb = s.cb, s.depthwise = true; /* an NCHW input is for dense convs only */
    err = (hc_error){0};
    CHECK(hc_conv_nchwc_validate_shape(&s, &err) != HC_OK && strstr(err.msg, "NCHW input"));
    s = good, s.pt = s.pl = s.pb = s.pr = 0, s.h = s.w = 2, s.oh = s.ow = 0; /* no window */
    CHECK(hc_conv_nchwc_validate_shape(&s, &err) != HC_OK);
    s.oh = s.ow = 1;
    CHECK(hc_conv_nchwc_validate_shape(&s, &err) != HC_OK);

    const hc_conv_nchwc_config dc = hc_conv_nchwc_default_config(tg, &good);
    CHECK(hc_conv_nchwc_validate(&dc, &err) == HC_OK);
    const struct {
        int field, value;
    } bad[] = {{0, 5}, {0, 32}, {1, 0}, {1, HC_CONV_NCHWC_MAX_PX + 1}, {2, 0},
               {2, HC_CONV_NCHWC_MAX_OT + 1}, {3, 0}, {4, 0}, {5, 0},
               {5, HC_CONV_NCHWC_MAX_THREADS + 1}};
    hc_arena a;
    hc_arena_init(&a);
    for (size_t i = 0; i < HC_ARRAY_LEN(bad); i++) {
        hc_conv_nchwc_config c = dc;
        int *f[6] = {&c.lanes, &c.px, &c.ot, &c.rt, &c.osplit, &c.threads};
        *f[bad[i].field] = bad[i].value;
        err = (hc_error){0};
        CHECK_MSG(hc_conv_nchwc_validate(&c, &err) != HC_OK, "bad config %zu", i);
        err = (hc_error){0};
        CHECK_MSG(hc_conv_nchwc_cpu(&a, "x", &good, &c, tg, &err) == NULL && err.status != HC_OK,
                  "bad config %zu built", i);
    }
    /* a tile over the registers: within the limits, but not the register file */
    CHECK(!hc_conv_nchwc_tile_fits(tg, HC_CONV_NCHWC_MAX_PX, HC_CONV_NCHWC_MAX_OT));
    CHECK(hc_conv_nchwc_tile_fits(tg, 1, 1));
    CHECK(hc_conv_nchwc_tile_fits(tg, 6, 4) == (tg->caps.num_regs >= 29));
    CHECK(!hc_conv_nchwc_tile_fits(tg, tg->caps.num_regs, 1));
    hc_conv_nchwc_config c = dc;
    c.px = HC_CONV_NCHWC_MAX_PX, c.ot = HC_CONV_NCHWC_MAX_OT;
    CHECK(hc_conv_nchwc_validate(&c, &err) == HC_OK);
    err = (hc_error){0};
    CHECK(hc_conv_nchwc_cpu(&a, "x", &good, &c, tg, &err) == NULL && err.status != HC_OK);
    /* lanes other than the block's or the target's */
    c = dc, c.lanes = b == 16 ? 8 : 16;
    err = (hc_error){0};
    CHECK(hc_conv_nchwc_cpu(&a, "x", &good, &c, tg, &err) == NULL && err.status != HC_OK);
    hc_conv_nchwc_shape s8 = good;
    s8.block = b == 16 ? 8 : 16;
    err = (hc_error){0};
    CHECK(hc_conv_nchwc_cpu(&a, "x", &s8, &dc, tg, &err) == NULL && err.status != HC_OK);
    /* a scratch over the limit (padded rows of a large image, all rows in one item) */
    hc_conv_nchwc_shape big = {1, 64, 512, 512, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 512, 512, b,
                               false, false};
    c = hc_conv_nchwc_default_config(tg, &big);
    err = (hc_error){0};
    CHECK_MSG(hc_conv_nchwc_cpu(&a, "x", &big, &c, tg, &err) != NULL, "%s", err.msg);
    c.rt = 512;
    err = (hc_error){0};
    CHECK(hc_conv_nchwc_cpu(&a, "x", &big, &c, tg, &err) == NULL && err.status != HC_OK);
    /* a bad shape is an error, not a program */
    s = good, s.ow = 8;
    err = (hc_error){0};
    CHECK(hc_conv_nchwc_cpu(&a, "x", &s, &dc, tg, &err) == NULL && err.status != HC_OK);

    /* the hook: NULL without an error for f64, or a block other than the target's lanes */
    const hc_op_def *d = hc_op_get(HC_OPK_CONV_NCHWC);
    const ccase k = {"fallback", 1, 2, 5, 6, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, false};
    const ccase kd = {"fallback_dw", 1, 2, 5, 6, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false, true};
    const struct {
        const ccase *k;
        int b;
        hc_dtype dt;
    } fb[] = {{&k, b, HC_F64}, {&kd, b, HC_F64}, {&k, b == 16 ? 8 : 16, HC_F32},
              {&kd, b == 16 ? 8 : 16, HC_F32}, {&k, b == 4 ? 8 : 4, HC_F32}, {&k, 1, HC_F32}};
    for (size_t i = 0; i < HC_ARRAY_LEN(fb); i++) {
        hc_graph *g = hc_graph_new("fb", 17);
        err = (hc_error){0};
        hc_node *n = conv_node(g, fb[i].k, fb[i].b, fb[i].dt, &err);
        CHECK_MSG(n != NULL, "fallback %zu: %s", i, err.msg);
        hc_task *t = n ? d->task(&a, n, &err) : NULL;
        CHECK(t != NULL);
        if (t) {
            err = (hc_error){0};
            CHECK_MSG(schedule_node(&a, n, t, tg, "fb", NULL, &err) == NULL && err.status == HC_OK,
                      "fallback %zu", i);
            hc_sched_opts o = {.level = 1, .candidate = 0};
            err = (hc_error){0};
            CHECK(schedule_node(&a, n, t, tg, "fb", &o, &err) == NULL && err.status == HC_OK);
            for (int level = 0; level <= 2; level++) CHECK_EQ_INT(space_node(n, tg, level), 0);
        }
        hc_graph_free(g);
    }
    /* the op's inference rejects what it cannot compute */
    const struct {
        int64_t wshape[6], group, bshape[2];
    } rej[] = {
        {{2, 3, 3, 3, 16, 16}, 1, {0, 0}},  /* weight's input blocks != X's */
        {{2, 2, 3, 3, 16, 8}, 1, {0, 0}},   /* weight's lanes */
        {{2, 2, 3, 3, 16, 16}, 2, {0, 0}},  /* group neither 1 nor the channels */
        {{3, 1, 3, 3, 1, 16}, 32, {0, 0}},  /* depthwise with 3 output blocks */
        {{2, 2, 3, 3, 16, 16}, 1, {3, 16}}, /* bias of 3 blocks */
        {{2, 2, 3, 3, 16, 16}, 1, {2, 8}},  /* bias lanes */
        {{2, 2, 9, 3, 16, 16}, 1, {0, 0}},  /* window taller than the padded input */
    };
    for (size_t i = 0; b == 16 && i < HC_ARRAY_LEN(rej); i++) {
        hc_graph *g = hc_graph_new("rej", 17);
        hc_tensor *in[3] = {hc_graph_add_input(g, "X", HC_F32, 5, (int64_t[]){1, 2, 5, 6, 16}),
                            hc_graph_add_input(g, "W", HC_F32, 6, rej[i].wshape), NULL};
        if (rej[i].bshape[0]) in[2] = hc_graph_add_input(g, "B", HC_F32, 2, rej[i].bshape);
        hc_attr at[2] = {INTS("pads", 1, 1, 1, 1), INT("group", rej[i].group)};
        err = (hc_error){0};
        CHECK_MSG(one_node(g, HC_OPK_CONV_NCHWC, "rej", in[2] ? 3 : 2, in, 2, at, &err) == NULL &&
                      err.status != HC_OK,
                  "rejected case %zu inferred", i);
        hc_graph_free(g);
    }
    hc_arena_free(&a);
}

/* ---- 4. Winograd transforms on the blocked layout ---------------------------------- */
typedef struct wcase {
    int64_t n, cb, h, w, pads[4]; /* input transform: X [n, cb, h, w, b] */
    int m;                        /* the tile: 0 leaves the attribute out (2) */
    int kh, kw;                   /* the kernel: 0 leaves the attribute out (3 x 3) */
} wcase;

/* Both transforms of case k: the hook's program and threads 1, 2, 3; staged into st. */
static int stage_wino_case(hc_arena *a, const wcase *k, int ci, staged *st) {
    const hc_target *tg = hc_target_host();
    int64_t b = hc_target_f32_lanes(tg);
    hc_error err = {0};
    int kh = k->kh ? k->kh : 3, kw = k->kw ? k->kw : 3, m = k->m ? k->m : 2;
    int mh = hc_wino_axis_m(m, kh), mw = hc_wino_axis_m(m, kw);
    int64_t oh = k->h + k->pads[0] + k->pads[2] - (kh - 1);
    int64_t ow = k->w + k->pads[1] + k->pads[3] - (kw - 1);
    int64_t na = (int64_t)(mh + kh - 1) * (mw + kw - 1);
    int64_t tiles = k->n * ((oh + mh - 1) / mh) * ((ow + mw - 1) / mw), c = k->cb * b;
    int count = 0;
    for (int input = 1; input >= 0; input--) {
        hc_graph *g = hc_graph_new("wino", 17);
        hc_node *n;
        /* the optional attributes last: tile, then kernel (left out when 0) */
        int nopt = k->kh ? 2 : k->m ? 1 : 0;
        hc_attr kern = INTS("kernel", kh, kw);
        if (input) {
            hc_tensor *x = hc_graph_add_input(g, "X", HC_F32, 5,
                                              (int64_t[]){k->n, k->cb, k->h, k->w, b});
            hc_attr at[3] = {
                {.name = "pads", .kind = HC_ATTR_INTS, .n = 4, .ints = (int64_t *)k->pads},
                INT("tile", m),
                kern};
            n = one_node(g, HC_OPK_WINO_INPUT_NCHWC, "wino_in", 1, &x, 1 + nopt, at, &err);
        } else {
            hc_tensor *mt = hc_graph_add_input(g, "M", HC_F32, 3, (int64_t[]){na, tiles, c});
            hc_attr at[4] = {INTS("out_hw", oh, ow), INT("block", b), INT("tile", m), kern};
            n = one_node(g, HC_OPK_WINO_OUTPUT_NCHWC, "wino_out", 1, &mt, 2 + nopt, at, &err);
        }
        CHECK_MSG(n != NULL, "wino case %d: %s", ci, err.msg);
        if (!n) {
            hc_graph_free(g);
            continue;
        }
        const int64_t *ys = n->outputs[0]->shape;
        if (input)
            CHECK(n->outputs[0]->ndim == 3 && ys[0] == na && ys[1] == tiles && ys[2] == c);
        else
            CHECK(n->outputs[0]->ndim == 5 && ys[0] == k->n && ys[1] == k->cb && ys[2] == oh &&
                  ys[3] == ow && ys[4] == b);
        const hc_op_def *d = hc_op_get(n->op);
        hc_task *t = d->task(a, n, &err);
        CHECK(t != NULL);
        staged *sg = &st[count++];
        *sg = (staged){.g = g, .n = n, .t = t};
        snprintf(sg->label, sizeof sg->label, "wino F(%dx%d, %dx%d) %s case %d", mh, mw, kh, kw,
                 input ? "input" : "output", ci);
        const char *io = input ? "in" : "out";
        /* X / M read by VLOAD (X's padding by masked loads), the output by VSTORE only */
        contract ct = {{ACC_VLOAD | (input ? ACC_VLOAD_MASK : 0), ACC_VSTORE},
                       {input, !input}};
        hc_func *f = t ? schedule_node(a, n, t, tg, hc_arena_printf(a, "wino%d_%s_hook", ci, io),
                                     NULL, &err)
                       : NULL;
        CHECK_MSG(f != NULL, "%s: no template", sg->label);
        if (f) check_contract(f, &ct, sg->label), kset_add(&sg->ks, f);
        hc_wino_shape s =
            input ? (hc_wino_shape){k->n, c,  k->h, k->w,  k->pads[0], k->pads[1],
                                    oh,   ow, m,    k->kh, k->kw}
                  : (hc_wino_shape){
                        .n = k->n, .c = c, .oh = oh, .ow = ow, .m = m, .kh = k->kh, .kw = k->kw};
        for (int th = 1; th <= 3; th++) {
            const char *nm = hc_arena_printf(a, "wino%d_%s_t%d", ci, io, th);
            err = (hc_error){0};
            f = input ? hc_wino_input_nchwc_cpu(a, nm, &s, (int)b, th, &err)
                      : hc_wino_output_nchwc_cpu(a, nm, &s, (int)b, th, &err);
            CHECK_MSG(f != NULL, "%s threads %d: %s", sg->label, th, err.msg);
            if (f) check_contract(f, &ct, sg->label), kset_add(&sg->ks, f);
        }
    }
    return count;
}

static const wcase wino_cases[] = {
    {1, 1, 1, 1, {1, 1, 1, 1}},   /* one output */
    {2, 3, 7, 11, {1, 1, 1, 1}},  /* odd output, N = 2, 48 channels */
    {1, 1, 8, 6, {0, 0, 0, 0}},   /* even output 6x4 */
    {2, 1, 5, 6, {0, 0, 0, 0}},   /* odd x even */
    {1, 3, 6, 9, {0, 1, 1, 0}},   /* asymmetric pads */
    {1, 2, 2, 2, {1, 1, 1, 1}},   /* 2x2 */
    {2, 3, 10, 10, {1, 1, 1, 1}}, /* even output, N = 2, 48 channels */
    /* F(4x4, 3x3): 6x6 tiles */
    {1, 1, 1, 1, {1, 1, 1, 1}, 4},   /* one output */
    {1, 1, 6, 6, {0, 0, 0, 0}, 4},   /* one whole tile */
    {2, 3, 7, 11, {1, 1, 1, 1}, 4},  /* 7x11 output: 3 and 1 left over, N = 2 */
    {1, 2, 10, 13, {0, 0, 0, 0}, 4}, /* 8x11: whole rows, 3 columns over */
    {1, 3, 9, 14, {0, 1, 2, 0}, 4},  /* asymmetric pads, 9x13 */
    {2, 1, 18, 18, {1, 1, 1, 1}, 4}, /* 18x18: interior tiles, N = 2 */
    {1, 2, 2, 5, {1, 1, 1, 1}, 4},   /* 2x5 */
    {1, 1, 29, 31, {1, 1, 1, 1}, 4}, /* 29x31: 8x8 tiles, borders on every side */
    /* 1-D kernels: F(1 x m, 1 x k) along the rows, F(m x 1, k x 1) along the columns */
    {1, 1, 1, 1, {0, 3, 0, 3}, 2, 1, 7},   /* 1x7 on one pixel: all padding */
    {2, 3, 5, 13, {0, 3, 0, 3}, 2, 1, 7},  /* 1x7, 13 columns (one over), N = 2 */
    {1, 2, 17, 17, {0, 3, 0, 3}, 4, 1, 7}, /* 1x7 F(4, 7): 17 = 4 x 4 + 1 */
    {1, 1, 3, 11, {0, 0, 0, 0}, 4, 1, 7},  /* 1x7 unpadded: 5 outputs a row */
    {1, 2, 17, 17, {3, 0, 3, 0}, 4, 7, 1}, /* 7x1 F(4, 7) */
    {2, 1, 11, 4, {3, 0, 2, 0}, 2, 7, 1},  /* 7x1 asymmetric pads, 9 rows */
    {1, 3, 8, 8, {0, 1, 0, 1}, 4, 1, 3},   /* 1x3 F(4, 3) on 8x8 */
    {1, 1, 7, 5, {1, 0, 1, 0}, 2, 3, 1},   /* 3x1 F(2, 3) */
    {1, 1, 6, 9, {0, 2, 0, 2}, 4, 1, 5},   /* 1x5 F(4, 5) */
    {1, 2, 11, 7, {2, 0, 2, 0}, 2, 5, 1},  /* 5x1 F(2, 5) */
    /* F(6, 7): 12 inputs a tile */
    {1, 1, 1, 1, {0, 3, 0, 3}, 6, 1, 7},   /* 1x7 on one pixel */
    {1, 2, 17, 17, {0, 3, 0, 3}, 6, 1, 7}, /* 1x7 on 17x17: 18 = 3 x 6, one over */
    {2, 3, 5, 13, {0, 3, 0, 3}, 6, 1, 7},  /* 13 columns: 2 x 6 + 1, N = 2 */
    {1, 1, 19, 7, {3, 0, 2, 0}, 6, 7, 1},  /* 7x1 asymmetric pads, 18 rows: 3 whole tiles */
    {1, 2, 3, 12, {0, 0, 0, 0}, 6, 1, 7},  /* 1x7 unpadded: 6 outputs a row */
    /* 5x5: F(2x2, 5x5) (6x6 tiles) and F(4x4, 5x5) (8x8) */
    {1, 1, 1, 1, {2, 2, 2, 2}, 2, 5, 5},   /* one output */
    {2, 3, 9, 7, {2, 2, 2, 2}, 2, 5, 5},   /* 9x7, N = 2 */
    {1, 2, 13, 11, {2, 2, 2, 2}, 4, 5, 5}, /* 13x11: 1 and 3 over */
    {1, 1, 8, 12, {0, 1, 2, 0}, 4, 5, 5},  /* asymmetric pads, 6x8 */
};

static void test_wino_fallbacks(void) {
    const hc_target *tg = hc_target_host();
    int64_t b = hc_target_f32_lanes(tg), ob = b == 16 ? 8 : 16;
    hc_error err = {0};
    hc_arena a;
    hc_arena_init(&a);
    for (int v = 0; v < 4; v++) {
        hc_graph *g = hc_graph_new("wino_fb", 17);
        hc_dtype dt = v & 1 ? HC_F64 : HC_F32;
        int64_t blk = v & 1 ? b : ob;
        hc_node *n;
        if (v < 2) {
            hc_tensor *x = hc_graph_add_input(g, "X", dt, 5, (int64_t[]){1, 2, 6, 6, blk});
            hc_attr at[1] = {INTS("pads", 1, 1, 1, 1)};
            n = one_node(g, HC_OPK_WINO_INPUT_NCHWC, "wi", 1, &x, 1, at, &err);
        } else {
            hc_tensor *m = hc_graph_add_input(g, "M", dt, 3, (int64_t[]){16, 9, 2 * blk});
            hc_attr at[2] = {INTS("out_hw", 6, 6), INT("block", blk)};
            n = one_node(g, HC_OPK_WINO_OUTPUT_NCHWC, "wo", 1, &m, 2, at, &err);
        }
        CHECK_MSG(n != NULL, "%s", err.msg);
        hc_task *t = n ? hc_op_get(n->op)->task(&a, n, &err) : NULL;
        err = (hc_error){0};
        CHECK_MSG(t && schedule_node(&a, n, t, tg, "fb", NULL, &err) == NULL &&
                      err.status == HC_OK,
                  "wino fallback %d", v);
        hc_graph_free(g);
    }
    /* the NCHW templates have F(2x2) only; the blocked ones 2 and 4 */
    {
        hc_wino_shape s4 = {1, b, 6, 6, 1, 1, 6, 6, 4}, s3 = s4;
        s3.m = 3;
        err = (hc_error){0};
        CHECK(hc_wino_input_cpu(&a, "nchw4", &s4, 1, &err) == NULL && err.status != HC_OK);
        err = (hc_error){0};
        CHECK(hc_wino_output_cpu(&a, "nchw4o", &s4, 1, &err) == NULL && err.status != HC_OK);
        err = (hc_error){0};
        CHECK(hc_wino_input_nchwc_cpu(&a, "blk3", &s3, (int)b, 1, &err) == NULL &&
              err.status != HC_OK);
        err = (hc_error){0};
        CHECK(hc_wino_input_nchwc_cpu(&a, "blk4", &s4, (int)b, 1, &err) != NULL);
    }
    /* a tile other than 2 or 4 */
    for (int v = 0; v < 2; v++) {
        hc_graph *g = hc_graph_new("wino_tile", 17);
        hc_node *n;
        hc_attr at[3] = {INTS("out_hw", 6, 6), INT("block", b), INT("tile", 3)};
        err = (hc_error){0};
        if (v) {
            hc_tensor *x = hc_graph_add_input(g, "X", HC_F32, 5, (int64_t[]){1, 1, 6, 6, b});
            hc_attr ai[2] = {INTS("pads", 1, 1, 1, 1), INT("tile", 3)};
            n = one_node(g, HC_OPK_WINO_INPUT_NCHWC, "wi", 1, &x, 2, ai, &err);
        } else {
            hc_tensor *m = hc_graph_add_input(g, "M", HC_F32, 3, (int64_t[]){25, 4, b});
            n = one_node(g, HC_OPK_WINO_OUTPUT_NCHWC, "wo", 1, &m, 3, at, &err);
        }
        CHECK_MSG(n == NULL && err.status != HC_OK && strstr(err.msg, "tile"),
                  "tile 3 accepted (%s)", err.msg);
        hc_graph_free(g);
    }
    /* an M whose rows are not whole images of tiles, or K not whole blocks */
    for (int v = 0; v < 2; v++) {
        hc_graph *g = hc_graph_new("wino_bad", 17);
        hc_tensor *m = hc_graph_add_input(g, "M", HC_F32, 3,
                                          (int64_t[]){16, v ? 9 : 10, v ? b + 1 : 2 * b});
        hc_attr at[2] = {INTS("out_hw", 6, 6), INT("block", b)};
        err = (hc_error){0};
        CHECK(one_node(g, HC_OPK_WINO_OUTPUT_NCHWC, "wo", 1, &m, 2, at, &err) == NULL &&
              err.status != HC_OK);
        hc_graph_free(g);
    }
    hc_arena_free(&a);
}

/* The F(4x4) rule (lower.c, hc_pass_winograd_tile) and the blocked conv path: F(4x4)
 * where its transformed weights fit the L2 of the cores per image (checked on a stated
 * machine, 2 cores with 2 MiB L2 each: 4 MiB) with enough whole tiles; on the blocked
 * path F(4x4) also takes the 3x3 convs the direct template would (32 -> 64), unless F(2x2)
 * is forced or Winograd is off; the layout pass then makes tile-4 Winograd ops. */
/* A 3x3 pad-1 Conv of x [n, c, hw, hw] with k filters, alone in a new graph *g. */
static hc_node *tile_rule_conv(hc_graph **g, int64_t n, int64_t c, int64_t hw, int64_t k,
                               hc_error *err) {
    *g = hc_graph_new("tile_rule", 17);
    hc_tensor *x = hc_graph_add_input(*g, "x", HC_F32, 4, (int64_t[]){n, c, hw, hw});
    hc_tensor *w = hc_graph_constant(*g, "w", HC_F32, 4, (int64_t[]){k, c, 3, 3}, NULL);
    hc_attr at[1] = {INTS("pads", 1, 1, 1, 1)};
    return one_node(*g, HC_OPK_CONV, "conv", 2, (hc_tensor *[]){x, w}, 1, at, err);
}

/* The kernels other than 3x3 (docs/winograd.md, "Other kernels"): Winograd on the
 * blocked path only (the NCHW transforms are F(2x2, 3x3)); 5x5 and the 1-D kernels of 3,
 * 5 and 7 taps with stride 1; the tile rule counts their transformed weights (ah * aw per
 * channel pair) and tiles. On a stated machine: AVX2, 2 cores, 512 KiB of L2 each. */
/* The kernels with an F(6) table along their axis of taps: 1x7 and 7x1 (a forced tile 6
 * gives them F(6, 7) and the other kernels F(4)), stated independently of the tables. */
static bool has_f6(int64_t kh, int64_t kw) { return HC_MIN(kh, kw) == 1 && HC_MAX(kh, kw) == 7; }

static void test_wino_kernels_rule(void) {
    static const struct {
        int64_t n, c, k, h, w, kh, kw, stride;
        int tile;           /* hc_pass_winograd_tile (checked where the blocked path is Winograd) */
        hc_conv_path nchw;  /* hc_pass_conv_path */
        hc_conv_path block; /* hc_pass_conv_path_blocked */
    } cases[] = {
        /* Inception-V3's 17x17 160 -> 160 1x7: F(4, 7) weights 1.0 MB <= 2 x 512 KiB;
         * F(6, 7)'s 1.2 MB do not fit, but save 119 multiply-adds per byte over F(4, 7)
         * (17 x 5 tiles x 10 against 17 x 3 x 12; the bar: 12) */
        {1, 160, 160, 17, 17, 1, 7, 1, 6, HC_CONV_IM2COL, HC_CONV_WINOGRAD},
        {1, 160, 160, 17, 17, 7, 1, 1, 6, HC_CONV_IM2COL, HC_CONV_WINOGRAD},
        /* 192 -> 192: 1.5 MB, but F(4, 7) saves 47 multiply-adds per byte (the bar: 12) */
        {1, 192, 192, 17, 17, 1, 7, 1, 6, HC_CONV_IM2COL, HC_CONV_WINOGRAD},
        /* 8 columns: 2 tiles of F(4, 7) or of F(6, 7), which would do more work: F(4, 7) */
        {1, 64, 64, 8, 8, 1, 7, 1, 4, HC_CONV_IM2COL, HC_CONV_WINOGRAD},
        /* 12 columns, 256 -> 256: F(6, 7) does 0.8x F(4, 7)'s multiply-adds (8 x 2 x 12
         * against 8 x 3 x 10) but saves 3 per byte of its extra 0.5 MB: F(4, 7) */
        {1, 256, 256, 8, 12, 1, 7, 1, 4, HC_CONV_IM2COL, HC_CONV_WINOGRAD},
        /* 35x35 48 -> 64 5x5: F(4x4, 5x5) */
        {1, 48, 64, 35, 35, 5, 5, 1, 4, HC_CONV_DIRECT, HC_CONV_WINOGRAD},
        /* 8x8 448 -> 384 1x3: F(4, 3)'s 4.1 MB save 4 multiply-adds per byte: F(2, 3) */
        {1, 448, 384, 8, 8, 1, 3, 1, 2, HC_CONV_IM2COL, HC_CONV_WINOGRAD},
        /* 5 rows x 3 columns, 1x7: 10 tiles of F(2, 7), 5 of F(4, 7); 32 channels: the
         * direct template in NCHW */
        {1, 32, 32, 5, 3, 1, 7, 1, 2, HC_CONV_DIRECT, HC_CONV_WINOGRAD},
        /* not eligible: 7x7, stride 2, 1x9 */
        {1, 64, 64, 17, 17, 7, 7, 1, 0, HC_CONV_IM2COL, HC_CONV_IM2COL},
        {1, 64, 64, 17, 17, 1, 7, 2, 0, HC_CONV_IM2COL, HC_CONV_IM2COL},
        {1, 64, 64, 17, 17, 1, 9, 1, 0, HC_CONV_IM2COL, HC_CONV_IM2COL},
        /* too few tiles: 1x7 on a 3x2 image (3 x 1 tiles) */
        {1, 64, 64, 3, 2, 1, 7, 1, 0, HC_CONV_IM2COL, HC_CONV_IM2COL},
    };
    const hc_target host_t = hc_target_cpu_describe(HC_ISA_AVX2, 2, 32 << 10, 512 << 10, 32 << 20);
    for (size_t i = 0; i < HC_ARRAY_LEN(cases); i++) {
        hc_error err = {0};
        hc_graph *g = hc_graph_new("kernels_rule", 17);
        hc_tensor *x = hc_graph_add_input(
            g, "x", HC_F32, 4, (int64_t[]){cases[i].n, cases[i].c, cases[i].h, cases[i].w});
        hc_tensor *w = hc_graph_constant(
            g, "w", HC_F32, 4, (int64_t[]){cases[i].k, cases[i].c, cases[i].kh, cases[i].kw}, NULL);
        int64_t ph = cases[i].kh / 2, pw = cases[i].kw / 2, st = cases[i].stride;
        hc_attr at[2] = {INTS("pads", ph, pw, ph, pw), INTS("strides", st, st)};
        hc_node *n = one_node(g, HC_OPK_CONV, "conv", 2, (hc_tensor *[]){x, w}, 2, at, &err);
        CHECK_MSG(n != NULL, "kernels rule case %zu: %s", i, err.msg);
        if (n) {
            hc_optimize_options o = {.target = &host_t, .nchwc_block = 8, .nchwc_small_pixels = -1};
            CHECK_MSG(hc_pass_conv_path(n, &o) == cases[i].nchw,
                      "kernels rule case %zu: NCHW path %d", i, hc_pass_conv_path(n, &o));
            CHECK_MSG(hc_pass_conv_path_blocked(n, &o) == cases[i].block,
                      "kernels rule case %zu: blocked path %d", i,
                      hc_pass_conv_path_blocked(n, &o));
            if (cases[i].block == HC_CONV_WINOGRAD) {
                CHECK_MSG(hc_pass_winograd_tile(n, &o) == cases[i].tile,
                          "kernels rule case %zu: tile %d", i, hc_pass_winograd_tile(n, &o));
                /* forced: 6 where the kernel has F(6) (1x7, 7x1), else 4; 4 and 2 as asked */
                bool f6 = has_f6(cases[i].kh, cases[i].kw);
                for (int m = 2; m <= 6; m += 2) {
                    hc_optimize_options forced = o;
                    forced.wino_tile = m;
                    int want = m == 6 && !f6 ? 4 : m;
                    CHECK_MSG(hc_pass_winograd_tile(n, &forced) == want,
                              "kernels rule case %zu: forced %d gives %d", i, m,
                              hc_pass_winograd_tile(n, &forced));
                }
            }
            hc_optimize_options off = o;
            off.no_winograd = true;
            CHECK(hc_pass_conv_path_blocked(n, &off) != HC_CONV_WINOGRAD);
        }
        hc_graph_free(g);
    }
}

static void test_wino_tile_rule(void) {
    static const struct {
        int64_t n, c, k, hw;
        int tile;           /* hc_pass_winograd_tile */
        hc_conv_path nchw;  /* hc_pass_conv_path */
        hc_conv_path block; /* hc_pass_conv_path_blocked */
    } cases[] = {
        {1, 64, 64, 56, 4, HC_CONV_WINOGRAD, HC_CONV_WINOGRAD},   /* ResNet layer1: 0.6 MB */
        {1, 128, 128, 28, 4, HC_CONV_WINOGRAD, HC_CONV_WINOGRAD}, /* layer2: 2.4 MB */
        {1, 256, 256, 14, 2, HC_CONV_WINOGRAD, HC_CONV_WINOGRAD}, /* layer3: 9.4 MB */
        {1, 512, 512, 7, 2, HC_CONV_WINOGRAD, HC_CONV_WINOGRAD},  /* 4 tiles of 4x4 */
        {1, 32, 64, 20, 4, HC_CONV_DIRECT, HC_CONV_WINOGRAD},     /* direct in NCHW */
        {1, 32, 64, 9, 2, HC_CONV_DIRECT, HC_CONV_DIRECT},        /* 9x9: 81 of 144 */
        {3, 32, 64, 7, 4, HC_CONV_DIRECT, HC_CONV_WINOGRAD},      /* 12 tiles, 49 of 64 */
        {8, 256, 256, 14, 4, HC_CONV_WINOGRAD, HC_CONV_WINOGRAD}, /* 9.4 MB for 8 images */
        {8, 512, 512, 7, 2, HC_CONV_WINOGRAD, HC_CONV_WINOGRAD},  /* 38 MB for 8 images */
    };
    /* the machine the table states (the host's ISA: the layout pass blocks by its lanes) */
    const hc_target *host = hc_target_default();
    int64_t b = hc_target_f32_lanes(host);
    const hc_target two_cores =
        hc_target_cpu_describe(host->caps.isa, 2, 48 << 10, 2 << 20, 105 << 20);
    for (size_t i = 0; i < HC_ARRAY_LEN(cases); i++) {
        hc_error err = {0};
        hc_graph *g;
        hc_node *n = tile_rule_conv(&g, cases[i].n, cases[i].c, cases[i].hw, cases[i].k, &err);
        CHECK_MSG(n != NULL, "tile rule case %zu: %s", i, err.msg);
        if (!n) {
            hc_graph_free(g);
            continue;
        }
        hc_graph_add_output(g, n->outputs[0]);
        hc_optimize_options o = {.target = &two_cores, .nchwc_block = (int)b,
                                 .nchwc_small_pixels = -1};
        CHECK_MSG(hc_pass_winograd_tile(n, &o) == cases[i].tile, "tile rule case %zu: tile %d",
                  i, hc_pass_winograd_tile(n, &o));
        CHECK_MSG(hc_pass_conv_path(n, &o) == cases[i].nchw, "tile rule case %zu: NCHW path", i);
        CHECK_MSG(hc_pass_conv_path_blocked(n, &o) == cases[i].block,
                  "tile rule case %zu: blocked path", i);
        hc_optimize_options two = o, off = o;
        two.wino_tile = 2, off.no_winograd = true;
        CHECK(hc_pass_winograd_tile(n, &two) == 2);
        two.wino_tile = 6; /* no F(6, 3): the largest tile below */
        CHECK(hc_pass_winograd_tile(n, &two) == 4);
        two.wino_tile = 2;
        CHECK(hc_pass_conv_path_blocked(n, &two) == cases[i].nchw);
        CHECK(hc_pass_conv_path_blocked(n, &off) != HC_CONV_WINOGRAD);
        /* the pass builds what the rule says */
        CHECK(hc_pass_layout_nchwc(g, &o, &err) == HC_OK);
        int tiles = 0, wins = 0;
        for (size_t j = 0; j < g->nodes.len; j++) {
            const hc_node *m = g->nodes.data[j];
            if (m->op != HC_OPK_WINO_INPUT_NCHWC) continue;
            wins++;
            tiles = (int)hc_node_attr_int(m, "tile", 2);
        }
        bool wino = cases[i].block == HC_CONV_WINOGRAD;
        CHECK_MSG(wins == wino && (!wino || tiles == cases[i].tile),
                  "tile rule case %zu: %d Winograd ops, tile %d", i, wins, tiles);
        hc_graph_free(g);
    }
    /* the same rule on other stated machines: the L2 of all the cores per image decides */
    const struct {
        const char *name;
        hc_target t;
        int tile[HC_ARRAY_LEN(cases)]; /* hc_pass_winograd_tile for each case above */
    } machines[] = {
        /* 2 MiB: layer2's 2.4 MB no longer fits, but F(4x4) saves 17 multiply-adds per
         * byte of its weights there (the bar for 2 cores: 12); layer3's 2.6 do not pay */
        {"AVX2 EPYC, 2 cores, 1 MiB L2",
         hc_target_cpu_describe(HC_ISA_AVX2, 2, 32 << 10, 1 << 20, 32 << 20),
         {4, 4, 2, 2, 4, 2, 4, 4, 2}},
        /* 512 KiB per core: only the multiply-adds saved per byte decide past layer1 */
        {"AVX2 EPYC, 2 cores, 512 KiB L2",
         hc_target_cpu_describe(HC_ISA_AVX2, 2, 32 << 10, 512 << 10, 32 << 20),
         {4, 4, 2, 2, 4, 2, 4, 4, 2}},
        /* one core: the bar halves (6 per byte), layer3 at batch 8 (21) and layer4 at
         * batch 8 (11) pass it, layer3 at batch 1 (2.6) does not */
        {"AVX2, 1 core, 512 KiB L2",
         hc_target_cpu_describe(HC_ISA_AVX2, 1, 32 << 10, 512 << 10, 32 << 20),
         {4, 4, 2, 2, 4, 2, 4, 4, 4}},
        /* 32 MiB: layer3's 9.4 MB fits, and 8 images of 38 MB */
        {"AVX-512 Xeon, 16 cores, 2 MiB L2",
         hc_target_cpu_describe(HC_ISA_AVX512, 16, 48 << 10, 2 << 20, 105 << 20),
         {4, 4, 4, 2, 4, 2, 4, 4, 4}},
        /* no L2 stated: F(2x2) everywhere */
        {"no L2", hc_target_cpu_describe(HC_ISA_AVX512, 2, 48 << 10, 0, 0),
         {2, 2, 2, 2, 2, 2, 2, 2, 2}},
    };
    for (size_t mi = 0; mi < HC_ARRAY_LEN(machines); mi++)
        for (size_t i = 0; i < HC_ARRAY_LEN(cases); i++) {
            hc_error err = {0};
            hc_graph *g;
            hc_node *n =
                tile_rule_conv(&g, cases[i].n, cases[i].c, cases[i].hw, cases[i].k, &err);
            CHECK_MSG(n != NULL, "%s, case %zu: %s", machines[mi].name, i, err.msg);
            hc_optimize_options o = {.target = &machines[mi].t, .nchwc_block = (int)b,
                                     .nchwc_small_pixels = -1};
            if (n)
                CHECK_MSG(hc_pass_winograd_tile(n, &o) == machines[mi].tile[i],
                          "%s, tile rule case %zu: tile %d, expected %d", machines[mi].name, i,
                          hc_pass_winograd_tile(n, &o), machines[mi].tile[i]);
            hc_graph_free(g);
        }
}

/* ---- 5. pools on the blocked layout ----------------------------------------------- */
typedef struct pcase {
    const char *name;
    bool max;
    int64_t n, cb, h, w, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, ceil, cip;
    int64_t oh, ow; /* expected output (asserts ceil_mode and the pads) */
} pcase;

static const pcase pool_cases[] = {
    /*  name              max n cb  h   w kh kw sh sw dh dw pt pl pb pr ceil cip oh ow */
    {"max_3x3_s2_17x17", true, 1, 2, 17, 17, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0, 8, 8},
    {"max_3x3_s2_8x8_ceil", true, 1, 1, 8, 8, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 1, 0, 4, 4},
    {"max_3x3_s2_8x8_floor", true, 1, 1, 8, 8, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0, 3, 3},
    {"avg_3x3_s1_p1_cip0", false, 1, 2, 7, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 7, 13},
    {"avg_3x3_s1_p1_cip1", false, 1, 2, 7, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 7, 13},
    {"max_3x3_s1_p1_n2", true, 2, 1, 7, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 7, 13},
    {"avg_3x3_s2_p1_ceil_cip1", false, 1, 1, 8, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 5, 5},
    {"avg_3x3_s2_p1_ceil_cip0", false, 2, 1, 8, 10, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0, 5, 6},
    {"max_2x2_s2_7x9", true, 1, 3, 7, 9, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0, 3, 4},
    {"avg_2x2_s2_7x9", false, 1, 3, 7, 9, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0, 3, 4},
    {"avg_2x2_s2_7x9_ceil", false, 1, 1, 7, 9, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 1, 0, 4, 5},
    {"max_2x2_s2_7x9_ceil", true, 1, 1, 7, 9, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 1, 0, 4, 5},
    {"max_3x3_d2_p2_9x9", true, 1, 1, 9, 9, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 0, 0, 9, 9},
    {"max_3x3_p1_1x1", true, 1, 2, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1},
    {"avg_3x3_p1_1x1_cip1", false, 1, 1, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1},
    {"avg_3x3_asym_cip1", false, 1, 1, 5, 6, 3, 3, 1, 1, 1, 1, 0, 1, 2, 0, 0, 1, 5, 5},
    {"max_3x3_asym_s2", true, 1, 2, 9, 6, 3, 3, 2, 2, 1, 1, 0, 1, 2, 0, 0, 0, 5, 3},
    {"avg_1x1_s2", false, 1, 1, 5, 5, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0, 3, 3},
};

static hc_node *pool_node(hc_graph *g, const pcase *k, int64_t b, hc_dtype dt,
                          const int64_t *kernel3, const int64_t *stride3, hc_error *err) {
    hc_tensor *x = hc_graph_add_input(g, "X", dt, 5, (int64_t[]){k->n, k->cb, k->h, k->w, b});
    int64_t ks[3] = {k->kh, k->kw, 1}, st[3] = {k->sh, k->sw, 1};
    if (kernel3) memcpy(ks, kernel3, sizeof ks);
    if (stride3) memcpy(st, stride3, sizeof st);
    hc_attr at[6] = {{.name = "kernel_shape", .kind = HC_ATTR_INTS, .n = 3, .ints = ks},
                     {.name = "strides", .kind = HC_ATTR_INTS, .n = 3, .ints = st},
                     INTS("pads", k->pt, k->pl, 0, k->pb, k->pr, 0), INT("ceil_mode", k->ceil),
                     INTS("dilations", k->dh, k->dw, 1), INT("count_include_pad", k->cip)};
    int na = k->max ? 5 : 6;
    if (!k->max && k->dh == 1 && k->dw == 1) at[4] = at[5], na = 5; /* no dilations */
    return one_node(g, k->max ? HC_OPK_MAX_POOL_NCHWC : HC_OPK_AVERAGE_POOL_NCHWC, k->name, 1,
                    &x, na, at, err);
}

/* The hook's program and threads 1, 2, 3 for case k (index ci), staged into st. */
static int stage_pool_case(hc_arena *a, const pcase *k, int ci, staged *st) {
    const hc_target *tg = hc_target_host();
    int64_t b = hc_target_f32_lanes(tg);
    hc_error err = {0};
    hc_graph *g = hc_graph_new("pool", 17);
    hc_node *n = pool_node(g, k, b, HC_F32, NULL, NULL, &err);
    CHECK_MSG(n != NULL, "%s: %s", k->name, err.msg);
    if (!n) {
        hc_graph_free(g);
        return 0;
    }
    const int64_t *ys = n->outputs[0]->shape;
    CHECK_MSG(n->outputs[0]->ndim == 5 && ys[0] == k->n && ys[1] == k->cb && ys[2] == k->oh &&
                  ys[3] == k->ow && ys[4] == b,
              "%s: output %lldx%lld, expected %lldx%lld", k->name, (long long)ys[2],
              (long long)ys[3], (long long)k->oh, (long long)k->ow);
    const hc_op_def *d = hc_op_get(n->op);
    hc_task *t = d->task(a, n, &err);
    CHECK(t != NULL);
    *st = (staged){.g = g, .n = n, .t = t};
    snprintf(st->label, sizeof st->label, "%s", k->name);
    contract ct = {{ACC_VLOAD, ACC_VSTORE}, {true, true}};
    hc_func *f = t ? schedule_node(a, n, t, tg, hc_arena_printf(a, "pool%d_hook", ci), NULL, &err)
                   : NULL;
    CHECK_MSG(f != NULL, "%s: no template", k->name);
    if (f) check_contract(f, &ct, k->name), kset_add(&st->ks, f);
    hc_pool_nchwc_shape s = {k->n, k->cb, k->h, k->w, k->oh, k->ow, k->kh, k->kw, k->sh,
                             k->sw, k->dh, k->dw, k->pt, k->pl, k->pb, k->pr, (int)b,
                             k->max, k->cip != 0};
    for (int th = 1; th <= 3; th++) {
        err = (hc_error){0};
        f = hc_pool_nchwc_cpu(a, hc_arena_printf(a, "pool%d_t%d", ci, th), &s, th, &err);
        CHECK_MSG(f != NULL, "%s threads %d: %s", k->name, th, err.msg);
        if (f) check_contract(f, &ct, k->name), kset_add(&st->ks, f);
    }
    return 1;
}

static void test_pool_fallbacks(void) {
    const hc_target *tg = hc_target_host();
    int64_t b = hc_target_f32_lanes(tg);
    hc_error err = {0};
    hc_arena a;
    hc_arena_init(&a);
    const pcase *k = &pool_cases[3];
    /* f64; another block; a window along the block; a stride along the block */
    for (int v = 0; v < 4; v++) {
        hc_graph *g = hc_graph_new("pool_fb", 17);
        int64_t k3[3] = {3, 3, 2}, s3[3] = {1, 1, 2};
        hc_node *n = pool_node(g, k, v == 1 ? (b == 16 ? 8 : 16) : b, v == 0 ? HC_F64 : HC_F32,
                               v == 2 ? k3 : NULL, v == 3 ? s3 : NULL, &err);
        CHECK_MSG(n != NULL, "pool fallback %d: %s", v, err.msg);
        hc_task *t = n ? hc_op_get(n->op)->task(&a, n, &err) : NULL;
        err = (hc_error){0};
        CHECK_MSG(t && schedule_node(&a, n, t, tg, "fb", NULL, &err) == NULL &&
                      err.status == HC_OK,
                  "pool fallback %d", v);
        hc_graph_free(g);
    }
    /* a bad shape is an error */
    hc_pool_nchwc_shape s = {1, 1, 5, 5, 5, 5, 3, 3, 1, 1, 1, 1, -1, 1, 1, 1, (int)b, true, false};
    err = (hc_error){0};
    CHECK(hc_pool_nchwc_cpu(&a, "x", &s, 1, &err) == NULL && err.status != HC_OK);
    s.pt = 1, s.block = 5;
    err = (hc_error){0};
    CHECK(hc_pool_nchwc_cpu(&a, "x", &s, 1, &err) == NULL && err.status != HC_OK);
    hc_arena_free(&a);
}

/* ---- 6. the reorders -------------------------------------------------------------- */
static void test_reorders(void) {
    hc_error err = {0};
    const int64_t blocks[] = {16, 8, 4, 1, 48, 5, 96};
    const int64_t chans[] = {48, 44};
    for (size_t ci = 0; ci < HC_ARRAY_LEN(chans); ci++)
    for (size_t bi = 0; bi < HC_ARRAY_LEN(blocks); bi++) {
        /* a block that does not divide C pads the last block with zero lanes; FROM_NCHWC
         * drops them (attribute channels) */
        int64_t b = blocks[bi], N = 2, C = chans[ci], H = 5, W = 7, CB = (C + b - 1) / b;
        bool pad = C % b != 0;
        hc_graph *g = hc_graph_new("reorder", 17);
        hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){N, C, H, W});
        hc_attr at[1] = {INT("block", b)}, ch[1] = {INT("channels", C)};
        hc_node *to = one_node(g, HC_OPK_TO_NCHWC, "to", 1, &x, 1, at, &err);
        CHECK_MSG(to != NULL, "%s", err.msg);
        if (!to) {
            hc_graph_free(g);
            continue;
        }
        hc_node *from = one_node(g, HC_OPK_FROM_NCHWC, "from", 1, to->outputs, pad, ch, &err);
        CHECK_MSG(from != NULL, "%s", err.msg);
        if (!from) {
            hc_graph_free(g);
            continue;
        }
        const int64_t *ys = to->outputs[0]->shape;
        CHECK(to->outputs[0]->ndim == 5 && ys[0] == N && ys[1] == CB && ys[2] == H &&
              ys[3] == W && ys[4] == b);
        CHECK(from->outputs[0]->ndim == 4 &&
              memcmp(from->outputs[0]->shape, x->shape, sizeof(int64_t) * 4) == 0);
        hc_graph_add_output(g, to->outputs[0]);
        hc_graph_add_output(g, from->outputs[0]);
        int64_t numel = N * C * H * W, bnumel = N * CB * H * W * b;
        float *in = rand_buf(numel), *blk = malloc(sizeof(float) * (size_t)bnumel),
              *back = malloc(sizeof(float) * (size_t)numel);
        for (int64_t i = 0; i < bnumel; i++) blk[i] = NAN;
        for (int64_t i = 0; i < numel; i++) back[i] = NAN;
        CHECK(hc_graph_eval_reference(g, (void *[]){in}, (void *[]){blk, back}, &err) == HC_OK);
        int wrong = 0;
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < CB * b; c++)
                for (int64_t h = 0; h < H; h++)
                    for (int64_t w = 0; w < W; w++) {
                        float want = c < C ? in[((n * C + c) * H + h) * W + w] : 0.0f;
                        float got = blk[(((n * CB + c / b) * H + h) * W + w) * b + c % b];
                        wrong += memcmp(&want, &got, sizeof want) != 0;
                    }
        CHECK_MSG(wrong == 0, "C %lld, block %lld: %d elements misplaced (padding: 0)",
                  (long long)C, (long long)b, wrong);
        CHECK_MSG(memcmp(in, back, sizeof(float) * (size_t)numel) == 0,
                  "C %lld, block %lld: the round trip is not the identity", (long long)C,
                  (long long)b);
        free(in), free(blk), free(back);
        hc_graph_free(g);
    }
    /* FROM_NCHWC's channels must end in the last block */
    const int64_t bad_channels[] = {49, 32, 0, -1};
    for (size_t i = 0; i < HC_ARRAY_LEN(bad_channels); i++) {
        hc_graph *g = hc_graph_new("reorder_bad_channels", 17);
        hc_tensor *y = hc_graph_add_input(g, "y", HC_F32, 5, (int64_t[]){1, 3, 3, 3, 16});
        hc_attr ch[1] = {INT("channels", bad_channels[i])};
        err = (hc_error){0};
        CHECK_MSG(one_node(g, HC_OPK_FROM_NCHWC, "from", 1, &y, 1, ch, &err) == NULL &&
                      err.status != HC_OK && strstr(err.msg, "channels") != NULL,
                  "channels %lld accepted", (long long)bad_channels[i]);
        hc_graph_free(g);
    }
    /* blocks that are not positive, ranks other than 4 / 5 */
    const int64_t bad_blocks[] = {0, -16};
    for (size_t i = 0; i < HC_ARRAY_LEN(bad_blocks); i++) {
        hc_graph *g = hc_graph_new("reorder_bad", 17);
        hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 48, 3, 3});
        hc_attr at[1] = {INT("block", bad_blocks[i])};
        err = (hc_error){0};
        CHECK_MSG(one_node(g, HC_OPK_TO_NCHWC, "to", 1, &x, 1, at, &err) == NULL &&
                      err.status != HC_OK,
                  "block %lld accepted", (long long)bad_blocks[i]);
        hc_graph_free(g);
    }
    hc_graph *g = hc_graph_new("reorder_rank", 17);
    hc_tensor *x5 = hc_graph_add_input(g, "x5", HC_F32, 5, (int64_t[]){1, 3, 3, 3, 16});
    hc_tensor *x4 = hc_graph_add_input(g, "x4", HC_F32, 4, (int64_t[]){1, 48, 3, 3});
    hc_attr at[1] = {INT("block", 16)};
    err = (hc_error){0};
    CHECK(one_node(g, HC_OPK_TO_NCHWC, "to5", 1, &x5, 1, at, &err) == NULL && err.status);
    err = (hc_error){0};
    CHECK(one_node(g, HC_OPK_FROM_NCHWC, "from4", 1, &x4, 0, NULL, &err) == NULL && err.status);
    hc_graph_free(g);
}

/* ---- 7. the layout pass on graphs --------------------------------------------------- */
typedef hc_graph *(*build_fn)(uint64_t seed);

static hc_tensor *conv(hc_graph *g, hc_rng *r, hc_tensor *x, int64_t oc, int64_t k,
                       int64_t stride, int64_t pad, int64_t group, bool bias) {
    int64_t ic = x->shape[1];
    hc_tensor *w = rand_const(g, r, 4, (int64_t[]){oc, ic / group, k, k});
    hc_attr at[4] = {ints_attr("kernel_shape", 2, (int64_t[]){k, k}),
                     ints_attr("pads", 4, (int64_t[]){pad, pad, pad, pad}),
                     ints_attr("strides", 2, (int64_t[]){stride, stride}),
                     int_attr("group", group)};
    hc_tensor *y = bias ? OPA(g, CONV, at, 4, x, w, rand_const(g, r, 1, &oc))
                        : OPA(g, CONV, at, 4, x, w);
    hc_error err = {0};
    HC_ASSERT_MSG(hc_pass_infer_node(y->producer, &err) == HC_OK, err.msg);
    return y;
}

static hc_tensor *infer(hc_tensor *y) {
    hc_error err = {0};
    HC_ASSERT_MSG(hc_pass_infer_node(y->producer, &err) == HC_OK, err.msg);
    return y;
}

static hc_tensor *scalar(hc_graph *g, float v) {
    return hc_graph_constant(g, NULL, HC_F32, 0, NULL, &v);
}

/* (a) Conv(32 -> 48, 3x3 pad 1) + Relu -> Conv(48 -> 16, 1x1) -> Add(another blocked conv
 * of the same Relu: 48 -> 16, 3x3 pad 1) -> Relu */
static hc_graph *build_chain(uint64_t seed) {
    hc_rng r = {seed};
    hc_graph *g = hc_graph_new("chain", 17);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 32, 7, 6});
    hc_tensor *y1 = infer(OP(g, RELU, conv(g, &r, x, 48, 3, 1, 1, 1, true)));
    hc_tensor *y2 = conv(g, &r, y1, 16, 1, 1, 0, 1, true);
    hc_tensor *y3 = conv(g, &r, y1, 16, 3, 1, 1, 1, false);
    hc_graph_add_output(g, infer(OP(g, RELU, infer(OP(g, ADD, y2, y3)))));
    return g;
}

/* (g) A QDQ chain between two convs, as the lowered QuantizeLinear / DequantizeLinear
 * pairs of a statically quantized model look (passes/quant.c): Relu -> Div -> Round ->
 * Add -> Clip -> Cast(int8) -> Cast(float) -> Sub -> Mul; it stays blocked end to end. */
static hc_graph *build_qdq(uint64_t seed) {
    hc_rng r = {seed};
    hc_graph *g = hc_graph_new("qdq", 17);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 32, 5, 7});
    hc_tensor *y = infer(OP(g, RELU, conv(g, &r, x, 48, 3, 1, 1, 1, true)));
    hc_attr to8[1] = {int_attr("to", 3)}, to32[1] = {int_attr("to", 1)};
    y = infer(OP(g, DIV, y, scalar(g, 0.05f)));
    y = infer(OP(g, ROUND, y));
    y = infer(OP(g, ADD, y, scalar(g, 3.0f)));
    y = infer(OP(g, CLIP, y, scalar(g, -128.0f), scalar(g, 127.0f)));
    y = infer(OPA(g, CAST, to8, 1, y));
    y = infer(OPA(g, CAST, to32, 1, y));
    y = infer(OP(g, MUL, infer(OP(g, SUB, y, scalar(g, 3.0f))), scalar(g, 0.05f)));
    hc_graph_add_output(g, conv(g, &r, y, 16, 1, 1, 0, 1, true));
    return g;
}

/* (b) Inception-like: a stem conv, four branches (1x1; 1x1 -> 3x3; Pad -> AveragePool ->
 * 1x1; MaxPool 3x3 pad 1) concatenated on the channels, then a MaxPool 3x3 stride 2 and an
 * AveragePool 3x3 stride 2 pad 1 (ceil_mode, count_include_pad) of the concat */
static hc_graph *build_inception(uint64_t seed) {
    hc_rng r = {seed};
    hc_graph *g = hc_graph_new("inception", 17);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 32, 10, 10});
    hc_tensor *s = infer(OP(g, RELU, conv(g, &r, x, 32, 1, 1, 0, 1, true)));
    hc_tensor *b1 = infer(OP(g, RELU, conv(g, &r, s, 16, 1, 1, 0, 1, true)));
    hc_tensor *t = infer(OP(g, RELU, conv(g, &r, s, 16, 1, 1, 0, 1, true)));
    hc_tensor *b2 = infer(OP(g, RELU, conv(g, &r, t, 32, 3, 1, 1, 1, true)));
    hc_tensor *p = infer(OP(g, PAD, s, i64_const(g, 8, (int64_t[]){0, 0, 1, 1, 0, 0, 1, 1}),
                            scalar(g, 0.0f)));
    hc_attr ap[2] = {ints_attr("kernel_shape", 2, (int64_t[]){3, 3}),
                     ints_attr("strides", 2, (int64_t[]){1, 1})};
    hc_tensor *b3 = infer(OPA(g, AVERAGE_POOL, ap, 2, p));
    b3 = infer(OP(g, RELU, conv(g, &r, b3, 16, 1, 1, 0, 1, false)));
    hc_attr mp[2] = {ints_attr("kernel_shape", 2, (int64_t[]){3, 3}),
                     ints_attr("pads", 4, (int64_t[]){1, 1, 1, 1})};
    hc_tensor *b4 = infer(OPA(g, MAX_POOL, mp, 2, s));
    hc_attr ca[1] = {int_attr("axis", 1)};
    hc_tensor *c = infer(OPA(g, CONCAT, ca, 1, b1, b2, b3, b4)); /* 96 channels */
    hc_attr m2[2] = {ints_attr("kernel_shape", 2, (int64_t[]){3, 3}),
                     ints_attr("strides", 2, (int64_t[]){2, 2})};
    hc_graph_add_output(g, infer(OPA(g, MAX_POOL, m2, 2, c)));
    hc_attr a2[5] = {ints_attr("kernel_shape", 2, (int64_t[]){3, 3}),
                     ints_attr("strides", 2, (int64_t[]){2, 2}),
                     ints_attr("pads", 4, (int64_t[]){1, 1, 1, 1}), int_attr("ceil_mode", 1),
                     int_attr("count_include_pad", 1)};
    hc_graph_add_output(g, infer(OPA(g, AVERAGE_POOL, a2, 5, c)));
    return g;
}

/* (c) MobileNet-like: 1x1 expand + Clip(0, 6) -> depthwise 3x3 (stride 2, then 1) + Clip
 * -> 1x1 project, twice, the second with a residual Add */
static hc_graph *build_mobilenet(uint64_t seed) {
    hc_rng r = {seed};
    hc_graph *g = hc_graph_new("mobilenet", 17);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 16, 11, 11});
    hc_tensor *y = x;
    for (int blk = 0; blk < 2; blk++) {
        hc_tensor *e = infer(OP(g, CLIP, conv(g, &r, y, 64, 1, 1, 0, 1, true), scalar(g, 0),
                                scalar(g, 6)));
        hc_tensor *d = infer(OP(g, CLIP, conv(g, &r, e, 64, 3, blk ? 1 : 2, 1, 64, true),
                                scalar(g, 0), scalar(g, 6)));
        hc_tensor *p = conv(g, &r, d, 32, 1, 1, 0, 1, true);
        y = blk ? infer(OP(g, ADD, y, p)) : p;
    }
    hc_graph_add_output(g, y);
    return g;
}

/* The expand convs of build_mobilenet kept NCHW (the matmul path) feed depthwise NCHW
 * convs, whose threads take contiguous channel planes: their groups are marked and their
 * default splits the output channels (rows) across the 2 threads, t1x2x1; the projection
 * convs (which feed no depthwise conv) are not marked. The outputs are checked by the
 * --no-nchwc variant of the "mobilenet" case. */
static void test_depthwise_producers(void) {
    hc_graph *g = build_mobilenet(5);
    hc_compile_options opt = {.num_threads = 2, .paths = {.no_nchwc = true}};
    hc_model *m = NULL;
    hc_error err = {0};
    CHECK_MSG(hc_model_compile(g, &opt, &m, &err) == HC_OK, "%s", err.msg);
    if (!m) return;
    int marked = 0, rows = 0, matmuls = 0;
    for (int i = 0; i < hc_model_num_kernels(m); i++) {
        const hc_group *grp = hc_model_kernel_group(m, i);
        const char *cfg = hc_model_kernel_config(m, i);
        bool mm = grp->anchor->op == HC_OPK_MATMUL;
        matmuls += mm;
        if (!grp->feeds_depthwise) continue;
        marked++;
        CHECK_MSG(mm, "kernel %d (%s) marked", i, hc_op_name(grp->anchor->op));
        rows += mm && cfg && strstr(cfg, " t1x2x1 ") != NULL;
    }
    CHECK_MSG(marked == 2 && rows == 2 && matmuls == 4, "%d marked, %d split by rows, %d matmuls",
              marked, rows, matmuls);
    hc_model_free(m);
}

/* (d) 24 channels: with blocks of 16 every conv is blocked, 24 channels padded to 32
 * (docs/nchwc.md, "Padded channels"), the depthwise conv on 24 channels too. With Winograd
 * forced the 24 -> 24 3x3 conv stays NCHW (the Winograd transforms take whole blocks), and
 * the depthwise conv of its output with it. */
static hc_graph *build_odd_channels(uint64_t seed) {
    hc_rng r = {seed};
    hc_graph *g = hc_graph_new("odd_channels", 17);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 24, 7, 6});
    hc_tensor *a = infer(OP(g, RELU, conv(g, &r, x, 24, 3, 1, 1, 1, true)));
    hc_tensor *b = infer(OP(g, RELU, conv(g, &r, a, 32, 1, 1, 0, 1, true)));
    hc_tensor *c = infer(OP(g, RELU, conv(g, &r, b, 48, 3, 1, 1, 1, true)));
    hc_graph_add_output(g, conv(g, &r, c, 24, 1, 1, 0, 1, false));
    hc_graph_add_output(g, conv(g, &r, a, 24, 3, 1, 1, 24, true));
    return g;
}

/* (h) channels that the block does not divide, padded with zero lanes where that adds at
 * most a third (blocks of 16: 24 -> 32, 36 -> 48; blocks of 8: 36 -> 40, 20 -> 24): 1x1
 * expand 24 -> 36 + Clip(0, 6) -> depthwise 3x3 stride 2 + Clip -> Mul by a per-channel
 * constant -> 1x1 project 36 -> 24, Add to a 3x3 stride-2 conv of the input (24 -> 24)
 * -> Abs -> Log -> 1x1 conv 24 -> 16; Sigmoid -> Div by a per-channel constant; a 1x1 conv
 * 24 -> 20 (NCHW with blocks of 16: 32 would be 1.6x). Log and Div stay NCHW: log(0) in a
 * padded lane is -inf, which a conv reads with a zero weight (0 * inf: a NaN in every
 * output channel). */
static hc_graph *build_padded(uint64_t seed) {
    hc_rng r = {seed};
    hc_graph *g = hc_graph_new("padded", 17);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 24, 9, 7});
    hc_tensor *e = infer(OP(g, CLIP, conv(g, &r, x, 36, 1, 1, 0, 1, true), scalar(g, 0),
                            scalar(g, 6)));
    hc_tensor *d = infer(OP(g, CLIP, conv(g, &r, e, 36, 3, 2, 1, 36, true), scalar(g, 0),
                            scalar(g, 6)));
    d = infer(OP(g, MUL, d, rand_const(g, &r, 3, (int64_t[]){36, 1, 1})));
    hc_tensor *q = infer(OP(g, ADD, conv(g, &r, d, 24, 1, 1, 0, 1, true),
                            conv(g, &r, x, 24, 3, 2, 1, 1, false)));
    hc_tensor *l = infer(OP(g, LOG, infer(OP(g, ABS, q))));
    hc_graph_add_output(g, conv(g, &r, l, 16, 1, 1, 0, 1, true));
    hc_graph_add_output(g, infer(OP(g, DIV, infer(OP(g, SIGMOID, q)),
                                    rand_const(g, &r, 4, (int64_t[]){1, 24, 1, 1}))));
    hc_graph_add_output(g, conv(g, &r, q, 20, 1, 1, 0, 1, true));
    return g;
}

/* (e) per-channel constants after a conv: Mul by [C, 1, 1], Add of [1, C, 1, 1], Mul by a
 * scalar, Relu (blocked); then an Add of a [1, 1, H, W] constant (not per-channel: stays) */
static hc_graph *build_per_channel(uint64_t seed) {
    hc_rng r = {seed};
    hc_graph *g = hc_graph_new("per_channel", 17);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 32, 5, 6});
    hc_tensor *y = conv(g, &r, x, 32, 3, 1, 1, 1, true);
    y = infer(OP(g, MUL, y, rand_const(g, &r, 3, (int64_t[]){32, 1, 1})));
    y = infer(OP(g, ADD, rand_const(g, &r, 4, (int64_t[]){1, 32, 1, 1}), y));
    y = infer(OP(g, MUL, y, scalar(g, 0.5f)));
    y = infer(OP(g, RELU, y));
    hc_graph_add_output(g, y);
    hc_graph_add_output(g, infer(OP(g, ADD, y, rand_const(g, &r, 4, (int64_t[]){1, 1, 5, 6}))));
    return g;
}

static hc_tensor *conv_auto_pad(hc_graph *g, hc_rng *r, hc_tensor *x, int64_t oc, int64_t k,
                                int64_t stride) {
    hc_tensor *w = rand_const(g, r, 4, (int64_t[]){oc, x->shape[1], k, k});
    hc_attr at[3] = {ints_attr("kernel_shape", 2, (int64_t[]){k, k}),
                     ints_attr("strides", 2, (int64_t[]){stride, stride}),
                     {.name = "auto_pad", .kind = HC_ATTR_STRING, .s = "SAME_UPPER"}};
    return infer(OPA(g, CONV, at, 3, x, w, rand_const(g, r, 1, &oc)));
}

/* (f) batch 2; a SAME_UPPER stride-2 conv (asymmetric pads) whose output is also a graph
 * output; a 1x1 stride-2 conv of the same input; LeakyRelu (an attribute) and a 3-input
 * Sum; a Concat on axis -3 of blocked pieces; a Concat with a 24-channel piece (blocked
 * with padded lanes: the concat stays NCHW) */
static hc_graph *build_misc(uint64_t seed) {
    hc_rng r = {seed};
    hc_graph *g = hc_graph_new("misc", 17);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){2, 32, 6, 7});
    hc_tensor *a = conv_auto_pad(g, &r, x, 32, 3, 2);
    hc_tensor *b = conv(g, &r, x, 32, 1, 2, 0, 1, true);
    hc_attr la[1] = {{.name = "alpha", .kind = HC_ATTR_FLOAT, .f = 0.1}};
    hc_tensor *s = infer(OP(g, SUM, a, b, infer(OPA(g, LEAKY_RELU, la, 1, a))));
    hc_attr c3[1] = {int_attr("axis", -3)}, c1[1] = {int_attr("axis", 1)};
    hc_graph_add_output(g, infer(OPA(g, CONCAT, c3, 1, s, conv(g, &r, s, 16, 1, 1, 0, 1, true))));
    hc_graph_add_output(g, infer(OPA(g, CONCAT, c1, 1, s, conv(g, &r, s, 24, 1, 1, 0, 1, true))));
    hc_graph_add_output(g, a);
    return g;
}

/* The expected structure after the layout pass alone (Winograd off). -1: not checked. */
typedef struct expect {
    int conv_nchwc, conv_nchwc_dw, conv, to, from;
    int ew5;       /* elementwise ops (Relu, Add, Mul, Clip, Sum, LeakyRelu) on 5-D tensors */
    int ew4;       /* ... left on 4-D tensors */
    int concat5, pad5, maxpool5, avgpool5;
    int concat4;   /* concats left on 4-D tensors */
} expect;

typedef struct gcase {
    const char *name;
    build_fn build;
    expect e;
} gcase;

/* (i) Stems: x [1, 3, 23, 21] -> Conv(3 -> 32, 7x7 stride 2 pad 3) + Relu -> MaxPool(3x3
 * stride 2 pad 1) -> Conv(32 -> 32, 3x3 pad 1) + Relu -> Add(the pool); and x * 0.5 (a
 * normalization: compiled, the stem's prologue) -> Conv(3 -> 16, 3x3 stride 2, no pad, no
 * bias) + Relu. Both stems read their NCHW input as it is (CONV_NCHWC with an NCHW input):
 * no TO_NCHWC anywhere. */
static hc_graph *build_stem(uint64_t seed) {
    hc_rng r = {seed};
    hc_graph *g = hc_graph_new("stem", 17);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 3, 23, 21});
    hc_tensor *y = infer(OP(g, RELU, conv(g, &r, x, 32, 7, 2, 3, 1, true)));
    hc_attr pa[3] = {ints_attr("kernel_shape", 2, (int64_t[]){3, 3}),
                     ints_attr("pads", 4, (int64_t[]){1, 1, 1, 1}),
                     ints_attr("strides", 2, (int64_t[]){2, 2})};
    hc_tensor *p = infer(OPA(g, MAX_POOL, pa, 3, y));
    hc_tensor *c = infer(OP(g, RELU, conv(g, &r, p, 32, 3, 1, 1, 1, true)));
    hc_graph_add_output(g, infer(OP(g, ADD, c, p)));
    hc_tensor *xs = infer(OP(g, MUL, x, scalar(g, 0.5f)));
    hc_graph_add_output(g, infer(OP(g, RELU, conv(g, &r, xs, 16, 3, 2, 0, 1, false))));
    return g;
}

/* A conv of a kh x kw kernel, stride 1, pads [top, left, bottom, right], with a bias. */
static hc_tensor *conv_k(hc_graph *g, hc_rng *r, hc_tensor *x, int64_t oc, int64_t kh, int64_t kw,
                         int64_t pt, int64_t pl, int64_t pb, int64_t pr) {
    hc_tensor *w = rand_const(g, r, 4, (int64_t[]){oc, x->shape[1], kh, kw});
    hc_attr at[2] = {ints_attr("kernel_shape", 2, (int64_t[]){kh, kw}),
                     ints_attr("pads", 4, (int64_t[]){pt, pl, pb, pr})};
    return infer(OPA(g, CONV, at, 2, x, w, rand_const(g, r, 1, &oc)));
}

/* (j) Factorized kernels (Inception-V3's 17x17 and 35x35 blocks, docs/winograd.md): x [1,
 * 32, 9, 11] -> 1x7 + Relu -> 7x1 + Relu (an output); x -> 5x5 + Relu -> 3x1 and 1x3 (two
 * outputs); x -> 1x5 with pads 0, 1, 0, 3 (an output). With Winograd forced or by the
 * rule, each is a blocked Winograd conv: F(mh x mw, kh x kw) with the identity along the
 * axis of one tap. */
static hc_graph *build_factorized(uint64_t seed) {
    hc_rng r = {seed};
    hc_graph *g = hc_graph_new("factorized", 17);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 32, 9, 11});
    hc_tensor *a = infer(OP(g, RELU, conv_k(g, &r, x, 32, 1, 7, 0, 3, 0, 3)));
    hc_graph_add_output(g, infer(OP(g, RELU, conv_k(g, &r, a, 32, 7, 1, 3, 0, 3, 0))));
    hc_tensor *c = infer(OP(g, RELU, conv_k(g, &r, x, 32, 5, 5, 2, 2, 2, 2)));
    hc_graph_add_output(g, conv_k(g, &r, c, 16, 3, 1, 1, 0, 1, 0));
    hc_graph_add_output(g, conv_k(g, &r, c, 16, 1, 3, 0, 1, 0, 1));
    hc_graph_add_output(g, conv_k(g, &r, x, 16, 1, 5, 0, 1, 0, 3));
    return g;
}

static const gcase graph_cases[] = {
    /* name                          nchwc  dw conv  to from ew5 ew4 cat5 pad5 max5 avg5 cat4 */
    {"chain", build_chain, {3, 0, 0, 1, 1, 3, 0, 0, 0, 0, 0, 0}},
    {"inception", build_inception, {5, 0, 0, 1, 2, 5, 0, 1, 1, 2, 2, 0}},
    {"mobilenet", build_mobilenet, {6, 2, 0, 1, 1, 5, 0, 0, 0, 0, 0, 0}},
    {"odd_channels", build_odd_channels, {5, 1, 0, 1, 2, 3, 0, 0, 0, 0, 0, 0}},
    {"per_channel", build_per_channel, {1, 0, 0, 1, 1, 4, 1, 0, 0, 0, 0, 0}},
    /* x feeds two convs: TO_NCHWC not pinned (one per conv today, one would do) */
    {"misc", build_misc, {4, 0, 0, -1, 4, 2, 0, 1, 0, 0, 0, 1}},
    {"qdq", build_qdq, {2, 0, 0, 1, 1, 4, 0, 0, 0, 0, 0, 0}},
    {"padded", build_padded, {5, 1, 1, -1, 4, 4, 0, 0, 0, 0, 0, 0}},
    {"stem", build_stem, {3, 0, 0, 0, 2, 4, 1, 0, 0, 1, 0, 0}},
    /* x feeds three convs: TO_NCHWC not pinned */
    {"factorized", build_factorized, {6, 0, 0, -1, 4, 3, 0, 0, 0, 0, 0, 0}},
};

static int count_ew(const hc_graph *g, int ndim) {
    return count_op_rank(g, HC_OPK_RELU, ndim) + count_op_rank(g, HC_OPK_ADD, ndim) +
           count_op_rank(g, HC_OPK_MUL, ndim) + count_op_rank(g, HC_OPK_CLIP, ndim) +
           count_op_rank(g, HC_OPK_SUM, ndim) + count_op_rank(g, HC_OPK_LEAKY_RELU, ndim);
}

static int count_dw(const hc_graph *g) {
    int c = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const hc_node *n = g->nodes.data[i];
        c += n->op == HC_OPK_CONV_NCHWC && hc_node_attr_int(n, "group", 1) != 1;
    }
    return c;
}

typedef struct gbufs {
    int nin, nout;
    void *in[4], *out[4];
    int64_t numel[4];
} gbufs;

static void gbufs_init(gbufs *b, const hc_graph *g, uint64_t seed) {
    hc_rng r = {seed};
    b->nin = (int)g->inputs.len, b->nout = (int)g->outputs.len;
    HC_ASSERT(b->nin <= 4 && b->nout <= 4);
    for (int i = 0; i < b->nin; i++) {
        const hc_tensor *t = g->inputs.data[i];
        float *f = malloc(sizeof(float) * (size_t)(hc_tensor_numel(t) + 1));
        for (int64_t k = 0; k < hc_tensor_numel(t); k++) f[k] = (float)hc_rng_uniform(&r, -1, 1);
        b->in[i] = f;
    }
    for (int i = 0; i < b->nout; i++) {
        b->numel[i] = hc_tensor_numel(g->outputs.data[i]);
        float *f = malloc(sizeof(float) * (size_t)(b->numel[i] + 1));
        for (int64_t k = 0; k < b->numel[i]; k++) f[k] = NAN;
        b->out[i] = f;
    }
}

static void gbufs_free(gbufs *b) {
    for (int i = 0; i < b->nin; i++) free(b->in[i]);
    for (int i = 0; i < b->nout; i++) free(b->out[i]);
}

/* Max over the outputs of max |x - y| / max(1, max |y|) (y: the reference) */
static double gbufs_error(const gbufs *x, const gbufs *y) {
    double worst = 0;
    for (int i = 0; i < x->nout && i < y->nout; i++) {
        const float *a = x->out[i], *b = y->out[i];
        double scale = 1, e = 0;
        for (int64_t k = 0; k < y->numel[i]; k++) scale = fmax(scale, fabs(b[k]));
        for (int64_t k = 0; k < y->numel[i]; k++) {
            double d = fabs((double)a[k] - b[k]);
            e = isnan(d) ? INFINITY : fmax(e, d);
        }
        worst = fmax(worst, e / scale);
    }
    return x->nout == y->nout ? worst : INFINITY;
}

static void check_structure(const hc_graph *g, const gcase *k, const char *what) {
    const expect *e = &k->e;
    int got[12] = {count_op(g, HC_OPK_CONV_NCHWC), count_dw(g), count_op(g, HC_OPK_CONV),
                   count_op(g, HC_OPK_TO_NCHWC), count_op(g, HC_OPK_FROM_NCHWC), count_ew(g, 5),
                   count_ew(g, 4), count_op_rank(g, HC_OPK_CONCAT, 5),
                   count_op_rank(g, HC_OPK_PAD, 5), count_op_rank(g, HC_OPK_MAX_POOL_NCHWC, 5),
                   count_op_rank(g, HC_OPK_AVERAGE_POOL_NCHWC, 5),
                   count_op_rank(g, HC_OPK_CONCAT, 4)};
    const int want[12] = {e->conv_nchwc, e->conv_nchwc_dw, e->conv, e->to, e->from, e->ew5,
                          e->ew4, e->concat5, e->pad5, e->maxpool5, e->avgpool5, e->concat4};
    static const char *names[12] = {"CONV_NCHWC", "depthwise CONV_NCHWC", "CONV", "TO_NCHWC",
                                    "FROM_NCHWC", "5-D elementwise", "4-D elementwise",
                                    "5-D CONCAT", "5-D PAD", "MAX_POOL_NCHWC",
                                    "AVERAGE_POOL_NCHWC", "4-D CONCAT"};
    for (int i = 0; i < 12; i++)
        if (want[i] >= 0)
            CHECK_MSG(got[i] == want[i], "%s (%s): %d %s, expected %d", k->name, what, got[i],
                      names[i], want[i]);
    CHECK_MSG(count_reorder_pairs(g) == 0, "%s (%s): %d reorder pairs left", k->name, what,
              count_reorder_pairs(g));
    CHECK_MSG(e->to == 0 || count_op(g, HC_OPK_TO_NCHWC) >= 1, "%s (%s): no TO_NCHWC", k->name,
              what);
    /* nothing of the original layout left where the blocked one took over */
    CHECK_MSG(count_op(g, HC_OPK_MAX_POOL) == 0 && count_op(g, HC_OPK_AVERAGE_POOL) == 0 &&
                  count_op_rank(g, HC_OPK_PAD, 4) == 0,
              "%s (%s): a 4-D pad or pool left", k->name, what);
}

static void print_graph_on_failure(const hc_graph *g, int failed_before) {
    if (test_failed == failed_before) return;
    hc_sb sb;
    hc_sb_init(&sb);
    hc_graph_print(&sb, g);
    fprintf(stderr, "%s\n", hc_sb_str(&sb));
    hc_sb_free(&sb);
}

/* A Pad of padded lanes runs blocked only with a finite constant (docs/nchwc.md, "Padded
 * channels"): conv 24 -> 24 (padded to 32 with blocks of 16) -> Pad(value) -> MaxPool 3x3
 * -> conv 24 -> 16; with 0 the Pad and the pool are blocked, with -inf the Pad reads a
 * FROM_NCHWC (the pool follows it NCHW); both against the reference evaluator. */
static hc_graph *build_pad_value(float value) {
    hc_rng r = {11};
    hc_graph *g = hc_graph_new("pad_value", 17);
    hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 24, 6, 5});
    hc_tensor *y = conv(g, &r, x, 24, 1, 1, 0, 1, true);
    y = infer(OP(g, PAD, y, i64_const(g, 8, (int64_t[]){0, 0, 1, 1, 0, 0, 1, 1}),
                 scalar(g, value)));
    hc_attr mp[1] = {ints_attr("kernel_shape", 2, (int64_t[]){3, 3})};
    hc_graph_add_output(g, conv(g, &r, infer(OPA(g, MAX_POOL, mp, 1, y)), 16, 1, 1, 0, 1, true));
    return g;
}

static void test_pad_value(void) {
    hc_error err = {0};
    for (int v = 0; v < 2; v++) {
        float value = v ? -INFINITY : 0.0f;
        hc_graph *ref = build_pad_value(value), *g = build_pad_value(value);
        hc_optimize_options o = {.nchwc_block = 16, .no_winograd = true,
                                 .nchwc_small_pixels = -1};
        hc_status st = hc_pass_infer_shapes(g, &err);
        if (st == HC_OK) st = hc_pass_layout_nchwc(g, &o, &err);
        CHECK_MSG(st == HC_OK, "pad value %g: %s", value, err.msg);
        CHECK_MSG(count_op_rank(g, HC_OPK_PAD, v ? 4 : 5) == 1 &&
                      count_op(g, HC_OPK_CONV_NCHWC) == 2,
                  "pad value %g: Pad %s", value, v ? "not NCHW" : "not blocked");
        gbufs want, got;
        gbufs_init(&want, ref, 3);
        gbufs_init(&got, ref, 3);
        CHECK(hc_graph_eval_reference(ref, want.in, want.out, &err) == HC_OK);
        CHECK(st == HC_OK && hc_graph_eval_reference(g, got.in, got.out, &err) == HC_OK);
        double e = gbufs_error(&got, &want);
        CHECK_MSG(e <= 1e-4, "pad value %g: error %g", value, e);
        gbufs_free(&want), gbufs_free(&got);
        hc_graph_free(ref), hc_graph_free(g);
    }
}

/* The pass alone (Winograd off, then forced), and the whole pipeline: the structure and
 * the reference evaluator against the original graph. */
static void check_pass(const gcase *k, uint64_t seed, const hc_graph *ref, const gbufs *want) {
    hc_error err = {0};
    for (int v = 0; v < 4; v++) {
        const char *what = v == 0   ? "layout pass"
                           : v == 1 ? "layout pass, Winograd forced (tile 2)"
                           : v == 3 ? "layout pass, Winograd tile 6 forced (F(6) / F(4))"
                                    : "pipeline";
        int failed_before = test_failed;
        hc_graph *g = k->build(seed);
        /* the graphs' images are small: every eligible conv blocked regardless; the rules
         * decide for a stated machine (block 16, the expectations below), not the host:
         * the reference evaluator runs any block */
        const hc_target t16 =
            hc_target_cpu_describe(HC_ISA_AVX512, 2, 48 << 10, 2 << 20, 105 << 20);
        hc_optimize_options o = {.target = &t16,
                                 .nchwc_block = 16,
                                 .no_winograd = v == 0,
                                 .force_winograd = v == 1 || v == 3,
                                 .nchwc_small_pixels = -1,
                                 .wino_tile = v == 3   ? 6
                                              : v == 1 ? 2
                                                       : 0};
        hc_status st;
        if (v != 2) {
            st = hc_pass_infer_shapes(g, &err);
            if (st == HC_OK) st = hc_pass_layout_nchwc(g, &o, &err);
        } else {
            st = hc_graph_optimize_with(g, &o, &err);
        }
        CHECK_MSG(st == HC_OK, "%s (%s): %s", k->name, what, err.msg);
        if (st == HC_OK && o.nchwc_block == 16) {
            if (v == 0) check_structure(g, k, what);
            if (v == 0 && k->build == build_padded) /* what stays NCHW on padded lanes */
                CHECK_MSG(count_op_rank(g, HC_OPK_ABS, 5) == 1 &&
                              count_op_rank(g, HC_OPK_SIGMOID, 5) == 1 &&
                              count_op_rank(g, HC_OPK_LOG, 4) == 1 &&
                              count_op_rank(g, HC_OPK_DIV, 4) == 1,
                          "padded: Abs, Sigmoid blocked; Log, Div NCHW");
            if (v == 1 || v == 3) { /* 3x3 stride-1 group-1 convs went blocked Winograd */
                int wi = count_op(g, HC_OPK_WINO_INPUT_NCHWC),
                    wo = count_op(g, HC_OPK_WINO_OUTPUT_NCHWC);
                /* a Winograd conv with padded channels stays NCHW (and a depthwise conv
                 * of its output with it): every conv is counted once */
                int left = count_op(g, HC_OPK_CONV) - k->e.conv;
                CHECK_MSG(wi == wo && count_op(g, HC_OPK_WINO_INPUT) == 0 &&
                              wi + count_op(g, HC_OPK_CONV_NCHWC) + left == k->e.conv_nchwc,
                          "%s (%s): %d Winograd, %d CONV_NCHWC, %d CONV", k->name, what, wi,
                          count_op(g, HC_OPK_CONV_NCHWC), count_op(g, HC_OPK_CONV));
                if (k->build == build_odd_channels) CHECK_EQ_INT(left, 2);
                if (k->build == build_chain) CHECK_EQ_INT(wi, 2);
                if (k->build == build_per_channel) CHECK_EQ_INT(wi, 1);
                if (k->build == build_factorized) CHECK_EQ_INT(wi, 6);
                for (size_t i = 0; i < g->nodes.len; i++) { /* the tile asked for */
                    const hc_node *wn = g->nodes.data[i];
                    bool win = wn->op == HC_OPK_WINO_INPUT_NCHWC;
                    if (!win && wn->op != HC_OPK_WINO_OUTPUT_NCHWC) continue;
                    const hc_tensor *v16 = win ? wn->outputs[0] : wn->inputs[0];
                    hc_wino_geom wg = {0};
                    CHECK(hc_wino_node_geom(wn, &wg, &err) == HC_OK);
                    /* tile 6 forced: F(6, 7) for 1x7 / 7x1, F(4) for the other kernels */
                    bool f6 = wg.h && wg.w && has_f6(wg.h->r, wg.w->r);
                    int tile = v == 3 ? (f6 ? 6 : 4) : 2;
                    CHECK_MSG(hc_node_attr_int(wn, "tile", 2) == tile && wg.h && wg.w &&
                                  wg.h->m == hc_wino_axis_m(tile, wg.h->r) &&
                                  wg.w->m == hc_wino_axis_m(tile, wg.w->r) &&
                                  v16->shape[0] == (int64_t)wg.h->a * wg.w->a,
                              "%s (%s): %s tile", k->name, what, wn->name);
                }
                CHECK_MSG(count_reorder_pairs(g) == 0 &&
                              (left || k->e.to < 0 || count_op(g, HC_OPK_TO_NCHWC) == k->e.to) &&
                              (left || count_op(g, HC_OPK_FROM_NCHWC) == k->e.from),
                          "%s (%s): reorders", k->name, what);
            }
            /* odd_channels: the pipeline takes Winograd for its 24 -> 24 3x3 conv (NCHW:
             * padded channels) and the depthwise conv of its output stays NCHW with it */
            if (v == 2)
                CHECK_MSG(count_op(g, HC_OPK_CONV_NCHWC) + count_op(g, HC_OPK_WINO_INPUT_NCHWC) >=
                                  1 &&
                              count_reorder_pairs(g) == 0 &&
                              count_op(g, HC_OPK_CONV) <= k->e.conv + (k->build == build_odd_channels),
                          "%s (%s): not blocked", k->name, what);
        }
        if (st == HC_OK) {
            gbufs got;
            gbufs_init(&got, ref, seed * 7);
            st = hc_graph_eval_reference(g, got.in, got.out, &err);
            CHECK_MSG(st == HC_OK, "%s (%s): eval: %s", k->name, what, err.msg);
            double e = gbufs_error(&got, want);
            CHECK_MSG(st == HC_OK && e <= 1e-4, "%s (%s): error %g", k->name, what, e);
            gbufs_free(&got);
        }
        print_graph_on_failure(g, failed_before);
        hc_graph_free(g);
    }
}

static bool blocked_anchor(hc_op_kind op) {
    return op == HC_OPK_CONV_NCHWC || op == HC_OPK_MAX_POOL_NCHWC ||
           op == HC_OPK_AVERAGE_POOL_NCHWC || op == HC_OPK_WINO_INPUT_NCHWC ||
           op == HC_OPK_WINO_OUTPUT_NCHWC;
}

/* dense CONV_NCHWC kernels with a TO_NCHWC prologue, over all compiled graphs */
static int reorder_prologues;

/* Compiled with the blocked layout on (the default), on with Winograd forced, and off,
 * against the reference evaluator on the original graph. */
static void check_compiled(const gcase *k, uint64_t seed, int variant, const hc_graph *ref,
                           const gbufs *want) {
    hc_error err = {0};
    const char *what = variant == 0   ? "default"
                       : variant == 1 ? "Winograd forced"
                       : variant == 3 ? "Winograd tile 6 (F(6) / F(4))"
                                      : "--no-nchwc";
    hc_graph *g = k->build(seed);
    hc_compile_options opt = {.num_threads = 2,
                              .paths = {.force_winograd = variant == 1 || variant == 3,
                                        .no_nchwc = variant == 2,
                                        .nchwc_small_pixels = -1,
                                        .wino_tile = variant == 3 ? 6 : 0}};
    hc_model *m = NULL;
    hc_status st = hc_model_compile(g, &opt, &m, &err);
    CHECK_MSG(st == HC_OK, "%s (%s): compile: %s", k->name, what, err.msg);
    if (st != HC_OK) return;
    const hc_graph *og = hc_model_graph(m);
    int blocked = 0, reorders = count_op(og, HC_OPK_TO_NCHWC) + count_op(og, HC_OPK_FROM_NCHWC);
    for (size_t i = 0; i < og->nodes.len; i++) blocked += blocked_anchor(og->nodes.data[i]->op);
    if (variant == 2)
        CHECK_MSG(blocked == 0 && reorders == 0, "%s (%s): %d blocked ops, %d reorders",
                  k->name, what, blocked, reorders);
    else
        CHECK_MSG(blocked >= 1 && reorders >= (k->e.to == 0 ? 1 : 2) &&
                      count_reorder_pairs(og) == 0,
                  "%s (%s): %d blocked ops, %d reorders", k->name, what, blocked, reorders);
    int kernels = hc_model_num_kernels(m), untemplated = 0, fallbacks = 0, mul_prologues = 0;
    for (int i = 0; i < kernels; i++) {
        const hc_node *an = hc_model_kernel_node(m, i);
        /* a reorder is a prologue of the dense blocked conv only (partition.c): the
         * templates that load vectors along the channel block would gather */
        const hc_group *grp = hc_model_kernel_group(m, i);
        bool vec = an && (an->op == HC_OPK_WINO_INPUT_NCHWC || an->op == HC_OPK_MAX_POOL_NCHWC ||
                          an->op == HC_OPK_AVERAGE_POOL_NCHWC ||
                          (an->op == HC_OPK_CONV_NCHWC && hc_node_attr_int(an, "group", 1) != 1));
        for (int q = 0; q < grp->nprologue; q++) {
            bool to = grp->prologue[q]->op == HC_OPK_TO_NCHWC;
            CHECK_MSG(!(vec && to), "%s (%s): TO_NCHWC fused into %s", k->name, what,
                      hc_op_name(an->op));
            reorder_prologues += to && an && an->op == HC_OPK_CONV_NCHWC;
            mul_prologues += grp->prologue[q]->op == HC_OPK_MUL && an &&
                             an->op == HC_OPK_CONV_NCHWC;
        }
        if (an && blocked_anchor(an->op) && !hc_model_kernel_templated(m, i)) {
            untemplated++;
            fprintf(stderr, "%s (%s): kernel %d (%s) not templated\n", k->name, what, i,
                    hc_op_name(an->op));
        }
        fallbacks += hc_model_kernel_group(m, i)->fallback != NULL;
    }
    CHECK_EQ_INT(untemplated, 0);
    /* the stem on x * 0.5 reads it through a prologue (scalar loads of the NCHW input) */
    if (k->build == build_stem && variant != 2)
        CHECK_MSG(mul_prologues == 1, "stem (%s): %d stems with the Mul as a prologue", what,
                  mul_prologues);
    gbufs got;
    gbufs_init(&got, ref, seed * 7);
    st = hc_model_run(m, got.in, got.out, &err);
    CHECK_MSG(st == HC_OK, "%s (%s): run: %s", k->name, what, err.msg);
    double e = gbufs_error(&got, want);
    CHECK_MSG(e <= 1e-4, "%s (%s): error %g", k->name, what, e);
    printf("%-14s %-16s %2d kernels (%d unfused), %2d blocked ops, error %.2g\n", k->name, what,
           kernels, fallbacks, blocked, e);
    gbufs_free(&got);
    hc_model_free(m);
}

/* ---- CONV_NCHWC_Q8: the int8 template ----------------------------------------------- */
typedef struct qcase {
    const char *name;
    int64_t n, cb, h, w, mb, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
    int64_t z; /* x_zero (the u8 value of a real 0) */
} qcase;

static const qcase q8_cases[] = {
    /* name                   n cb  h   w mb kh kw sh sw dh dw pt pl pb pr    z */
    {"q8_1x1_cb3_mb2_7x13",   1, 3, 7, 13, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 128},
    {"q8_3x3_p1_cb2_mb3_5x11", 2, 2, 5, 11, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 7},
    {"q8_3x3_s2_p1_1x1",      1, 1, 1, 1, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 255},
    {"q8_3x3_s2_asym_13x7",   1, 2, 13, 7, 1, 3, 3, 2, 2, 1, 1, 0, 1, 2, 0, 0},
    {"q8_3x3_d2_p2_cb1_9x9",  1, 1, 9, 9, 2, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 200},
    {"q8_1x1_s2_cb2_mb5_6x6", 3, 2, 6, 6, 5, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 128},
    {"q8_5x1_p2_cb1_mb1_8x3", 1, 1, 8, 3, 1, 5, 1, 1, 1, 1, 1, 2, 0, 2, 0, 60},
};

/* One case on target tg: every level-0/1 program and a few hand configs, against the
 * interpreter, X holding exact dequantized values (q - zx) * sx. */
static void run_q8_case(const qcase *k, const hc_target *tg, const char *tname) {
    hc_error err = {0};
    int64_t b = hc_target_f32_lanes(tg);
    hc_graph *g = hc_graph_new("conv_q8", 17);
    hc_tensor *in[5];
    in[0] = hc_graph_add_input(g, "X", HC_F32, 5, (int64_t[]){k->n, k->cb, k->h, k->w, b});
    in[1] = hc_graph_add_input(g, "W", HC_I8, 7, (int64_t[]){k->mb, k->cb, k->kh, k->kw, b / 4, b, 4});
    in[2] = hc_graph_add_input(g, "K", HC_I32, 2, (int64_t[]){k->mb, b});
    in[3] = hc_graph_add_input(g, "S", HC_F32, 2, (int64_t[]){k->mb, b});
    in[4] = hc_graph_add_input(g, "B", HC_F32, 2, (int64_t[]){k->mb, b});
    const double sx = 0.0371;
    hc_attr at[5] = {INTS("strides", k->sh, k->sw), INTS("dilations", k->dh, k->dw),
                     INTS("pads", k->pt, k->pl, k->pb, k->pr),
                     {.name = "x_scale", .kind = HC_ATTR_FLOAT, .f = sx}, INT("x_zero", k->z)};
    hc_node *n = one_node(g, HC_OPK_CONV_NCHWC_Q8, k->name, 5, in, 5, at, &err);
    CHECK_MSG(n != NULL, "%s: %s", k->name, err.msg);
    if (!n) {
        hc_graph_free(g);
        return;
    }
    hc_arena a;
    hc_arena_init(&a);
    hc_task *t = hc_op_get(HC_OPK_CONV_NCHWC_Q8)->task(&a, n, &err);
    CHECK_MSG(t != NULL, "%s: task: %s", k->name, err.msg);
    hc_conv_nchwc_shape s;
    CHECK(hc_conv_q8_shape_of(n, &s, &err) == HC_OK);
    kset ks = {0};
    for (int level = 0; t && level <= 1; level++) {
        int cnt = space_node(n, tg, level);
        CHECK_MSG(cnt >= 1, "%s (%s): level %d space is empty", k->name, tname, level);
        for (int c = 0; c < cnt; c++) {
            hc_sched_opts o = {.level = level, .candidate = c, .write_once = true};
            hc_func *f = schedule_node(&a, n, t, tg, hc_arena_printf(&a, "q8_l%d_c%d", level, c),
                                     &o, &err);
            CHECK_MSG(f != NULL, "%s (%s) level %d candidate %d: %s", k->name, tname, level, c,
                      err.msg);
            if (f) kset_add(&ks, f);
        }
    }
    hc_conv_nchwc_config dc = hc_conv_q8_default_config(tg, &s), hand[4];
    int nh = 0;
    hand[nh++] = (hc_conv_nchwc_config){dc.lanes, 3, 2, 2, 3, 3};
    hand[nh++] = (hc_conv_nchwc_config){dc.lanes, 1, 1, 3, 1, 2};
    hand[nh++] = (hc_conv_nchwc_config){dc.lanes, 5, 1, 1, 2, 3};
    float inv = (float)(1.0 / sx);
    for (int i = 0; i < nh; i++) {
        if (!hc_conv_q8_tile_fits(tg, hand[i].px, hand[i].ot)) continue;
        hc_func *f = hc_conv_q8_cpu(&a, hc_arena_printf(&a, "q8_hand%d", i), &s, inv, k->z,
                                    &hand[i], tg, &err);
        CHECK_MSG(f != NULL, "%s hand %d: %s", k->name, i, err.msg);
        if (f) kset_add(&ks, f);
    }
    /* inputs: X = (q - zx) * sx (zx = z, the u8 view), W random int8, K = -z * sum(W) */
    int64_t nx = hc_tensor_numel(in[0]), nw = hc_tensor_numel(in[1]), nk = k->mb * b;
    float *x = malloc(sizeof(float) * (size_t)nx), *sc = malloc(sizeof(float) * (size_t)nk),
          *bi = malloc(sizeof(float) * (size_t)nk);
    int8_t *w = malloc((size_t)nw);
    int32_t *kk = calloc((size_t)nk, sizeof(int32_t));
    for (int64_t i = 0; i < nx; i++)
        x[i] = (float)((double)(hc_rng_next(&rng) % 256) - (double)k->z) * (float)sx;
    for (int64_t i = 0; i < nw; i++) w[i] = (int8_t)(int)(hc_rng_next(&rng) % 256 - 128);
    int64_t per = nw / k->mb; /* bytes per output block: [cb, kh, kw, b/4, b, 4] */
    for (int64_t o = 0; o < k->mb; o++)
        for (int64_t r = 0; r < per; r++) {
            int64_t lane = (r / 4) % b; /* output lane m */
            kk[o * b + lane] -= (int32_t)k->z * w[o * per + r];
        }
    for (int64_t i = 0; i < nk; i++) {
        sc[i] = (float)hc_rng_uniform(&rng, 1e-4, 2e-3);
        bi[i] = (float)hc_rng_uniform(&rng, -1, 1);
    }
    hc_jit_lib *lib = t && ks.n ? build_funcs(&a, k->name, tg, ks.n, ks.f) : NULL;
    int64_t ny = hc_tensor_numel(n->outputs[0]);
    float *ref = malloc(sizeof(float) * (size_t)ny), *out = malloc(sizeof(float) * (size_t)ny);
    void *ins[5] = {x, w, kk, sc, bi};
    if (lib && hc_interpret_task(t, ins, (void *[]){ref}, &err) != HC_OK) {
        CHECK_MSG(false, "%s: interpreter: %s", k->name, err.msg);
    } else if (lib) {
        int wrong = 0;
        for (int i = 0; i < ks.n; i++) {
            for (int64_t j = 0; j < ny; j++) out[j] = NAN;
            void *args[6] = {x, w, kk, sc, bi, out};
            hc_packed_fn fn = (hc_packed_fn)hc_jit_symbol(
                lib, hc_arena_printf(&a, "%s__packed", ks.f[i]->name));
            CHECK(fn != NULL);
            if (!fn) continue;
            running_program = ks.f[i]->name;
            fn(args);
            running_program = NULL;
            double e = max_rel_err(out, ref, ny);
            if (e > 1e-6) {
                wrong++;
                fprintf(stderr, "%s (%s): %s: max relative error %g\n", k->name, tname,
                        ks.f[i]->name, e);
            }
        }
        CHECK_MSG(wrong == 0, "%s (%s): %d of %d programs wrong", k->name, tname, wrong, ks.n);
        printf("%-26s %-16s %2d programs\n", k->name, tname, ks.n);
    }
    if (lib) hc_jit_close(lib);
    free(x), free(sc), free(bi), free(w), free(kk), free(ref), free(out);
    kset_free(&ks);
    hc_arena_free(&a);
    hc_graph_free(g);
}

/* On each runnable vector ISA: the host's int8 dot product (VNNI where it has it) and the
 * 16-bit emulation (an injected target without VNNI). */
static void test_conv_q8(void) {
    const hc_target *host = hc_target_host();
    for (int isa = HC_ISA_AVX2; isa <= (int)host->caps.isa; isa++) {
        hc_target own = *hc_target_cpu((hc_isa)isa);
        hc_target emu = own;
        emu.caps.int8_dot = 0;
        char n1[32], n2[32];
        snprintf(n1, sizeof n1, "%s dot%d", hc_isa_name((hc_isa)isa), own.caps.int8_dot);
        snprintf(n2, sizeof n2, "%s emulated", hc_isa_name((hc_isa)isa));
        for (size_t i = 0; i < HC_ARRAY_LEN(q8_cases); i++) {
            run_q8_case(&q8_cases[i], &own, n1);
            if (own.caps.int8_dot) run_q8_case(&q8_cases[i], &emu, n2);
        }
    }
    /* the scalar target has no template: the auto-scheduler runs the Task */
    hc_graph *g = hc_graph_new("q8", 17);
    hc_error err = {0};
    hc_tensor *in[5] = {
        hc_graph_add_input(g, "X", HC_F32, 5, (int64_t[]){1, 1, 3, 3, 4}),
        hc_graph_add_input(g, "W", HC_I8, 7, (int64_t[]){1, 1, 1, 1, 1, 4, 4}),
        hc_graph_add_input(g, "K", HC_I32, 2, (int64_t[]){1, 4}),
        hc_graph_add_input(g, "S", HC_F32, 2, (int64_t[]){1, 4}),
        hc_graph_add_input(g, "B", HC_F32, 2, (int64_t[]){1, 4})};
    hc_attr at[1] = {{.name = "x_scale", .kind = HC_ATTR_FLOAT, .f = 0.5}};
    hc_node *n = one_node(g, HC_OPK_CONV_NCHWC_Q8, "q8s", 5, in, 1, at, &err);
    CHECK(n != NULL && space_node(n, hc_target_cpu(HC_ISA_SCALAR), 0) == 0);
    hc_graph_free(g);
}

/* The default register tile follows the target's registers (an injected ISA, not the
 * host), one left spare: with 16 (AVX2) 2 x 6 (3 x 3 ties it on FMAs per load with fewer
 * accumulators; 4 x 2, 8 accumulators, was the old default), with 32 (AVX-512) 4 x 6 where 4
 * divides them, 3 x 9 where only 3 does; depthwise with 16 registers 12 chains (3 x 4); a group that
 * overhangs only where no group of 2 or more blocks divides them (7: 2 x 6). Every
 * default tile fits. */
static void test_default_tiles(void) {
    static const struct {
        hc_isa isa;
        int64_t mb;
        bool dw;
        int ot, px;
    } want[] = {
        {HC_ISA_AVX2, 48, false, 2, 6},  {HC_ISA_AVX2, 8, false, 2, 6},
        {HC_ISA_AVX2, 4, false, 2, 6},   {HC_ISA_AVX2, 1, false, 1, 13},
        /* 32 and 64 blocks (ResNet-50's 256 and 512 channels): 2 x 6, not an overhanging
         * group of 3 (3% of its last group wasted) */
        {HC_ISA_AVX2, 32, false, 2, 6},  {HC_ISA_AVX2, 64, false, 2, 6},
        {HC_ISA_AVX2, 7, false, 2, 6},   {HC_ISA_AVX2, 7, true, 1, 12},
        {HC_ISA_AVX2, 18, true, 3, 4},   {HC_ISA_AVX2, 8, true, 2, 6},
        {HC_ISA_AVX512, 24, false, 4, 6}, {HC_ISA_AVX512, 6, false, 3, 9},
        {HC_ISA_AVX512, 2, false, 2, 14},
        /* depthwise with 32 registers: test_dw_tiles */
        /* no group of 2-4 blocks divides 5 (Inception-V3's 64 -> 80 1x1): a group of 5
         * (25 accumulators), not 3 x 9 overhanging by one block; 10 keeps 2 x 14 (one
         * thread: no chunks) */
        {HC_ISA_AVX512, 5, false, 5, 5}, {HC_ISA_AVX512, 10, false, 2, 14},
        {HC_ISA_AVX2, 5, false, 2, 6},
    };
    for (size_t i = 0; i < HC_ARRAY_LEN(want); i++) {
        const hc_target *tg = hc_target_cpu_emit_only(want[i].isa);
        int b = hc_target_f32_lanes(tg);
        int64_t cb = want[i].dw ? want[i].mb : 5, k = want[i].dw ? 3 : 1;
        hc_conv_nchwc_shape s = {.n = 1, .cb = cb, .h = 14, .w = 14, .mb = want[i].mb,
                                 .kh = k, .kw = k, .sh = 1, .sw = 1, .dh = 1, .dw = 1,
                                 .pt = k / 2, .pl = k / 2, .pb = k / 2, .pr = k / 2,
                                 .oh = 14, .ow = 14, .block = b, .depthwise = want[i].dw};
        hc_conv_nchwc_config c = hc_conv_nchwc_default_config(tg, &s);
        CHECK_MSG(c.ot == want[i].ot && c.px == want[i].px,
                  "default tile %zu (%s, mb %lld%s): %d x %d, want %d x %d", i, tg->name,
                  (long long)want[i].mb, want[i].dw ? ", depthwise" : "", c.ot, c.px,
                  want[i].ot, want[i].px);
        CHECK(hc_conv_nchwc_tile_fits(tg, c.px, c.ot));
    }
}

/* The depthwise default with 32 registers, on stated machines (its rule reads the cores):
 * where the threads take whole channel chunks (blocks a multiple of the cores), one block
 * and a whole output row of up to 28 pixels, 14 of a wider row, two blocks for a row of
 * fewer than 12; blocks the cores do not divide (rows split): 12 chains in a group that
 * divides the blocks (3 x 4 on 9 or 6 blocks). With 16
 * registers (AVX2) the 12-chain tile whatever the cores (3 x 4). */
static void test_dw_tiles(void) {
    static const struct {
        hc_isa isa;
        int cores;
        int64_t mb, ow;
        int os, ot, px;
    } want[] = {
        {HC_ISA_AVX512, 2, 36, 14, 2, 1, 14}, {HC_ISA_AVX512, 2, 12, 28, 2, 1, 28},
        {HC_ISA_AVX512, 2, 6, 56, 2, 1, 14},  {HC_ISA_AVX512, 2, 36, 7, 2, 2, 7},
        {HC_ISA_AVX512, 2, 2, 30, 2, 1, 14},  {HC_ISA_AVX512, 2, 9, 56, 1, 3, 4},
        {HC_ISA_AVX512, 4, 6, 14, 1, 3, 4},   {HC_ISA_AVX2, 2, 36, 14, 2, 3, 4},
        {HC_ISA_AVX2, 2, 18, 28, 2, 3, 4},
    };
    for (size_t i = 0; i < HC_ARRAY_LEN(want); i++) {
        const hc_target t = hc_target_cpu_describe(want[i].isa, want[i].cores, 48 << 10,
                                                   2 << 20, 32 << 20);
        int b = hc_target_f32_lanes(&t);
        int64_t mb = want[i].mb, ow = want[i].ow;
        hc_conv_nchwc_shape s = {.n = 1, .cb = mb, .h = ow, .w = ow, .mb = mb, .kh = 3,
                                 .kw = 3, .sh = 1, .sw = 1, .dh = 1, .dw = 1, .pt = 1, .pl = 1,
                                 .pb = 1, .pr = 1, .oh = ow, .ow = ow, .block = b,
                                 .bias = true, .depthwise = true};
        hc_conv_nchwc_config c = hc_conv_nchwc_default_config(&t, &s);
        CHECK_MSG(c.osplit == want[i].os && c.ot == want[i].ot && c.px == want[i].px,
                  "dw tile %zu (%s, %d cores, %lld blocks, %lld wide): os %d, %d x %d; want "
                  "os %d, %d x %d", i, t.name, want[i].cores, (long long)mb, (long long)ow,
                  c.osplit, c.ot, c.px, want[i].os, want[i].ot, want[i].px);
        CHECK(hc_conv_nchwc_tile_fits(&t, c.px, c.ot));
    }
}

/* Stems (an NCHW input): with 16 registers a short reduction (3 x 3 x 3 = 27 per output)
 * takes one block and 12 pixels, a long one (3 x 7 x 7 = 147) the dense rule's 2 x 6; with
 * 32 registers every stem 2 blocks and 7 pixels (one block and 12 on an odd number of
 * blocks), a long one too (not the dense rule's 4 x 6). Stated 2-core targets. */
static void test_stem_tiles(void) {
    static const struct {
        hc_isa isa;
        int64_t k, ch, hw, stride, pad;
        int ot, px;
    } want[] = {
        {HC_ISA_AVX2, 3, 32, 224, 2, 1, 1, 12},  {HC_ISA_AVX2, 3, 32, 299, 2, 0, 1, 12},
        {HC_ISA_AVX2, 7, 64, 224, 2, 3, 2, 6},   {HC_ISA_AVX512, 3, 32, 224, 2, 1, 2, 7},
        {HC_ISA_AVX512, 3, 32, 299, 2, 0, 2, 7}, {HC_ISA_AVX512, 3, 48, 224, 2, 1, 1, 12},
        {HC_ISA_AVX512, 7, 64, 224, 2, 3, 2, 7}, {HC_ISA_AVX512, 7, 48, 224, 2, 3, 1, 12},
    };
    for (size_t i = 0; i < HC_ARRAY_LEN(want); i++) {
        const hc_target t = hc_target_cpu_describe(want[i].isa, 2, 48 << 10, 2 << 20, 32 << 20);
        int b = hc_target_f32_lanes(&t);
        int64_t k = want[i].k, hw = want[i].hw, st = want[i].stride, pad = want[i].pad;
        int64_t o = (hw + 2 * pad - k) / st + 1;
        hc_conv_nchwc_shape s = {.n = 1, .cb = 3, .h = hw, .w = hw, .mb = want[i].ch / b,
                                 .kh = k, .kw = k, .sh = st, .sw = st, .dh = 1, .dw = 1,
                                 .pt = pad, .pl = pad, .pb = pad, .pr = pad, .oh = o, .ow = o,
                                 .block = b, .bias = true, .nchw_in = true};
        hc_error err = {0};
        CHECK_MSG(hc_conv_nchwc_validate_shape(&s, &err) == HC_OK, "%s", err.msg);
        hc_conv_nchwc_config c = hc_conv_nchwc_default_config(&t, &s);
        CHECK_MSG(c.osplit == 1 && c.ot == want[i].ot && c.px == want[i].px,
                  "stem tile %zu (%s, %lldx%lld): os %d, %d x %d; want os 1, %d x %d", i, t.name,
                  (long long)k, (long long)k, c.osplit, c.ot, c.px, want[i].ot, want[i].px);
    }
}

/* Output-channel chunks: the default's tile divides a chunk's blocks, not all of them (a
 * group overhanging its chunk computes clamped copies). Inception-V3's 17x17 1x7 convs on
 * a stated 2-core AVX-512 machine: 192 -> 192 (12 blocks, 6 a chunk) 3 x 9, was 4 x 6;
 * 160 -> 160 (10 blocks, 5 a chunk) 5 x 5, was 2 x 14. With 16 registers (AVX2) no
 * group of 5 has 12 accumulators: 2 x 6 as before. */
static void test_chunk_tiles(void) {
    static const struct {
        hc_isa isa;
        int64_t ch;
        int os, ot, px;
    } want[] = {
        {HC_ISA_AVX512, 192, 2, 3, 9}, {HC_ISA_AVX512, 160, 2, 5, 5},
        {HC_ISA_AVX512, 128, 2, 4, 6}, {HC_ISA_AVX2, 160, 2, 2, 6},
        {HC_ISA_AVX2, 192, 2, 2, 6},
    };
    for (size_t i = 0; i < HC_ARRAY_LEN(want); i++) {
        const hc_target t = want[i].isa == HC_ISA_AVX512
                                ? hc_target_cpu_describe(HC_ISA_AVX512, 2, 48 << 10, 2 << 20, 105 << 20)
                                : hc_target_cpu_describe(HC_ISA_AVX2, 2, 32 << 10, 512 << 10, 32 << 20);
        int64_t b = hc_target_f32_lanes(&t), mb = want[i].ch / b;
        hc_conv_nchwc_shape s = {.n = 1, .cb = mb, .h = 17, .w = 17, .mb = mb, .kh = 1, .kw = 7,
                                 .sh = 1, .sw = 1, .dh = 1, .dw = 1, .pl = 3, .pr = 3,
                                 .oh = 17, .ow = 17, .block = b, .bias = true};
        hc_conv_nchwc_config c = hc_conv_nchwc_default_config(&t, &s);
        CHECK_MSG(c.osplit == want[i].os && c.ot == want[i].ot && c.px == want[i].px,
                  "chunk tile %zu (%s, %lld channels): os %d, %d x %d; want os %d, %d x %d", i,
                  t.name, (long long)want[i].ch, c.osplit, c.ot, c.px, want[i].os, want[i].ot,
                  want[i].px);
        CHECK(hc_conv_nchwc_tile_fits(&t, c.px, c.ot));
    }
}

/* A tile inside one output row addresses its pixels from one row and column (constant
 * column offsets: one base register), not px rows and columns of their own (GCC kept 14 of
 * them on the stack at px 14): a width px divides has only that body, one column per tile
 * (q0 % ow); other widths branch per tile to the general body's px columns; a tile wider
 * than a row has only the general body. Counted in the program: "% ow" per column. */
static void test_row_tiles(void) {
    const hc_target *tg = hc_target_cpu_emit_only(HC_ISA_AVX512);
    static const struct {
        int64_t w;
        int px, mods;
    } want[] = {{28, 14, 1}, {28, 7, 1}, {28, 12, 1 + 12}, {7, 12, 12}};
    for (size_t i = 0; i < HC_ARRAY_LEN(want); i++) {
        hc_conv_nchwc_shape s = {.n = 1, .cb = 2, .h = 3, .w = want[i].w, .mb = 1, .kh = 1,
                                 .kw = 1, .sh = 1, .sw = 1, .dh = 1, .dw = 1, .oh = 3,
                                 .ow = want[i].w, .block = 16};
        hc_conv_nchwc_config c = {16, want[i].px, 1, 3, 1, 1};
        hc_arena a;
        hc_arena_init(&a);
        hc_error err = {0};
        hc_func *f = hc_conv_nchwc_cpu(&a, "rowtile", &s, &c, tg, &err);
        CHECK_MSG(f != NULL, "row tiles %zu: %s", i, err.msg);
        if (f) {
            char *body = print_body(f);
            char needle[16];
            snprintf(needle, sizeof needle, "%% %lld)", (long long)want[i].w);
            int got = count_str(body, needle);
            CHECK_MSG(got == want[i].mods, "row tiles: width %lld, px %d: %d columns, want %d",
                      (long long)want[i].w, want[i].px, got, want[i].mods);
            if (got != want[i].mods) fprintf(stderr, "%s\n", body);
            free(body);
        }
        hc_arena_free(&a);
    }
}

int main(void) {
    setenv("HIDETC_VERIFY", "1", 1);
    signal(SIGSEGV, on_fault);
    signal(SIGBUS, on_fault);
    double t0 = seconds(), t1;
    const hc_op_def *d = hc_op_get(HC_OPK_CONV_NCHWC);
    CHECK(d && d->task && d->infer);
    /* the CPU target's template table holds the blocked ops' templates */
    const hc_target *dflt = hc_target_default();
    const hc_template *cv = hc_target_template(dflt, HC_OPK_CONV_NCHWC);
    CHECK(cv && cv->op == HC_OPK_CONV_NCHWC && cv->schedule && cv->space);
    static const hc_op_kind blocked[] = {HC_OPK_MAX_POOL_NCHWC, HC_OPK_AVERAGE_POOL_NCHWC,
                                         HC_OPK_WINO_INPUT_NCHWC, HC_OPK_WINO_OUTPUT_NCHWC};
    for (size_t i = 0; i < HC_ARRAY_LEN(blocked); i++) {
        const hc_template *tp = hc_target_template(dflt, blocked[i]);
        CHECK_MSG(tp && tp->op == blocked[i] && tp->schedule, "op %d", (int)blocked[i]);
    }
    test_conv_q8();
    test_contract_checker();
    test_space();
    test_rows_fit_l2();
    test_default_split();
    test_default_tiles();
    test_chunk_tiles();
    test_row_tiles();
    test_dw_tiles();
    test_stem_tiles();
    test_pad_value();
    test_depthwise_producers();
    test_conv_errors();
    const hc_target *host = hc_target_host();
    for (size_t i = 0; i < HC_ARRAY_LEN(conv_cases); i++) run_conv_case(&conv_cases[i], host, 2);
    /* unpadded reductions copy their input rows when the input is well beyond the cores'
     * L2 (copy_pays): a stated machine of the host's ISA with 1 KiB of L2 makes every
     * reduction case copy; run them there (levels 0 and 1), and check which programs copy */
    const hc_target tiny = hc_target_cpu_describe(host->caps.isa, 2, 32 << 10, 1 << 10, 32 << 20);
    for (size_t i = 0; i < HC_ARRAY_LEN(conv_cases); i++)
        if (strstr(conv_cases[i].name, "reduce")) run_conv_case(&conv_cases[i], &tiny, 1);
    /* output-channel chunks (weights outweigh a small image) on a stated 2-core machine of
     * the host's ISA: 10 and 12 blocks in 2 chunks of 5 and 6, the default's tile chosen
     * for the chunk (test_chunk_tiles), a prime width, levels 0 and 1 */
    {
        const hc_target two = hc_target_cpu_describe(host->caps.isa, 2, 48 << 10, 2 << 20, 32 << 20);
        static const ccase chunked[] = {
            {"1x7_chunks_cb2_mb10_3x11", 1, 2, 3, 11, 10, 1, 7, 1, 1, 1, 1, 0, 3, 0, 3, true, false},
            {"7x1_chunks_cb3_mb12_5x3", 1, 3, 5, 3, 12, 7, 1, 1, 1, 1, 1, 3, 0, 3, 0, false, false},
        };
        /* the depthwise default's row tiles (test_dw_tiles) against the reference: a row of
         * 28, 14 of a row of 30 (tiles crossing the row ends), 2 blocks x 7 */
        static const ccase dw_rows[] = {
            {"dw_3x3_p1_rows_mb2_3x28", 1, 2, 3, 28, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, true},
            {"dw_3x3_s2_p1_mb2_5x59", 1, 2, 5, 59, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, true},
            {"dw_3x3_p1_mb4_7x7", 1, 4, 7, 7, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true, true},
        };
        for (size_t i = 0; i < HC_ARRAY_LEN(dw_rows); i++) run_conv_case(&dw_rows[i], &two, 1);
        for (size_t i = 0; i < HC_ARRAY_LEN(chunked); i++) {
            hc_conv_nchwc_shape cs = ccase_shape(&chunked[i], hc_target_f32_lanes(&two));
            hc_conv_nchwc_config dc = hc_conv_nchwc_default_config(&two, &cs);
            /* with 16 registers (AVX2) 5 blocks have no dividing group of 12 accumulators */
            CHECK_MSG(dc.osplit == 2 && ((cs.mb / 2) % dc.ot == 0 || two.caps.num_regs < 32),
                      "%s: os %d ot %d (want 2 chunks, groups dividing them)", chunked[i].name,
                      dc.osplit, dc.ot);
            run_conv_case(&chunked[i], &two, 1);
        }
    }
    {
        int b = hc_target_f32_lanes(host);
        const hc_conv_nchwc_shape red = {1, 5, 7, 13, 2, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0,
                                         7, 13, b, true, false},
                                  exp = {1, 2, 7, 13, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0,
                                         7, 13, b, true, false};
        const hc_target big = hc_target_cpu_describe(host->caps.isa, 2, 32 << 10, 1 << 20,
                                                     32 << 20);
        struct {
            const hc_conv_nchwc_shape *s;
            const hc_target *t;
            bool copies;
        } want[] = {{&red, &tiny, true}, {&red, &big, false}, {&exp, &tiny, false}};
        for (size_t i = 0; i < HC_ARRAY_LEN(want); i++) {
            hc_arena a;
            hc_arena_init(&a);
            hc_error err = {0};
            hc_conv_nchwc_config c = hc_conv_nchwc_default_config(want[i].t, want[i].s);
            hc_func *f = hc_conv_nchwc_cpu(&a, "cp", want[i].s, &c, want[i].t, &err);
            CHECK_MSG(f != NULL, "copy case %zu: %s", i, err.msg);
            if (f) {
                hc_sb sb;
                hc_sb_init(&sb);
                hc_print_func(&sb, f);
                char *text = hc_sb_take(&sb);
                CHECK_MSG((strstr(text, "xs") != NULL) == want[i].copies,
                          "copy case %zu: scratch %s", i, want[i].copies ? "missing" : "present");
                free(text);
            }
            hc_arena_free(&a);
        }
    }
    /* the narrower vectors (blocks of 8 and 4) on a few cases, levels 0 and 1 */
    static const hc_isa lower[] = {HC_ISA_AVX2, HC_ISA_SCALAR};
    for (size_t j = 0; j < HC_ARRAY_LEN(lower); j++) {
        if (lower[j] >= host->caps.isa) continue;
        const hc_target *tg = hc_target_cpu(lower[j]);
        static const char *const names[] = {"1x1_cb3_mb5_7x13", "3x3_s2_p1_cb2_mb2_15x16",
                                            "3x3_asym0120_cb1_mb5_7x6",
                                            "dw_3x3_s2_p1_cb2_15x16_n2"};
        for (size_t i = 0; i < HC_ARRAY_LEN(conv_cases); i++)
            for (size_t k = 0; k < HC_ARRAY_LEN(names); k++)
                if (strcmp(conv_cases[i].name, names[k]) == 0) run_conv_case(&conv_cases[i], tg, 1);
    }
    t1 = seconds();
    printf("conv_nchwc: %d programs scheduled, %d distinct compiled and run (%.1f s)\n",
           conv_programs_total, conv_programs_distinct, t1 - t0);
    t0 = t1;
    {
        hc_arena a;
        hc_arena_init(&a);
        staged *st = calloc(MAX_STAGED, sizeof *st);
        int ns = 0;
        /* each case stages at most 2 (the two transforms, or a pool's variants): checked
         * before the writes */
        for (size_t i = 0; i < HC_ARRAY_LEN(wino_cases); i++) {
            HC_ASSERT(ns + 2 <= MAX_STAGED);
            ns += stage_wino_case(&a, &wino_cases[i], (int)i, st + ns);
        }
        for (size_t i = 0; i < HC_ARRAY_LEN(pool_cases); i++) {
            HC_ASSERT(ns + 2 <= MAX_STAGED);
            ns += stage_pool_case(&a, &pool_cases[i], (int)i, st + ns);
        }
        run_staged(&a, host, st, ns);
        free(st);
        hc_arena_free(&a);
    }
    test_wino_fallbacks();
    test_wino_tile_rule();
    test_wino_kernels_rule();
    test_pool_fallbacks();
    test_reorders();
    t1 = seconds();
    printf("winograd, pools, reorders: %.1f s\n", t1 - t0);
    t0 = t1;
    for (size_t i = 0; i < HC_ARRAY_LEN(graph_cases); i++) {
        /* the original graph, evaluated once */
        const gcase *k = &graph_cases[i];
        uint64_t seed = 40 + i;
        hc_error err = {0};
        hc_graph *ref = k->build(seed);
        CHECK(hc_pass_infer_shapes(ref, &err) == HC_OK);
        gbufs want;
        gbufs_init(&want, ref, seed * 7);
        CHECK_MSG(hc_graph_eval_reference(ref, want.in, want.out, &err) == HC_OK, "%s: %s",
                  k->name, err.msg);
        check_pass(k, seed, ref, &want);
        for (int v = 0; v < 4; v++) check_compiled(k, seed, v, ref, &want);
        gbufs_free(&want);
        hc_graph_free(ref);
    }
    CHECK_MSG(reorder_prologues >= 1, "no dense blocked conv took its reorder as a prologue");
    printf("graphs: %.1f s\n", seconds() - t0);
    /* small images: a 1x1 conv with 64 output pixels stays NCHW by default, one with 72 is
     * blocked; a 3x3 Winograd conv on 8x8 is blocked either way; nchwc_small_pixels -1
     * blocks the small 1x1 too (the pass alone, for a stated AVX-512 machine: any host) */
    {
        const hc_target avx512 =
            hc_target_cpu_describe(HC_ISA_AVX512, 2, 48 << 10, 2 << 20, 105 << 20);
        for (int v = 0; v < 3; v++) {
            hc_error err = {0};
            hc_rng r = {9};
            hc_graph *g = hc_graph_new("small", 17);
            int64_t w = v == 1 ? 9 : 8;
            hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 32, 8, w});
            hc_tensor *y = conv(g, &r, x, 32, 1, 1, 0, 1, true);
            hc_graph_add_output(g, conv(g, &r, y, 32, 3, 1, 1, 1, true));
            hc_optimize_options o = {.target = &avx512, .nchwc_block = 16,
                                     .nchwc_small_pixels = v == 2 ? -1 : 0};
            CHECK(hc_pass_infer_shapes(g, &err) == HC_OK);
            CHECK_MSG(hc_pass_layout_nchwc(g, &o, &err) == HC_OK, "%s", err.msg);
            int blocked = count_op(g, HC_OPK_CONV_NCHWC), plain = count_op(g, HC_OPK_CONV);
            CHECK_MSG(blocked == (v == 0 ? 0 : 1) && plain == (v == 0 ? 1 : 0) &&
                          count_op(g, HC_OPK_WINO_INPUT_NCHWC) == 1,
                      "small images, variant %d: %d CONV_NCHWC, %d CONV", v, blocked, plain);
            hc_graph_free(g);
        }
    }
    /* a depthwise chain on a small image (7x7: expand 1x1 32 -> 96, Clip, depthwise 3x3,
     * Clip, project 1x1 96 -> 32, Add of the input) is blocked from end to end on blocks of
     * 16, where a lone 1x1 conv on 7x7 beside it (reading the same input) stays NCHW; blocks
     * of 8 keep the small-image rule for the chain too (layout.c, in_depthwise_chain) */
    {
        const struct {
            hc_isa isa;
            int64_t l2, block;
            int blocked, plain;
        } want[3] = {{HC_ISA_AVX512, 1 << 20, 16, 3, 1},
                     {HC_ISA_AVX512, 2 << 20, 16, 3, 1},
                     {HC_ISA_AVX2, 1 << 20, 8, 0, 4}};
        for (int v = 0; v < 3; v++) {
            const hc_target t =
                hc_target_cpu_describe(want[v].isa, 2, 48 << 10, want[v].l2, 32 << 20);
            hc_error err = {0};
            hc_rng r = {9};
            hc_graph *g = hc_graph_new("dw_chain", 17);
            hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4, (int64_t[]){1, 32, 7, 7});
            hc_tensor *e = infer(
                OP(g, CLIP, conv(g, &r, x, 96, 1, 1, 0, 1, true), scalar(g, 0), scalar(g, 6)));
            hc_tensor *d = infer(
                OP(g, CLIP, conv(g, &r, e, 96, 3, 1, 1, 96, true), scalar(g, 0), scalar(g, 6)));
            hc_graph_add_output(g, infer(OP(g, ADD, x, conv(g, &r, d, 32, 1, 1, 0, 1, true))));
            hc_graph_add_output(g, conv(g, &r, x, 16, 1, 1, 0, 1, true));
            hc_optimize_options o = {.target = &t, .nchwc_block = want[v].block};
            CHECK(hc_pass_infer_shapes(g, &err) == HC_OK);
            CHECK_MSG(hc_pass_layout_nchwc(g, &o, &err) == HC_OK, "%s", err.msg);
            int blocked = count_op(g, HC_OPK_CONV_NCHWC), plain = count_op(g, HC_OPK_CONV);
            CHECK_MSG(blocked == want[v].blocked && plain == want[v].plain,
                      "depthwise chain on 7x7, %s, L2 %lld: %d CONV_NCHWC, %d CONV (expected "
                      "%d, %d)",
                      hc_isa_name(want[v].isa), (long long)want[v].l2, blocked, plain,
                      want[v].blocked, want[v].plain);
            hc_graph_free(g);
        }
    }
    /* the threshold grows as L2 shrinks (by the square of 2 MiB / L2): a stated AVX2
     * machine of 512 KiB keeps a 1x1 conv of 32x32 = 1024 output pixels NCHW and blocks
     * one of 32x33; one of 1 MiB keeps 16x16 = 256 and blocks 16x17; the 2 MiB machine
     * above blocks both sizes of 256 and more */
    {
        const int64_t l2s[3] = {512 << 10, 1 << 20, 2 << 20}, hs[3] = {32, 16, 16};
        for (int m = 0; m < 3; m++)
            for (int v = 0; v < 2; v++) {
                const hc_target t = hc_target_cpu_describe(HC_ISA_AVX2, 2, 32 << 10, l2s[m], 32 << 20);
                hc_error err = {0};
                hc_rng r = {9};
                hc_graph *g = hc_graph_new("small_l2", 17);
                hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4,
                                                  (int64_t[]){1, 32, hs[m], hs[m] + v});
                hc_graph_add_output(g, conv(g, &r, x, 32, 1, 1, 0, 1, true));
                hc_optimize_options o = {.target = &t, .nchwc_block = 8};
                CHECK(hc_pass_infer_shapes(g, &err) == HC_OK);
                CHECK_MSG(hc_pass_layout_nchwc(g, &o, &err) == HC_OK, "%s", err.msg);
                bool blocked = count_op(g, HC_OPK_CONV_NCHWC) == 1;
                bool want = m == 2 || v == 1;
                CHECK_MSG(blocked == want, "L2 %lld, 1x1 on %lldx%lld: %s, expected %s",
                          (long long)l2s[m], (long long)hs[m], (long long)(hs[m] + v),
                          blocked ? "blocked" : "NCHW", want ? "blocked" : "NCHW");
                hc_graph_free(g);
            }
    }
    /* the growth is for 1x1 convs: on the stated 512 KiB machine a stride-2 3x3 conv (not
     * Winograd) on 28x28 output pixels is blocked where a stride-2 1x1 conv on the same
     * output stays NCHW; the 3x3 conv on 8x8 = 64 output pixels stays NCHW, as on 2 MiB */
    {
        const hc_target t = hc_target_cpu_describe(HC_ISA_AVX2, 2, 32 << 10, 512 << 10, 32 << 20);
        const int64_t sizes[3] = {56, 56, 16}, ks[3] = {3, 1, 3};
        for (int v = 0; v < 3; v++) {
            hc_error err = {0};
            hc_rng r = {9};
            hc_graph *g = hc_graph_new("small_taps", 17);
            hc_tensor *x = hc_graph_add_input(g, "x", HC_F32, 4,
                                              (int64_t[]){1, 16, sizes[v], sizes[v]});
            hc_graph_add_output(g, conv(g, &r, x, 16, ks[v], 2, ks[v] / 2, 1, true));
            hc_optimize_options o = {.target = &t, .nchwc_block = 8};
            CHECK(hc_pass_infer_shapes(g, &err) == HC_OK);
            CHECK_MSG(hc_pass_layout_nchwc(g, &o, &err) == HC_OK, "%s", err.msg);
            bool blocked = count_op(g, HC_OPK_CONV_NCHWC) == 1;
            CHECK_MSG(blocked == (v == 0), "L2 512 KiB, %lldx%lld stride-2 conv to %lldx%lld: %s",
                      (long long)ks[v], (long long)ks[v], (long long)sizes[v] / 2,
                      (long long)sizes[v] / 2, blocked ? "blocked" : "NCHW");
            hc_graph_free(g);
        }
    }
    /* a block other than the target's lanes is an error naming the option, not a silent
     * fallback (the templates take blocks of one vector only) */
    {
        hc_error err = {0};
        hc_graph *g = build_chain(5);
        int lanes = hc_target_f32_lanes(hc_target_host());
        hc_compile_options opt = {.num_threads = 2, .paths = {.nchwc_block = lanes == 8 ? 16 : 8}};
        hc_model *m = NULL;
        CHECK(hc_model_compile(g, &opt, &m, &err) == HC_ERR_INVALID && !m);
        CHECK_MSG(strstr(err.msg, "nchwc_block") != NULL, "%s", err.msg);
        /* the model owned g and freed it with itself on the failure */
    }
    TEST_DONE();
}
