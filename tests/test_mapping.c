/* test_mapping.c — task mappings against the definition in DESIGN.md.
 *
 * The reference here is an independent brute-force construction of worker2task lists,
 * written straight from the definition (lists of tasks built recursively), and a tiny
 * statement evaluator that runs lowered programs. */
#include <stdlib.h>
#include <string.h>

#include "ir/mapping.h"
#include "test.h"

/* ---- brute-force reference ----------------------------------------------------------- */
/* ref: for each worker, the list of its tasks (each task d int64s). */
typedef struct ref {
    int d;
    int64_t nworkers, shape[HC_MAX_DIMS];
    int64_t *ntasks;  /* per worker */
    int64_t **tasks;  /* per worker: ntasks * d */
} ref;

typedef struct tnode { /* the test's own description of a mapping */
    int kind;          /* 0 spatial, 1 repeat, 2 compose */
    int d;
    int64_t shape[HC_MAX_DIMS];
    hc_loop_attr attrs[HC_MAX_DIMS];
    struct tnode *l, *r;
} tnode;

static void ref_free(ref *r) {
    for (int64_t w = 0; w < r->nworkers; w++) free(r->tasks[w]);
    free(r->tasks);
    free(r->ntasks);
}

static void ref_alloc(ref *r, int d, int64_t nworkers) {
    r->d = d, r->nworkers = nworkers;
    r->ntasks = calloc((size_t)nworkers, sizeof(int64_t));
    r->tasks = calloc((size_t)nworkers, sizeof(int64_t *));
}

static int64_t prod(int d, const int64_t *s) {
    int64_t p = 1;
    for (int i = 0; i < d; i++) p *= s[i];
    return p;
}

/* index number `n` of a row-major enumeration of shape s */
static void unrank(int d, const int64_t *s, int64_t n, int64_t *out) {
    for (int i = d - 1; i >= 0; i--) out[i] = n % s[i], n /= s[i];
}

static void ref_build(const tnode *t, ref *out) {
    int d = t->d;
    if (t->kind == 0) { /* spatial: worker w gets the single task unrank(w) */
        ref_alloc(out, d, prod(d, t->shape));
        memcpy(out->shape, t->shape, sizeof(int64_t) * (size_t)d);
        for (int64_t w = 0; w < out->nworkers; w++) {
            out->ntasks[w] = 1;
            out->tasks[w] = malloc(sizeof(int64_t) * (size_t)d);
            unrank(d, t->shape, w, out->tasks[w]);
        }
        return;
    }
    if (t->kind == 1) { /* repeat: one worker, all tasks in row-major order */
        ref_alloc(out, d, 1);
        memcpy(out->shape, t->shape, sizeof(int64_t) * (size_t)d);
        int64_t n = prod(d, t->shape);
        out->ntasks[0] = n;
        out->tasks[0] = malloc(sizeof(int64_t) * (size_t)(n * d));
        for (int64_t i = 0; i < n; i++) unrank(d, t->shape, i, out->tasks[0] + i * d);
        return;
    }
    ref A, B;
    ref_build(t->l, &A);
    ref_build(t->r, &B);
    ref_alloc(out, d, A.nworkers * B.nworkers);
    for (int i = 0; i < d; i++) out->shape[i] = A.shape[i] * B.shape[i];
    /* [a (x) shapeB + b for a in A(wa) for b in B(wb)], wa = w / nB, wb = w % nB */
    for (int64_t w = 0; w < out->nworkers; w++) {
        int64_t wa = w / B.nworkers, wb = w % B.nworkers;
        int64_t n = A.ntasks[wa] * B.ntasks[wb], k = 0;
        out->ntasks[w] = n;
        out->tasks[w] = malloc(sizeof(int64_t) * (size_t)(n * d));
        for (int64_t ia = 0; ia < A.ntasks[wa]; ia++)
            for (int64_t ib = 0; ib < B.ntasks[wb]; ib++, k++)
                for (int i = 0; i < d; i++)
                    out->tasks[w][k * d + i] =
                        A.tasks[wa][ia * d + i] * B.shape[i] + B.tasks[wb][ib * d + i];
    }
    ref_free(&A);
    ref_free(&B);
}

