/* versions.c — the versions of each ONNX operator (the opsets in which its definition
 * changed, from the operator changelog of ONNX 1.23, opset 28) and which of them hidetc
 * implements. An opset selects, for each operator, its latest version at or below it;
 * the importer refuses a node whose selected version is missing or not implemented.
 *
 * Every listed version is implemented, but where a version is only a type addition
 * (bfloat16, float8, int4, ...), the new types that hidetc has no dtype for are refused
 * when the tensors are read (the importer names the tensor and its type), and op
 * definitions refuse the attribute values they do not implement (naming the node). A
 * version written as NO(v) is known but not implemented. docs/onnx.md lists what changed
 * in each version and how it is handled. The ops of another domain (hc_onnx_domains, at the
 * end) list versions of their domain. */
#include "graph/ops/versions.h"

#include <stdlib.h>
#include <string.h>

#define MAXV 12
#define NO(v) (-(v))

typedef struct op_versions {
    hc_op_kind op;
    int v[MAXV]; /* since-versions, ascending; negative: not implemented; 0 ends */
} op_versions;

#define V(K, ...) {HC_OPK_##K, {__VA_ARGS__}}

static const op_versions table[] = {
    V(CONV, 1, 11, 22),
    V(CONV_TRANSPOSE, 1, 11, 22),
    V(BATCH_NORMALIZATION, 1, 6, 7, 9, 14, 15),
    V(INSTANCE_NORMALIZATION, 1, 6, 22),
    V(LAYER_NORMALIZATION, 17),
    V(LP_NORMALIZATION, 1, 22),
    V(MEAN_VARIANCE_NORMALIZATION, 9, 13),
    V(LRN, 1, 13),
    V(GEMM, 1, 6, 7, 9, 11, 13),
    V(MATMUL, 1, 9, 13),
    V(EINSUM, 12, 28),
    V(DET, 11, 22),  /* 22: bfloat16 */
    V(STFT, 17),
    V(DFT, 17, 20),  /* 20: axis an input (default -2) instead of an attribute (default 1) */
    V(RELU, 1, 6, 13, 14),
    V(LEAKY_RELU, 1, 6, 16),
    V(PRELU, NO(1), NO(6), 7, 9, 16), /* 1, 6: slope per channel, not broadcast */
    V(SIGMOID, 1, 6, 13),
    V(HARD_SIGMOID, 1, 6, 22),
    V(HARD_SWISH, 14, 22),
    V(GELU, 20),
    V(SWISH, 24),
    V(TANH, 1, 6, 13),
    V(ERF, 9, 13),
    V(SOFTPLUS, 1, 22),
    V(SOFTSIGN, 1, 22),
    V(ELU, 1, 6, 22),
    V(SELU, 1, 6, 22),
    V(CELU, 12, 28),
    V(THRESHOLDED_RELU, 10, 22),
    V(SHRINK, 9),
    V(CLIP, 1, 6, 11, 12, 13),
    V(SOFTMAX, 1, 11, 13),
    V(LOG_SOFTMAX, 1, 11, 13),
    V(HARDMAX, 1, 11, 13),
    V(MAX_POOL, 1, 8, 10, 11, 12, 22),
    V(AVERAGE_POOL, 1, 7, 10, 11, 19, 22),
    V(LP_POOL, 1, 2, 11, 18, 22),
    V(GRID_SAMPLE, 16, 20, 22), /* 20: N-D, modes linear/cubic; 22: bfloat16 */
    V(MAX_UNPOOL, 9, 11, 22), /* 11: output_shape may be an input too; 22: bfloat16 */ /* 2: p an int; 11: auto_pad/pads; 18: ceil_mode, dilations */
    V(ROI_ALIGN, 10, 16, 22), /* 16: coordinate_transformation_mode; 22: bfloat16 */
    V(GLOBAL_AVERAGE_POOL, 1, 22),
    V(GLOBAL_MAX_POOL, 1, 22),
    V(REDUCE_MEAN, 1, 11, 13, 18),
    V(REDUCE_SUM, 1, 11, 13),
    V(REDUCE_MAX, 1, 11, 12, 13, 18, 20),
    V(REDUCE_MIN, 1, 11, 12, 13, 18, 20),
    V(REDUCE_PROD, 1, 11, 13, 18),
    V(REDUCE_L1, 1, 11, 13, 18),
    V(REDUCE_L2, 1, 11, 13, 18),
    V(REDUCE_LOG_SUM, 1, 11, 13, 18, 28),
    V(REDUCE_LOG_SUM_EXP, 1, 11, 13, 18, 28),
    V(REDUCE_SUM_SQUARE, 1, 11, 13, 18),
    V(ARG_MAX, 1, 11, 12, 13),
    V(ARG_MIN, 1, 11, 12, 13),
    V(CUM_SUM, 11, 14),
    V(CUM_PROD, 26),
    V(TOP_K, 1, 10, 11, 24),
    V(ADD, 1, 6, 7, 13, 14),
    V(SUB, 1, 6, 7, 13, 14),
    V(MUL, 1, 6, 7, 13, 14),
    V(DIV, 1, 6, 7, 13, 14),
    V(POW, 1, 7, 12, 13, 15),
    V(MOD, 10, 13, 28),
    V(SQRT, 1, 6, 13),
    V(EXP, 1, 6, 13),
    V(LOG, 1, 6, 13),
    V(NEG, 1, 6, 13),
    V(ABS, 1, 6, 13),
    V(RECIPROCAL, 1, 6, 13),
    V(FLOOR, 1, 6, 13),
    V(CEIL, 1, 6, 13),
    V(ROUND, 11, 22),
    V(SIGN, 9, 13),
    V(SIN, 7, 22),
    V(COS, 7, 22),
    V(TAN, 7, 22),
    V(ASIN, 7, 22),
    V(ACOS, 7, 22),
    V(ATAN, 7, 22),
    V(SINH, 9, 22),
    V(COSH, 9, 22),
    V(ASINH, 9, 22),
    V(ACOSH, 9, 22),
    V(ATANH, 9, 22),
    V(IS_NAN, 9, 13, 20),
    V(IS_INF, 10, 20),
    V(MIN, 1, 6, 8, 12, 13),
    V(MAX, 1, 6, 8, 12, 13),
    V(MEAN, 1, 6, 8, 13),
    V(SUM, 1, 6, 8, 13),
    V(EQUAL, 1, 7, 11, 13, 19),
    V(LESS, 1, 7, 9, 13),
    V(GREATER, 1, 7, 9, 13),
    V(LESS_OR_EQUAL, 12, 16),
    V(GREATER_OR_EQUAL, 12, 16),
    V(NOT, 1),
    V(BITWISE_NOT, 18),
    V(BITWISE_AND, 18),
    V(BITWISE_OR, 18),
    V(BITWISE_XOR, 18),
    V(BIT_SHIFT, 11, 28), /* 28: int types */
    V(AND, 1, 7),
    V(OR, 1, 7),
    V(XOR, 1, 7),
    V(WHERE, 9, 16),
    V(RESHAPE, 1, 5, 13, 14, 19, 21, 23, 24, 25),
    V(FLATTEN, 1, 9, 11, 13, 21, 23, 24, 25),
    V(TRANSPOSE, 1, 13, 21, 23, 24, 25),
    V(CONCAT, 1, 4, 11, 13),
    V(SPLIT, 1, 2, 11, 13, 18),
    V(SLICE, 1, 10, 11, 13),
    V(GATHER, 1, 11, 13),
    V(GATHER_ELEMENTS, 11, 13),
    V(GATHER_ND, 11, 12, 13),
    V(SCATTER_ELEMENTS, 11, 13, 16, 18),
    V(SCATTER, 9, 11), /* ScatterElements' first form (11: deprecated, the same) */
    V(REVERSE_SEQUENCE, 10, 28), /* 28: more types */
    V(SCATTER_ND, 11, 13, 16, 18),
    V(SQUEEZE, 1, 11, 13, 21, 23, 24, 25),
    V(UNSQUEEZE, 1, 11, 13, 21, 23, 24, 25),
    V(EXPAND, 8, 13),
    V(TILE, NO(1), 6, 13), /* 1: tiles and axis inputs */
    V(PAD, 1, 2, 11, 13, 18, 19, 21, 23, 24, 25),
    V(RESIZE, 10, 11, 13, 18, 19),
    V(UPSAMPLE, 1, 7, 9, 10),
    V(DEPTH_TO_SPACE, 1, 11, 13, 28),
    V(SPACE_TO_DEPTH, 1, 13, 28),
    V(TRILU, 14),
    V(ONE_HOT, 9, 11, 28),
    V(EYE_LIKE, 9, 22),
    V(SHAPE, 1, 13, 15, 19, 21, 23, 24, 25),
    V(SIZE, 1, 13, 19, 21, 23, 24, 25),
    V(CAST, 1, 6, 9, 13, 19, 21, 23, 24, 25, 28),
    V(CAST_LIKE, 15, 19, 21, 23, 24, 25),
    V(CONSTANT, 1, 9, 11, 12, 13, 19, 21, 23, 24, 25),
    V(CONSTANT_OF_SHAPE, 9, 20, 21, 23, 24, 25),
    V(RANGE, 11, 27),
    V(HANN_WINDOW, 17),
    V(HAMMING_WINDOW, 17),
    V(BLACKMAN_WINDOW, 17),
    V(IDENTITY, 1, 13, 14, 16, 19, 21, 23, 24, 25),
    V(DROPOUT, 1, 6, 7, 10, 12, 13, 22),
    V(GROUP_NORMALIZATION, 18, 21),
    V(RMS_NORMALIZATION, 23),
    /* 19, 21, 23, 24, 25, 28: float8 / int4 / float4 / int2 types, saturate (float8),
     * block_size (21), output_dtype (21, 23), precision (23) */
    V(QUANTIZE_LINEAR, 10, 13, 19, 21, 23, 24, 25, 28),
    V(DEQUANTIZE_LINEAR, 10, 13, 19, 21, 23, 24, 25, 28),
    V(DYNAMIC_QUANTIZE_LINEAR, 11),
    V(IF, 1, 11, 13, 16, 19, 21, 23, 24, 25), /* 11: branches' shapes may differ; the rest types */
    V(LOOP, NO(1), 11, 13, 16, 19, 21, 23, 24, 25), /* 11: M and cond optional; the rest types */
    V(SCAN, 8, 9, 11, 16, 19, 21, 23, 24, 25), /* 8: batch dim and sequence_lens (loop.c) */
    V(NLL_LOSS, 12, 13, 22),                 /* 13: bfloat16 dropped / f64; 22: bfloat16 */
    V(SOFTMAX_CROSS_ENTROPY_LOSS, 12, 13),
    V(MATMUL_INTEGER, 10),
    V(QLINEAR_MATMUL, 10, 21),
    V(CONV_INTEGER, 10),
    V(QLINEAR_CONV, 10),
    V(ROTARY_EMBEDDING, 23),
    V(ATTENTION, 23, 24, 25), /* 24: nonpad_kv_seqlen; 25: windows, 4-D without head counts */
    V(RNN, NO(1), 7, 14, 22),
    V(GRU, NO(1), NO(3), 7, 14, 22),
    V(LSTM, NO(1), 7, 14, 22),
    V(COL2IM, 18),
    V(CENTER_CROP_PAD, 18),
    /* ai.onnx.preview.training (versions of that domain) */
    V(ADAGRAD, 1),
    V(ADAM, 1),
    V(MOMENTUM, 1),
};

