/* graph.h — the graph IR (FlowGraph): tensors and operators.
 *
 * A graph owns an arena; tensors, nodes, attributes and constant data all live in it and
 * are freed together by hc_graph_free. Shapes are static (int64); a tensor is constant
 * when it has data. Nodes are kept in topological order (hc_graph_toposort restores it
 * after a pass adds nodes out of order).
 *
 * Operators are rows of the table in ops.h. Each operator is implemented by an
 * hc_op_def (src/graph/ops/<category>.c): shape/dtype inference and a Task (the computation
 * definition, src/task). How a target schedules an op is the target's business
 * (src/target/target.h, hc_template). */
#ifndef HC_GRAPH_H
#define HC_GRAPH_H

#include "graph/ops.h"
#include "graph/sym.h"
#include "ir/ir.h"
#include "task/task.h"

typedef struct hc_node hc_node;
typedef struct hc_graph hc_graph;

/* ---- tensors -------------------------------------------------------------------- */
typedef struct hc_tensor {
    const char *name;
    hc_dtype dtype;
    int ndim;
    int64_t shape[HC_MAX_DIMS];
    bool shape_known; /* false until inference has run for non-input tensors */
    void *data;       /* constant value, dense row-major in dtype; NULL if not constant */
    hc_node *producer;
    int id;           /* index in graph->tensors */
    /* A graph input's ONNX symbols: dim_names[d] the dim_param dimension d came from
     * (fixed at import by an override), NULL entries for the others; NULL: none. */
    const char **dim_names;
    /* Dynamic shapes (src/graph/sym.h, docs/dynamic.md). sym: per dimension, the
     * expression of a symbolic one (shape[d] then holds its value at the graph's hint
     * binding, for heuristics and checks) and NULL for a fixed one; NULL when no dimension
     * is symbolic. symval: a small integer tensor whose value is an expression of the
     * symbols (a shape computation: Shape, Gather, Concat of them), one expression per
     * element; its data stays NULL, for the value is no constant. NULL: none. */
    const hc_sym **sym;
    const hc_sym **symval;
    struct hc_graph *graph; /* the graph that made it (its arena holds the expressions) */
} hc_tensor;

int64_t hc_tensor_numel(const hc_tensor *t);
/* The largest tensor a graph may hold: 2^40 bytes (1 TiB), far above any model; more is
 * a corrupt or hostile model, refused before any element count can overflow. */
#define HC_MAX_TENSOR_BYTES ((int64_t)1 << 40)
/* Whether a tensor of this dtype and shape has more than HC_MAX_TENSOR_BYTES bytes
 * (element counts that overflow int64 included; negative dimensions count as too large). */
bool hc_shape_too_large(hc_dtype dtype, int ndim, const int64_t *shape);
size_t hc_tensor_nbytes(const hc_tensor *t);
/* Read a constant integer tensor (any integer dtype or bool) as int64 values; at most
 * max values. Returns the element count, or -1 when t is not a constant integer tensor. */
int64_t hc_tensor_const_ints(const hc_tensor *t, int64_t *out, int64_t max);
/* Read element i of a constant numeric tensor as a double. */
double hc_tensor_const_at(const hc_tensor *t, int64_t i);
void hc_print_shape(hc_sb *sb, int ndim, const int64_t *shape); /* [1, 3, 224, 224] */

/* ---- dynamic shapes (docs/dynamic.md) ------------------------------------------------ */
/* A relation between symbol expressions that an op needs (a Slice of a table of 1024
 * rows ending at `seq` needs seq <= 1024). */
typedef enum hc_symc_kind {
    HC_SYMC_EQ,      /* a == b */
    HC_SYMC_LE,      /* a <= b */
    HC_SYMC_BCAST,   /* b == a or b == 1: b broadcasts to a (the result is a) */
    HC_SYMC_DIVIDES, /* a mod b == 0 */
    HC_SYMC_NE,      /* a != b */
} hc_symc_kind;
typedef struct hc_sym_constraint {
    hc_symc_kind kind;
    const hc_sym *a, *b;
    const char *node; /* the node that imposes it */
    const char *what; /* what it is about: "input 1, dimension 2" */
} hc_sym_constraint;
/* Whether any dimension of t is symbolic. */
static inline bool hc_tensor_is_symbolic(const hc_tensor *t) { return t && t->sym; }
/* Whether dimension dx of x and dy of y are equal for every binding, and whether x and
 * y have equal element counts for every binding (their hint values for static ones). */