static const hc_mapping *to_mapping(hc_arena *a, const tnode *t) {
    if (t->kind == 0) return hc_map_spatial(a, t->d, t->shape);
    if (t->kind == 1) return hc_map_repeat(a, t->d, t->shape, t->attrs);
    return hc_map_compose(a, to_mapping(a, t->l), to_mapping(a, t->r));
}

/* Compare library mapping m with the reference; returns true when all agree. */
static bool check_against_ref(const hc_mapping *m, const ref *r, const char *what) {
    bool ok = true;
    int64_t shape[HC_MAX_DIMS];
    CHECK_MSG(hc_map_num_workers(m) == r->nworkers, "%s: workers", what);
    if (hc_map_num_workers(m) != r->nworkers) return false;
    hc_map_task_shape(m, shape);
    for (int i = 0; i < r->d; i++) ok &= shape[i] == r->shape[i];
    for (int64_t w = 0; w < r->nworkers && ok; w++) {
        int64_t *t;
        int64_t n = hc_map_worker2task(m, w, &t);
        ok &= n == r->ntasks[w] &&
              !memcmp(t, r->tasks[w], sizeof(int64_t) * (size_t)(n * r->d));
        free(t);
        if (!ok) fprintf(stderr, "%s: worker %lld differs\n", what, (long long)w);
    }
    CHECK_MSG(ok, "%s", what);
    return ok;
}

/* Every task of the task shape belongs to exactly one (worker, position). */
static void check_coverage(const hc_mapping *m, const char *what) {
    int d = m->ndim;
    int64_t shape[HC_MAX_DIMS];
    hc_map_task_shape(m, shape);
    int64_t total = prod(d, shape);
    int *seen = calloc((size_t)total, sizeof(int));
    for (int64_t w = 0; w < hc_map_num_workers(m); w++) {
        int64_t *t;
        int64_t n = hc_map_worker2task(m, w, &t);
        for (int64_t i = 0; i < n; i++) {
            int64_t flat = 0;
            bool inside = true;
            for (int k = 0; k < d; k++) {
                inside &= t[i * d + k] >= 0 && t[i * d + k] < shape[k];
                flat = flat * shape[k] + t[i * d + k];
            }
            if (inside) seen[flat]++;
            else seen[0] += 1000; /* make it fail */
        }
        free(t);
    }
    bool ok = true;
    for (int64_t i = 0; i < total; i++) ok &= seen[i] == 1;
    CHECK_MSG(ok, "%s: not every task covered exactly once", what);
    free(seen);
}

/* ---- examples from DESIGN.md --------------------------------------------------------- */
static bool worker_is(const hc_mapping *m, int64_t w, int n, const int64_t *expect) {
    int64_t *t;
    int64_t got = hc_map_worker2task(m, w, &t);
    bool ok = got == n && !memcmp(t, expect, sizeof(int64_t) * (size_t)(n * m->ndim));
    free(t);
    return ok;
}

static char *print_map(const hc_mapping *m) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_print_mapping(&sb, m);
    return hc_sb_take(&sb);
}

