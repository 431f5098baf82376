/* ir.h — the tensor-program IR.
 *
 * A program is a module of functions; a function body is a statement tree over
 * expressions. Schedules live in the program: a ForMapping statement says which worker
 * runs which tasks (DESIGN.md, "Task mappings"). Everything is allocated from an arena
 * (hc_arena) and is immutable once built: passes build new trees and share unchanged
 * subtrees.
 *
 * Two levels share these nodes:
 *  - task level (src/task): compute definitions; expressions may contain
 *    HC_E_TENSOR_ACCESS (an element of a task tensor node) and HC_E_REDUCE;
 *  - program level (src/target and later): loads/stores of buffers (tensor- or
 *    pointer-typed variables), loops, mappings. The verifier rejects task-level nodes in
 *    programs.
 *
 * Integer division and modulo (HC_OP_DIV, HC_OP_MOD) follow C: truncation toward zero.
 * Index arithmetic uses HC_I64 ("index" type). */
#ifndef HC_IR_H
#define HC_IR_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"

#define HC_MAX_DIMS 8

/* ---- scalar types -------------------------------------------------------------- */
/*  X(NAME, printed name, C type, bytes, is_float, is_signed) */
#define HC_DTYPES(X)                                                                     \
    X(VOID, "void", "void", 0, 0, 0)                                                     \
    X(BOOL, "bool", "bool", 1, 0, 0)                                                     \
    X(I8, "i8", "int8_t", 1, 0, 1)                                                       \
    X(I16, "i16", "int16_t", 2, 0, 1)                                                    \
    X(I32, "i32", "int32_t", 4, 0, 1)                                                    \
    X(I64, "i64", "int64_t", 8, 0, 1)                                                    \
    X(U8, "u8", "uint8_t", 1, 0, 0)                                                      \
    X(U16, "u16", "uint16_t", 2, 0, 0)                                                   \
    X(U32, "u32", "uint32_t", 4, 0, 0)                                                   \
    X(U64, "u64", "uint64_t", 8, 0, 0)                                                   \
    X(F16, "f16", "hc_f16", 2, 1, 1)                                                     \
    X(BF16, "bf16", "hc_bf16", 2, 1, 1)                                                  \
    X(F32, "f32", "float", 4, 1, 1)                                                      \
    X(F64, "f64", "double", 8, 1, 1)

typedef enum hc_dtype {
#define X(n, s, c, b, f, sg) HC_##n,
    HC_DTYPES(X)
#undef X
        HC_DTYPE_COUNT
} hc_dtype;

const char *hc_dtype_name(hc_dtype t);  /* "f32" */
const char *hc_dtype_ctype(hc_dtype t); /* "float" */
int hc_dtype_size(hc_dtype t);
bool hc_dtype_is_float(hc_dtype t);
bool hc_dtype_is_signed(hc_dtype t);
bool hc_dtype_is_int(hc_dtype t); /* integers, not bool */
/* Parse "f32", "i64", ...; returns HC_DTYPE_COUNT if unknown. */
hc_dtype hc_dtype_parse(const char *s);
/* Element i of a dense buffer of dtype t, as a double (64-bit integers beyond 2^53
 * round), and the reverse: v converted to t (integers truncate, bool is v != 0, bf16
 * rounds to nearest even). For tools and constant data, not for hot loops. */
double hc_elem_get(const void *buf, hc_dtype t, int64_t i);
void hc_elem_set(void *buf, hc_dtype t, int64_t i, double v);

/* ---- types --------------------------------------------------------------------- */
typedef enum hc_type_kind { HC_TY_SCALAR, HC_TY_VECTOR, HC_TY_POINTER, HC_TY_TENSOR } hc_type_kind;

/* Where a tensor lives. On CPU, GLOBAL is heap memory (parameters or heap temporaries),
 * REGISTER is a small local array (promoted to scalar variables when every index is a
 * constant). SHARED is CUDA shared memory (on CPU it is treated as a local array). */
typedef enum hc_scope { HC_SCOPE_GLOBAL, HC_SCOPE_SHARED, HC_SCOPE_REGISTER } hc_scope;
const char *hc_scope_name(hc_scope s);

typedef struct hc_type hc_type;
typedef struct hc_expr hc_expr;
typedef struct hc_stmt hc_stmt;
typedef struct hc_var hc_var;
typedef struct hc_layout hc_layout;
typedef struct hc_mapping hc_mapping;
typedef struct hc_func hc_func;
typedef struct hc_module hc_module;
struct hc_tnode; /* task-level tensor node, src/task/task.h */

struct hc_type {
    hc_type_kind kind;
    hc_dtype dtype;         /* scalar: itself; vector/tensor: element; pointer: see pointee */
    int lanes;              /* vector: number of lanes (e.g. 8 or 16 for f32) */
    const hc_type *pointee; /* pointer */
    /* tensor */
    int ndim;
    hc_expr **shape;
    const hc_layout *layout; /* never NULL for tensors; row-major by default */
    hc_scope scope;
};

