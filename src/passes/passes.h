/* passes.h — graph passes. hc_graph_optimize is the pipeline: straight-line code in one
 * function (DESIGN.md), a verifier after each pass when HIDETC_VERIFY=1. */
#ifndef HC_PASSES_H
#define HC_PASSES_H

#include "graph/graph.h"

/* Shape and dtype inference over the graph in topological order, with constant
 * propagation: a node whose inputs are all constant is evaluated at compile time (the
 * reference interpreter on its Task), so Shape/Gather/Concat/Unsqueeze chains that
 * compute shapes become constants before the ops that need them (Reshape, Expand, ...)
 * are inferred. Errors name the node. */
hc_status hc_pass_infer_shapes(hc_graph *g, hc_error *err);
/* Evaluate every node whose inputs are all constant; replace its outputs by constants. */
hc_status hc_pass_fold_constants(hc_graph *g, hc_error *err);
/* BatchNormalization after a Conv or Gemm (constant weights, single use) folded into the
 * weights and bias. */
hc_status hc_pass_fold_batchnorm(hc_graph *g, hc_error *err);
/* Identity and Dropout (inference) removed; Reshape/Flatten/Squeeze/Unsqueeze chains
 * collapsed into one Reshape. */
hc_status hc_pass_simplify(hc_graph *g, hc_error *err);
/* Choices of the pipeline (defaults: all zero). A path both forced and turned off is an
 * error (hc_pass_lower_anchors_with). */
typedef struct hc_optimize_options {
    /* The machine the rules decide for (caches, cores, lanes: docs/ records what each rule
     * measured); NULL: hc_target_default(). */
    const struct hc_target *target;
    bool no_winograd;    /* 3x3 stride-1 convs through im2col too */
    bool force_winograd; /* every eligible conv through Winograd, whether it pays or not
                            (tests, measurements) */
    bool no_direct;      /* no group-1 conv kept for the direct conv template */
    bool force_direct;   /* every group-1 2-D f32 conv kept for the direct template (tests,
                            measurements) */
    bool no_nchwc;       /* the runtime leaves nchwc_block at 0 (--no-nchwc) */
    int nchwc_block;     /* > 1: convs whose channels it divides run in the channel-blocked
                            layout NCHW{b}c (docs/nchwc.md); 0: off */
    int nchwc_small_pixels; /* dense non-Winograd convs with at most this many output
                               pixels (batch x height x width) stay NCHW; 0: 64, < 0: none
                               (tests) */
    int wino_tile;          /* blocked Winograd output tile: 0 the rule
                               (hc_pass_winograd_tile), 2, 4 or 6 forced (--winograd-tile) */
    bool no_int8;           /* the runtime leaves int8_block at 0 (--no-int8) */
    int int8_block;         /* >= 8: QDQ convs run as int8 convs in blocks of it
                               (hc_pass_int8_conv, src/passes/qconv.c); 0: off */
} hc_optimize_options;

/* The int8 convs of QDQ models: Conv(DequantizeLinear(x), DequantizeLinear(w)) with 8-bit
 * x and w becomes the channel-blocked int8 conv CONV_NCHWC_Q8 (src/passes/qconv.c). Runs
 * before lower_quant; nothing to do unless opt->int8_block >= 8. */
hc_status hc_pass_int8_conv(hc_graph *g, const hc_optimize_options *opt, hc_error *err);

/* Conv (groups == 1) -> Im2Col + MatMul (+ bias Add), or for 3x3 stride-1 convs where it
 * pays, Winograd F(2x2, 3x3) (docs/winograd.md); Gemm -> MatMul + epilogue ops. */
hc_status hc_pass_lower_anchors(hc_graph *g, hc_error *err);
hc_status hc_pass_lower_anchors_with(hc_graph *g, const hc_optimize_options *opt,
                                     hc_error *err);

/* RNN, GRU and LSTM unrolled over their static sequence length (src/passes/rnn.c): per
 * direction one MatMul projects the inputs of all time steps at once, then each step is a
 * MatMul with the recurrent weights and the gate ops; constant weights are transposed
 * here, so the matmul template pre-packs them. */
hc_status hc_pass_lower_rnn(hc_graph *g, hc_error *err);
/* QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger, QLinearMatMul,
 * ConvInteger and QLinearConv rewritten into casts, arithmetic, MatMul and Conv in the
 * ONNX reference's arithmetic (src/passes/quant.c). */