static void test_examples(void) {
    hc_arena a;
    hc_arena_init(&a);
    const hc_mapping *m = hc_map_compose(&a, hc_map_spatial2(&a, 4, 8), hc_map_repeat2(&a, 2, 2));
    int64_t shape[2];
    hc_map_task_shape(m, shape);
    CHECK_EQ_INT(hc_map_num_workers(m), 32);
    CHECK(shape[0] == 8 && shape[1] == 16);
    CHECK(worker_is(m, 9, 4, (int64_t[]){2, 2, 2, 3, 3, 2, 3, 3}));

    m = hc_map_compose(&a, hc_map_repeat2(&a, 2, 2), hc_map_spatial2(&a, 4, 8));
    CHECK(worker_is(m, 9, 4, (int64_t[]){1, 1, 1, 9, 5, 1, 5, 9}));

    hc_error err;
    m = hc_map_auto(&a, 2, (int64_t[]){8, 96}, 64, &err);
    CHECK(m != NULL);
    char *s = print_map(m);
    CHECK_STR(s, "repeat(4,3).spatial(2,32)");
    free(s);

    m = hc_map_auto(&a, 2, (int64_t[]){3, 5}, 4, &err);
    CHECK(m == NULL && strstr(err.msg, "auto_map") != NULL);
    hc_arena_free(&a);
}

/* ---- parser and printer -------------------------------------------------------------- */
static void check_parse_print(const char *text, const char *canonical) {
    hc_arena a;
    hc_arena_init(&a);
    hc_error err = {0};
    const hc_mapping *m = hc_map_parse(&a, text, &err);
    CHECK_MSG(m != NULL, "parse '%s': %s", text, err.msg);
    if (m) {
        char *s = print_map(m);
        CHECK_STR(s, canonical);
        free(s);
    }
    hc_arena_free(&a);
}

/* The message must mention `needle` (e.g. "column 12"). */
static void check_parse_error(const char *text, const char *needle) {
    hc_arena a;
    hc_arena_init(&a);
    hc_error err = {0};
    const hc_mapping *m = hc_map_parse(&a, text, &err);
    CHECK_MSG(m == NULL, "'%s' should not parse", text);
    CHECK_MSG(err.status == HC_ERR_INVALID && strstr(err.msg, needle),
              "'%s': message '%s' lacks '%s'", text, err.msg, needle);
    hc_arena_free(&a);
}

static void test_parser(void) {
    check_parse_print("spatial(4,8).repeat(2,2)", "spatial(4,8).repeat(2,2)");
    check_parse_print("  spatial ( 4 , 8 ) .\trepeat( 2u ,3p ) ", "spatial(4,8).repeat(2u,3p)");
    check_parse_print("repeat(8u4,2p16)", "repeat(8u4,2p16)");
    check_parse_print("auto_map((8,96),64)", "repeat(4,3).spatial(2,32)");
    check_parse_print("spatial(2,1).auto_map((8,96),64).repeat(1,2)",
                      "spatial(2,1).repeat(4,3).spatial(2,32).repeat(1,2)");
    check_parse_print("auto_map(12,4)", "repeat(3).spatial(4)");
    check_parse_print("spatial(1,1,1,1,1,1,1,2)", "spatial(1,1,1,1,1,1,1,2)");

    check_parse_error("", "column 1: expected 'spatial', 'repeat' or 'auto_map'");
    check_parse_error("spatial(4,8", "column 12: expected ')'");
    check_parse_error("spatial(4,0)", "column 11");
    check_parse_error("spatial(4,-1)", "column 11: expected a positive integer");
    check_parse_error("tile(4)", "column 1");
    check_parse_error("spatial(2) x", "column 12: expected '.' or end of input");
    check_parse_error("spatial(2).", "column 12");
    check_parse_error("spatial(2).repeat(2,2)", "rank mismatch");
    check_parse_error("spatial(1,1,1,1,1,1,1,1,1)", "HC_MAX_DIMS");
    check_parse_error("repeat(9223372036854775808)", "int64");
    check_parse_error("spatial(4294967296,4294967296)", "overflows int64");
    check_parse_error("repeat(4294967296).repeat(4294967296)", "task shape overflows");
    check_parse_error("spatial(65536,65536).spatial(65536,65536)", "workers overflows");
    check_parse_error("spatial(2u)", "column 10: expected ')'");
    check_parse_error("auto_map((3,5),4)", "column 10: auto_map");
    check_parse_error("auto_map((8,96) 64)", "column 17: expected ','");
}

