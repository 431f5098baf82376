/* ops.h — the operator table. Every operator is one row; the enum, names and property
 * tables are derived from it (graph.c). `onnx` is the ONNX op_type ("" for internal ops);
 * an op of another domain than the default one is named "<domain>.<op_type>" (the importer
 * looks a node of a domain of hc_onnx_domains, graph/ops/versions.h, up so).
 * Arity: min/max inputs and outputs (HC_MANY = variadic). Kind (for fusion, DESIGN.md):
 *   ANCHOR     scheduled by a template (matmul, conv)
 *   REDUCE     non-injective, auto-scheduled (reductions, softmax, norms, pooling)
 *   INJECTIVE  elementwise and data movement (each output element from known inputs)
 *   SOURCE     produces compile-time values (Constant, Shape, ...): folded away
 */
#ifndef HC_OPS_H
#define HC_OPS_H

#define HC_MANY 255

/*    NAME                      onnx name                   in_min in_max out_min out_max kind */
#define HC_OPS(X)                                                                             \
    /* convolution and normalization */                                                       \
    X(CONV,                      "Conv",                       2, 3, 1, 1, ANCHOR)            \
    X(CONV_TRANSPOSE,            "ConvTranspose",              2, 3, 1, 1, ANCHOR)            \
    X(BATCH_NORMALIZATION,       "BatchNormalization",         5, 5, 1, 3, INJECTIVE)         \
    X(INSTANCE_NORMALIZATION,    "InstanceNormalization",      3, 3, 1, 1, REDUCE)            \
    X(LAYER_NORMALIZATION,       "LayerNormalization",         2, 3, 1, 3, REDUCE)            \
    X(LP_NORMALIZATION,          "LpNormalization",            1, 1, 1, 1, REDUCE)            \
    X(MEAN_VARIANCE_NORMALIZATION, "MeanVarianceNormalization", 1, 1, 1, 1, REDUCE)          \
    X(LRN,                       "LRN",                        1, 1, 1, 1, REDUCE)            \
    X(GROUP_NORMALIZATION,       "GroupNormalization",         3, 3, 1, 1, REDUCE)            \
    X(RMS_NORMALIZATION,         "RMSNormalization",           2, 2, 1, 1, REDUCE)            \
    X(ROTARY_EMBEDDING,          "RotaryEmbedding",            3, 4, 1, 1, INJECTIVE)         \
    /* attention: lowered to ATTENTION_FUSED or ATTENTION_CORE (passes/attention.c) */        \
    X(ATTENTION,                 "Attention",                  3, 7, 1, 4, REDUCE)            \
    /* recurrent: unrolled by the lower_rnn pass (src/passes/rnn.c) */                          \
    X(RNN,                       "RNN",                        3, 6, 0, 2, REDUCE)            \
    X(GRU,                       "GRU",                        3, 6, 0, 2, REDUCE)            \
    X(LSTM,                      "LSTM",                       3, 8, 0, 3, REDUCE)            \
    /* quantized: rewritten into existing ops by the lower_quant pass (src/passes/quant.c) */   \
    X(QUANTIZE_LINEAR,           "QuantizeLinear",             2, 3, 1, 1, INJECTIVE)         \
    X(DEQUANTIZE_LINEAR,         "DequantizeLinear",           2, 3, 1, 1, INJECTIVE)         \
    X(DYNAMIC_QUANTIZE_LINEAR,   "DynamicQuantizeLinear",      1, 1, 3, 3, REDUCE)            \
    X(MATMUL_INTEGER,            "MatMulInteger",              2, 4, 1, 1, REDUCE)            \
    X(QLINEAR_MATMUL,            "QLinearMatMul",              8, 8, 1, 1, REDUCE)            \
    X(CONV_INTEGER,              "ConvInteger",                2, 4, 1, 1, REDUCE)            \
    X(QLINEAR_CONV,              "QLinearConv",                8, 9, 1, 1, REDUCE)            \
    /* losses: rewritten into existing ops by the lower_losses pass (src/passes/loss.c) */     \
    X(NLL_LOSS,                  "NegativeLogLikelihoodLoss",  2, 3, 1, 1, REDUCE)            \
    X(SOFTMAX_CROSS_ENTROPY_LOSS, "SoftmaxCrossEntropyLoss",   2, 3, 1, 2, REDUCE)            \
    /* optimizers of the domain ai.onnx.preview.training (a row of another domain has the  \
     * domain in its onnx name): rewritten into elementwise ops by the lower_training pass   \
     * (src/passes/training.c) */                                                           \
    X(ADAGRAD,                   "ai.onnx.preview.training.Adagrad", 5, HC_MANY, 1, HC_MANY, INJECTIVE) \
    X(ADAM,                      "ai.onnx.preview.training.Adam", 6, HC_MANY, 1, HC_MANY, INJECTIVE) \
    X(MOMENTUM,                  "ai.onnx.preview.training.Momentum", 5, HC_MANY, 1, HC_MANY, INJECTIVE) \
    /* control flow: If is inlined by the importer (both branches, IF_SELECT picks) */          \
    X(IF,                        "If",                         1, 1, 1, HC_MANY, REDUCE)      \
    /* Loop and Scan: bodies kept by the importer, unrolled during shape inference */          \
    X(LOOP,                      "Loop",                       2, HC_MANY, 1, HC_MANY, REDUCE) \
    X(SCAN,                      "Scan",                       1, HC_MANY, 1, HC_MANY, REDUCE) \
    /* matrix products */                                                                     \
    X(GEMM,                      "Gemm",                       2, 3, 1, 1, ANCHOR)            \
    X(MATMUL,                    "MatMul",                     2, 2, 1, 1, ANCHOR)            \
    X(EINSUM,                    "Einsum",                     1, HC_MANY, 1, 1, ANCHOR)      \
    /* linear algebra and signal processing (nn_linalg.c, nn_dft.c) */                        \
    X(DET,                       "Det",                        1, 1, 1, 1, REDUCE)            \
    X(DFT,                       "DFT",                        1, 3, 1, 1, REDUCE)            \
    X(STFT,                      "STFT",                       2, 4, 1, 1, REDUCE)            \
    /* activations */                                                                         \
    X(RELU,                      "Relu",                       1, 1, 1, 1, INJECTIVE)         \
    X(LEAKY_RELU,                "LeakyRelu",                  1, 1, 1, 1, INJECTIVE)         \
    X(PRELU,                     "PRelu",                      2, 2, 1, 1, INJECTIVE)         \
    X(SIGMOID,                   "Sigmoid",                    1, 1, 1, 1, INJECTIVE)         \
    X(HARD_SIGMOID,              "HardSigmoid",                1, 1, 1, 1, INJECTIVE)         \
    X(HARD_SWISH,                "HardSwish",                  1, 1, 1, 1, INJECTIVE)         \
    X(GELU,                      "Gelu",                       1, 1, 1, 1, INJECTIVE)         \
    X(SWISH,                     "Swish",                      1, 1, 1, 1, INJECTIVE)         \
    X(TANH,                      "Tanh",                       1, 1, 1, 1, INJECTIVE)         \
    X(ERF,                       "Erf",                        1, 1, 1, 1, INJECTIVE)         \
    X(SOFTPLUS,                  "Softplus",                   1, 1, 1, 1, INJECTIVE)         \
    X(SOFTSIGN,                  "Softsign",                   1, 1, 1, 1, INJECTIVE)         \
    X(ELU,                       "Elu",                        1, 1, 1, 1, INJECTIVE)         \
    X(SELU,                      "Selu",                       1, 1, 1, 1, INJECTIVE)         \
    X(CELU,                      "Celu",                       1, 1, 1, 1, INJECTIVE)         \
    X(THRESHOLDED_RELU,          "ThresholdedRelu",            1, 1, 1, 1, INJECTIVE)         \
    X(SHRINK,                    "Shrink",                     1, 1, 1, 1, INJECTIVE)         \
    X(CLIP,                      "Clip",                       1, 3, 1, 1, INJECTIVE)         \
    /* softmax family */                                                                      \
    X(SOFTMAX,                   "Softmax",                    1, 1, 1, 1, REDUCE)            \
    X(LOG_SOFTMAX,               "LogSoftmax",                 1, 1, 1, 1, REDUCE)            \
    X(HARDMAX,                   "Hardmax",                    1, 1, 1, 1, REDUCE)            \
    /* pooling */                                                                             \
    X(MAX_POOL,                  "MaxPool",                    1, 1, 1, 2, REDUCE)            \
    X(AVERAGE_POOL,              "AveragePool",                1, 1, 1, 1, REDUCE)            \
    X(LP_POOL,                   "LpPool",                     1, 1, 1, 1, REDUCE)            \
    X(GRID_SAMPLE,               "GridSample",                 2, 2, 1, 1, REDUCE)            \
    X(MAX_UNPOOL,                "MaxUnpool",                  2, 3, 1, 1, REDUCE)            \
    X(ROI_ALIGN,                 "RoiAlign",                   3, 3, 1, 1, REDUCE)            \
    X(GLOBAL_AVERAGE_POOL,       "GlobalAveragePool",          1, 1, 1, 1, REDUCE)            \
    X(GLOBAL_MAX_POOL,           "GlobalMaxPool",              1, 1, 1, 1, REDUCE)            \
    /* reductions */                                                                          \
    X(REDUCE_MEAN,               "ReduceMean",                 1, 2, 1, 1, REDUCE)            \
    X(REDUCE_SUM,                "ReduceSum",                  1, 2, 1, 1, REDUCE)            \
    X(REDUCE_MAX,                "ReduceMax",                  1, 2, 1, 1, REDUCE)            \
    X(REDUCE_MIN,                "ReduceMin",                  1, 2, 1, 1, REDUCE)            \
    X(REDUCE_PROD,               "ReduceProd",                 1, 2, 1, 1, REDUCE)            \
    X(REDUCE_L1,                 "ReduceL1",                   1, 2, 1, 1, REDUCE)            \
    X(REDUCE_L2,                 "ReduceL2",                   1, 2, 1, 1, REDUCE)            \
    X(REDUCE_LOG_SUM,            "ReduceLogSum",               1, 2, 1, 1, REDUCE)            \
    X(REDUCE_LOG_SUM_EXP,        "ReduceLogSumExp",            1, 2, 1, 1, REDUCE)            \
    X(REDUCE_SUM_SQUARE,         "ReduceSumSquare",            1, 2, 1, 1, REDUCE)            \
    X(ARG_MAX,                   "ArgMax",                     1, 1, 1, 1, REDUCE)            \
    X(ARG_MIN,                   "ArgMin",                     1, 1, 1, 1, REDUCE)            \
    X(CUM_SUM,                   "CumSum",                     2, 2, 1, 1, REDUCE)            \
    X(CUM_PROD,                  "CumProd",                    2, 2, 1, 1, REDUCE)            \
    X(TOP_K,                     "TopK",                       2, 2, 2, 2, REDUCE)            \
    /* elementwise math */                                                                    \
    X(ADD,                       "Add",                        2, 2, 1, 1, INJECTIVE)         \
    X(SUB,                       "Sub",                        2, 2, 1, 1, INJECTIVE)         \
    X(MUL,                       "Mul",                        2, 2, 1, 1, INJECTIVE)         \
    X(DIV,                       "Div",                        2, 2, 1, 1, INJECTIVE)         \
    X(POW,                       "Pow",                        2, 2, 1, 1, INJECTIVE)         \
    X(MOD,                       "Mod",                        2, 2, 1, 1, INJECTIVE)         \
    X(SQRT,                      "Sqrt",                       1, 1, 1, 1, INJECTIVE)         \
    X(EXP,                       "Exp",                        1, 1, 1, 1, INJECTIVE)         \
    X(LOG,                       "Log",                        1, 1, 1, 1, INJECTIVE)         \
    X(NEG,                       "Neg",                        1, 1, 1, 1, INJECTIVE)         \
    X(ABS,                       "Abs",                        1, 1, 1, 1, INJECTIVE)         \
    X(RECIPROCAL,                "Reciprocal",                 1, 1, 1, 1, INJECTIVE)         \
    X(FLOOR,                     "Floor",                      1, 1, 1, 1, INJECTIVE)         \
    X(CEIL,                      "Ceil",                       1, 1, 1, 1, INJECTIVE)         \
    X(ROUND,                     "Round",                      1, 1, 1, 1, INJECTIVE)         \
    X(SIGN,                      "Sign",                       1, 1, 1, 1, INJECTIVE)         \
    X(SIN,                       "Sin",                        1, 1, 1, 1, INJECTIVE)         \
    X(COS,                       "Cos",                        1, 1, 1, 1, INJECTIVE)         \
    X(TAN,                       "Tan",                        1, 1, 1, 1, INJECTIVE)         \
    X(ASIN,                      "Asin",                       1, 1, 1, 1, INJECTIVE)         \
    X(ACOS,                      "Acos",                       1, 1, 1, 1, INJECTIVE)         \
    X(ATAN,                      "Atan",                       1, 1, 1, 1, INJECTIVE)         \
    X(SINH,                      "Sinh",                       1, 1, 1, 1, INJECTIVE)         \
    X(COSH,                      "Cosh",                       1, 1, 1, 1, INJECTIVE)         \
    X(ASINH,                     "Asinh",                      1, 1, 1, 1, INJECTIVE)         \
    X(ACOSH,                     "Acosh",                      1, 1, 1, 1, INJECTIVE)         \
    X(ATANH,                     "Atanh",                      1, 1, 1, 1, INJECTIVE)         \
    X(IS_NAN,                    "IsNaN",                      1, 1, 1, 1, INJECTIVE)         \
    X(IS_INF,                    "IsInf",                      1, 1, 1, 1, INJECTIVE)         \
    X(MIN,                       "Min",                        1, HC_MANY, 1, 1, INJECTIVE)   \
    X(MAX,                       "Max",                        1, HC_MANY, 1, 1, INJECTIVE)   \
    X(MEAN,                      "Mean",                       1, HC_MANY, 1, 1, INJECTIVE)   \
    X(SUM,                       "Sum",                        1, HC_MANY, 1, 1, INJECTIVE)   \
    /* comparison and logic */                                                                \
    X(EQUAL,                     "Equal",                      2, 2, 1, 1, INJECTIVE)         \
    X(LESS,                      "Less",                       2, 2, 1, 1, INJECTIVE)         \
    X(GREATER,                   "Greater",                    2, 2, 1, 1, INJECTIVE)         \
    X(LESS_OR_EQUAL,             "LessOrEqual",                2, 2, 1, 1, INJECTIVE)         \
    X(GREATER_OR_EQUAL,          "GreaterOrEqual",             2, 2, 1, 1, INJECTIVE)         \
    X(NOT,                       "Not",                        1, 1, 1, 1, INJECTIVE)         \
    X(AND,                       "And",                        2, 2, 1, 1, INJECTIVE)         \
    X(OR,                        "Or",                         2, 2, 1, 1, INJECTIVE)         \
    X(XOR,                       "Xor",                        2, 2, 1, 1, INJECTIVE)         \
    X(BITWISE_NOT,               "BitwiseNot",                 1, 1, 1, 1, INJECTIVE)         \
    X(BITWISE_AND,               "BitwiseAnd",                 2, 2, 1, 1, INJECTIVE)         \
    X(BITWISE_OR,                "BitwiseOr",                  2, 2, 1, 1, INJECTIVE)         \
    X(BITWISE_XOR,               "BitwiseXor",                 2, 2, 1, 1, INJECTIVE)         \
    X(BIT_SHIFT,                 "BitShift",                   2, 2, 1, 1, INJECTIVE)         \
    X(WHERE,                     "Where",                      3, 3, 1, 1, INJECTIVE)         \
    /* shape and data movement */                                                             \
    X(RESHAPE,                   "Reshape",                    1, 2, 1, 1, INJECTIVE)         \
    X(FLATTEN,                   "Flatten",                    1, 1, 1, 1, INJECTIVE)         \
    X(TRANSPOSE,                 "Transpose",                  1, 1, 1, 1, INJECTIVE)         \
    X(CONCAT,                    "Concat",                     1, HC_MANY, 1, 1, INJECTIVE)   \
    X(SPLIT,                     "Split",                      1, 2, 1, HC_MANY, INJECTIVE)   \
    X(SLICE,                     "Slice",                      1, 5, 1, 1, INJECTIVE)         \
    X(GATHER,                    "Gather",                     2, 2, 1, 1, INJECTIVE)         \
    X(GATHER_ELEMENTS,           "GatherElements",             2, 2, 1, 1, INJECTIVE)         \
    X(GATHER_ND,                 "GatherND",                   2, 2, 1, 1, INJECTIVE)         \
    X(SCATTER_ELEMENTS,          "ScatterElements",            3, 3, 1, 1, REDUCE)            \
    X(SCATTER,                   "Scatter",                    3, 3, 1, 1, REDUCE)            \
    X(REVERSE_SEQUENCE,          "ReverseSequence",            2, 2, 1, 1, INJECTIVE)         \
    X(SCATTER_ND,                "ScatterND",                  3, 3, 1, 1, REDUCE)            \
    X(SQUEEZE,                   "Squeeze",                    1, 2, 1, 1, INJECTIVE)         \
    X(UNSQUEEZE,                 "Unsqueeze",                  1, 2, 1, 1, INJECTIVE)         \
    X(EXPAND,                    "Expand",                     2, 2, 1, 1, INJECTIVE)         \
    X(TILE,                      "Tile",                       2, 2, 1, 1, INJECTIVE)         \
    X(PAD,                       "Pad",                        1, 4, 1, 1, INJECTIVE)         \
    X(RESIZE,                    "Resize",                     1, 4, 1, 1, INJECTIVE)         \
    X(UPSAMPLE,                  "Upsample",                   1, 2, 1, 1, INJECTIVE)         \
    X(DEPTH_TO_SPACE,            "DepthToSpace",               1, 1, 1, 1, INJECTIVE)         \
    X(SPACE_TO_DEPTH,            "SpaceToDepth",               1, 1, 1, 1, INJECTIVE)         \
    X(TRILU,                     "Trilu",                      1, 2, 1, 1, INJECTIVE)         \
    X(ONE_HOT,                   "OneHot",                     3, 3, 1, 1, INJECTIVE)         \
    X(EYE_LIKE,                  "EyeLike",                    1, 1, 1, 1, INJECTIVE)         \
    X(CENTER_CROP_PAD,           "CenterCropPad",              2, 2, 1, 1, INJECTIVE)         \
    X(COL2IM,                    "Col2Im",                     3, 3, 1, 1, REDUCE)            \
    /* shape and constants */                                                                 \
    X(SHAPE,                     "Shape",                      1, 1, 1, 1, SOURCE)            \
    X(SIZE,                      "Size",                       1, 1, 1, 1, SOURCE)            \
    X(CAST,                      "Cast",                       1, 1, 1, 1, INJECTIVE)         \
    X(CAST_LIKE,                 "CastLike",                   2, 2, 1, 1, INJECTIVE)         \
    X(CONSTANT,                  "Constant",                   0, 0, 1, 1, SOURCE)            \
    X(CONSTANT_OF_SHAPE,         "ConstantOfShape",            1, 1, 1, 1, SOURCE)            \
    X(RANGE,                     "Range",                      3, 3, 1, 1, SOURCE)            \
    X(HANN_WINDOW,               "HannWindow",                 1, 1, 1, 1, SOURCE)            \
    X(HAMMING_WINDOW,            "HammingWindow",              1, 1, 1, 1, SOURCE)            \
    X(BLACKMAN_WINDOW,           "BlackmanWindow",             1, 1, 1, 1, SOURCE)            \
    X(IDENTITY,                  "Identity",                   1, 1, 1, 1, INJECTIVE)         \
    X(DROPOUT,                   "Dropout",                    1, 3, 1, 2, INJECTIVE)         \
    /* internal ops produced by graph passes */                                               \
    X(IM2COL,                    "",                           1, 1, 1, 1, INJECTIVE)         \
    X(ATTENTION_CORE,            "",                           1, 3, 1, 1, REDUCE)            \
    X(ATTENTION_FUSED,           "",                           3, 5, 1, 1, ANCHOR)            \
    X(IF_SELECT,                 "",                           3, 3, 1, 1, INJECTIVE)         \
    X(WINO_INPUT,                "",                           1, 1, 1, 1, ANCHOR)            \
    X(WINO_OUTPUT,               "",                           1, 1, 1, 1, ANCHOR)            \
    X(TO_NCHWC,                  "",                           1, 1, 1, 1, INJECTIVE)         \
    X(FROM_NCHWC,                "",                           1, 1, 1, 1, INJECTIVE)         \
    X(CONV_NCHWC,                "",                           2, 3, 1, 1, ANCHOR)            \
    X(CONV_NCHWC_Q8,             "",                           5, 5, 1, 1, ANCHOR)            \
    X(WINO_INPUT_NCHWC,          "",                           1, 1, 1, 1, ANCHOR)            \
    X(WINO_OUTPUT_NCHWC,         "",                           1, 1, 1, 1, ANCHOR)            \
    X(MAX_POOL_NCHWC,            "",                           1, 1, 1, 1, ANCHOR)            \
    X(AVERAGE_POOL_NCHWC,        "",                           1, 1, 1, 1, ANCHOR)

typedef enum hc_op_kind {
#define X(n, onnx, imin, imax, omin, omax, kind) HC_OPK_##n,
    HC_OPS(X)
#undef X
        HC_OPK_COUNT
} hc_op_kind;

typedef enum hc_op_class { HC_OPC_ANCHOR, HC_OPC_REDUCE, HC_OPC_INJECTIVE, HC_OPC_SOURCE } hc_op_class;

#endif
