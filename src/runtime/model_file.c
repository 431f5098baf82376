/* model_file.c — a compiled model as one file (docs/model_file.md): save and load.
 *
 * The file holds everything hc_model_run needs and nothing it can rebuild: the target it
 * was built for, the graph's inputs and outputs, the constant tensors kernels read, the
 * memory plan, the kernels (anchor node, program, argument locations), the output copies
 * and the bytes of each shared object. Loading dlopens those bytes from a private
 * temporary file, so neither a compiler nor the kernel cache is needed.
 *
 * Integers are little-endian and fixed-width; constant and library bytes start at
 * 64-byte file offsets, and the whole file is read into one 64-byte aligned buffer, so
 * weights are used in place, aligned. A checksum over everything after the header tells a
 * damaged file from a good one before any of it is trusted; the parser still checks every
 * count, index and size against the bytes and tables it has (a bad file is an error,
 * never a crash). A file is code: load only files you trust. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/runtime.h"
#include "target/cpu/cpu.h" /* the file holds CPU shared objects: ISA and features */
#include "runtime/runtime_internal.h"

static const unsigned char MAGIC[8] = {0x89, 'H', 'C', 'M', 'O', 'D', 'E', 'L'};
enum { VERSION = 5, HEADER_BYTES = 32, ALIGN = 64 };
static const uint32_t END_MARK = 0x444e4548u; /* "HEND" */

/* Location and copy kinds are stored by value (docs/model_file.md): pin them. */
_Static_assert(LOC_EMPTY == 1 && LOC_CONST == 2 && LOC_INPUT == 3 && LOC_OUTPUT == 4 &&
                   LOC_ARENA == 5 && COPY_CONST == 0 && COPY_INPUT == 1 && COPY_OUTPUT == 2,
               "model file format: location kinds changed (bump VERSION)");
_Static_assert(HC_SYMC_EQ == 0 && HC_SYMC_LE == 1 && HC_SYMC_BCAST == 2 && HC_SYMC_DIVIDES == 3 &&
                   HC_SYMC_NE == 4,
               "model file format: constraint kinds changed (bump VERSION)");
_Static_assert(HC_ATTR_INT == 0 && HC_ATTR_FLOAT == 1 && HC_ATTR_STRING == 2 &&
                   HC_ATTR_INTS == 4 && HC_ATTR_FLOATS == 5 && HC_ATTR_STRINGS == 6,
               "model file format: attribute kinds changed (bump VERSION)");

/* Empty tensors of a loaded model point here (see runtime.c). */
static _Alignas(64) char empty_buffer[64];

static void print_features(hc_sb *sb, uint64_t f) {
    int n = 0;
    for (int i = 0; i < 64; i++)
        if (f >> i & 1)
            hc_sb_printf(sb, "%s%s", n++ ? ", " : "", i < hc_cpu_feature_count() ? hc_cpu_feature_name(i) : "?");
}

/* ---- what a file holds beyond the runtime model's own tables ------------------------- */
typedef struct blob {
    const void *data;
    uint64_t size;
} blob;

typedef struct program {
    uint32_t lib;
    const char *symbol;
} program;

typedef struct target_info {
    uint32_t kind;    /* HC_TARGET_CPU or HC_TARGET_GPU */
    const char *name; /* the target's name: "cpu:avx512", "opencl", "cuda", ... */
    uint32_t isa, vector_bits, threads;
    uint64_t features;
    const char *cpu;
} target_info;

typedef struct parts {
    target_info target;
    HC_VEC(blob) consts;
    HC_VEC(blob) libs;
    HC_VEC(program) programs;     /* indexed by kernel->unique */
    HC_VEC(loc) args;             /* every kernel's arguments, kernel after kernel; CONST:
                                     index in consts */
    HC_VEC(int) copy_const;       /* per output copy: index in consts (CONST) or -1 */
} parts;

static void parts_free(parts *p) {
    hc_vec_free(&p->consts);
    hc_vec_free(&p->libs);
    hc_vec_free(&p->programs);
    hc_vec_free(&p->args);
    hc_vec_free(&p->copy_const);
}

/* A loaded model's private state (hc_model.loaded). */
struct mf_loaded {
    parts parts;
    void *buf; /* the file, 64-byte aligned: weights and library bytes point into it */
    int nhandles;
    void **handles;
    int *fds; /* memfd of each library, or -1 */
};

/* ---- checksum ----------------------------------------------------------------------- */
/* Four independent multiply-xor lanes over 64-bit little-endian words: fast enough for
 * weights of hundreds of megabytes, and any damaged byte changes it. */
typedef struct checksum {
    uint64_t lane[4], total;
    unsigned char pend[32];
    size_t npend;
} checksum;

static uint64_t rd64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void sum_init(checksum *s) {
    memset(s, 0, sizeof *s);
    for (int i = 0; i < 4; i++) s->lane[i] = 0x243f6a8885a308d3ull * (uint64_t)(i + 1);
}

static void sum_block(checksum *s, const unsigned char *p) {
    for (int i = 0; i < 4; i++) {
        uint64_t x = (s->lane[i] ^ rd64(p + 8 * i)) * 0x9e3779b97f4a7c15ull;
        s->lane[i] = x ^ x >> 29;
    }
}

static void sum_update(checksum *s, const void *data, size_t n) {
    const unsigned char *p = data;
    s->total += n;
    if (s->npend) {
        size_t k = HC_MIN(n, 32 - s->npend);
        memcpy(s->pend + s->npend, p, k);
        s->npend += k, p += k, n -= k;
        if (s->npend < 32) return;
        sum_block(s, s->pend);
        s->npend = 0;
    }
    for (; n >= 32; p += 32, n -= 32) sum_block(s, p);
    memcpy(s->pend, p, n);
    s->npend = n;
}

static uint64_t mix64(uint64_t x) {
    x ^= x >> 33, x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ x >> 33;
}

static uint64_t sum_final(const checksum *in) {
    checksum s = *in;
    memset(s.pend + s.npend, 0, 32 - s.npend);
    sum_block(&s, s.pend);
    uint64_t h = mix64(s.total);
    for (int i = 0; i < 4; i++) h = mix64(h ^ s.lane[i]);
    return h;
}

uint64_t hc_model_file_checksum(const void *data, size_t n) {
    checksum s;
    sum_init(&s);
    sum_update(&s, data, n);
    return sum_final(&s);
}

/* ---- writing ------------------------------------------------------------------------ */
typedef struct writer {
    FILE *f;
    checksum sum;
    uint64_t pos; /* absolute file offset */
    bool failed;
} writer;

static void w_bytes(writer *w, const void *p, size_t n) {
    if (!n || w->failed) return;
    if (fwrite(p, 1, n, w->f) != n) w->failed = true;
    sum_update(&w->sum, p, n);
    w->pos += n;
}

static void w_le(writer *w, uint64_t v, int bytes) {
    unsigned char b[8];
    for (int i = 0; i < bytes; i++) b[i] = (unsigned char)(v >> 8 * i);
    w_bytes(w, b, (size_t)bytes);
}
static void w_u8(writer *w, unsigned v) { w_le(w, v, 1); }
static void w_u32(writer *w, uint32_t v) { w_le(w, v, 4); }
static void w_i32(writer *w, int32_t v) { w_le(w, (uint32_t)v, 4); }
static void w_u64(writer *w, uint64_t v) { w_le(w, v, 8); }
static void w_i64(writer *w, int64_t v) { w_le(w, (uint64_t)v, 8); }
static void w_f64(writer *w, double d) {
    uint64_t v;
    memcpy(&v, &d, 8);
    w_u64(w, v);
}
static void w_str(writer *w, const char *s) {
    size_t n = s ? strlen(s) : 0;
    w_u32(w, (uint32_t)n);
    w_bytes(w, s, n);
}

static void w_blob(writer *w, const blob *b) {
    static const char zeros[ALIGN];
    w_u64(w, b->size);
    w_bytes(w, zeros, (size_t)((ALIGN - w->pos % ALIGN) % ALIGN));
    w_bytes(w, b->data, (size_t)b->size);
}