/* Scalar types are static singletons; the others come from the arena. */
const hc_type *hc_type_scalar(hc_dtype t);
const hc_type *hc_type_vector(hc_arena *a, hc_dtype t, int lanes);
const hc_type *hc_type_pointer(hc_arena *a, const hc_type *pointee);
/* layout NULL -> row-major over shape */
const hc_type *hc_type_tensor(hc_arena *a, hc_dtype t, int ndim, hc_expr *const *shape,
                              const hc_layout *layout, hc_scope scope);
const hc_type *hc_type_tensor_c(hc_arena *a, hc_dtype t, int ndim, const int64_t *shape,
                                hc_scope scope); /* constant shape, row-major */
/* A tensor whose elements are vectors of `lanes` dtype lanes (e.g. a REGISTER tile of
 * f32x16 accumulators): type->lanes > 1, loads give and stores take the vector type. */
const hc_type *hc_type_tensor_vec(hc_arena *a, hc_dtype t, int lanes, int ndim,
                                  hc_expr *const *shape, const hc_layout *layout, hc_scope scope);
bool hc_type_equal(const hc_type *x, const hc_type *y);
static inline bool hc_type_is_scalar(const hc_type *t, hc_dtype d) {
    return t->kind == HC_TY_SCALAR && t->dtype == d;
}
#define HC_INDEX_TYPE HC_I64

/* ---- layouts ------------------------------------------------------------------- */
/* A layout maps a d-dimensional index within `shape` to a flat offset. Composition
 * mirrors task mappings: compose(outer, inner) has shape outer (x) inner and offset
 * outer(i / inner_shape) * size(inner) + inner(i % inner_shape). */
typedef enum hc_layout_kind {
    HC_LAYOUT_ROW_MAJOR,
    HC_LAYOUT_COL_MAJOR,
    HC_LAYOUT_STRIDED, /* explicit strides */
    HC_LAYOUT_LOCAL,   /* one element per worker: every index maps to offset 0 */
    HC_LAYOUT_SWIZZLE, /* 2-D, row-major with column ^= row % cols (cols a power of 2) */
    HC_LAYOUT_COMPOSE,
} hc_layout_kind;

struct hc_layout {
    hc_layout_kind kind;
    int ndim;
    hc_expr **shape;
    hc_expr **strides;        /* STRIDED */
    const hc_layout *outer;   /* COMPOSE */
    const hc_layout *inner;   /* COMPOSE */
};

const hc_layout *hc_layout_row_major(hc_arena *a, int ndim, hc_expr *const *shape);
const hc_layout *hc_layout_col_major(hc_arena *a, int ndim, hc_expr *const *shape);
const hc_layout *hc_layout_strided(hc_arena *a, int ndim, hc_expr *const *shape,
                                   hc_expr *const *strides);
const hc_layout *hc_layout_local(hc_arena *a, int ndim, hc_expr *const *shape);
const hc_layout *hc_layout_swizzle(hc_arena *a, hc_expr *rows, hc_expr *cols);
const hc_layout *hc_layout_compose(hc_arena *a, const hc_layout *outer, const hc_layout *inner);
/* Flat offset of idx (ndim expressions) and the number of elements of storage. */
hc_expr *hc_layout_offset(hc_arena *a, const hc_layout *l, hc_expr *const *idx);
hc_expr *hc_layout_storage_size(hc_arena *a, const hc_layout *l);

/* ---- variables ----------------------------------------------------------------- */
/* Built-in worker variables. CPU_THREAD is the OpenMP thread number inside a parallel
 * region; the CUDA ones are read from threadIdx/blockIdx/...; WARP_ID and LANE_ID are
 * threadIdx.x / 32 and threadIdx.x % 32. */
#define HC_BUILTINS(X)                                                                   \
    X(NONE, "")                                                                          \
    X(CPU_THREAD, "cpu_thread")                                                          \
    X(CPU_NUM_THREADS, "cpu_num_threads")                                                \
    X(THREAD_IDX_X, "threadIdx.x")                                                       \
    X(THREAD_IDX_Y, "threadIdx.y")                                                       \
    X(THREAD_IDX_Z, "threadIdx.z")                                                       \
    X(BLOCK_IDX_X, "blockIdx.x")                                                         \
    X(BLOCK_IDX_Y, "blockIdx.y")                                                         \
    X(BLOCK_IDX_Z, "blockIdx.z")                                                         \
    X(BLOCK_DIM_X, "blockDim.x")                                                         \
    X(BLOCK_DIM_Y, "blockDim.y")                                                         \
    X(BLOCK_DIM_Z, "blockDim.z")                                                         \
    X(GRID_DIM_X, "gridDim.x")                                                           \
    X(GRID_DIM_Y, "gridDim.y")                                                           \
    X(GRID_DIM_Z, "gridDim.z")                                                           \
    X(WARP_ID, "warp_id")                                                                \
    X(LANE_ID, "lane_id")

typedef enum hc_builtin {
#define X(n, s) HC_BUILTIN_##n,
    HC_BUILTINS(X)
#undef X
        HC_BUILTIN_COUNT
} hc_builtin;
const char *hc_builtin_name(hc_builtin b);