/* ---- random compositions ------------------------------------------------------------- */
typedef struct tpool {
    tnode nodes[16];
    int n;
} tpool;

static tnode *random_atom(tpool *p, hc_rng *rng, int d) {
    tnode *t = &p->nodes[p->n++];
    memset(t, 0, sizeof *t);
    t->kind = (int)(hc_rng_next(rng) % 2), t->d = d;
    for (int i = 0; i < d; i++) {
        t->shape[i] = 1 + (int64_t)(hc_rng_next(rng) % 4);
        int at = (int)(hc_rng_next(rng) % 4);
        t->attrs[i] = at == 1 ? hc_unroll(0) : at == 2 ? hc_parallel(0) : hc_serial();
    }
    return t;
}

/* A random binary tree over atoms[lo..hi): exercises both associations. */
static tnode *random_tree(tpool *p, hc_rng *rng, tnode **atoms, int lo, int hi) {
    if (hi - lo == 1) return atoms[lo];
    int mid = lo + 1 + (int)(hc_rng_next(rng) % (uint64_t)(hi - lo - 1));
    tnode *t = &p->nodes[p->n++];
    memset(t, 0, sizeof *t);
    t->kind = 2, t->d = atoms[lo]->d;
    t->l = random_tree(p, rng, atoms, lo, mid);
    t->r = random_tree(p, rng, atoms, mid, hi);
    return t;
}

static const hc_mapping *parse_printed(hc_arena *a, const hc_mapping *m, const char *what) {
    char *s = print_map(m);
    hc_error err = {0};
    const hc_mapping *back = hc_map_parse(a, s, &err);
    CHECK_MSG(back != NULL, "%s: reparse '%s': %s", what, s, err.msg);
    if (back) {
        char *s2 = print_map(back);
        CHECK_STR(s2, s);
        free(s2);
    }
    free(s);
    return back;
}

/* ---- lowering, checked with a tiny evaluator ----------------------------------------- */
typedef struct env {
    hc_var *vars[64];
    int64_t vals[64];
    int n;
    /* recorded stores: each is (w, i0, ..., id-1) */
    int64_t *log;
    int64_t nlog, cap;
    int width;
    bool bad; /* an unsupported node was met */
} env;

static int64_t eval(env *e, const hc_expr *x) {
    switch (x->kind) {
    case HC_E_CONST: return x->u.c.i;
    case HC_E_VAR:
        for (int i = e->n - 1; i >= 0; i--)
            if (e->vars[i] == x->u.var) return e->vals[i];
        e->bad = true;
        return 0;
    case HC_E_BINARY: {
        int64_t p = eval(e, x->u.bin.a), q = eval(e, x->u.bin.b);
        switch (x->u.bin.op) {
        case HC_OP_ADD: return p + q;
        case HC_OP_SUB: return p - q;
        case HC_OP_MUL: return p * q;
        case HC_OP_DIV: return q ? p / q : (e->bad = true, 0);
        case HC_OP_MOD: return q ? p % q : (e->bad = true, 0);
        case HC_OP_MIN: return p < q ? p : q;
        case HC_OP_MAX: return p > q ? p : q;
        case HC_OP_LT: return p < q;
        default: e->bad = true; return 0;
        }
    }
    default: e->bad = true; return 0;
    }
}

static void push_var(env *e, hc_var *v, int64_t val) {
    HC_ASSERT(e->n < 64);
    e->vars[e->n] = v, e->vals[e->n] = val, e->n++;
}

