#define _POSIX_C_SOURCE 200809L
#include "core/core.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

void hc_assert_fail(const char *expr, const char *file, int line, const char *msg) {
    fprintf(stderr, "hidetc: internal error at %s:%d: assertion '%s' failed%s%s\n", file,
            line, expr, msg ? ": " : "", msg ? msg : "");
    fflush(stderr);
    abort();
}

hc_status hc_error_set(hc_error *err, hc_status st, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->status = st;
    }
    return st;
}

/* ---- memory -------------------------------------------------------------------- */
static HC_NORETURN void oom(size_t n) {
    fprintf(stderr, "hidetc: out of memory allocating %zu bytes\n", n);
    abort();
}
void *hc_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) oom(n);
    return p;
}
void *hc_xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) oom(n * size);
    return p;
}
void *hc_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) oom(n);
    return q;
}
void *hc_alloc_big(size_t n) {
    enum { HUGE = 2 << 20 };
    if (n < HUGE) return aligned_alloc(64, (n + 63) / 64 * 64 + (n ? 0 : 64));
    size_t cap = (n + HUGE - 1) / HUGE * HUGE;
    void *p = aligned_alloc(HUGE, cap);
#ifdef MADV_HUGEPAGE
    if (p) (void)madvise(p, cap, MADV_HUGEPAGE); /* advice only: failure changes nothing */
#endif
    return p;
}

char *hc_xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(hc_xmalloc(n), s, n);
}

/* ---- arena --------------------------------------------------------------------- */
struct hc_arena_chunk {
    hc_arena_chunk *next;
    size_t used, cap;
    _Alignas(64) unsigned char data[]; /* a cache line: weights live here */
};

void hc_arena_init(hc_arena *a) { a->head = NULL, a->total = 0; }

void hc_arena_free(hc_arena *a) {
    for (hc_arena_chunk *c = a->head, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    a->head = NULL, a->total = 0;
}

void *hc_arena_alloc(hc_arena *a, size_t size) {
    size = (size + 15) & ~(size_t)15;
    hc_arena_chunk *c = a->head;
    if (!c || c->cap - c->used < size) {
        size_t cap = size > 65536 ? size : 65536;
        /* big ones are weights: on huge pages (hc_alloc_big), 64-byte aligned data */
        c = cap >= (2u << 20) ? hc_alloc_big(sizeof(hc_arena_chunk) + cap)
                              : aligned_alloc(64, (sizeof(hc_arena_chunk) + cap + 63) / 64 * 64);
        if (!c) oom(sizeof(hc_arena_chunk) + cap);
        c->used = 0, c->cap = cap, c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += size;
    a->total += size;
    memset(p, 0, size);
    return p;
}

void *hc_arena_memdup(hc_arena *a, const void *p, size_t size) {
    void *q = hc_arena_alloc(a, size);
    if (size) memcpy(q, p, size);
    return q;
}

char *hc_arena_strdup(hc_arena *a, const char *s) {
    return hc_arena_memdup(a, s, strlen(s) + 1);
}

char *hc_arena_printf(hc_arena *a, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = hc_arena_alloc(a, (size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return s;
}

/* ---- string builder ------------------------------------------------------------ */
void hc_sb_init(hc_sb *sb) { sb->buf = NULL, sb->len = sb->cap = 0; }
void hc_sb_free(hc_sb *sb) {
    free(sb->buf);
    hc_sb_init(sb);
}
static void sb_reserve(hc_sb *sb, size_t extra) {
    if (sb->len + extra + 1 <= sb->cap) return;
    size_t cap = sb->cap ? sb->cap : 256;
    while (cap < sb->len + extra + 1) cap *= 2;
    sb->buf = hc_xrealloc(sb->buf, cap);
    sb->cap = cap;
}
void hc_sb_putc(hc_sb *sb, char c) {
    sb_reserve(sb, 1);
    sb->buf[sb->len++] = c;
    sb->buf[sb->len] = 0;
}
void hc_sb_puts(hc_sb *sb, const char *s) {
    size_t n = strlen(s);
    sb_reserve(sb, n);
    memcpy(sb->buf + sb->len, s, n + 1);
    sb->len += n;
}
void hc_sb_vprintf(hc_sb *sb, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    sb_reserve(sb, (size_t)n);
    vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    sb->len += (size_t)n;
}
void hc_sb_printf(hc_sb *sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    hc_sb_vprintf(sb, fmt, ap);
    va_end(ap);
}
void hc_sb_indent(hc_sb *sb, int level) {
    for (int i = 0; i < level; i++) hc_sb_puts(sb, "  ");
}
char *hc_sb_take(hc_sb *sb) {
    char *s = sb->buf ? sb->buf : hc_xstrdup("");
    hc_sb_init(sb);
    return s;
}

/* ---- hashing ------------------------------------------------------------------- */
void hc_hash_init(hc_hasher *h) {
    h->h1 = 0xcbf29ce484222325ull;
    h->h2 = 0x84222325cbf29ce4ull;
}
void hc_hash_update(hc_hasher *h, const void *data, size_t n) {
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h->h1 = (h->h1 ^ p[i]) * 0x100000001b3ull;
        h->h2 = (h->h2 ^ p[i]) * 0x00000100000001b3ull + 0x9e3779b97f4a7c15ull;
        h->h2 ^= h->h2 >> 29;
    }
}
void hc_hash_str(hc_hasher *h, const char *s) { hc_hash_update(h, s, strlen(s) + 1); }
static uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}
void hc_hash_hex(const hc_hasher *h, char out[33]) {
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)mix64(h->h1),
             (unsigned long long)mix64(h->h2 ^ h->h1));
}

