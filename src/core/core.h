/* core.h — the few utilities every stage uses: arenas, a string builder, status and
 * error messages, assertions, a growable array and hashing.
 *
 * Failure policy (DESIGN.md): bad input returns a status and a message naming what was
 * wrong; a broken invariant is HC_ASSERT (file and line); impossible cases are
 * hc_unreachable(). Nothing here calls exit(). */
#ifndef HC_CORE_H
#define HC_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__GNUC__)
#define HC_PRINTF(f, a) __attribute__((format(printf, f, a)))
#define HC_NORETURN __attribute__((noreturn))
#else
#define HC_PRINTF(f, a)
#define HC_NORETURN
#endif

#define HC_ARRAY_LEN(x) (sizeof(x) / sizeof((x)[0]))
/* Each argument is evaluated once (a recursive call inside HC_MAX must not run twice). */
#define HC_MIN(a, b)                                                                     \
    __extension__({                                                                      \
        __typeof__(a) _hc_a = (a);                                                       \
        __typeof__(b) _hc_b = (b);                                                       \
        _hc_a < _hc_b ? _hc_a : _hc_b;                                                   \
    })
#define HC_MAX(a, b)                                                                     \
    __extension__({                                                                      \
        __typeof__(a) _hc_a = (a);                                                       \
        __typeof__(b) _hc_b = (b);                                                       \
        _hc_a > _hc_b ? _hc_a : _hc_b;                                                   \
    })

/* Integer helpers (y > 0): ceil(x / y) for x >= 0, x rounded up to a multiple of y, and x
 * clamped to [lo, hi]. */
static inline int64_t hc_cdiv(int64_t x, int64_t y) { return (x + y - 1) / y; }
static inline int64_t hc_round_up(int64_t x, int64_t y) { return hc_cdiv(x, y) * y; }
/* bf16 bits of f: rounded to nearest even (a finite f may round to an infinity); a NaN
 * stays a quiet NaN. */
static inline uint16_t hc_f32_to_bf16(float f) {
    uint32_t u;
    __builtin_memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
/* The f32 value of bf16 bits h (exact). */
static inline float hc_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
}
static inline int64_t hc_clamp64(int64_t x, int64_t lo, int64_t hi) {
    return x < lo ? lo : x > hi ? hi : x;
}