static void exec(env *e, const hc_stmt *s) {
    switch (s->kind) {
    case HC_S_SEQ:
        for (int i = 0; i < s->u.seq.n; i++) exec(e, s->u.seq.stmts[i]);
        break;
    case HC_S_LET:
        push_var(e, s->u.let.var, eval(e, s->u.let.value));
        exec(e, s->u.let.body);
        e->n--;
        break;
    case HC_S_FOR: {
        int64_t n = eval(e, s->u.for_.extent);
        for (int64_t i = 0; i < n; i++) {
            push_var(e, s->u.for_.var, i);
            exec(e, s->u.for_.body);
            e->n--;
        }
        break;
    }
    case HC_S_STORE:
        HC_ASSERT(s->u.store.n == e->width);
        if (e->nlog + e->width > e->cap) {
            e->cap = 2 * e->cap + 64;
            e->log = realloc(e->log, sizeof(int64_t) * (size_t)e->cap);
        }
        for (int i = 0; i < e->width; i++) e->log[e->nlog++] = eval(e, s->u.store.idx[i]);
        break;
    case HC_S_COMMENT: break;
    default: e->bad = true;
    }
}

static bool has_for_mapping(const hc_stmt *s) {
    switch (s->kind) {
    case HC_S_FOR_MAPPING: return true;
    case HC_S_SEQ:
        for (int i = 0; i < s->u.seq.n; i++)
            if (has_for_mapping(s->u.seq.stmts[i])) return true;
        return false;
    case HC_S_LET: return has_for_mapping(s->u.let.body);
    case HC_S_FOR: return has_for_mapping(s->u.for_.body);
    case HC_S_IF:
        return has_for_mapping(s->u.if_.then_s) ||
               (s->u.if_.else_s && has_for_mapping(s->u.if_.else_s));
    default: return false;
    }
}

static hc_var *index_var(hc_arena *a, const char *name) {
    return hc_var_new(a, name, hc_type_scalar(HC_INDEX_TYPE));
}

/* Program: for (t0..td-1) in m on w: rec[w, t0, ...] = 0. Lowered and run for each w, the
 * stores must list worker2task(m, w) in order. `outer_reps` > 1 wraps the mapping in
 * `for (r) in repeat(outer_reps) on 0` to exercise nested mappings; the recorded
 * sequence then repeats outer_reps times. */
static bool check_lowering(const hc_mapping *m, int outer_reps, const char *what) {
    hc_arena a;
    hc_arena_init(&a);
    int d = m->ndim;
    hc_var *w = index_var(&a, "w"), *vars[HC_MAX_DIMS];
    static const char *names[] = {"i", "j", "k", "l", "m", "n", "o", "p"};
    for (int k = 0; k < d; k++) vars[k] = index_var(&a, names[k]);
    int64_t shape[HC_MAX_DIMS + 1] = {hc_map_num_workers(m)};
    hc_map_task_shape(m, shape + 1);
    hc_var *rec = hc_var_new(&a, "rec", hc_type_tensor_c(&a, HC_I64, d + 1, shape, 0));
    hc_expr *idx[HC_MAX_DIMS + 1] = {hc_ref(&a, w)};
    for (int k = 0; k < d; k++) idx[k + 1] = hc_ref(&a, vars[k]);
    hc_stmt *body = hc_store(&a, rec, d + 1, idx, hc_int(&a, 0));
    hc_stmt *prog = hc_for_mapping(&a, m, hc_ref(&a, w), d, vars, body);
    if (outer_reps > 1) {
        hc_var *r = index_var(&a, "r");
        const hc_mapping *rm = hc_map_repeat(&a, 1, (int64_t[]){outer_reps}, NULL);
        prog = hc_for_mapping(&a, rm, hc_int(&a, 0), 1, &r, prog);
    }
    hc_stmt *low = hc_lower_mappings(&a, prog);
    bool ok = !has_for_mapping(low);
    CHECK_MSG(ok, "%s: FOR_MAPPING left after lowering", what);
    for (int64_t wv = 0; wv < hc_map_num_workers(m) && ok; wv++) {
        env e = {.width = d + 1};
        push_var(&e, w, wv);
        exec(&e, low);
        int64_t *t;
        int64_t n = hc_map_worker2task(m, wv, &t);
        ok = !e.bad && e.nlog == outer_reps * n * (d + 1);
        for (int64_t i = 0; ok && i < outer_reps * n; i++) {
            ok &= e.log[i * (d + 1)] == wv;
            ok &= !memcmp(e.log + i * (d + 1) + 1, t + (i % n) * d, sizeof(int64_t) * (size_t)d);
        }
        CHECK_MSG(ok, "%s: lowered program differs for worker %lld", what, (long long)wv);
        free(t);
        free(e.log);
    }
    hc_arena_free(&a);
    return ok;
}