/* ---- files --------------------------------------------------------------------- */
hc_status hc_read_file(const char *path, char **data, size_t *size, hc_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return hc_error_set(err, HC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    hc_sb sb;
    hc_sb_init(&sb);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        sb_reserve(&sb, n);
        memcpy(sb.buf + sb.len, buf, n);
        sb.len += n;
        sb.buf[sb.len] = 0;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        hc_sb_free(&sb);
        return hc_error_set(err, HC_ERR_IO, "%s: read error", path);
    }
    if (size) *size = sb.len;
    *data = hc_sb_take(&sb);
    return HC_OK;
}

hc_status hc_write_file(const char *path, const void *data, size_t size, hc_error *err) {
    FILE *f = fopen(path, "wb");
    if (!f) return hc_error_set(err, HC_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    size_t n = fwrite(data, 1, size, f);
    int bad = fclose(f) != 0 || n != size;
    if (bad) return hc_error_set(err, HC_ERR_IO, "%s: write error", path);
    return HC_OK;
}

hc_status hc_mkdirs(const char *path, hc_error *err) {
    char *p = hc_xstrdup(path);
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == 0) {
            char c = *s;
            *s = 0;
            if (mkdir(p, 0755) != 0 && errno != EEXIST) {
                hc_status st = hc_error_set(err, HC_ERR_IO, "%s: cannot create directory: %s",
                                            p, strerror(errno));
                free(p);
                return st;
            }
            *s = c;
            if (!c) break;
        }
    }
    free(p);
    return HC_OK;
}

/* ---- misc ---------------------------------------------------------------------- */
double hc_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

uint64_t hc_rng_next(hc_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double hc_rng_uniform(hc_rng *r, double lo, double hi) {
    return lo + (hi - lo) * ((double)(hc_rng_next(r) >> 11) * 0x1.0p-53);
}

int64_t hc_gcd(int64_t a, int64_t b) {
    if (a < 0) a = -a;
    if (b < 0) b = -b;
    while (b) {
        int64_t t = a % b;
        a = b, b = t;
    }
    return a;
}