const hc_onnx_domain hc_onnx_domains[HC_ONNX_NUM_DOMAINS] = {
    {"ai.onnx.preview.training", 1, 1},
};

int hc_onnx_domain_index(const char *domain) {
    for (int i = 0; domain && i < HC_ONNX_NUM_DOMAINS; i++)
        if (!strcmp(hc_onnx_domains[i].name, domain)) return i;
    return -1;
}

static const op_versions *find(hc_op_kind op) {
    for (size_t i = 0; i < sizeof table / sizeof *table; i++)
        if (table[i].op == op) return &table[i];
    return NULL;
}

int hc_op_onnx_version(hc_op_kind op, int opset) {
    const op_versions *t = find(op);
    if (!t) return -1;
    int best = 0;
    for (int i = 0; i < MAXV && t->v[i]; i++)
        if (abs(t->v[i]) <= opset) best = abs(t->v[i]);
    return best;
}

int hc_op_onnx_first_version(hc_op_kind op) {
    const op_versions *t = find(op);
    return t ? abs(t->v[0]) : -1;
}

bool hc_op_onnx_version_supported(hc_op_kind op, int version) {
    const op_versions *t = find(op);
    if (!t) return false;
    for (int i = 0; i < MAXV && t->v[i]; i++)
        if (t->v[i] == version) return true;
    return false;
}

void hc_op_onnx_versions_print(hc_sb *sb, hc_op_kind op) {
    const op_versions *t = find(op);
    int k = 0;
    for (int i = 0; t && i < MAXV && t->v[i]; i++)
        if (t->v[i] > 0) hc_sb_printf(sb, "%s%d", k++ ? ", " : "", t->v[i]);
    if (!k) hc_sb_puts(sb, "none");
}