/* A tensor: name, dtype, dims (a symbolic one's value at the hint binding), then whether
 * it has symbolic dims and, if so, each dim's expression ("" for a fixed one). */
static void w_tensor(writer *w, const hc_tensor *t) {
    w_str(w, t->name);
    w_str(w, hc_dtype_name(t->dtype));
    w_u32(w, (uint32_t)t->ndim);
    for (int d = 0; d < t->ndim; d++) w_i64(w, t->shape[d]);
    w_u8(w, t->sym != NULL);
    for (int d = 0; t->sym && d < t->ndim; d++) {
        hc_sb sb;
        hc_sb_init(&sb);
        if (t->sym[d]) hc_sym_print(&sb, t->sym[d]);
        w_str(w, hc_sb_str(&sb));
        hc_sb_free(&sb);
    }
}

static void w_sym(writer *w, const hc_sym *x) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_sym_print(&sb, x);
    w_str(w, hc_sb_str(&sb));
    hc_sb_free(&sb);
}

static void w_attr(writer *w, const hc_attr *a) {
    w_str(w, a->name);
    w_u32(w, (uint32_t)a->kind);
    switch (a->kind) {
    case HC_ATTR_INT: w_i64(w, a->i); break;
    case HC_ATTR_FLOAT: w_f64(w, a->f); break;
    case HC_ATTR_STRING: w_str(w, a->s); break;
    case HC_ATTR_INTS:
        w_u32(w, (uint32_t)a->n);
        for (int i = 0; i < a->n; i++) w_i64(w, a->ints[i]);
        break;
    case HC_ATTR_FLOATS:
        w_u32(w, (uint32_t)a->n);
        for (int i = 0; i < a->n; i++) w_f64(w, a->floats[i]);
        break;
    case HC_ATTR_STRINGS:
        w_u32(w, (uint32_t)a->n);
        for (int i = 0; i < a->n; i++) w_str(w, a->strings[i]);
        break;
    case HC_ATTR_TENSOR: break; /* not written (see w_node) */
    }
}

/* The anchor node, for profiles: name, operator, shapes and attributes (tensor-valued
 * attributes are left out: only the compile-time passes read them). */
static void w_node(writer *w, const hc_node *n) {
    w_str(w, n->name);
    w_str(w, hc_op_name(n->op));
    w_i32(w, n->opset);
    w_u32(w, (uint32_t)n->ninputs);
    for (int i = 0; i < n->ninputs; i++) {
        w_u8(w, n->inputs[i] != NULL);
        if (n->inputs[i]) w_tensor(w, n->inputs[i]);
    }
    w_u32(w, (uint32_t)n->noutputs);
    for (int i = 0; i < n->noutputs; i++) {
        w_u8(w, n->outputs[i] != NULL);
        if (n->outputs[i]) w_tensor(w, n->outputs[i]);
    }
    uint32_t nattrs = 0;
    for (int i = 0; i < n->nattrs; i++) nattrs += n->attrs[i].kind != HC_ATTR_TENSOR;
    w_u32(w, nattrs);
    for (int i = 0; i < n->nattrs; i++)
        if (n->attrs[i].kind != HC_ATTR_TENSOR) w_attr(w, &n->attrs[i]);
}

static void w_body(writer *w, const hc_model *m, const parts *p) {
    const hc_graph *g = m->g;
    w_u32(w, p->target.kind);
    w_str(w, p->target.name);
    w_u32(w, p->target.isa);
    w_u32(w, p->target.vector_bits);
    w_u32(w, p->target.threads);
    w_u64(w, p->target.features);
    w_str(w, p->target.cpu);
    w_str(w, g->name);
    w_i32(w, g->opset);
    w_u32(w, (uint32_t)g->sym_names.len); /* dynamic shapes: the symbols, the constraints */
    for (size_t i = 0; i < g->sym_names.len; i++) {
        w_str(w, g->sym_names.data[i]);
        w_i64(w, g->sym_hints.data[i]);
    }
    w_u32(w, (uint32_t)g->constraints.len);
    for (size_t i = 0; i < g->constraints.len; i++) {
        const hc_sym_constraint *c = &g->constraints.data[i];
        w_u32(w, (uint32_t)c->kind);
        w_sym(w, c->a);
        w_sym(w, c->b);
        w_str(w, c->node ? c->node : "");
        w_str(w, c->what ? c->what : "");
    }
    w_u32(w, (uint32_t)g->inputs.len);
    for (size_t i = 0; i < g->inputs.len; i++) w_tensor(w, g->inputs.data[i]);
    w_u32(w, (uint32_t)g->outputs.len);
    for (size_t i = 0; i < g->outputs.len; i++) w_tensor(w, g->outputs.data[i]);
    w_u32(w, (uint32_t)p->consts.len);
    for (size_t i = 0; i < p->consts.len; i++) w_blob(w, &p->consts.data[i]);
    w_u64(w, m->arena_bytes);
    w_u32(w, (uint32_t)m->plan.len);
    for (size_t i = 0; i < m->plan.len; i++) {
        const hc_plan_entry *e = &m->plan.data[i];
        w_tensor(w, e->tensor);
        w_u64(w, e->offset);
        w_u64(w, e->bytes);
        w_i32(w, e->first);
        w_i32(w, e->last);
        w_i32(w, e->alias_of);
    }
    w_u32(w, (uint32_t)p->libs.len);
    for (size_t i = 0; i < p->libs.len; i++) w_blob(w, &p->libs.data[i]);
    w_u32(w, (uint32_t)p->programs.len);
    for (size_t i = 0; i < p->programs.len; i++) {
        w_u32(w, p->programs.data[i].lib);
        w_str(w, p->programs.data[i].symbol);
    }
    w_u32(w, (uint32_t)m->kernels.len);
    size_t a = 0;
    for (size_t i = 0; i < m->kernels.len; i++) {
        const kernel *k = &m->kernels.data[i];
        w_node(w, k->node);
        w_u32(w, (uint32_t)k->unique);
        w_u8(w, k->templated);
        w_i32(w, k->ncand);
        w_i32(w, k->chosen);
        w_u8(w, k->tune_cached);
        w_u32(w, (uint32_t)k->nsyms);
        for (int j = 0; j < k->nsyms; j++) w_u32(w, (uint32_t)k->sym_slots[j]);
        w_u32(w, (uint32_t)(k->nalt ? k->alt : 0)); /* dispatch: its set of alternatives */
        w_u32(w, (uint32_t)k->nalt);
        w_u32(w, (uint32_t)k->npoints);
        for (size_t j = 0; j < (size_t)k->npoints * m->g->sym_names.len; j++) w_i64(w, k->points[j]);
        w_u32(w, (uint32_t)k->group.ninputs);
        w_u32(w, (uint32_t)k->group.noutputs);
        for (int j = 0; j < k->group.ninputs + k->group.noutputs; j++, a++) {
            const hc_tensor *t = j < k->group.ninputs ? k->group.inputs[j]
                                                      : k->group.outputs[j - k->group.ninputs];
            w_tensor(w, t);
            w_u32(w, (uint32_t)p->args.data[a].kind);
            w_u32(w, (uint32_t)p->args.data[a].index);
        }
    }
    w_u32(w, (uint32_t)m->copies.len);
    for (size_t i = 0; i < m->copies.len; i++) {
        const out_copy *c = &m->copies.data[i];
        w_u32(w, (uint32_t)c->output);
        w_u32(w, (uint32_t)c->src);
        w_u32(w, (uint32_t)(c->src == COPY_CONST ? p->copy_const.data[i] : c->index));
        w_u64(w, c->bytes);
    }
    w_u32(w, END_MARK);
}