struct hc_var {
    const char *name;    /* a hint; printers and codegen make names unique with id */
    const hc_type *type;
    int id;              /* unique per process, for printing and maps */
    hc_builtin builtin;  /* HC_BUILTIN_NONE for ordinary variables */
};

hc_var *hc_var_new(hc_arena *a, const char *name, const hc_type *type);
/* Built-in worker variable (type i64). */
hc_var *hc_var_builtin(hc_arena *a, hc_builtin b);

/* ---- expressions --------------------------------------------------------------- */
typedef enum hc_expr_kind {
    HC_E_CONST,
    HC_E_VAR,
    HC_E_BINARY,
    HC_E_UNARY,
    HC_E_SELECT,
    HC_E_CAST,
    HC_E_CALL,          /* primitive: math or vector */
    HC_E_LOAD,          /* buf[i0, i1, ...]: buf is a tensor- or pointer-typed var */
    HC_E_ADDRESS,       /* &buf[i0, ...] -> pointer to element */
    HC_E_TENSOR_ACCESS, /* task level: element of a task tensor node */
    HC_E_REDUCE,        /* task level: reduction over axes */
} hc_expr_kind;

/*  X(NAME, printed symbol, is_comparison) */
#define HC_BINOPS(X)                                                                     \
    X(ADD, "+", 0)                                                                       \
    X(SUB, "-", 0)                                                                       \
    X(MUL, "*", 0)                                                                       \
    X(DIV, "/", 0)                                                                       \
    X(MOD, "%", 0)                                                                       \
    X(MIN, "min", 0)                                                                     \
    X(MAX, "max", 0)                                                                     \
    X(BITAND, "&", 0)                                                                    \
    X(BITOR, "|", 0)                                                                     \
    X(BITXOR, "^", 0)                                                                    \
    X(SHL, "<<", 0)                                                                      \
    X(SHR, ">>", 0)                                                                      \
    X(AND, "&&", 0)                                                                      \
    X(OR, "||", 0)                                                                       \
    X(LT, "<", 1)                                                                        \
    X(LE, "<=", 1)                                                                       \
    X(GT, ">", 1)                                                                        \
    X(GE, ">=", 1)                                                                       \
    X(EQ, "==", 1)                                                                       \
    X(NE, "!=", 1)

typedef enum hc_binop {
#define X(n, s, c) HC_OP_##n,
    HC_BINOPS(X)
#undef X
        HC_BINOP_COUNT
} hc_binop;
const char *hc_binop_symbol(hc_binop op);
bool hc_binop_is_comparison(hc_binop op); /* result is bool */

typedef enum hc_unop { HC_OP_NEG, HC_OP_NOT, HC_OP_BITNOT } hc_unop;
const char *hc_unop_symbol(hc_unop op);

/* Primitive functions. Math primitives are elementwise on scalars and vectors (the
 * result has the argument's type; ISNAN/ISINF give bool). Vector primitives:
 *   VLOAD(ptr)             -> vector of the call's type, unaligned load of lanes elements
 *   VLOAD_MASK(ptr, n)     -> first n lanes loaded (n may exceed lanes), others 0
 *   VLOAD_RANGE(ptr, lo, hi) -> lanes lo <= i < hi loaded, the others 0 and not read
 *                             (no fault: ptr itself may point outside the buffer)
 *   VLOAD_STRIDED(ptr, s, lo, hi) -> lane i in [lo, hi) is ptr[i * s], the others 0 and
 *                             not read (a gather; s an integer, any sign, not 0 or 1)
 *   VSTORE(ptr, v)         -> void
 *   VSTORE_MASK(ptr, v, n) -> void, first n lanes stored
 *   VBROADCAST(x)          -> vector with every lane x
 *   VFMA(a, b, c)          -> a * b + c, lane-wise
 *   VREDUCE_ADD/MAX/MIN(v) -> scalar
 *   VLOAD_BYTES(ptr)       -> i32 vector: the 4 * lanes bytes at ptr (a byte pointer), 4 per lane
 *   VBROADCAST_BYTES(ptr)  -> i32 vector: the 4 bytes at ptr as one i32, in every lane
 *   VDOT_U8S8(acc, a, b)   -> i32 vector: acc + per lane the sum over its 4 bytes k of
 *                             u8(a's byte k) * s8(b's byte k), exact (AVX-512 VNNI's vpdpbusd)
 * bf16 splitting (f32 vectors; bf16(x): x rounded to bf16, to nearest even; an x that is
 * not finite or rounds to infinity gives a value that is not finite, nothing more said):
 *   VSTORE_BF16(ptr, v)    -> void: bf16(v) lane by lane, as 2-byte values at ptr (an f32
 *                             pointer: lanes / 2 of its elements)
 *   VBF16_REST(v)          -> v - bf16(v) lane by lane: exact where bf16(v) is finite,
 *                             not finite where it is not
 *   VLOAD_BF16X2(ptr, hi)  -> f32 vector of the call's type: lane i the bf16 in the upper
 *                             (hi != 0) or lower half of the 32-bit word i at ptr (an f32
 *                             pointer): one of each pair of interleaved bf16 values
 * AMX tiles (Intel AMX-TILE/AMX-BF16): eight 16-row x 64-byte tile registers, named by
 * constant indices 0-7, configured all alike; each call is a statement (void). Where the
 * compiler does not target AMX the C back end emulates them (the same arithmetic, slow):
 *   TILE_CONFIG()          -> every tile 16 x 64 bytes; before any other tile call of the
 *                             thread, in a block around all of them
 *   TILE_RELEASE()         -> the thread is done with its tiles
 *   TILE_ZERO(t)           -> tile t = 0
 *   TILE_LOAD(t, ptr, s)   -> tile t = the 16 rows of 64 bytes at ptr, s bytes apart
 *   TILE_STORE(t, ptr, s)  -> the 16 rows of tile t to ptr, s bytes apart
 *   TILE_DP_BF16(c, a, b)  -> f32 tile c (16 x 16) += a (16 x 32 bf16) x b (16 x 32 bf16
 *                             in pairs: b's row p holds rows 2p and 2p+1 of the 32 x 16
 *                             right operand, interleaved by column), as TDPBF16PS
 *  X(NAME, printed name, number of arguments, kind) kind: 0 math, 1 vector */
