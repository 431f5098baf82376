/* task.h — computation definitions (DESIGN.md, "Computation definitions (Task)").
 *
 * An operator is defined by what it computes:
 *   tensor_input(name, dtype, shape)
 *   compute(name, shape, f(axes))         f may contain tensor accesses and reduces
 *   reduce(shape, f(axes), kind)          an expression, used inside compute
 * A Task lists its inputs and outputs. For each input of an injective task it may carry
 * the inverse map: output indices as a function of that input's indices (epilogue
 * fusion needs it). The reference interpreter (interp.c) evaluates any Task. */
#ifndef HC_TASK_H
#define HC_TASK_H

#include "graph/sym.h"
#include "ir/ir.h"

typedef enum hc_tnode_kind { HC_TN_INPUT, HC_TN_COMPUTE } hc_tnode_kind;

typedef struct hc_tnode {
    hc_tnode_kind kind;
    const char *name;
    hc_dtype dtype;
    int ndim;
    int64_t shape[HC_MAX_DIMS];
    /* Dynamic shapes (docs/dynamic.md): sym[d] is dimension d's expression when it is
     * symbolic (shape[d] then holds its value at the graph's hint binding, for heuristics
     * only) and NULL when it is fixed. */
    const hc_sym *sym[HC_MAX_DIMS];
    /* COMPUTE: value(axes) */
    hc_var **axes;
    hc_expr *value;
} hc_tnode;

/* Inverse map of one input: given the input's index variables (inputs axes), the output
 * index expressions. */
typedef struct hc_inverse_map {
    int ninput_axes;
    hc_var **input_axes;
    int noutput_dims;
    hc_expr **output_idx;
} hc_inverse_map;

typedef struct hc_task {
    const char *name;
    int ninputs, noutputs;
    hc_tnode **inputs, **outputs;
    hc_inverse_map **inverse; /* per input, NULL when not injective/invertible */
} hc_task;

hc_tnode *hc_tensor_input(hc_arena *a, const char *name, hc_dtype dtype, int ndim,
                          const int64_t *shape);
/* fcompute receives the axes (index variables) and returns the value expression. */
typedef hc_expr *(*hc_compute_fn)(hc_arena *a, hc_var *const *axes, void *ctx);
hc_tnode *hc_compute(hc_arena *a, const char *name, int ndim, const int64_t *shape,
                     hc_compute_fn f, void *ctx);
/* The same with axes created by the caller: value already built over `axes`. */
hc_tnode *hc_compute_with_axes(hc_arena *a, const char *name, int ndim, const int64_t *shape,
                               hc_var *const *axes, hc_expr *value);
/* reduce(shape, f(reduce_axes), kind) -> expression */
hc_expr *hc_reduce_expr(hc_arena *a, int ndim, const int64_t *shape, hc_compute_fn f, void *ctx,
                        hc_reduce_kind kind);
/* Set t's symbolic dimensions (ndim entries, NULL for fixed ones; constants are stored
 * as fixed): returns t. */
hc_tnode *hc_tnode_set_sym(hc_tnode *t, const hc_sym *const *sym);
/* Index-variable helper for building compute bodies. */
hc_var *hc_axis(hc_arena *a, const char *name);

hc_task *hc_task_new(hc_arena *a, const char *name, int ninputs, hc_tnode *const *inputs,
                     int noutputs, hc_tnode *const *outputs);
void hc_task_set_inverse(hc_arena *a, hc_task *t, int input, int ninput_axes,
                         hc_var *const *input_axes, int noutput_dims, hc_expr *const *output_idx);

/* true when no output (transitively through compute nodes) contains a reduce */
bool hc_task_is_injective(const hc_task *t);
int64_t hc_tnode_numel(const hc_tnode *n);
void hc_print_task(hc_sb *sb, const hc_task *t);

/* ---- reference interpreter -------------------------------------------------------- */
/* Buffers are dense row-major arrays in the tnode's dtype. inputs[i] is read, outputs[i]
 * written. Evaluates in double/int64 and rounds to the element type at each store: it
 * is the oracle, not fast. */
hc_status hc_interpret_task(const hc_task *t, void *const *inputs, void *const *outputs,
                            hc_error *err);

/* ---- concise operator definitions (task.c) ---------------------------------------- */
/* Element access: t[idx[0], ..., idx[ndim-1]] and t[axes...]. */
hc_expr *hc_at(hc_arena *a, const hc_tnode *t, hc_expr *const *idx);
hc_expr *hc_at_axes(hc_arena *a, const hc_tnode *t, hc_var *const *axes);
/* numpy broadcasting: t read at the trailing t->ndim of the out_ndim output axes; its
 * size-1 dimensions read index 0. */