/* ---- describing a compiled model ---------------------------------------------------- */
static int const_index(parts *p, const void *data, uint64_t size) {
    for (size_t i = 0; i < p->consts.len; i++)
        if (p->consts.data[i].data == data) {
            if (p->consts.data[i].size < size) p->consts.data[i].size = size;
            return (int)i;
        }
    blob b = {data, size};
    hc_vec_push(&p->consts, b);
    return (int)p->consts.len - 1;
}

/* Fills p from a compiled model; library bytes are read from the cache (malloc'ed: the
 * caller frees them). */
static hc_status describe(const hc_model *m, hc_arena *a, parts *p, hc_error *err) {
    const hc_target *t = m->target;
    bool gpu = t->kind == HC_TARGET_GPU;
    p->target = (target_info){(uint32_t)t->kind, t->name, (uint32_t)t->caps.isa,
                              (uint32_t)t->caps.vector_bits, (uint32_t)m->num_threads,
                              gpu ? 0 : hc_cpu_features_for(t->caps.isa),
                              gpu ? t->machine() : hc_cpu_model_name()};
    for (size_t i = 0; i < m->kernels.len; i++) {
        const kernel *k = &m->kernels.data[i];
        for (int j = 0; j < k->group.ninputs + k->group.noutputs; j++) {
            const hc_tensor *ten = j < k->group.ninputs ? k->group.inputs[j]
                                                        : k->group.outputs[j - k->group.ninputs];
            loc l = m->locs[ten->id];
            HC_ASSERT(l.kind != LOC_NONE);
            if (l.kind == LOC_CONST) l.index = const_index(p, ten->data, hc_tensor_nbytes(ten));
            hc_vec_push(&p->args, l);
        }
    }
    for (size_t i = 0; i < m->copies.len; i++) {
        const out_copy *c = &m->copies.data[i];
        int ci = c->src == COPY_CONST ? const_index(p, c->data, c->bytes) : -1;
        hc_vec_push(&p->copy_const, ci);
    }
    for (size_t i = 0; i < m->uniques.len; i++) {
        const unique_fn *u = &m->uniques.data[i];
        program pr = {(uint32_t)u->chunk, hc_arena_printf(a, "%s__packed", u->func->name)};
        hc_vec_push(&p->programs, pr);
    }
    for (int i = 0; i < m->nlibs; i++) {
        char *data;
        size_t size;
        if (gpu) { /* device code: the emitted source, built again (or found cached) on load */
            HC_ASSERT(m->sources && m->sources[i]);
            blob b = {hc_xstrdup(m->sources[i]), strlen(m->sources[i])};
            hc_vec_push(&p->libs, b);
            continue;
        }
        hc_status st = hc_read_file(m->target->lib_path(m->libs[i]), &data, &size, err);
        if (st != HC_OK) return st;
        blob b = {data, size};
        hc_vec_push(&p->libs, b);
    }
    return HC_OK;
}