#define HC_PRIMS(X)                                                                      \
    X(EXP, "exp", 1, 0)                                                                  \
    X(LOG, "log", 1, 0)                                                                  \
    X(SQRT, "sqrt", 1, 0)                                                                \
    X(RSQRT, "rsqrt", 1, 0)                                                              \
    X(ABS, "abs", 1, 0)                                                                  \
    X(FLOOR, "floor", 1, 0)                                                              \
    X(CEIL, "ceil", 1, 0)                                                                \
    X(ROUND, "round", 1, 0) /* half to even */                                           \
    X(TANH, "tanh", 1, 0)                                                                \
    X(ERF, "erf", 1, 0)                                                                  \
    X(SIGMOID, "sigmoid", 1, 0)                                                          \
    X(SIN, "sin", 1, 0)                                                                  \
    X(COS, "cos", 1, 0)                                                                  \
    X(TAN, "tan", 1, 0)                                                                  \
    X(ASIN, "asin", 1, 0)                                                                \
    X(ACOS, "acos", 1, 0)                                                                \
    X(ATAN, "atan", 1, 0)                                                                \
    X(SINH, "sinh", 1, 0)                                                                \
    X(COSH, "cosh", 1, 0)                                                                \
    X(ASINH, "asinh", 1, 0)                                                              \
    X(ACOSH, "acosh", 1, 0)                                                              \
    X(ATANH, "atanh", 1, 0)                                                              \
    X(ISNAN, "isnan", 1, 0)                                                              \
    X(ISINF, "isinf", 1, 0)                                                              \
    X(POW, "pow", 2, 0)                                                                  \
    X(FMOD, "fmod", 2, 0)                                                                \
    X(VLOAD, "vload", 1, 1)                                                              \
    X(VLOAD_MASK, "vload_mask", 2, 1)                                                    \
    X(VLOAD_RANGE, "vload_range", 3, 1)                                                  \
    X(VLOAD_STRIDED, "vload_strided", 4, 1)                                              \
    X(VSTORE, "vstore", 2, 1)                                                            \
    X(VSTORE_MASK, "vstore_mask", 3, 1)                                                  \
    X(VBROADCAST, "vbroadcast", 1, 1)                                                    \
    X(VFMA, "vfma", 3, 1)                                                                \
    X(PREFETCH, "prefetch", 1, 1) /* a hint: the cache line at the address, for reading */ \
    X(VREDUCE_ADD, "vreduce_add", 1, 1)                                                  \
    X(VREDUCE_MAX, "vreduce_max", 1, 1)                                                  \
    X(VREDUCE_MIN, "vreduce_min", 1, 1)                                                  \
    X(VLOAD_BYTES, "vload_bytes", 1, 1)                                                  \
    X(VBROADCAST_BYTES, "vbroadcast_bytes", 1, 1)                                        \
    X(VDOT_U8S8, "vdot_u8s8", 3, 1)                                                      \
    X(VSTORE_BF16, "vstore_bf16", 2, 1)                                                  \
    X(VBF16_REST, "vbf16_rest", 1, 1)                                                    \
    X(VLOAD_BF16X2, "vload_bf16x2", 2, 1)                                                \
    X(TILE_CONFIG, "tile_config", 0, 1)                                                  \
    X(TILE_RELEASE, "tile_release", 0, 1)                                                \
    X(TILE_ZERO, "tile_zero", 1, 1)                                                      \
    X(TILE_LOAD, "tile_load", 3, 1)                                                      \
    X(TILE_STORE, "tile_store", 3, 1)                                                    \
    X(TILE_DP_BF16, "tile_dp_bf16", 3, 1)

