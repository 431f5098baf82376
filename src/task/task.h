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

#include "ir/ir.h"

typedef enum hc_tnode_kind { HC_TN_INPUT, HC_TN_COMPUTE } hc_tnode_kind;

typedef struct hc_tnode {
    hc_tnode_kind kind;
    const char *name;
    hc_dtype dtype;
    int ndim;
    int64_t shape[HC_MAX_DIMS];
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

#endif