bool hc_tensor_dims_equal(const hc_tensor *x, int dx, const hc_tensor *y, int dy);
bool hc_tensor_numel_equal(const hc_tensor *x, const hc_tensor *y);
/* Element count and bytes of t as expressions of the symbols. */
const hc_sym *hc_tensor_numel_sym(hc_arena *a, const hc_tensor *t);
/* The bytes of t at binding b (its symbolic dims evaluated there); false when a dim cannot
 * be evaluated, or the size overflows or exceeds the tensor limit. */
bool hc_tensor_nbytes_at(const hc_tensor *t, const hc_sym_binding *b, size_t *out);
/* Dimension d of t as an expression (a constant when fixed), in t's graph's arena. */
const hc_sym *hc_tensor_dim(const hc_tensor *t, int d);
/* Element i of a shape-like tensor as an expression: its symval, or its constant value;
 * NULL when it is neither. */
const hc_sym *hc_tensor_value_sym(const hc_tensor *t, int64_t i);
/* Set t's shape from expressions (ndim of them): sym for the symbolic ones, shape[] their
 * values at the hint binding. false when one cannot be evaluated there (an expression of
 * an unknown symbol, a division by zero). */
bool hc_tensor_set_sym_shape(hc_tensor *t, int ndim, const hc_sym *const *dims);
/* "[batch, 3, 224, 224]": symbolic dimensions by their expressions. */
void hc_print_tensor_shape(hc_sb *sb, const hc_tensor *t);
/* The symbol `name` of g (added with this hint when new; an existing one keeps its
 * hint): the interned name. */
const char *hc_graph_symbol(hc_graph *g, const char *name, int64_t hint);
bool hc_graph_has_symbols(const hc_graph *g);
/* The hint binding of g's symbols (valid until a symbol is added). */
hc_sym_binding hc_graph_hint_binding(const hc_graph *g);
/* Record a constraint (deduplicated). One that is decidable now (both sides constant, or
 * equal) and false is an error naming the node; true ones are not kept. */
hc_status hc_graph_add_constraint(hc_graph *g, hc_symc_kind kind, const hc_sym *a,
                                  const hc_sym *b, const char *node, const char *what,
                                  hc_error *err);
/* Check every constraint of g under binding b; the first one broken is an error that names
 * its node, what it is about, the expressions and their values. */
hc_status hc_graph_check_binding(const hc_graph *g, const hc_sym_binding *b,
                                 hc_error *err);
/* Bind g's symbols from the shapes of some of its inputs (names[i] of rank ndims[i] and
 * dims shapes[i]): values[k] for symbol k (g->sym_names order), -1 where no given input
 * fixes it. Errors name the input, the dimension and what was expected: a wrong rank, a
 * fixed dimension of another size, a symbol given two values (`seq` is 7 from
 * input_ids but attention_mask's dimension 1 is 5), an expression dimension that does
 * not evaluate to the size given; then, when every symbol is bound, the constraints. An
 * input name g lacks is an error listing its inputs. */
hc_status hc_graph_bind_inputs(const hc_graph *g, int n, const char *const *names,
                               const int *ndims, const int64_t (*shapes)[HC_MAX_DIMS],
                               int64_t *values, hc_error *err);
/* "seq <= 1024" */
void hc_print_constraint(hc_sb *sb, const hc_sym_constraint *c);
/* Symbolic shape inference (src/graph/ops/sym_infer.c). Whether n reads a tensor with
 * symbolic dimensions or values; the op's own inference at the hint binding (symbolic
 * values attached as data for it); then the symbolic dims (and values) of n's outputs,
 * checked against the op's inference at the hint binding and at a second one. Errors name
 * the node: an op without a rule, an output size that depends on data. */
bool hc_node_reads_symbols(const hc_node *n);
hc_status hc_node_infer_concrete(hc_node *n, hc_error *err);
hc_status hc_node_infer_symbolic(hc_node *n, hc_error *err);

/* ---- attributes ------------------------------------------------------------------- */
typedef enum hc_attr_kind {
    HC_ATTR_INT,
    HC_ATTR_FLOAT,
    HC_ATTR_STRING,
    HC_ATTR_TENSOR,
    HC_ATTR_INTS,
    HC_ATTR_FLOATS,
    HC_ATTR_STRINGS,
} hc_attr_kind;

typedef struct hc_attr {
    const char *name;
    hc_attr_kind kind;
    int64_t i;
    double f;
    const char *s;
    hc_tensor *t; /* TENSOR: a constant tensor not in graph->tensors */
    int n;        /* INTS/FLOATS/STRINGS */
    int64_t *ints;
    double *floats;
    const char **strings;
} hc_attr;

/* ---- nodes ------------------------------------------------------------------------ */
struct hc_node {
    hc_op_kind op;
    const char *name; /* unique in the graph (importers make one up when missing) */
    int ninputs;
    hc_tensor **inputs; /* NULL entries: omitted optional inputs */
    int noutputs;
    hc_tensor **outputs; /* NULL entries: omitted optional outputs */
    int nattrs;
    hc_attr *attrs;
    int opset; /* the opset version of the node's domain (semantics differ by version) */
};