hc_status hc_model_save(const hc_model *m, const char *path, hc_error *err) {
    if (m->opt.schedule_only)
        return hc_error_set(err, HC_ERR_INVALID, "%s: the model was compiled with schedule_only "
                                                 "(for inspection): it has no kernels to save",
                            path);
    hc_arena a;
    hc_arena_init(&a);
    parts own = {0};
    const parts *p = m->loaded ? &m->loaded->parts : &own;
    hc_status st = m->loaded ? HC_OK : describe(m, &a, &own, err);
    char *tmp = hc_arena_printf(&a, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = st == HC_OK ? fopen(tmp, "wb") : NULL;
    if (st == HC_OK && !f)
        st = hc_error_set(err, HC_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    if (f) {
        writer w = {.f = f, .pos = HEADER_BYTES};
        sum_init(&w.sum);
        unsigned char header[HEADER_BYTES] = {0};
        w.failed = fwrite(header, 1, HEADER_BYTES, f) != HEADER_BYTES;
        w_body(&w, m, p);
        /* the header, now that the size and the checksum are known */
        memcpy(header, MAGIC, 8);
        uint64_t fields[3] = {VERSION | (uint64_t)HEADER_BYTES << 32, w.pos, sum_final(&w.sum)};
        for (int i = 0; i < 3; i++)
            for (int b = 0; b < 8; b++) header[8 + 8 * i + b] = (unsigned char)(fields[i] >> 8 * b);
        if (!w.failed &&
            (fseek(f, 0, SEEK_SET) || fwrite(header, 1, HEADER_BYTES, f) != HEADER_BYTES))
            w.failed = true;
        if (fclose(f) || w.failed)
            st = hc_error_set(err, HC_ERR_IO, "%s: write error: %s", tmp, strerror(errno));
        else if (rename(tmp, path))
            st = hc_error_set(err, HC_ERR_IO, "%s: cannot rename %s to it: %s", path, tmp,
                              strerror(errno));
        if (st != HC_OK) remove(tmp);
    }
    for (size_t i = 0; !m->loaded && i < own.libs.len; i++) free((void *)own.libs.data[i].data);
    parts_free(&own);
    hc_arena_free(&a);
    return st;
}

/* ---- reading ------------------------------------------------------------------------ */
typedef struct reader {
    const unsigned char *buf;
    size_t pos, size;
    const char *path;
    hc_error *err;
    hc_status st;
} reader;

static bool r_fail(reader *r, const char *fmt, ...) HC_PRINTF(2, 3);
static bool r_fail(reader *r, const char *fmt, ...) {
    if (r->st != HC_OK) return false;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->st = hc_error_set(r->err, HC_ERR_INVALID, "%s: corrupt compiled model: %s (at byte %zu)",
                         r->path, msg, r->pos);
    return false;
}

static bool r_need(reader *r, uint64_t n, const char *what) {
    if (r->st != HC_OK) return false;
    if (n > r->size - r->pos) return r_fail(r, "%s runs past the end of the file", what);
    return true;
}

static uint64_t r_le(reader *r, int bytes, const char *what) {
    if (!r_need(r, (uint64_t)bytes, what)) return 0;
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--) v = v << 8 | r->buf[r->pos + (size_t)i];
    r->pos += (size_t)bytes;
    return v;
}
static unsigned r_u8(reader *r, const char *what) { return (unsigned)r_le(r, 1, what); }
static uint32_t r_u32(reader *r, const char *what) { return (uint32_t)r_le(r, 4, what); }
static int32_t r_i32(reader *r, const char *what) { return (int32_t)r_u32(r, what); }
static uint64_t r_u64(reader *r, const char *what) { return r_le(r, 8, what); }
static int64_t r_i64(reader *r, const char *what) { return (int64_t)r_u64(r, what); }
static double r_f64(reader *r, const char *what) {
    uint64_t v = r_u64(r, what);
    double d;
    memcpy(&d, &v, 8);
    return d;
}
static bool r_bool(reader *r, const char *what) {
    unsigned v = r_u8(r, what);
    if (v > 1) r_fail(r, "%s: %u is not 0 or 1", what, v);
    return v == 1;
}

/* A count of items of at least `min_bytes` each: never more than the bytes left. */
static uint32_t r_count(reader *r, uint64_t min_bytes, const char *what) {
    uint32_t n = r_u32(r, what);
    if (r->st == HC_OK && (uint64_t)n * min_bytes > r->size - r->pos) {
        r_fail(r, "%s: %u entries do not fit in the rest of the file", what, n);
        return 0;
    }
    return r->st == HC_OK ? n : 0;
}

/* A NUL-terminated copy in `a` ("" after an error). */
static char *r_str(reader *r, hc_arena *a, const char *what) {
    uint32_t n = r_u32(r, what);
    if (!r_need(r, n, what)) return hc_arena_strdup(a, "");
    char *s = hc_arena_alloc(a, (size_t)n + 1);
    memcpy(s, r->buf + r->pos, n);
    r->pos += n;
    if (memchr(s, 0, n)) r_fail(r, "%s contains a NUL byte", what);
    return s;
}

static blob r_blob(reader *r, const char *what) {
    blob b = {empty_buffer, 0};
    uint64_t size = r_u64(r, what);
    size_t pad = (ALIGN - r->pos % ALIGN) % ALIGN;
    if (!r_need(r, pad, what) || !r_need(r, pad + size, what)) return b;
    r->pos += pad;
    if (size) b.data = r->buf + r->pos;
    b.size = size;
    r->pos += (size_t)size;
    return b;
}

typedef struct tdesc {
    const char *name;
    hc_dtype dtype;
    int ndim;
    int64_t shape[HC_MAX_DIMS];
    bool has_sym;
    const char *sym[HC_MAX_DIMS]; /* expressions of symbolic dims, "" for fixed ones */
} tdesc;

static tdesc r_tensor(reader *r, hc_arena *a, const char *what) {
    tdesc t = {.name = r_str(r, a, what), .dtype = HC_F32};
    const char *dt = r_str(r, a, what);
    if (r->st != HC_OK) return t;
    t.dtype = hc_dtype_parse(dt);
    if (t.dtype == HC_DTYPE_COUNT || t.dtype == HC_VOID) {
        r_fail(r, "%s '%s': unknown dtype '%s'", what, t.name, dt);
        t.dtype = HC_F32;
    }
    uint32_t nd = r_u32(r, what);
    if (nd > HC_MAX_DIMS) {
        r_fail(r, "%s '%s': %u dimensions (at most %d)", what, t.name, nd, HC_MAX_DIMS);
        return t;
    }
    uint64_t numel = 1;
    for (uint32_t d = 0; d < nd; d++) {
        t.shape[d] = r_i64(r, what);
        /* elements times 8 bytes must not overflow */
        uint64_t dim = (uint64_t)t.shape[d];
        if (t.shape[d] < 0 || (dim > 0 && dim > ((uint64_t)1 << 56) / numel)) {
            r_fail(r, "%s '%s': bad dimension %lld", what, t.name, (long long)t.shape[d]);
            return t;
        }
        if (t.shape[d] > 0) numel *= (uint64_t)t.shape[d];
    }
    t.ndim = (int)nd;
    t.has_sym = r_bool(r, what);
    for (uint32_t d = 0; t.has_sym && d < nd && r->st == HC_OK; d++)
        t.sym[d] = r_str(r, a, what);
    return t;
}

static uint64_t tdesc_bytes(const tdesc *t) {
    uint64_t n = (uint64_t)hc_dtype_size(t->dtype);
    for (int d = 0; d < t->ndim; d++) n *= (uint64_t)t->shape[d];
    return n;
}

static bool same_desc(const hc_tensor *t, const tdesc *d) {
    if (t->dtype != d->dtype || t->ndim != d->ndim || (t->sym != NULL) != d->has_sym) return false;
    for (int i = 0; i < d->ndim; i++)
        if (t->shape[i] != d->shape[i]) return false;
    return true;
}

/* A tensor's symbolic dims from their text; each must evaluate to the stored dim at the
 * hint binding. false (and r failed) when one does not parse or disagrees. */
static bool set_sym(reader *r, hc_graph *g, hc_tensor *t, const tdesc *d) {
    if (!d->has_sym) return true;
    const hc_sym *dims[HC_MAX_DIMS];
    for (int k = 0; k < d->ndim; k++) {
        hc_error e = {0};
        dims[k] = d->sym[k] && *d->sym[k] ? hc_sym_parse(&g->arena, d->sym[k], &e)
                                          : hc_sym_const(&g->arena, d->shape[k]);
        if (!dims[k]) return r_fail(r, "tensor '%s', dimension %d: %s", d->name, k, e.msg);
    }
    if (!hc_tensor_set_sym_shape(t, d->ndim, dims)) return r_fail(r, "tensor '%s': its symbolic "
                                                                     "dims cannot be evaluated", d->name);
    for (int k = 0; k < d->ndim; k++)
        if (t->shape[k] != d->shape[k])
            return r_fail(r, "tensor '%s', dimension %d: %s is %lld at the hints, the file says "
                             "%lld", d->name, k, d->sym[k], (long long)t->shape[k],
                          (long long)d->shape[k]);
    return true;
}

/* The loaded graph's tensor of that name and type (one tensor per name, so that the
 * anchor nodes, the plan and the inputs and outputs describe one graph). */
static hc_tensor *intern_in(reader *r, hc_graph *g, const tdesc *d) {
    for (size_t i = 0; i < g->tensors.len; i++) {
        hc_tensor *t = g->tensors.data[i];
        if (!strcmp(t->name, d->name) && same_desc(t, d)) return t;
    }
    hc_tensor *t = hc_graph_tensor(g, d->name, d->dtype, d->ndim, d->shape);
    set_sym(r, g, t, d);
    return t;
}
#define intern(g, d) intern_in(r, (g), (d))

/* ---- loading ------------------------------------------------------------------------ */
typedef struct loader {
    reader r;
    hc_model *m;
    struct mf_loaded *ld;
    const hc_target *gpu; /* the GPU target the file was compiled for; NULL: a CPU */
    bool check_only; /* hc_model_file_check: no arena, nothing loaded */
    uint32_t nkernels; /* the file's kernel count (dispatch sets are checked against it) */
} loader;

static hc_status read_whole(const char *path, void **buf, size_t *size, hc_error *err) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return hc_error_set(err, HC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        close(fd);
        return hc_error_set(err, HC_ERR_IO, "%s: not a regular file", path);
    }
    size_t n = (size_t)sb.st_size, cap = (n + ALIGN) / ALIGN * ALIGN;
    char *p = hc_alloc_big(cap);
    if (!p) {
        close(fd);
        return hc_error_set(err, HC_ERR_NOMEM, "%s: cannot allocate %zu bytes to read it", path,
                            n);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t k = read(fd, p + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd);
    if (got != n) {
        free(p);
        return hc_error_set(err, HC_ERR_IO, "%s: read error", path);
    }
    *buf = p, *size = n;
    return HC_OK;
}

static hc_status check_header(reader *r) {
    const unsigned char *b = r->buf;
    if (r->size < 8 || memcmp(b, MAGIC, 8)) {
        if (r->size < 8 && !memcmp(b, MAGIC, r->size))
            return hc_error_set(r->err, HC_ERR_INVALID, "%s: truncated compiled model (%zu bytes)",
                                r->path, r->size);
        return hc_error_set(r->err, HC_ERR_INVALID, "%s: not a hidetc compiled model (wrong "
                                                    "magic bytes; `hidetc compile` writes one)",
                            r->path);
    }
    if (r->size < HEADER_BYTES)
        return hc_error_set(r->err, HC_ERR_INVALID,
                            "%s: truncated compiled model: %zu bytes, less than its header",
                            r->path, r->size);
    r->pos = 8;
    uint32_t version = r_u32(r, "version"), hbytes = r_u32(r, "header size");
    uint64_t fbytes = r_u64(r, "file size"), sum = r_u64(r, "checksum");
    if (version == 0 || version > 1000) /* no version ever: the header is damaged */
        return hc_error_set(r->err, HC_ERR_INVALID,
                            "%s: corrupt compiled model: format version field %u", r->path,
                            version);
    if (version != VERSION)
        return hc_error_set(r->err, HC_ERR_INVALID,
                            "%s: compiled model format version %u; this hidetc reads version %d "
                            "(compile the model again)", r->path, version, VERSION);
    if (hbytes != HEADER_BYTES)
        return hc_error_set(r->err, HC_ERR_INVALID, "%s: corrupt compiled model: header size %u",
                            r->path, hbytes);
    if (fbytes != r->size)
        return hc_error_set(r->err, HC_ERR_INVALID,
                            "%s: %s compiled model: the file has %zu bytes, its header says %llu",
                            r->path, fbytes > r->size ? "truncated" : "corrupt", r->size,
                            (unsigned long long)fbytes);
    checksum s;
    sum_init(&s);
    sum_update(&s, b + HEADER_BYTES, r->size - HEADER_BYTES);
    if (sum_final(&s) != sum)
        return hc_error_set(r->err, HC_ERR_INVALID,
                            "%s: corrupt compiled model: checksum mismatch (the file was damaged)",
                            r->path);
    return HC_OK;
}

static hc_status check_target(loader *L) {
    reader *r = &L->r;
    target_info *t = &L->ld->parts.target;
    t->kind = r_u32(r, "target kind");
    t->name = r_str(r, &L->m->arena, "target name");
    t->isa = r_u32(r, "target isa");
    t->vector_bits = r_u32(r, "target vector bits");
    t->threads = r_u32(r, "target threads");
    t->features = r_u64(r, "target features");
    t->cpu = r_str(r, &L->m->arena, "target cpu");
    if (r->st != HC_OK) return r->st;
    if (t->isa > HC_ISA_AVX512) return r_fail(r, "unknown ISA %u", t->isa), r->st;
    if (t->threads < 1 || t->threads > 65536)
        return r_fail(r, "thread count %u", t->threads), r->st;
    if (t->kind != HC_TARGET_CPU && t->kind != HC_TARGET_GPU)
        return r_fail(r, "unknown target kind %u", t->kind), r->st;
    if (t->kind == HC_TARGET_GPU) { /* the device named: here, and able to run */
        bool runnable = false;
        hc_error e = {0};
        if (hc_target_find(t->name, &L->gpu, &runnable, &e) != HC_OK || L->gpu->kind != HC_TARGET_GPU)
            return r_fail(r, "unknown GPU target '%s'", t->name), r->st;
        if (!runnable)
            return hc_error_set(r->err, HC_ERR_UNSUPPORTED, "%s: compiled for target %s (%s), "
                                "which cannot run here: %s", r->path, t->name, t->cpu,
                                hc_target_why_not_runnable(L->gpu));
        return HC_OK;
    }
    hc_isa cpu = hc_cpu_isa(); /* the CPU's, whatever HIDETC_ISA says */
    uint64_t missing = t->features & ~hc_cpu_features();
    if (t->isa > (uint32_t)cpu || missing) {
        hc_sb sb;
        hc_sb_init(&sb);
        if (t->isa > (uint32_t)cpu)
            hc_sb_printf(&sb, "it needs %s, this CPU only has %s", hc_isa_name((hc_isa)t->isa),
                         hc_isa_name(cpu));
        else {
            hc_sb_puts(&sb, "it uses instructions this CPU lacks: ");
            print_features(&sb, missing);
        }
        hc_status st = hc_error_set(r->err, HC_ERR_UNSUPPORTED,
                                    "%s: compiled for another CPU (%s, %s): %s; compile the "
                                    "model on this machine", r->path, t->cpu,
                                    hc_isa_name((hc_isa)t->isa), hc_sb_str(&sb));
        hc_sb_free(&sb);
        return st;
    }
    return HC_OK;
}

/* Dynamic shapes: the symbols (names and hints) and the constraints between them. */
static void read_symbols(loader *L) {
    reader *r = &L->r;
    hc_graph *g = L->m->g;
    uint32_t ns = r_count(r, 12, "symbols");
    for (uint32_t i = 0; i < ns && r->st == HC_OK; i++) {
        const char *s = r_str(r, &g->arena, "symbol");
        int64_t hint = r_i64(r, "symbol hint");
        if (r->st != HC_OK) break;
        bool dup = false;
        for (size_t k = 0; k < g->sym_names.len; k++) dup |= !strcmp(g->sym_names.data[k], s);
        if (hint < 1 || dup)
            r_fail(r, "symbol '%s': hint %lld or a repeated name", s, (long long)hint);
        else hc_graph_symbol(g, s, hint);
    }
    uint32_t nc = r_count(r, 20, "constraints");
    for (uint32_t i = 0; i < nc && r->st == HC_OK; i++) {
        uint32_t kind = r_u32(r, "constraint kind");
        const char *a = r_str(r, &g->arena, "constraint"), *b = r_str(r, &g->arena, "constraint");
        const char *node = r_str(r, &g->arena, "constraint node");
        const char *what = r_str(r, &g->arena, "constraint subject");
        if (r->st != HC_OK) break;
        hc_error e = {0};
        const hc_sym *sa = hc_sym_parse(&g->arena, a, &e), *sb = sa ? hc_sym_parse(&g->arena, b, &e) : NULL;
        if (kind > HC_SYMC_NE || !sb) {
            r_fail(r, "constraint %u: kind %u or a bad expression (%s)", i, kind, e.msg);
            break;
        }
        hc_sym_constraint c = {(hc_symc_kind)kind, sa, sb, node, what};
        hc_vec_push(&g->constraints, c);
    }
}

static void read_io(loader *L) {
    reader *r = &L->r;
    hc_graph *g = L->m->g;
    uint32_t nin = r_count(r, 16, "inputs");
    for (uint32_t i = 0; i < nin && r->st == HC_OK; i++) {
        tdesc d = r_tensor(r, &L->m->arena, "input");
        if (r->st == HC_OK) set_sym(r, g, hc_graph_add_input(g, d.name, d.dtype, d.ndim, d.shape), &d);
    }
    uint32_t nout = r_count(r, 16, "outputs");
    for (uint32_t i = 0; i < nout && r->st == HC_OK; i++) {
        tdesc d = r_tensor(r, &L->m->arena, "output");
        if (r->st == HC_OK) hc_graph_add_output(g, intern(g, &d));
    }
}

static void read_plan(loader *L) {
    reader *r = &L->r;
    hc_model *m = L->m;
    m->arena_bytes = r_u64(r, "arena size");
    uint32_t n = r_count(r, 40, "memory plan");
    for (uint32_t i = 0; i < n && r->st == HC_OK; i++) {
        tdesc d = r_tensor(r, &m->arena, "plan tensor");
        hc_plan_entry e = {.offset = r_u64(r, "plan offset"), .bytes = r_u64(r, "plan size")};
        e.first = r_i32(r, "plan range"), e.last = r_i32(r, "plan range");
        e.alias_of = r_i32(r, "plan alias");
        if (r->st != HC_OK) break;
        if (e.offset > m->arena_bytes || e.bytes > m->arena_bytes - e.offset)
            r_fail(r, "plan entry '%s' (%zu bytes at %zu) lies outside the %zu-byte arena", d.name,
                   e.bytes, e.offset, m->arena_bytes);
        else if (e.alias_of < -1 || e.alias_of >= (int)i ||
                 (e.alias_of >= 0 && (m->plan.data[e.alias_of].alias_of != -1 ||
                                      e.offset < m->plan.data[e.alias_of].offset ||
                                      e.offset + e.bytes > m->plan.data[e.alias_of].offset +
                                                               m->plan.data[e.alias_of].bytes)))
            r_fail(r, "plan entry '%s': alias of entry %d is not an earlier entry holding it",
                   d.name, e.alias_of);
        e.tensor = intern(m->g, &d);
        if (e.tensor->sym)
            e.sym_bytes = hc_sym_mul_c(&m->g->arena, hc_tensor_numel_sym(&m->g->arena, e.tensor),
                                       hc_dtype_size(e.tensor->dtype));
        if (e.sym_bytes && e.alias_of >= 0) r_fail(r, "plan entry '%s': a symbolic alias", d.name);
        if (e.alias_of < 0) m->intermediate_bytes += e.bytes;
        hc_vec_push(&m->plan, e);
    }
}

static void read_attr(reader *r, hc_arena *a, hc_attr *at) {
    at->name = r_str(r, a, "attribute name");
    uint32_t kind = r_u32(r, "attribute kind");
    at->kind = (hc_attr_kind)kind;
    switch (kind) {
    case HC_ATTR_INT: at->i = r_i64(r, "attribute"); break;
    case HC_ATTR_FLOAT: at->f = r_f64(r, "attribute"); break;
    case HC_ATTR_STRING: at->s = r_str(r, a, "attribute"); break;
    case HC_ATTR_INTS:
        at->n = (int)r_count(r, 8, "attribute");
        at->ints = HC_NEW_ARRAY(a, int64_t, at->n + 1);
        for (int i = 0; i < at->n; i++) at->ints[i] = r_i64(r, "attribute");
        break;
    case HC_ATTR_FLOATS:
        at->n = (int)r_count(r, 8, "attribute");
        at->floats = HC_NEW_ARRAY(a, double, at->n + 1);
        for (int i = 0; i < at->n; i++) at->floats[i] = r_f64(r, "attribute");
        break;
    case HC_ATTR_STRINGS:
        at->n = (int)r_count(r, 4, "attribute");
        at->strings = HC_NEW_ARRAY(a, const char *, at->n + 1);
        for (int i = 0; i < at->n; i++) at->strings[i] = r_str(r, a, "attribute");
        break;
    default: r_fail(r, "attribute '%s': unknown kind %u", at->name, kind);
    }
}

static hc_op_kind op_from_name(const char *s) {
    for (int k = 0; k < HC_OPK_COUNT; k++)
        if (!strcmp(hc_op_name((hc_op_kind)k), s)) return (hc_op_kind)k;
    return HC_OPK_COUNT;
}

static hc_tensor **read_node_tensors(loader *L, int *count, const char *what) {
    reader *r = &L->r;
    uint32_t n = r_count(r, 1, what);
    hc_tensor **ts = HC_NEW_ARRAY(&L->m->g->arena, hc_tensor *, n + 1);
    for (uint32_t i = 0; i < n && r->st == HC_OK; i++)
        if (r_bool(r, what)) {
            tdesc d = r_tensor(r, &L->m->arena, what);
            if (r->st == HC_OK) ts[i] = intern(L->m->g, &d);
        }
    *count = (int)n;
    return ts;
}

static hc_node *read_node(loader *L) {
    reader *r = &L->r;
    hc_graph *g = L->m->g;
    hc_node *n = HC_NEW(&g->arena, hc_node);
    n->name = r_str(r, &g->arena, "kernel node name");
    const char *op = r_str(r, &g->arena, "kernel operator");
    n->opset = r_i32(r, "kernel opset");
    n->inputs = read_node_tensors(L, &n->ninputs, "kernel node inputs");
    n->outputs = read_node_tensors(L, &n->noutputs, "kernel node outputs");
    n->nattrs = (int)r_count(r, 8, "kernel node attributes");
    n->attrs = HC_NEW_ARRAY(&g->arena, hc_attr, n->nattrs + 1);
    for (int i = 0; i < n->nattrs && r->st == HC_OK; i++) read_attr(r, &g->arena, &n->attrs[i]);
    if (r->st != HC_OK) return n;
    n->op = op_from_name(op);
    if (n->op == HC_OPK_COUNT) {
        r_fail(r, "kernel node '%s': unknown operator '%s'", n->name, op);
        n->op = (hc_op_kind)0;
    }
    for (int i = 0; i < n->noutputs; i++)
        if (n->outputs[i] && !n->outputs[i]->producer) n->outputs[i]->producer = n;
    hc_vec_push(&g->nodes, n);
    return n;
}

/* The bytes a location offers, for checking that every argument fits. */
static uint64_t loc_bytes(loader *L, loc l) {
    const hc_model *m = L->m;
    switch (l.kind) {
    case LOC_EMPTY: return 0;
    case LOC_CONST: return L->ld->parts.consts.data[l.index].size;
    case LOC_ARENA: return m->plan.data[l.index].bytes;
    case LOC_INPUT: return hc_tensor_nbytes(m->g->inputs.data[l.index]);
    case LOC_OUTPUT: return hc_tensor_nbytes(m->g->outputs.data[l.index]);
    case LOC_NONE: break;
    }
    return 0;
}

static bool valid_loc(loader *L, loc l) {
    const hc_model *m = L->m;
    size_t limit = l.kind == LOC_CONST   ? L->ld->parts.consts.len
                   : l.kind == LOC_ARENA ? m->plan.len
                   : l.kind == LOC_INPUT ? m->g->inputs.len
                   : l.kind == LOC_OUTPUT ? m->g->outputs.len
                   : l.kind == LOC_EMPTY ? 1
                                         : 0;
    return l.index >= 0 && (size_t)l.index < limit;
}

static void *arg_pointer(loader *L, loc l, int kernel, int arg) {
    hc_model *m = L->m;
    switch (l.kind) {
    case LOC_EMPTY: return empty_buffer;
    case LOC_CONST: return (void *)L->ld->parts.consts.data[l.index].data;
    case LOC_ARENA: return m->mem ? (char *)m->mem + m->plan.data[l.index].offset : NULL;
    case LOC_INPUT:
    case LOC_OUTPUT: {
        binding b = {kernel, arg, l.index, l.kind == LOC_OUTPUT};
        hc_vec_push(&m->binds, b);
        return NULL;
    }
    case LOC_NONE: break;
    }
    hc_unreachable();
}

static void read_kernel(loader *L, int ki) {
    reader *r = &L->r;
    hc_model *m = L->m;
    parts *p = &L->ld->parts;
    hc_node *node = read_node(L);
    kernel k = {.node = node};
    k.unique = (int)r_u32(r, "kernel program");
    k.templated = r_bool(r, "kernel templated");
    k.ncand = r_i32(r, "kernel candidates");
    k.chosen = r_i32(r, "kernel choice");
    k.tune_cached = r_bool(r, "kernel tuning");
    uint32_t nsyms = r_count(r, 4, "kernel symbols");
    if (r->st == HC_OK && nsyms > m->g->sym_names.len)
        return (void)r_fail(r, "kernel %d: %u symbols, the model has %zu", ki, nsyms,
                            m->g->sym_names.len);
    k.nsyms = (int)nsyms;
    k.sym_slots = HC_NEW_ARRAY(&m->arena, int, nsyms + 1);
    for (uint32_t j = 0; j < nsyms && r->st == HC_OK; j++) {
        k.sym_slots[j] = (int)r_u32(r, "kernel symbol");
        if ((size_t)k.sym_slots[j] >= m->g->sym_names.len)
            return (void)r_fail(r, "kernel %d: symbol %d of %zu", ki, k.sym_slots[j],
                                m->g->sym_names.len);
    }
    k.alt = (int)r_u32(r, "kernel alternatives' first");
    k.nalt = (int)r_u32(r, "kernel alternatives");
    size_t ns = m->g->sym_names.len;
    uint32_t npoints = r_count(r, 8 * (ns ? ns : 1), "kernel dispatch points");
    if (r->st != HC_OK) return;
    /* a set is consecutive kernels of one anchor, each with the bindings it won */
    if (k.nalt == 1 || k.nalt > 4096 || k.alt > ki || (k.nalt && k.alt + k.nalt <= ki) ||
        (!k.nalt && (k.alt || npoints)) || (k.nalt && (!npoints || !ns)) ||
        (k.nalt && k.alt == ki && k.alt + k.nalt > (int)L->nkernels) ||
        (k.nalt && k.alt < ki &&
         (m->kernels.data[k.alt].nalt != k.nalt ||
          strcmp(m->kernels.data[k.alt].node->name, k.node->name))))
        return (void)r_fail(r, "kernel %d ('%s'): bad dispatch set %d of %d (%u points)", ki,
                            k.node->name, k.alt, k.nalt, npoints);
    k.npoints = (int)npoints;
    k.points = HC_NEW_ARRAY(&m->arena, int64_t, (size_t)npoints * ns + 1);
    for (size_t j = 0; j < (size_t)npoints * ns && r->st == HC_OK; j++) k.points[j] = r_i64(r, "dispatch point");
    uint32_t nin = r_count(r, 16, "kernel inputs"), nout = r_count(r, 16, "kernel outputs");
    if (r->st != HC_OK) return;
    if ((uint64_t)nin + nout > (r->size - r->pos) / 16)
        return (void)r_fail(r, "kernel %d: %u arguments do not fit in the file", ki, nin + nout);
    if ((size_t)k.unique >= p->programs.len)
        return (void)r_fail(r, "kernel %d ('%s'): program %d of %zu", ki, k.node->name, k.unique,
                            p->programs.len);
    k.group = (hc_group){.anchor = node, .ninputs = (int)nin, .noutputs = (int)nout};
    k.group.inputs = HC_NEW_ARRAY(&m->g->arena, hc_tensor *, nin + 1);
    k.group.outputs = HC_NEW_ARRAY(&m->g->arena, hc_tensor *, nout + 1);
    k.nargs = (int)(nin + nout) + k.nsyms;
    k.args = HC_NEW_ARRAY(&m->arena, void *, k.nargs + 1); /* the symbols' slots: per run */
    k.arg_locs = HC_NEW_ARRAY(&m->arena, loc, k.nargs + 1);
    for (int a = 0; a < (int)(nin + nout) && r->st == HC_OK; a++) {
        tdesc d = r_tensor(r, &m->arena, "kernel argument");
        loc l = {(loc_kind)r_u32(r, "argument location"), (int)r_u32(r, "argument index")};
        if (r->st != HC_OK) break;
        hc_tensor *t = intern(m->g, &d);
        if (a < (int)nin) k.group.inputs[a] = t;
        else k.group.outputs[a - (int)nin] = t;
        if (!valid_loc(L, l) || (a >= (int)nin && (l.kind == LOC_CONST || l.kind == LOC_INPUT)))
            return (void)r_fail(r, "kernel '%s', argument %d ('%s'): bad location %d/%d",
                                k.node->name, a, d.name, (int)l.kind, l.index);
        if (loc_bytes(L, l) < tdesc_bytes(&d))
            return (void)r_fail(r, "kernel '%s', argument %d ('%s'): %llu bytes needed, its "
                                   "location has %llu", k.node->name, a, d.name,
                                (unsigned long long)tdesc_bytes(&d),
                                (unsigned long long)loc_bytes(L, l));
        hc_vec_push(&p->args, l);
        k.arg_locs[a] = l;
        k.args[a] = arg_pointer(L, l, ki, a);
    }
    if (r->st == HC_OK) hc_vec_push(&m->kernels, k);
}

static void read_copies(loader *L) {
    reader *r = &L->r;
    hc_model *m = L->m;
    parts *p = &L->ld->parts;
    uint32_t n = r_count(r, 20, "output copies");
    for (uint32_t i = 0; i < n && r->st == HC_OK; i++) {
        out_copy c = {.output = (int)r_u32(r, "copy output")};
        uint32_t src = r_u32(r, "copy source");
        c.index = (int)r_u32(r, "copy index");
        c.bytes = (size_t)r_u64(r, "copy size");
        if (r->st != HC_OK) break;
        loc l = {src == COPY_CONST   ? LOC_CONST
                 : src == COPY_INPUT ? LOC_INPUT
                                     : LOC_OUTPUT,
                 c.index};
        if (src > COPY_OUTPUT || c.output < 0 || (size_t)c.output >= m->g->outputs.len ||
            !valid_loc(L, l) || c.bytes > loc_bytes(L, l) ||
            c.bytes > hc_tensor_nbytes(m->g->outputs.data[c.output])) {
            r_fail(r, "output copy %u: bad source, index or size", i);
            break;
        }
        c.src = (copy_src)src;
        c.data = src == COPY_CONST ? p->consts.data[c.index].data : NULL;
        hc_vec_push(&p->copy_const, src == COPY_CONST ? c.index : -1);
        hc_vec_push(&m->copies, c);
    }
}

/* Write library bytes to a private temporary file (unlinked once loaded: nothing is left
 * behind) or, where no temporary directory can hold executable code, to a memfd kept
 * open while the library is loaded (its /proc/self/fd name must not be reused meanwhile:
 * dlopen would take the new file for the loaded one). */
static void *open_library(const blob *b, int *fd_out, char *why, size_t why_len) {
    static unsigned counter;
    unsigned id = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/hidetc-model-%ld-%u-XXXXXX.so", dir && *dir ? dir : "/tmp",
             (long)getpid(), id);
    *fd_out = -1;
    snprintf(why, why_len, "no temporary file");
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = attempt == 0 ? mkostemps(path, 3, O_CLOEXEC)
                              : memfd_create("hidetc-model", MFD_CLOEXEC);
        if (fd < 0) continue;
        size_t done = 0;
        while (done < b->size) {
            ssize_t k = write(fd, (const char *)b->data + done, (size_t)b->size - done);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) break;
            done += (size_t)k;
        }
        char name[64];
        if (attempt == 1) snprintf(name, sizeof name, "/proc/self/fd/%d", fd);
        void *h = NULL;
        if (done == b->size) {
            h = dlopen(attempt == 0 ? path : name, RTLD_NOW | RTLD_LOCAL);
            if (!h) snprintf(why, why_len, "%s", dlerror());
        } else snprintf(why, why_len, "write: %s", strerror(errno));
        if (attempt == 0) unlink(path), close(fd);
        else if (h) *fd_out = fd;
        else close(fd);
        if (h) return h;
    }
    return NULL;
}