hc_expr *hc_at_broadcast(hc_arena *a, const hc_tnode *t, int out_ndim, hc_var *const *axes);
/* The index of t's dimension d read at output axis `axis` under broadcasting: 0 for a
 * fixed size 1, the axis for another fixed size or a symbolic one equal to the output's
 * (out_dim, NULL when unknown), else select(dim == 1, 0, axis). */
hc_expr *hc_broadcast_index(hc_arena *a, const hc_tnode *t, int d, hc_var *axis,
                            const hc_sym *out_dim);
/* Broadcast shape of x and y (numpy rules); error names both shapes. */
hc_status hc_broadcast_shape(int nx, const int64_t *sx, int ny, const int64_t *sy, int *nout,
                             int64_t *out, hc_error *err);
/* Elementwise maps. map2 broadcasts x and y (NULL + err on incompatible shapes). */
typedef hc_expr *(*hc_map1_fn)(hc_arena *a, hc_expr *x, void *ctx);
typedef hc_expr *(*hc_map2_fn)(hc_arena *a, hc_expr *x, hc_expr *y, void *ctx);
hc_tnode *hc_compute_map1(hc_arena *a, const char *name, const hc_tnode *x, hc_map1_fn f,
                          void *ctx);
hc_tnode *hc_compute_map2(hc_arena *a, const char *name, const hc_tnode *x, const hc_tnode *y,
                          hc_map2_fn f, void *ctx, hc_error *err);
/* n-ary elementwise map with broadcasting over all inputs (Where, Clip, fused chains). */
typedef hc_expr *(*hc_mapn_fn)(hc_arena *a, hc_expr *const *xs, void *ctx);
hc_tnode *hc_compute_mapn(hc_arena *a, const char *name, int n, const hc_tnode *const *xs,
                          hc_mapn_fn f, void *ctx, hc_error *err);
/* y's dimension d is x's dimension perm[d] (ONNX Transpose). */
hc_tnode *hc_compute_transpose(hc_arena *a, const char *name, const hc_tnode *x,
                               const int *perm, hc_error *err);
/* Same elements in row-major order, new shape (element counts must agree). */
hc_tnode *hc_compute_reshape(hc_arena *a, const char *name, const hc_tnode *x, int ndim,
                             const int64_t *shape, hc_error *err);
/* The same with symbolic output dims (sym: ndim entries, NULL for fixed ones). */
hc_tnode *hc_compute_reshape_sym(hc_arena *a, const char *name, const hc_tnode *x, int ndim,
                                 const int64_t *shape, const hc_sym *const *sym, hc_error *err);
/* Concatenation along `axis` (negative counts from the end); dtypes and the other
 * dimensions must agree. */
hc_tnode *hc_compute_concat(hc_arena *a, const char *name, int n, const hc_tnode *const *xs,
                            int axis, hc_error *err);
/* y[i] = x[start + i * step] per dimension, y of the given shape (steps may be negative;
 * every read must be inside x). */
hc_tnode *hc_compute_slice(hc_arena *a, const char *name, const hc_tnode *x,
                           const int64_t *starts, const int64_t *steps, const int64_t *shape,
                           hc_error *err);
/* Constant padding (negative pads crop): y dim d = before[d] + x dim d + after[d]. */
hc_tnode *hc_compute_pad(hc_arena *a, const char *name, const hc_tnode *x,
                         const int64_t *before, const int64_t *after, double value,
                         hc_error *err);
/* Broadcast x to the broadcast of its shape and `shape` (ONNX Expand). */
hc_tnode *hc_compute_expand(hc_arena *a, const char *name, const hc_tnode *x, int ndim,
                            const int64_t *shape, hc_error *err);
/* out = x OP y with broadcasting; out = prim(x); out = (dtype)x. */
hc_tnode *hc_compute_binop(hc_arena *a, const char *name, hc_binop op, const hc_tnode *x,
                           const hc_tnode *y, hc_error *err);
hc_tnode *hc_compute_prim(hc_arena *a, const char *name, hc_prim p, const hc_tnode *x);
hc_tnode *hc_compute_cast(hc_arena *a, const char *name, const hc_tnode *x, hc_dtype to);
/* Reduce x over `axes` (negative values count from the end; duplicates are an error);
 * keepdims keeps them as size-1 dimensions. naxes == 0 reduces over every axis. */
hc_tnode *hc_compute_reduce(hc_arena *a, const char *name, const hc_tnode *x, int naxes,
                            const int *axes, bool keepdims, hc_reduce_kind kind, hc_error *err);
/* ArgMax (is_max) / ArgMin of x along `axis` as i64 indices: the first extreme element,
 * or the last one with select_last (ONNX select_last_index). Two nodes: the extreme
 * value, then the smallest (largest) index holding it. */
