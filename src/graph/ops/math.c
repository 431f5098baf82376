/* math.c — the math category's operator table (activations, elementwise arithmetic,
 * comparison and logic, reductions) and the helpers its files share. The operators
 * themselves are in math_elem.c and math_reduce.c; docs/ops_math.md describes them. */
#include <stdarg.h>

#include "graph/ops/math_impl.h"


hc_status hc_math_input(const hc_node *n, int i, const hc_tensor **out, hc_error *err) {
    const hc_tensor *t = i < n->ninputs ? n->inputs[i] : NULL;
    if (!t) return hc_node_fail(n, HC_ERR_INVALID, err, "input %d is missing", i);
    if (!t->shape_known)
        return hc_node_fail(n, HC_ERR_INVALID, err, "input %d ('%s') has no known shape", i,
                            t->name);
    *out = t;
    return HC_OK;
}

const char *hc_math_out_name(const hc_node *n, int i) {
    const hc_tensor *t = i < n->noutputs ? n->outputs[i] : NULL;
    return t && t->name ? t->name : "y";
}

hc_expr *hc_math_num(hc_arena *a, const hc_expr *e, double v) {
    return hc_const_num(a, e->type->dtype, v);
}

#define UNARY(K) {HC_OPK_##K, hc_math_infer_unary, hc_math_task_unary}
#define NARY(K) {HC_OPK_##K, hc_math_infer_nary, hc_math_task_nary}
#define REDUCE(K) {HC_OPK_##K, hc_math_infer_reduce, hc_math_task_reduce}

const hc_op_def hc_ops_math[] = {
    /* activations */
    UNARY(RELU),
    UNARY(LEAKY_RELU),
    NARY(PRELU),
    UNARY(SIGMOID),
    UNARY(HARD_SIGMOID),
    UNARY(HARD_SWISH),
    UNARY(GELU),
    UNARY(SWISH),
    UNARY(BITWISE_NOT),
    NARY(BITWISE_AND),
    NARY(BITWISE_OR),
    NARY(BITWISE_XOR),
    NARY(BIT_SHIFT),
    UNARY(TANH),
    UNARY(ERF),
    UNARY(SOFTPLUS),
    UNARY(SOFTSIGN),
    UNARY(ELU),
    UNARY(SELU),
    UNARY(CELU),
    UNARY(THRESHOLDED_RELU),
    UNARY(SHRINK),
    {HC_OPK_CLIP, hc_math_infer_clip, hc_math_task_clip},
    /* reductions */
    REDUCE(REDUCE_MEAN),
    REDUCE(REDUCE_SUM),
    REDUCE(REDUCE_MAX),
    REDUCE(REDUCE_MIN),
    REDUCE(REDUCE_PROD),
    REDUCE(REDUCE_L1),
    REDUCE(REDUCE_L2),
    REDUCE(REDUCE_LOG_SUM),
    REDUCE(REDUCE_LOG_SUM_EXP),
    REDUCE(REDUCE_SUM_SQUARE),
    {HC_OPK_ARG_MAX, hc_math_infer_argreduce, hc_math_task_argreduce},
    {HC_OPK_ARG_MIN, hc_math_infer_argreduce, hc_math_task_argreduce},
    {HC_OPK_CUM_SUM, hc_math_infer_cumsum, hc_math_task_cumsum},
    {HC_OPK_CUM_PROD, hc_math_infer_cumsum, hc_math_task_cumsum},
    {HC_OPK_TOP_K, hc_math_infer_topk, hc_math_task_topk},
    /* elementwise math */
    NARY(ADD),
    NARY(SUB),
    NARY(MUL),
    NARY(DIV),
    NARY(POW),
    NARY(MOD),
    UNARY(SQRT),
    UNARY(EXP),
    UNARY(LOG),
    UNARY(NEG),
    UNARY(ABS),
    UNARY(RECIPROCAL),
    UNARY(FLOOR),
    UNARY(CEIL),
    UNARY(ROUND),
    UNARY(SIGN),
    UNARY(SIN),
    UNARY(COS),
    UNARY(TAN),
    UNARY(ASIN),
    UNARY(ACOS),
    UNARY(ATAN),
    UNARY(SINH),
    UNARY(COSH),
    UNARY(ASINH),
    UNARY(ACOSH),
    UNARY(ATANH),
    UNARY(IS_NAN),
    UNARY(IS_INF),
    NARY(MIN),
    NARY(MAX),
    NARY(MEAN),
    NARY(SUM),
    /* comparison and logic */
    NARY(EQUAL),
    NARY(LESS),
    NARY(GREATER),
    NARY(LESS_OR_EQUAL),
    NARY(GREATER_OR_EQUAL),
    UNARY(NOT),
    NARY(AND),
    NARY(OR),
    NARY(XOR),
    NARY(WHERE),
    {0},
};
