/* sched_util.h — building blocks shared by the auto-schedulers of every target (the CPU's
 * src/target/cpu/auto_sched.c, the GPU's src/target/gpu/auto_sched_gpu.c): how a task's
 * nodes become program values (inlined or materialized, accesses translated to loads),
 * expression queries, and the serial emission of reductions (accumulator loops, guarded
 * where C semantics evaluate a reduce only conditionally). */
#ifndef HC_TARGET_SCHED_UTIL_H
#define HC_TARGET_SCHED_UTIL_H

#include "target/target.h"
#include "task/task.h"

/* Inlining stops once a node's expression exceeds this many IR nodes. */
#define HC_AS_INLINE_MAX_NODES 256

typedef enum hc_as_role { HC_AS_INPUT, HC_AS_INLINE, HC_AS_MATERIALIZE } hc_as_role;

typedef struct hc_as_node {
    const hc_tnode *node;
    hc_as_role role;
    hc_var *buf;    /* INPUT and MATERIALIZE: the buffer */
    hc_expr *value; /* compute nodes: the value with accesses translated, over node->axes */
} hc_as_node;

typedef struct hc_as_sched {
    hc_arena *a;
    const hc_task *task;
    const hc_target *target;
    hc_as_node *info;
    int ninfo;
    hc_var **out_params;
    hc_error *err;
    hc_status st;
} hc_as_sched;

#define HC_AS_MAX_CHILDREN (HC_MAX_DIMS > 3 ? HC_MAX_DIMS : 3)

typedef HC_VEC(hc_expr *) hc_expr_vec;

/* The children of e (at most HC_AS_MAX_CHILDREN) into out; their number. */
int hc_as_children(const hc_expr *e, hc_expr **out);
int64_t hc_as_expr_size(const hc_expr *e);
int64_t hc_as_reduce_work(hc_expr *e);
void hc_as_top_reduces(hc_expr *e, hc_expr_vec *out);
bool hc_as_reduce_under_condition(const hc_expr *e, bool lazy);
bool hc_as_contiguous_in(const hc_expr *e, const hc_var *v);
hc_as_node *hc_as_find_info(hc_as_sched *s, const hc_tnode *n);
void hc_as_sched_fail(hc_as_sched *s, hc_status st, const char *what, const char *name);
hc_expr *hc_as_translate(hc_as_sched *s, hc_expr *e);
const hc_type *hc_as_buffer_type(hc_arena *a, const hc_tnode *n);
bool hc_as_is_output(const hc_task *t, const hc_tnode *n);
void hc_as_assign_roles(hc_as_sched *s, hc_tnode **nodes, int nnodes);
hc_dtype hc_as_acc_dtype(hc_dtype t);
hc_expr *hc_as_reduce_init(hc_arena *a, hc_reduce_kind k, hc_dtype t);
hc_expr *hc_as_cast_to(hc_arena *a, hc_dtype t, hc_expr *e);
hc_expr *hc_as_reduce_combine(hc_arena *a, hc_reduce_kind k, hc_expr *acc, hc_expr *v);
hc_expr *hc_as_reduce_finish(hc_arena *a, const hc_expr *r, hc_expr *acc);
hc_expr *hc_as_open_reduce_loops(hc_builder *b, const hc_expr *r);
void hc_as_close_loops(hc_builder *b, int n);
hc_expr *hc_as_replace_exprs(hc_arena *a, hc_expr *e, int n, hc_expr **from, hc_expr **to);
hc_expr *hc_as_emit_scalar_reduces(hc_builder *b, hc_expr *e, int vector_bits);
hc_status hc_as_check_outputs(hc_as_sched *s);
/* The start of every auto-scheduler: checks the outputs, makes the program's params (task
 * inputs then outputs, *params_out, *np) and assigns every compute node a role; returns
 * the compute nodes in producer-before-consumer order (*nnodes), or NULL with s->st set. */
hc_tnode **hc_as_begin(hc_as_sched *s, hc_arena *a, const hc_task *t, const hc_target *target,
                       hc_error *err, hc_var ***params_out, int *np, int *nnodes);

#endif