typedef enum hc_prim {
#define X(n, s, a, k) HC_PRIM_##n,
    HC_PRIMS(X)
#undef X
        HC_PRIM_COUNT
} hc_prim;
const char *hc_prim_name(hc_prim p);
int hc_prim_arity(hc_prim p);
bool hc_prim_is_vector(hc_prim p);
/* Whether a call of p does more than compute its value (stores, prefetches, tile state):
 * it is never dropped, merged or moved. */
bool hc_prim_has_effect(hc_prim p);

typedef enum hc_reduce_kind {
    HC_REDUCE_SUM,
    HC_REDUCE_MAX,
    HC_REDUCE_MIN,
    HC_REDUCE_AVG,
    HC_REDUCE_PROD
} hc_reduce_kind;
const char *hc_reduce_kind_name(hc_reduce_kind k);

typedef union hc_value {
    int64_t i; /* bool and signed integers */
    uint64_t u;
    double f;
} hc_value;

struct hc_expr {
    hc_expr_kind kind;
    const hc_type *type;
    union {
        hc_value c;  /* CONST (scalar type) */
        hc_var *var; /* VAR */
        struct {
            hc_binop op;
            hc_expr *a, *b;
        } bin;
        struct {
            hc_unop op;
            hc_expr *a;
        } un;
        struct {
            hc_expr *cond, *t, *f;
        } sel;
        struct {
            hc_expr *a; /* target type is e->type */
        } cast;
        struct {
            hc_prim prim;
            int nargs;
            hc_expr **args;
        } call;
        struct {
            hc_var *buf;
            int n;
            hc_expr **idx;
        } load; /* LOAD and ADDRESS */
        struct {
            const struct hc_tnode *tensor;
            int n;
            hc_expr **idx;
        } access;
        struct {
            hc_reduce_kind kind;
            int naxes;
            hc_var **axes;
            int64_t *extents;
            /* NULL when every extent is fixed; else per axis the extent's index
             * expression over symbol variables (dynamic shapes), NULL for a fixed one,
             * whose extents[i] is then exact (else it is the hint's value) */
            hc_expr **sext;
            hc_expr *value;
        } reduce;
    } u;
};

/* Constructors. Binary operands are promoted to a common type (vector beats scalar,
 * float beats integer, wider beats narrower); comparisons give bool. */
hc_expr *hc_const(hc_arena *a, hc_dtype t, hc_value v);
hc_expr *hc_int(hc_arena *a, int64_t v); /* i64 index constant */
hc_expr *hc_i32(hc_arena *a, int32_t v);
hc_expr *hc_f32(hc_arena *a, double v);
hc_expr *hc_f64(hc_arena *a, double v);
hc_expr *hc_bool(hc_arena *a, bool v);
hc_expr *hc_ref(hc_arena *a, hc_var *v);
hc_expr *hc_binary(hc_arena *a, hc_binop op, hc_expr *x, hc_expr *y);
hc_expr *hc_unary(hc_arena *a, hc_unop op, hc_expr *x);
hc_expr *hc_select(hc_arena *a, hc_expr *cond, hc_expr *t, hc_expr *f);
hc_expr *hc_cast(hc_arena *a, const hc_type *to, hc_expr *x);
hc_expr *hc_call(hc_arena *a, hc_prim p, const hc_type *result, int nargs, hc_expr **args);
/* The same on the first n (at most 3) of x, y, z. */
hc_expr *hc_call3(hc_arena *a, hc_prim p, const hc_type *result, int n, hc_expr *x, hc_expr *y,
                  hc_expr *z);
/* Math call whose result type is its first argument's (bool for ISNAN/ISINF). */
hc_expr *hc_math(hc_arena *a, hc_prim p, hc_expr *x, hc_expr *y /* NULL if unary */);
hc_expr *hc_load(hc_arena *a, hc_var *buf, int n, hc_expr *const *idx);
hc_expr *hc_address(hc_arena *a, hc_var *buf, int n, hc_expr *const *idx);
hc_expr *hc_tensor_access(hc_arena *a, const struct hc_tnode *t, int n, hc_expr *const *idx);
hc_expr *hc_reduce(hc_arena *a, hc_reduce_kind k, int naxes, hc_var *const *axes,
                   const int64_t *extents, hc_expr *value);
/* The same with symbolic extents (sext: naxes entries, NULL for fixed ones; all NULL or
 * sext NULL is hc_reduce). */
hc_expr *hc_reduce_sym(hc_arena *a, hc_reduce_kind k, int naxes, hc_var *const *axes,
                       const int64_t *extents, hc_expr *const *sext, hc_expr *value);
/* Extent i of a reduce as an expression; whether any extent is symbolic. */
hc_expr *hc_reduce_extent(hc_arena *a, const hc_expr *r, int i);
/* Make extent i of a reduce just built (not yet shared) the expression e (NULL: keep). */
void hc_reduce_set_extent(hc_arena *a, hc_expr *r, int i, hc_expr *e);
bool hc_reduce_is_symbolic(const hc_expr *r);