static hc_status load_libraries(loader *L) {
    reader *r = &L->r;
    struct mf_loaded *ld = L->ld;
    int n = (int)ld->parts.libs.len;
    ld->handles = hc_xcalloc((size_t)n + 1, sizeof(void *));
    ld->fds = hc_xcalloc((size_t)n + 1, sizeof(int));
    for (int i = 0; i < n; i++) {
        char why[512];
        ld->handles[i] = open_library(&ld->parts.libs.data[i], &ld->fds[i], why, sizeof why);
        if (!ld->handles[i])
            return hc_error_set(r->err, HC_ERR_IO, "%s: library %d of %d cannot be loaded: %s",
                                r->path, i, n, why);
        ld->nhandles = i + 1;
    }
    /* as in jit.c: a kernel library may be what brought libgomp in; keep it loaded */
    if (n) dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    for (size_t i = 0; i < L->m->kernels.len; i++) {
        kernel *k = &L->m->kernels.data[i];
        const program *pr = &ld->parts.programs.data[k->unique];
        k->fn = (hc_packed_fn)dlsym(ld->handles[pr->lib], pr->symbol);
        if (!k->fn)
            return hc_error_set(r->err, HC_ERR_INVALID,
                                "%s: kernel %zu (node '%s'): symbol '%s' not found in library %u",
                                r->path, i, k->node->name, pr->symbol, pr->lib);
    }
    return HC_OK;
}