static void test_random(void) {
    hc_rng rng = {12345};
    int failures = 0;
    for (int iter = 0; iter < 300 && failures < 5; iter++) {
        tpool pool = {.n = 0};
        int d = 1 + (int)(hc_rng_next(&rng) % 3), natoms = 1 + (int)(hc_rng_next(&rng) % 4);
        tnode *atoms[4];
        for (int i = 0; i < natoms; i++) atoms[i] = random_atom(&pool, &rng, d);
        tnode *root = random_tree(&pool, &rng, atoms, 0, natoms);
        hc_arena a;
        hc_arena_init(&a);
        const hc_mapping *m = to_mapping(&a, root);
        char *text = print_map(m);
        ref r;
        ref_build(root, &r);
        bool ok = check_against_ref(m, &r, text);
        check_coverage(m, text);
        const hc_mapping *back = parse_printed(&a, m, text);
        if (back) ok &= check_against_ref(back, &r, text);
        ok &= check_lowering(m, iter % 7 == 0 ? 3 : 1, text);
        failures += !ok;
        ref_free(&r);
        free(text);
        hc_arena_free(&a);
    }
    CHECK_EQ_INT(failures, 0);
}

/* The lowered loops carry the repeat dims' attributes, outer level outermost. */
static void test_lowering_shape(void) {
    hc_arena a;
    hc_arena_init(&a);
    hc_error err;
    const hc_mapping *m = hc_map_parse(&a, "repeat(4p,3u).spatial(2,8)", &err);
    HC_ASSERT(m);
    hc_var *vars[2] = {index_var(&a, "i"), index_var(&a, "j")};
    hc_var *w = hc_var_builtin(&a, HC_BUILTIN_THREAD_IDX_X);
    hc_stmt *s = hc_for_mapping(&a, m, hc_ref(&a, w), 2, vars, hc_comment(&a, "body"));
    s = hc_lower_mappings(&a, s);
    while (s->kind == HC_S_LET) s = s->u.let.body; /* spatial coordinates */
    CHECK(s->kind == HC_S_FOR && s->u.for_.attr.kind == HC_LOOP_PARALLEL);
    int64_t ext = 0;
    CHECK(hc_expr_is_const_int(s->u.for_.extent, &ext) && ext == 4);
    s = s->u.for_.body;
    CHECK(s->kind == HC_S_FOR && s->u.for_.attr.kind == HC_LOOP_UNROLL);
    CHECK(hc_expr_is_const_int(s->u.for_.extent, &ext) && ext == 3);
    s = s->u.for_.body;
    CHECK(s->kind == HC_S_LET && s->u.let.var == vars[0]);
    s = s->u.let.body;
    CHECK(s->kind == HC_S_LET && s->u.let.var == vars[1]);
    CHECK(s->u.let.body->kind == HC_S_COMMENT);

    /* a non-variable worker expression is bound once, not duplicated */
    hc_expr *wexpr = hc_add(&a, hc_ref(&a, w), hc_int(&a, 1));
    s = hc_for_mapping(&a, m, wexpr, 2, vars, hc_comment(&a, "body"));
    s = hc_lower_mappings(&a, s);
    CHECK(s->kind == HC_S_LET && s->u.let.value == wexpr);
    hc_arena_free(&a);
}

int main(void) {
    test_examples();
    test_parser();
    test_lowering_shape();
    test_random();
    TEST_DONE();
}