/* Short forms for index arithmetic. */
#define hc_add(a, x, y) hc_binary((a), HC_OP_ADD, (x), (y))
#define hc_sub(a, x, y) hc_binary((a), HC_OP_SUB, (x), (y))
#define hc_mul(a, x, y) hc_binary((a), HC_OP_MUL, (x), (y))
#define hc_div(a, x, y) hc_binary((a), HC_OP_DIV, (x), (y))
#define hc_mod(a, x, y) hc_binary((a), HC_OP_MOD, (x), (y))
#define hc_min(a, x, y) hc_binary((a), HC_OP_MIN, (x), (y))
#define hc_max(a, x, y) hc_binary((a), HC_OP_MAX, (x), (y))
#define hc_lt(a, x, y) hc_binary((a), HC_OP_LT, (x), (y))
#define hc_le(a, x, y) hc_binary((a), HC_OP_LE, (x), (y))
#define hc_eq(a, x, y) hc_binary((a), HC_OP_EQ, (x), (y))
#define hc_and(a, x, y) hc_binary((a), HC_OP_AND, (x), (y))

bool hc_expr_is_const_int(const hc_expr *e, int64_t *v); /* integer/bool constant */
/* Promotion rule used by hc_binary (exposed for passes). */
const hc_type *hc_type_promote(hc_arena *a, const hc_type *x, const hc_type *y);

/* ---- task mappings ------------------------------------------------------------- */
/* Loop attributes (for FOR statements and per dimension of a repeat mapping). */
typedef enum hc_loop_kind { HC_LOOP_SERIAL, HC_LOOP_UNROLL, HC_LOOP_PARALLEL } hc_loop_kind;
typedef struct hc_loop_attr {
    hc_loop_kind kind;
    int factor; /* UNROLL: factor (0 = full); PARALLEL: threads (0 = all available) */
} hc_loop_attr;

typedef enum hc_mapping_kind { HC_MAP_SPATIAL, HC_MAP_REPEAT, HC_MAP_COMPOSE } hc_mapping_kind;

/* Semantics are exactly those of DESIGN.md; the functions live in src/ir/mapping.c. */
struct hc_mapping {
    hc_mapping_kind kind;
    int ndim;
    int64_t shape[HC_MAX_DIMS];        /* SPATIAL/REPEAT: task shape */
    hc_loop_attr attrs[HC_MAX_DIMS];   /* REPEAT: per-dimension loop attributes */
    const hc_mapping *outer, *inner;   /* COMPOSE */
};

/* ---- statements ---------------------------------------------------------------- */
typedef enum hc_stmt_kind {
    HC_S_SEQ,
    HC_S_DECLARE,     /* var [= init]; tensor-typed vars allocate in their scope */
    HC_S_LET,         /* let var = value in body */
    HC_S_ASSIGN,      /* var = value */
    HC_S_STORE,       /* buf[idx...] = value */
    HC_S_EVAL,        /* expression for its effect (e.g. vstore) */
    HC_S_IF,
    HC_S_FOR,         /* for var in [0, extent) with a loop attribute */
    HC_S_FOR_MAPPING, /* for (vars...) in mapping on worker: body */
    HC_S_BARRIER,     /* all workers of a scope wait (CPU: omp barrier; CUDA: __syncthreads) */
    HC_S_COMMENT,
} hc_stmt_kind;

struct hc_stmt {
    hc_stmt_kind kind;
    union {
        struct {
            int n;
            hc_stmt **stmts;
        } seq;
        struct {
            hc_var *var;
            hc_expr *init; /* may be NULL */
        } decl;
        struct {
            hc_var *var;
            hc_expr *value;
            hc_stmt *body;
        } let;
        struct {
            hc_var *var;
            hc_expr *value;
        } assign;
        struct {
            hc_var *buf;
            int n;
            hc_expr **idx;
            hc_expr *value;
        } store;
        struct {
            hc_expr *e;
        } eval;
        struct {
            hc_expr *cond;
            hc_stmt *then_s, *else_s; /* else may be NULL */
        } if_;
        struct {
            hc_var *var;
            hc_expr *extent;
            hc_loop_attr attr;
            hc_stmt *body;
        } for_;
        struct {
            const hc_mapping *mapping;
            hc_expr *worker;
            int nvars; /* == mapping ndim */
            hc_var **vars;
            hc_stmt *body;
        } fmap;
        struct {
            hc_scope scope;
        } barrier;
        struct {
            const char *text;
        } comment;
    } u;
};

hc_stmt *hc_seq(hc_arena *a, int n, hc_stmt *const *stmts);
hc_stmt *hc_declare(hc_arena *a, hc_var *v, hc_expr *init);
hc_stmt *hc_let(hc_arena *a, hc_var *v, hc_expr *value, hc_stmt *body);
hc_stmt *hc_assign(hc_arena *a, hc_var *v, hc_expr *value);
hc_stmt *hc_store(hc_arena *a, hc_var *buf, int n, hc_expr *const *idx, hc_expr *value);
hc_stmt *hc_eval(hc_arena *a, hc_expr *e);
hc_stmt *hc_if(hc_arena *a, hc_expr *cond, hc_stmt *then_s, hc_stmt *else_s);
hc_stmt *hc_for(hc_arena *a, hc_var *v, hc_expr *extent, hc_loop_attr attr, hc_stmt *body);
hc_stmt *hc_for_mapping(hc_arena *a, const hc_mapping *m, hc_expr *worker, int nvars,
                        hc_var *const *vars, hc_stmt *body);
