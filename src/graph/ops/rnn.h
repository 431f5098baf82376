/* rnn.h — the ONNX recurrent operators RNN, GRU and LSTM (versions 7, 14, 22): what a
 * node asks for, read and checked once (src/graph/ops/nn_rnn.c) and shared by shape
 * inference and the pass that unrolls the recurrence (src/passes/rnn.c). */
#ifndef HC_RNN_H
#define HC_RNN_H

#include "graph/graph.h"

#define HC_RNN_MAX_ACTS 3 /* f, g, h (LSTM) */
/* The most time steps (sequence length x directions) one RNN, GRU or LSTM node unrolls,
 * and the limit in force (the onnx fuzz harness lowers it: unrolling is linear, but
 * thousands of steps under ASan take longer than its timeout). */
#define HC_RNN_MAX_STEPS 8192
extern int hc_rnn_max_steps;

typedef struct hc_rnn_spec {
    int gates;       /* 1 (RNN), 3 (GRU: z r h), 4 (LSTM: i o f c) */
    int ndir;        /* 1 or 2 (bidirectional) */
    bool reverse;    /* direction "reverse" (ndir 1) */
    int layout;      /* 0: X [seq, batch, input]; 1: [batch, seq, input] */
    int64_t seq, batch, input, hidden;
    int nact;        /* activations per direction: 1, 2 or 3 */
    hc_op_kind act[2][HC_RNN_MAX_ACTS]; /* per direction */
    bool has_clip;
    double clip;
    bool linear_before_reset; /* GRU */
} hc_rnn_spec;

/* Inputs: X W R [B sequence_lens initial_h initial_c P] (initial_c, P: LSTM only). */
enum { HC_RNN_X, HC_RNN_W, HC_RNN_R, HC_RNN_B, HC_RNN_SEQ_LENS, HC_RNN_INIT_H, HC_RNN_INIT_C,
       HC_RNN_P };

/* Read and check node n (an RNN, GRU or LSTM whose inputs have known shapes): attributes,
 * input shapes and dtypes. What hidetc does not implement (sequence_lens below seq_length,
 * input_forget, activation_alpha/beta, activations other than the list in nn_rnn.c) is
 * refused with HC_ERR_UNSUPPORTED naming the node. */
hc_status hc_rnn_parse(const hc_node *n, hc_rnn_spec *s, hc_error *err);
bool hc_op_is_recurrent(hc_op_kind op);

#endif