const hc_attr *hc_node_attr(const hc_node *n, const char *name);
int64_t hc_node_attr_int(const hc_node *n, const char *name, int64_t dflt);
double hc_node_attr_float(const hc_node *n, const char *name, double dflt);
const char *hc_node_attr_string(const hc_node *n, const char *name, const char *dflt);
/* INTS attribute: count written to *n (0 and NULL when absent). */
const int64_t *hc_node_attr_ints(const hc_node *n, const char *name, int *count);
const double *hc_node_attr_floats(const hc_node *n, const char *name, int *count);
/* Number of present (non-NULL) inputs / outputs. */
int hc_node_num_present_inputs(const hc_node *n);

/* ---- graphs ----------------------------------------------------------------------- */
struct hc_graph {
    hc_arena arena;
    const char *name;
    int opset; /* default-domain opset of the model */
    HC_VEC(hc_tensor *) tensors;
    HC_VEC(hc_node *) nodes; /* topological order */
    HC_VEC(hc_tensor *) inputs;  /* non-constant graph inputs */
    HC_VEC(hc_tensor *) outputs;
    /* Every name hc_graph_add_node gave a node (removed nodes' too): a miss there is a
     * name no node has, so unique names cost no scan of the nodes (100k-node models). */
    struct hc_name_set *node_names;
    /* Dynamic shapes: the symbols (names interned in the arena) and their hint values,
     * the binding at which shape[] of symbolic tensors is computed; the constraints that
     * ops impose on the symbols, checked for every binding (hc_graph_check_binding). */
    HC_VEC(const char *) sym_names;
    HC_VEC(int64_t) sym_hints;
    HC_VEC(struct hc_sym_constraint) constraints;
    /* Loop and Scan bodies (hc_inline_body_fn, below): the importer's hook; NULL: none */
    hc_status (*inline_body)(hc_graph *g, const hc_node *n, const char *prefix, int nformal,
                             hc_tensor *const *formal, int nout, hc_tensor **outs,
                             hc_error *err);
};

hc_graph *hc_graph_new(const char *name, int opset);
/* Loop and Scan bodies: the importer keeps a node's body (attribute "body", a u8 tensor of
 * the format's bytes; "captures": the outer values it reads, the node's inputs after the
 * first `num_formal`) and sets g->inline_body, which imports the body once into g with
 * its formal inputs bound to `formal` (values and nodes named after `prefix`) and returns
 * its outputs: the lowering of shape inference (src/passes/loop.c) calls it per iteration. */
typedef hc_status (*hc_inline_body_fn)(hc_graph *g, const hc_node *n, const char *prefix,
                                       int nformal, hc_tensor *const *formal, int nout,
                                       hc_tensor **outs, hc_error *err);
void hc_graph_free(hc_graph *g);
/* A new tensor (name NULL: a fresh unique name). Shape may be NULL (unknown yet). */
hc_tensor *hc_graph_tensor(hc_graph *g, const char *name, hc_dtype dtype, int ndim,
                           const int64_t *shape);
/* A constant tensor; data is copied into the graph (data NULL: zero-filled). */
hc_tensor *hc_graph_constant(hc_graph *g, const char *name, hc_dtype dtype, int ndim,
                             const int64_t *shape, const void *data);
hc_tensor *hc_graph_add_input(hc_graph *g, const char *name, hc_dtype dtype, int ndim,
                              const int64_t *shape);
void hc_graph_add_output(hc_graph *g, hc_tensor *t);
/* Append a node; outputs are created (unknown shape) when outputs == NULL. Arity is
 * checked against the op table (error names the node). Attributes are copied. */
hc_node *hc_graph_add_node(hc_graph *g, hc_op_kind op, const char *name, int ninputs,
                           hc_tensor *const *inputs, int noutputs, hc_tensor *const *outputs,
                           int nattrs, const hc_attr *attrs, hc_error *err);
hc_tensor *hc_graph_find_tensor(const hc_graph *g, const char *name);
/* Restore topological order; error on a cycle or a tensor consumed before any producer. */
hc_status hc_graph_toposort(hc_graph *g, hc_error *err);
/* Drop nodes whose outputs are not used by any node or graph output. */
void hc_graph_remove_dead(hc_graph *g);
/* Replace every use of `from` (node inputs and graph outputs) by `to`. */
void hc_graph_replace_uses(hc_graph *g, hc_tensor *from, hc_tensor *to);
/* Number of nodes reading t (each input slot counts). */
int hc_graph_num_uses(const hc_graph *g, const hc_tensor *t);
/* The node that reads t, where it is t's only use (one input slot of one node); NULL
 * otherwise. A graph output is not a node: callers that care check it themselves. */