hc_stmt *hc_barrier(hc_arena *a, hc_scope scope);
hc_stmt *hc_comment(hc_arena *a, const char *text);
static inline hc_loop_attr hc_serial(void) { return (hc_loop_attr){HC_LOOP_SERIAL, 0}; }
static inline hc_loop_attr hc_unroll(int f) { return (hc_loop_attr){HC_LOOP_UNROLL, f}; }
static inline hc_loop_attr hc_parallel(int t) { return (hc_loop_attr){HC_LOOP_PARALLEL, t}; }

/* ---- functions and modules ----------------------------------------------------- */
typedef enum hc_func_kind {
    HC_FN_CPU_KERNEL,  /* exported C function: void name(params...) */
    HC_FN_CPU_HELPER,  /* static inline C function */
    HC_FN_CUDA_KERNEL, /* __global__, launched with grid/block dims */
    HC_FN_CUDA_DEVICE, /* __device__ helper */
} hc_func_kind;

struct hc_func {
    const char *name;
    hc_func_kind kind;
    int nparams;
    hc_var **params; /* tensor-typed params are buffers passed by pointer */
    const hc_type *ret; /* NULL or void for kernels */
    hc_stmt *body;
    /* CUDA launch configuration (HC_FN_CUDA_KERNEL); NULL entries mean 1. */
    hc_expr *grid_dim[3], *block_dim[3];
    int shared_bytes; /* dynamic shared memory */
    /* GPU stage kernels (the GPU target's lowering): the program this kernel is stage
     * `stage` of; its last `nscratch` params are the program's scratch tensors. */
    const char *program;
    int stage, nscratch;
    /* The template's config ("mr6 nr16 kc768 ..."), NULL from the auto-scheduler: what
     * `--verbose` prints beside the kernel. */
    const char *config;
};

struct hc_module {
    const char *name;
    int nfuncs;
    hc_func **funcs;
};

hc_func *hc_func_new(hc_arena *a, const char *name, hc_func_kind kind, int nparams,
                     hc_var *const *params, hc_stmt *body);
hc_module *hc_module_new(hc_arena *a, const char *name, int nfuncs, hc_func *const *funcs);

/* ---- builder ------------------------------------------------------------------- */
/* A builder appends statements to the innermost open block. The HC_FOR/HC_IF/...
 * macros open a block, run the C block that follows as the body, and close it:
 *
 *   hc_builder b; hc_builder_init(&b, arena);
 *   HC_FOR(&b, i, "i", hc_int(A, 16), hc_serial()) {
 *       hc_b_store(&b, out, 1, (hc_expr*[]){hc_ref(A, i)}, hc_f32(A, 0));
 *   }
 *   hc_stmt *body = hc_builder_finish(&b);
 */
#define HC_BUILDER_MAX_DEPTH 64
typedef struct hc_builder {
    hc_arena *a;
    int depth;
    HC_VEC(hc_stmt *) blocks[HC_BUILDER_MAX_DEPTH];
    hc_stmt *open[HC_BUILDER_MAX_DEPTH]; /* the statement whose body each block is */
    int if_else[HC_BUILDER_MAX_DEPTH];   /* for HC_IF_ELSE: 1 while in the else branch */
} hc_builder;

void hc_builder_init(hc_builder *b, hc_arena *a);
hc_stmt *hc_builder_finish(hc_builder *b); /* closes the root block, frees the builder */
void hc_b_emit(hc_builder *b, hc_stmt *s);
hc_var *hc_b_declare(hc_builder *b, const char *name, const hc_type *t, hc_expr *init);
void hc_b_assign(hc_builder *b, hc_var *v, hc_expr *value);
void hc_b_store(hc_builder *b, hc_var *buf, int n, hc_expr *const *idx, hc_expr *value);
void hc_b_eval(hc_builder *b, hc_expr *e);
void hc_b_comment(hc_builder *b, const char *text);
/* Block openers/closers used by the macros below. */
hc_var *hc_b_for_begin(hc_builder *b, const char *name, hc_expr *extent, hc_loop_attr attr);
void hc_b_for_map_begin(hc_builder *b, const hc_mapping *m, hc_expr *worker, int nvars,
                        hc_var **vars_out, const char *const *names);
void hc_b_if_begin(hc_builder *b, hc_expr *cond);
void hc_b_else(hc_builder *b);
void hc_b_end(hc_builder *b);

#define HC_CAT_(x, y) x##y
#define HC_CAT(x, y) HC_CAT_(x, y)
/* for VAR in [0, EXTENT) */
#define HC_FOR(b, var, name, extent, attr)                                               \
    for (hc_var *var = hc_b_for_begin((b), (name), (extent), (attr)), *HC_CAT(var, _once) = var; \
         HC_CAT(var, _once); HC_CAT(var, _once) = NULL, hc_b_end(b))