hc_status hc_pass_lower_quant(hc_graph *g, hc_error *err);
/* NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss rewritten into gathers, Where and
 * reductions (src/passes/loss.c). */
hc_status hc_pass_lower_losses(hc_graph *g, hc_error *err);
/* STFT as a Gather of its frames, the window's Mul and a DFT (src/passes/stft.c). */
hc_status hc_pass_lower_stft(hc_graph *g, hc_error *err);
/* The optimizers of ai.onnx.preview.training (Adagrad, Adam, Momentum) rewritten into
 * elementwise ops (src/passes/training.c). */
hc_status hc_pass_lower_training(hc_graph *g, hc_error *err);
/* ONNX Attention brought to the fused ATTENTION_CORE op (src/passes/attention.c). */
hc_status hc_pass_lower_attention(hc_graph *g, hc_error *err);
/* The same for opt->target (NULL: the default target): Y as one ATTENTION_FUSED node where
 * that target's template takes it. */
hc_status hc_pass_lower_attention_with(hc_graph *g, const hc_optimize_options *opt,
                                       hc_error *err);
/* The attention of exported transformers, MatMul(Q, K^T) -> [scale] -> [+ mask] -> Softmax
 * -> MatMul(P, V), as one ATTENTION_FUSED node where opt->target's template takes it
 * (src/passes/attention_match.c). HIDETC_NO_FUSE_ATTENTION=1 turns it off (measurements of
 * the three-kernel form: bench/attention.sh). */
hc_status hc_pass_fuse_attention(hc_graph *g, const hc_optimize_options *opt, hc_error *err);
/* MatMuls of one activation A with constant weights of one K (and their constant biases)
 * as one MatMul over the weights side by side, Slices of its output for theirs: BERT's
 * query, key and value projections as one (src/passes/merge.c). */
hc_status hc_pass_merge_matmuls(hc_graph *g, hc_error *err);
/* A Split of up to 4 outputs as one Slice per output, which fusion takes into the kernels
 * that read them: no copy (src/passes/split.c). */
hc_status hc_pass_split_to_slices(hc_graph *g, hc_error *err);
/* BatchNormalization with training_mode=1 rewritten into reductions (batchnorm.c). */
hc_status hc_pass_lower_batchnorm_training(hc_graph *g, hc_error *err);
/* Loop or Scan node n unrolled into g by the importer's body hook (src/passes/loop.c): the
 * new nodes are appended to g->nodes, inferred, and n's outputs bypassed to theirs;
 * *folded (malloc'ed, one flag per new node) marks those folded to constants. */
hc_status hc_pass_unroll(hc_graph *g, hc_node *n, char **folded, hc_error *err);
/* The most iterations one Loop or Scan unrolls, and the limit in force (the onnx fuzz
 * harness lowers it, as hc_rnn_max_steps). */
#define HC_LOOP_MAX_ITERATIONS 4096
extern int hc_loop_max_iterations;

/* The channel-blocked layout (docs/nchwc.md): eligible Convs become CONV_NCHWC between
 * reorders, which are then pushed through elementwise ops, channel Concats and pools and
 * cancelled where they meet. opt->nchwc_block <= 1: nothing. */
hc_status hc_pass_layout_nchwc(hc_graph *g, const hc_optimize_options *opt, hc_error *err);

/* The whole pipeline (opt NULL: defaults). */
hc_status hc_graph_optimize(hc_graph *g, hc_error *err);
hc_status hc_graph_optimize_with(hc_graph *g, const hc_optimize_options *opt, hc_error *err);

/* The reference graph evaluator (the oracle for passes, the runtime and model tests):
 * every node in order with the reference interpreter on its Task. The graph must be
 * shape-inferred. inputs[i] / outputs[i]: dense buffers for g->inputs / g->outputs. */
hc_status hc_graph_eval_reference(const hc_graph *g, void *const *inputs, void *const *outputs,
                                  hc_error *err);
/* Evaluate one node with the interpreter: in[] for its present inputs, out[] for its
 * present outputs (shapes as inferred). */
hc_status hc_eval_node(const hc_node *n, void *const *in, void *const *out, hc_error *err);
/* Structural checks (topological order, every read tensor available, shapes known, arity):
 * the verifier hc_graph_optimize runs after each pass when HIDETC_VERIFY=1. */
hc_status hc_graph_verify(const hc_graph *g, hc_error *err);

#endif