hc_node *hc_graph_sole_reader(const hc_graph *g, const hc_tensor *t);

/* Printing: one line per node "%y = Conv(%x, %w) {strides=[1, 1], ...}  # [1, 64, 56, 56] f32" */
void hc_graph_print(hc_sb *sb, const hc_graph *g);
/* Graphviz DOT */
void hc_graph_dot(hc_sb *sb, const hc_graph *g);

/* ---- operator definitions ----------------------------------------------------------- */
/* The op table, derived from ops.h. */
const char *hc_op_name(hc_op_kind op);      /* "CONV" */
const char *hc_op_onnx_name(hc_op_kind op); /* "Conv" ("" for internal ops) */
hc_op_class hc_op_class_of(hc_op_kind op);
/* Reshape, Flatten, Squeeze, Unsqueeze: a new shape over the same row-major elements. */
bool hc_op_is_reshape_like(hc_op_kind op);
int hc_op_min_inputs(hc_op_kind op), hc_op_max_inputs(hc_op_kind op);
int hc_op_min_outputs(hc_op_kind op), hc_op_max_outputs(hc_op_kind op);
/* ONNX op_type -> kind; HC_OPK_COUNT when unknown. */
hc_op_kind hc_op_from_onnx(const char *op_type);

typedef struct hc_op_def {
    hc_op_kind op;
    /* Set dtype and shape of every present output from the inputs (and constant input
     * data where the op needs it, e.g. Reshape's shape). Errors name the node. */
    hc_status (*infer)(hc_node *n, hc_error *err);
    /* The computation definition: task inputs are the node's present inputs in order,
     * task outputs the node's present outputs in order (shapes as inferred). */
    hc_task *(*task)(hc_arena *a, const hc_node *n, hc_error *err);
} hc_op_def;

/* The definition of an op, or NULL when it is not implemented (unsupported). */
const hc_op_def *hc_op_get(hc_op_kind op);

/* Category tables (src/graph/ops/<category>.c), each ended by an entry with infer ==
 * NULL. */
extern const hc_op_def hc_ops_nn[];      /* conv, norms, matmul family, softmax, pooling */
extern const hc_op_def hc_ops_math[];    /* activations, elementwise, logic, reductions */
extern const hc_op_def hc_ops_shape[];   /* shape, data movement, constants */
extern const hc_op_def hc_ops_internal[]; /* ops made by passes (Im2Col) */
extern const hc_op_def hc_ops_nchwc[];   /* the channel-blocked layout (layout pass) */

/* Helpers for op implementations. */
/* tensor_input tnodes for each present input of n, in order (count in *count). */
hc_tnode **hc_node_input_tnodes(hc_arena *a, const hc_node *n, int *count);
/* Whether hc_node_input_tnodes gives the symbolic dims of symbolic tensors (the default)
 * or only their values (on: a static Task at the tensors' present shapes, for checking
 * the symbolic one); returns the previous setting. Per thread. */
bool hc_node_tnodes_static(bool on);
/* Output i's symbolic dims for a Task builder (NULL when static, or under
 * hc_node_tnodes_static). */
const hc_sym *const *hc_node_output_sym(const hc_node *n, int i);
/* A task named after the node from input tnodes and the output tnodes. */
hc_task *hc_node_task(hc_arena *a, const hc_node *n, int ninputs, hc_tnode *const *inputs,
                      int noutputs, hc_tnode *const *outputs);
/* Set output i's dtype and shape. */
void hc_node_set_output(hc_node *n, int i, hc_dtype dtype, int ndim, const int64_t *shape);
/* Normalize a possibly negative axis against rank; error names the node when out of
 * range. */
hc_status hc_node_axis(const hc_node *n, int64_t axis, int rank, int *out, hc_error *err);
/* For infer functions that need input i's value at compile time (shapes, axes, pads):
 * when it is not constant, returns HC_ERR_UNSUPPORTED with a message naming the node and
 * input, and records the input tensor's name (thread-local) so that a caller that knows
 * the value (the ONNX test runner) can bind it as a constant and retry. */
hc_status hc_node_need_const(const hc_node *n, int i, hc_error *err);
/* Bad input or an unsupported case in node n: the message is
 * "node 'NAME' (OpType): <formatted text>". Returns st. */
hc_status hc_node_fail(const hc_node *n, hc_status st, hc_error *err, const char *fmt, ...)
    HC_PRINTF(4, 5);
const char *hc_last_need_const(void); /* NULL after hc_clear_need_const */
void hc_clear_need_const(void);

#endif