/* ---- GPU targets: device buffers and device code --------------------------------------- */
/* The constants uploaded into one device buffer, the graph's inputs and outputs in their
 * own (hc_rt_alloc_device_io), and every kernel argument made a device address. */
static hc_status bind_device(loader *L) {
    hc_model *m = L->m;
    parts *p = &L->ld->parts;
    const hc_executor *ex = m->target->exec;
    size_t n = p->consts.len, total = 0;
    size_t *off = hc_xmalloc(sizeof(size_t) * (n + 1));
    for (size_t i = 0; i < n; i++) off[i] = total, total += (p->consts.data[i].size + 255) / 256 * 256;
    hc_status st = hc_rt_alloc_device_io(m, L->r.err);
    if (st == HC_OK && total && !(m->dev_consts = ex->alloc(total)))
        st = hc_error_set(L->r.err, HC_ERR_NOMEM, "%s: out of device memory for the weights "
                          "(%zu bytes)", L->r.path, total);
    for (size_t i = 0; i < n && st == HC_OK; i++)
        st = ex->upload((char *)m->dev_consts + off[i], p->consts.data[i].data,
                        (size_t)p->consts.data[i].size, L->r.err);
    size_t a = 0;
    for (size_t i = 0; i < m->kernels.len && st == HC_OK; i++) {
        kernel *k = &m->kernels.data[i];
        for (int j = 0; j < k->nargs; j++, a++) {
            loc l = p->args.data[a];
            switch (l.kind) {
            case LOC_EMPTY: k->args[j] = m->dev_empty; break;
            case LOC_CONST: k->args[j] = (char *)m->dev_consts + off[l.index]; break;
            case LOC_ARENA: k->args[j] = (char *)m->mem + m->plan.data[l.index].offset; break;
            case LOC_INPUT: k->args[j] = m->dev_in[l.index]; break;
            case LOC_OUTPUT: k->args[j] = m->dev_out[l.index]; break;
            case LOC_NONE: hc_unreachable();
            }
        }
    }
    m->binds.len = 0; /* nothing of the caller's is bound: a run copies in and out */
    free(off);
    return st;
}