hc_tnode *hc_compute_argreduce(hc_arena *a, const char *name, const hc_tnode *x, int axis,
                               bool keepdims, bool is_max, bool select_last, hc_error *err);
/* Constant of dtype t holding the number v (integers truncate, bool is v != 0). */
hc_expr *hc_const_num(hc_arena *a, hc_dtype t, double v);
/* Task with one output. hc_task_new derives the inverse map of every input that a
 * single-output injective task reads exactly once, at a permutation of the output axes
 * (elementwise, transpose); hc_task_set_inverse overrides it. */
hc_task *hc_task1(hc_arena *a, const char *name, int ninputs, hc_tnode *const *inputs,
                  hc_tnode *out);
/* Compute nodes reachable from the outputs, producers before consumers (n written to
 * *count; array from the arena). */
hc_tnode **hc_task_compute_nodes(hc_arena *a, const hc_task *t, int *count);
/* The index over dst_shape of the element that idx addresses over src_shape when both
 * are row-major views of the same elements (equal counts). Dims are matched from the
 * right in groups of equal products, so aligned dims map to themselves without div/mod;
 * only regrouped dims flatten and unflatten. */
void hc_reshape_index(hc_arena *a, int nsrc, const int64_t *src_shape, hc_expr *const *idx,
                      int ndst, const int64_t *dst_shape, hc_expr **out);
/* The same over dims given as symbol expressions (constants for fixed ones): groups
 * match where one product is an exact multiple of the other. */
void hc_reshape_index_sym(hc_arena *a, int nsrc, const hc_sym *const *src_shape,
                          hc_expr *const *idx, int ndst, const hc_sym *const *dst_shape,
                          hc_expr **out);
/* true when value contains a reduce (not looking through tensor accesses) */
bool hc_expr_has_reduce(const hc_expr *e);

/* ---- symbolic extents (task_sym.c, docs/dynamic.md) ------------------------------ */
/* A Task is symbolic when a tnode dimension or a reduce extent is an expression of
 * symbols. In index arithmetic and loop bounds a symbol is one i64 variable per name,
 * shared by every program of the process (hc_sym_ir_var); a kernel receives the values
 * at run time (hc_bind_symbols). */
hc_var *hc_sym_ir_var(const char *name);
/* The symbol a variable stands for, or NULL when v is no symbol variable. */
const char *hc_sym_ir_name(const hc_var *v);
/* x as an index expression over the symbol variables (floor division and modulo exact). */
hc_expr *hc_sym_expr(hc_arena *a, const hc_sym *x);
/* Dimension d of t as an index expression: its symbol expression or the constant. */
hc_expr *hc_tnode_extent(hc_arena *a, const hc_tnode *t, int d);
/* Dimension d of t as a symbol expression (a constant when fixed). */
const hc_sym *hc_tnode_dim_sym(hc_arena *a, const hc_tnode *t, int d);
bool hc_tnode_is_symbolic(const hc_tnode *t);
/* Whether dims da of x and db of y are the same size for every binding. */
bool hc_tnode_dims_equal(const hc_tnode *x, int da, const hc_tnode *y, int db);
/* Element count as an index expression, and whether two tnodes have equal counts for
 * every binding. */
hc_expr *hc_tnode_numel_expr(hc_arena *a, const hc_tnode *t);
bool hc_tnode_numel_equal(const hc_tnode *x, const hc_tnode *y);
/* Whether any tnode or reduce of t has a symbolic extent. */
bool hc_task_is_symbolic(const hc_task *t);
/* t with every symbol replaced by its value under b: a static Task (new tnodes; the
 * inverse maps kept). NULL and err when a symbol is unbound or a dimension is negative. */
hc_task *hc_task_specialize(hc_arena *a, const hc_task *t, const hc_sym_binding *b,
                            hc_error *err);
/* Whether x and y compute the same thing the same way: the same tnodes (dtypes, shapes,
 * symbols), and values equal after simplification up to the naming of axes. false
 * explains itself in why (may be NULL). */
bool hc_task_same(const hc_task *x, const hc_task *y, const char **why);
/* The symbols program f uses (in its body or its buffers' shapes): their indices in
 * names (nsyms of them, the model's symbols) written to slots in that order; returns
 * how many, or -1 and err when f uses one not in names. A kernel takes each as one more
 * scalar i64 parameter, the symbol's variable itself (hc_sym_ir_var). */
int hc_program_symbols(hc_arena *a, const hc_func *f, int nsyms, const char *const *names,
                       int *slots, hc_error *err);
/* f with the n symbols names[slots[0..n)] appended as parameters (their variables, as
 * the kernel takes them); f itself when n is 0. */
hc_func *hc_func_with_symbols(hc_arena *a, const hc_func *f, const char *const *names,
                              const int *slots, int n);

#endif