/* for (vars[0..n)) in MAP on WORKER; `vars` is an hc_var *array[n] declared by the caller */
#define HC_FOR_MAP(b, map, worker, n, vars, names)                                       \
    for (int HC_CAT(_fm_once, __LINE__) = (hc_b_for_map_begin((b), (map), (worker), (n), (vars), (names)), 1); \
         HC_CAT(_fm_once, __LINE__); HC_CAT(_fm_once, __LINE__) = 0, hc_b_end(b))
#define HC_IF(b, cond)                                                                   \
    for (int HC_CAT(_if_once, __LINE__) = (hc_b_if_begin((b), (cond)), 1);               \
         HC_CAT(_if_once, __LINE__); HC_CAT(_if_once, __LINE__) = 0, hc_b_end(b))

/* ---- generic traversal ---------------------------------------------------------- */
/* A mutator rebuilds a tree bottom-up: each callback gets the node with already
 * rewritten children and returns the replacement (or the node itself). Unchanged
 * subtrees are shared. NULL callbacks mean identity. `ctx` is passed through. */
typedef struct hc_mutator {
    hc_arena *a;
    void *ctx;
    hc_expr *(*expr)(struct hc_mutator *m, hc_expr *e);
    hc_stmt *(*stmt)(struct hc_mutator *m, hc_stmt *s);
    /* Called before visiting a statement's children; returning non-NULL replaces the
     * whole statement without visiting it. */
    hc_stmt *(*stmt_pre)(struct hc_mutator *m, hc_stmt *s);
} hc_mutator;
hc_expr *hc_mutate_expr(hc_mutator *m, hc_expr *e);
/* Whether e (any of the n es) mentions v: as a variable or as the buffer of a load. */
bool hc_expr_mentions(const hc_expr *e, const hc_var *v);
bool hc_exprs_mention(hc_expr *const *es, int n, const hc_var *v);
/* linear.c: the coefficient of v in e when e is affine in v (sums, differences, constant
 * multiples, div/mod pairs that fold back), else INT64_MIN; 0 when e does not mention v.
 * hc_offset_coef: the same for the row-major flat offset of idx into buf's shape. */
int64_t hc_expr_coef(const hc_expr *e, const hc_var *v);
int64_t hc_offset_coef(const hc_var *buf, int n, hc_expr *const *idx, const hc_var *v);
hc_stmt *hc_mutate_stmt(hc_mutator *m, hc_stmt *s);

/* Whether s contains a barrier statement (at any depth). */
bool hc_stmt_has_barrier(const hc_stmt *s);

/* Substitute variables: every VAR whose var is from[i] becomes to[i]. */
hc_expr *hc_subst_expr(hc_arena *a, hc_expr *e, int n, hc_var *const *from, hc_expr *const *to);
hc_stmt *hc_subst_stmt(hc_arena *a, hc_stmt *s, int n, hc_var *const *from, hc_expr *const *to);

/* Structural equality of expressions (variables compared by identity). */
bool hc_expr_equal(const hc_expr *x, const hc_expr *y);

/* ---- passes implemented elsewhere in src/ir ------------------------------------ */
/* printer.c: a readable text form (stable: golden tests depend on it). */
void hc_print_expr(hc_sb *sb, const hc_expr *e);
void hc_print_stmt(hc_sb *sb, const hc_stmt *s, int indent);
void hc_print_func(hc_sb *sb, const hc_func *f);
void hc_print_module(hc_sb *sb, const hc_module *m);
void hc_print_type(hc_sb *sb, const hc_type *t);
void hc_print_mapping(hc_sb *sb, const hc_mapping *m); /* parseable: spatial(4,8).repeat(2,2) */

/* verify.c: structural and type checks; returns HC_OK or HC_ERR_INVALID with a message
 * naming the function and the offending node. `allow_task_level` admits TENSOR_ACCESS
 * and REDUCE (for task definitions). */
hc_status hc_verify_func(const hc_func *f, bool allow_task_level, hc_error *err);
hc_status hc_verify_module(const hc_module *m, hc_error *err);

/* simplify.c: constant folding, algebraic identities, and div/mod with known bounds.
 * Variable bounds come from enclosing FOR loops ([0, extent)), mapping/let definitions
 * where derivable, and builtin worker ranges when given. */
hc_expr *hc_simplify_expr(hc_arena *a, hc_expr *e);
hc_stmt *hc_simplify_stmt(hc_arena *a, hc_stmt *s);
hc_func *hc_simplify_func(hc_arena *a, const hc_func *f);

/* lower.c: the lowering pipeline used by code generation: mappings -> loops, full
 * unrolling of UNROLL loops with constant extent, promotion of register tensors with
 * constant indices to scalars, simplification. */
hc_func *hc_lower_func(hc_arena *a, const hc_func *f);
/* The same; fold_lets also substitutes lets of integer constants (unrolled positions)
 * before register promotion, so their register tiles become scalars (the GPU targets). */
hc_func *hc_lower_func_with(hc_arena *a, const hc_func *f, bool fold_lets);
hc_module *hc_lower_module(hc_arena *a, const hc_module *m);

#endif