/* The device code is the emitted source: built for the device, or found in the cache. */
static hc_status build_device_code(loader *L) {
    hc_model *m = L->m;
    struct mf_loaded *ld = L->ld;
    const hc_target *t = m->target;
    int n = (int)ld->parts.libs.len;
    char **srcs = hc_xcalloc((size_t)n + 1, sizeof(char *));
    for (int i = 0; i < n; i++) {
        const blob *b = &ld->parts.libs.data[i];
        srcs[i] = hc_xmalloc((size_t)b->size + 1);
        memcpy(srcs[i], b->data, (size_t)b->size);
        srcs[i][b->size] = 0;
    }
    m->nlibs = n;
    m->libs = hc_xcalloc((size_t)n + 1, sizeof(hc_jit_lib *));
    hc_status st = t->build(t, n, (const char *const *)srcs, NULL, 1, m->libs, L->r.err);
    for (int i = 0; i < n; i++) free(srcs[i]);
    free(srcs);
    for (size_t i = 0; i < m->kernels.len && st == HC_OK; i++) {
        kernel *k = &m->kernels.data[i];
        const program *pr = &ld->parts.programs.data[k->unique];
        k->fn = (hc_packed_fn)t->symbol(m->libs[pr->lib], pr->symbol);
        if (!k->fn)
            st = hc_error_set(L->r.err, HC_ERR_INVALID, "%s: kernel %zu (node '%s'): program "
                              "'%s' not found in its device code", L->r.path, i, k->node->name,
                              pr->symbol);
    }
    return st;
}