/* ---- assertions ---------------------------------------------------------------- */
HC_NORETURN void hc_assert_fail(const char *expr, const char *file, int line, const char *msg);
#define HC_ASSERT(cond)                                                                  \
    do {                                                                                 \
        if (!(cond)) hc_assert_fail(#cond, __FILE__, __LINE__, NULL);                    \
    } while (0)
#define HC_ASSERT_MSG(cond, msg)                                                         \
    do {                                                                                 \
        if (!(cond)) hc_assert_fail(#cond, __FILE__, __LINE__, (msg));                   \
    } while (0)
#define hc_unreachable() hc_assert_fail("unreachable", __FILE__, __LINE__, NULL)

/* ---- status and error messages ------------------------------------------------- */
typedef enum hc_status {
    HC_OK = 0,
    HC_ERR_INVALID = 1,     /* bad input: argument, model, file content */
    HC_ERR_IO = 2,          /* a file could not be read or written */
    HC_ERR_COMPILE = 3,     /* the system compiler failed */
    HC_ERR_UNSUPPORTED = 4, /* valid input that we do not handle (yet) */
    HC_ERR_NOMEM = 5,
    HC_ERR_DEVICE = 6,      /* a GPU call failed (launch, copy, out of device memory) */
} hc_status;

/* An error carries a status and a message; functions that can fail on bad input take a
 * `hc_error *` (which may be NULL) and return a status. */
typedef struct hc_error {
    hc_status status;
    char msg[4096];
} hc_error;

hc_status hc_error_set(hc_error *err, hc_status st, const char *fmt, ...) HC_PRINTF(3, 4);

/* ---- arena --------------------------------------------------------------------- */
/* Bump allocator for compile-time objects (IR, graphs). Memory is zeroed. One
 * hc_arena_free releases everything allocated from it. */
typedef struct hc_arena_chunk hc_arena_chunk;
typedef struct hc_arena {
    hc_arena_chunk *head;
    size_t total;
} hc_arena;

void hc_arena_init(hc_arena *a);
void hc_arena_free(hc_arena *a);
void *hc_arena_alloc(hc_arena *a, size_t size);
char *hc_arena_strdup(hc_arena *a, const char *s);
char *hc_arena_printf(hc_arena *a, const char *fmt, ...) HC_PRINTF(2, 3);
void *hc_arena_memdup(hc_arena *a, const void *p, size_t size);
#define HC_NEW(a, T) ((T *)hc_arena_alloc((a), sizeof(T)))
#define HC_NEW_ARRAY(a, T, n) ((T *)hc_arena_alloc((a), sizeof(T) * (size_t)(n)))

/* ---- string builder ------------------------------------------------------------ */
typedef struct hc_sb {
    char *buf;
    size_t len, cap;
} hc_sb;

void hc_sb_init(hc_sb *sb);
void hc_sb_free(hc_sb *sb);
void hc_sb_putc(hc_sb *sb, char c);
void hc_sb_puts(hc_sb *sb, const char *s);
void hc_sb_printf(hc_sb *sb, const char *fmt, ...) HC_PRINTF(2, 3);
void hc_sb_vprintf(hc_sb *sb, const char *fmt, va_list ap);
void hc_sb_indent(hc_sb *sb, int level); /* two spaces per level */
/* Detach the buffer (caller frees with free()). Never NULL. */
char *hc_sb_take(hc_sb *sb);
static inline const char *hc_sb_str(const hc_sb *sb) { return sb->buf ? sb->buf : ""; }

/* ---- growable array (malloc-backed) -------------------------------------------- */
#define HC_VEC(T)                                                                        \
    struct {                                                                             \
        T *data;                                                                         \
        size_t len, cap;                                                                 \
    }
#define hc_vec_push(v, x)                                                                \
    do {                                                                                 \
        if ((v)->len == (v)->cap) {                                                      \
            (v)->cap = (v)->cap ? 2 * (v)->cap : 8;                                      \
            (v)->data = hc_xrealloc((v)->data, (v)->cap * sizeof(*(v)->data));           \
        }                                                                                \
        (v)->data[(v)->len++] = (x);                                                     \
    } while (0)
#define hc_vec_free(v)                                                                   \
    do {                                                                                 \
        free((v)->data);                                                                 \
        (v)->data = NULL;                                                                \
        (v)->len = (v)->cap = 0;                                                         \
    } while (0)

void *hc_xmalloc(size_t n);
void *hc_xcalloc(size_t n, size_t size);
void *hc_xrealloc(void *p, size_t n);
char *hc_xstrdup(const char *s);
/* Large, long-lived buffers (weights, the activation arena): 64-byte aligned, and from
 * 2 MiB up 2 MiB aligned with transparent huge pages requested (madvise), so that
 * streaming them costs a TLB miss per 2 MiB, not per 4 KiB. NULL when out of memory;
 * release with free(). */
void *hc_alloc_big(size_t n);

/* ---- hashing ------------------------------------------------------------------- */
/* 128-bit non-cryptographic hash (two FNV-1a-style lanes with different seeds, mixed);
 * good enough for cache keys. hc_hash_hex writes 32 hex chars + NUL into out[33]. */
typedef struct hc_hasher {
    uint64_t h1, h2;
} hc_hasher;
void hc_hash_init(hc_hasher *h);
void hc_hash_update(hc_hasher *h, const void *data, size_t n);
void hc_hash_str(hc_hasher *h, const char *s); /* includes a terminator byte */
void hc_hash_hex(const hc_hasher *h, char out[33]);

/* ---- files --------------------------------------------------------------------- */
/* Read a whole file into a malloc'ed, NUL-terminated buffer. */
hc_status hc_read_file(const char *path, char **data, size_t *size, hc_error *err);
hc_status hc_write_file(const char *path, const void *data, size_t size, hc_error *err);
/* mkdir -p */
hc_status hc_mkdirs(const char *path, hc_error *err);

/* ---- misc ---------------------------------------------------------------------- */
double hc_now_ms(void); /* monotonic clock in milliseconds */
/* Deterministic PRNG (splitmix64) for tests and random inputs. */
typedef struct hc_rng {
    uint64_t s;
} hc_rng;
uint64_t hc_rng_next(hc_rng *r);
double hc_rng_uniform(hc_rng *r, double lo, double hi);
int64_t hc_gcd(int64_t a, int64_t b);

#endif