static void release_loaded(hc_model *m) {
    struct mf_loaded *ld = m->loaded;
    for (int i = 0; i < ld->nhandles; i++) dlclose(ld->handles[i]);
    for (int i = 0; i < ld->nhandles; i++)
        if (ld->fds[i] >= 0) close(ld->fds[i]);
    free(ld->handles);
    free(ld->fds);
    parts_free(&ld->parts);
    free(ld->buf);
    free(ld);
    m->loaded = NULL;
}

static hc_status read_body(loader *L) {
    reader *r = &L->r;
    hc_model *m = L->m;
    parts *p = &L->ld->parts;
    hc_status st = check_target(L);
    if (st != HC_OK) return st;
    m->num_threads = m->opt.num_threads = (int)p->target.threads;
    m->target = L->gpu ? L->gpu /* check_target: the device is here */
                       : hc_target_cpu((hc_isa)p->target.isa); /* check_target: the CPU has it */
    const char *name = r_str(r, &m->arena, "graph name");
    int opset = r_i32(r, "graph opset");
    m->g = hc_graph_new(name, opset);
    read_symbols(L);
    read_io(L);
    uint32_t nconst = r_count(r, 8, "constants");
    for (uint32_t i = 0; i < nconst && r->st == HC_OK; i++) {
        blob b = r_blob(r, "constant");
        hc_vec_push(&p->consts, b);
    }
    read_plan(L);
    uint32_t nlibs = r_count(r, 8, "libraries");
    for (uint32_t i = 0; i < nlibs && r->st == HC_OK; i++) {
        blob b = r_blob(r, "library");
        hc_vec_push(&p->libs, b);
    }
    uint32_t nprog = r_count(r, 8, "programs");
    for (uint32_t i = 0; i < nprog && r->st == HC_OK; i++) {
        program pr = {r_u32(r, "program library"), r_str(r, &m->arena, "program symbol")};
        if (r->st == HC_OK && pr.lib >= nlibs)
            r_fail(r, "program %u: library %u of %u", i, pr.lib, nlibs);
        hc_vec_push(&p->programs, pr);
        unique_fn u = {.chunk = (int)pr.lib};
        hc_vec_push(&m->uniques, u);
    }
    size_t bytes = (m->arena_bytes + 63) / 64 * 64;
    if (r->st == HC_OK && !L->check_only &&
        !(m->mem = m->target->exec->alloc(bytes ? bytes : 64)))
        return hc_error_set(r->err, HC_ERR_NOMEM, "%s: cannot allocate the %zu-byte arena",
                            r->path, m->arena_bytes);
    uint32_t nk = r_count(r, 32, "kernels");
    L->nkernels = nk;
    for (uint32_t i = 0; i < nk && r->st == HC_OK; i++) read_kernel(L, (int)i);
    read_copies(L);
    m->symbolic = hc_graph_has_symbols(m->g);
    if (r->st == HC_OK && m->symbolic && L->gpu) r_fail(r, "a device model with symbols");
    if (r_u32(r, "end marker") != END_MARK) r_fail(r, "no end marker");
    if (r->st == HC_OK && r->pos != r->size) r_fail(r, "%zu bytes after the end", r->size - r->pos);
    if (r->st != HC_OK || L->check_only) return r->st;
    if (L->gpu) {
        st = bind_device(L);
        return st == HC_OK ? build_device_code(L) : st;
    }
    return load_libraries(L);
}

/* Takes buf (freed with the model, also on failure). */
static hc_status load_buffer(void *buf, size_t size, const char *path, bool check_only,
                             hc_model **out, hc_error *err) {
    hc_model *m = hc_rt_model_new();
    hc_arena_init(&m->arena);
    m->loaded = hc_xcalloc(1, sizeof *m->loaded);
    m->loaded->buf = buf;
    m->release = release_loaded;
    loader L = {.r = {.buf = buf, .size = size, .path = path, .err = err}, .m = m,
                .ld = m->loaded, .check_only = check_only};
    hc_status st = check_header(&L.r);
    if (st == HC_OK) st = read_body(&L);
    if (st != HC_OK || check_only) {
        hc_model_free(m);
        return st;
    }
    *out = m;
    return HC_OK;
}

hc_status hc_model_load(const char *path, hc_model **out, hc_error *err) {
    *out = NULL;
    void *buf = NULL;
    size_t size = 0;
    hc_status st = read_whole(path, &buf, &size, err);
    if (st != HC_OK) return st;
    return load_buffer(buf, size, path, false, out, err);
}

hc_status hc_model_file_check(const void *data, size_t size, const char *name, hc_error *err) {
    char *buf = hc_alloc_big(size ? size : 1); /* 64-byte aligned, as read_whole reads */
    if (!buf) return hc_error_set(err, HC_ERR_NOMEM, "%s: cannot allocate %zu bytes", name, size);
    if (size) memcpy(buf, data, size);
    hc_model *m = NULL;
    return load_buffer(buf, size, name, true, &m, err);
}

hc_status hc_model_load_memory(const void *data, size_t size, const char *name, hc_model **out,
                               hc_error *err) {
    *out = NULL;
    char *buf = hc_alloc_big(size ? size : 1); /* 64-byte aligned, as read_whole reads */
    if (!buf) return hc_error_set(err, HC_ERR_NOMEM, "%s: cannot allocate %zu bytes", name, size);
    if (size) memcpy(buf, data, size);
    return load_buffer(buf, size, name, false, out, err);
}

bool hc_model_file_is_bytes(const void *data, size_t size) {
    return size >= 8 && !memcmp(data, MAGIC, 8);
}

bool hc_model_file_is(const char *path) {
    unsigned char b[8];
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    bool yes = fread(b, 1, 8, f) == 8 && !memcmp(b, MAGIC, 8);
    fclose(f);
    return yes;
}

bool hc_model_is_loaded(const hc_model *m) { return m->loaded != NULL; }

int hc_model_num_threads(const hc_model *m) { return m->num_threads; }
