/* hidetc inspect MODEL [--dot FILE] [--fusion] [--tune-space] [--no-fusion] [--threads T]
 * — what a model is, without compiling it.
 *
 * Output (relied on by scripts):
 *   model: NAME (opset N)
 *   inputs:            then "  NAME: DTYPE [SHAPE]" per input
 *   outputs:           the same per output (shapes after shape inference)
 *   ops: N nodes       then "  OpType COUNT" per operator, most frequent first
 *   parameters: P      elements of the constant float tensors the nodes read (weights;
 *                      BatchNorm running statistics excluded)
 *   flops: F (...)     an estimate from the operators' Tasks, see count_flops
 * --dot FILE writes the graph (after shape inference) in Graphviz DOT.
 * --fusion schedules the model (no code generation) and lists its kernels:
 *   "kernel I: OP 'anchor' | prologue: OP 'name' ... | epilogue: ... | unfused: WHY",
 *   then "kernels: N" (the kernels one run launches).
 * --tune-space lists, per distinct templated task, its schedule-space size per level:
 *   "task OP 'anchor' (K kernels): level0 1 level1 A level2 B", then
 *   "tune-space: T tasks; candidates: level0 X level1 Y level2 Z". */
#include <string.h>

#include "cli.h"
#include "model_load.h"
#include "fuse/fuse.h"
#include "passes/passes.h"

typedef struct inspect_args {
    const char *model, *dot;
    bool fusion, tune_space;
    long threads;
    hc_compile_options co;
} inspect_args;

static void usage(FILE *f) {
    fprintf(f, "usage: hidetc inspect MODEL [--dot FILE] [--fusion] [--tune-space] "
               "[--no-fusion] [--threads T]\n"
               "  MODEL: an ONNX file or builtin:NAME\n"
               "  --fusion: the fused kernels; --tune-space: schedule-space sizes per level\n");
}

static int parse_args(int argc, char **argv, inspect_args *r) {
    memset(r, 0, sizeof *r);
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) return usage(stdout), -1;
        int co = cli_compile_option("inspect", o, val, &r->co);
        if (co < 0) return 2;
        if (co) {
            i += co - 1;
            continue;
        }
        if (!strcmp(o, "--fusion")) r->fusion = true;
        else if (!strcmp(o, "--tune-space")) r->tune_space = true;
        else if (!strcmp(o, "--threads")) {
            if (!cli_parse_int("inspect", o, val, 1, 1024, &r->threads)) return 2;
            i++;
        } else if (!strcmp(o, "--dot")) {
            if (!val) return fprintf(stderr, "hidetc inspect: --dot needs a file name\n"), 2;
            r->dot = val, i++;
        } else if (o[0] == '-' && o[1]) {
            fprintf(stderr, "hidetc inspect: unknown option '%s'\n", o);
            return usage(stderr), 2;
        } else if (r->model) {
            fprintf(stderr, "hidetc inspect: more than one MODEL ('%s', '%s')\n", r->model, o);
            return 2;
        } else r->model = o;
    }
    if (!r->model) return usage(stderr), 2;
    return 0;
}

static void print_tensors(const char *title, hc_tensor *const *ts, size_t n) {
    printf("%s:\n", title);
    for (size_t i = 0; i < n; i++) {
        hc_sb sb;
        hc_sb_init(&sb);
        if (ts[i]->shape_known || ts[i]->data || ts[i]->ndim)
            hc_print_tensor_shape(&sb, ts[i]);
        else hc_sb_puts(&sb, "[?]");
        printf("  %s: %s %s\n", ts[i]->name, hc_dtype_name(ts[i]->dtype), hc_sb_str(&sb));
        hc_sb_free(&sb);
    }
}

/* "symbols: batch (hint 16), seq (hint 24)", then the constraints ops put on them. */
static void print_symbols(const hc_graph *g) {
    printf("symbols:");
    for (size_t i = 0; i < g->sym_names.len; i++) {
        hc_sb sb;
        hc_sb_init(&sb);
        hc_sym_print_name(&sb, g->sym_names.data[i]);
        printf("%s %s (hint %lld)", i ? "," : "", hc_sb_str(&sb),
               (long long)g->sym_hints.data[i]);
        hc_sb_free(&sb);
    }
    printf("\n");
    if (!g->constraints.len) return;
    printf("constraints:\n");
    for (size_t i = 0; i < g->constraints.len; i++) {
        hc_sb sb;
        hc_sb_init(&sb);
        hc_print_constraint(&sb, &g->constraints.data[i]);
        printf("  %s  (node '%s': %s)\n", hc_sb_str(&sb), g->constraints.data[i].node,
               g->constraints.data[i].what);
        hc_sb_free(&sb);
    }
}

/* ---- op histogram and parameters ------------------------------------------------- */
static const char *op_label(hc_op_kind op) {
    const char *s = hc_op_onnx_name(op);
    return s[0] ? s : hc_op_name(op);
}

/* Counted before shape inference, which may fold nodes away: the model as written. */
static void count_ops(const hc_graph *g, int *count) {
    for (int k = 0; k < HC_OPK_COUNT; k++) count[k] = 0;
    for (size_t i = 0; i < g->nodes.len; i++) count[g->nodes.data[i]->op]++;
}

static void print_histogram(int *count, size_t nnodes) {
    printf("ops: %zu nodes\n", nnodes);
    for (;;) { /* most frequent first; ties in table order */
        int best = -1;
        for (int k = 0; k < HC_OPK_COUNT; k++)
            if (count[k] && (best < 0 || count[k] > count[best])) best = k;
        if (best < 0) break;
        printf("  %s %d\n", op_label((hc_op_kind)best), count[best]);
        count[best] = 0;
    }
}

/* BatchNormalization's running mean and variance (inputs 3 and 4) are statistics, not
 * trained weights: frameworks do not count them as parameters either. */
static bool is_statistic_use(const hc_node *n, int input) {
    return n->op == HC_OPK_BATCH_NORMALIZATION && (input == 3 || input == 4);
}

static int64_t count_parameters(const hc_graph *g) {
    bool *weight = hc_xcalloc(g->tensors.len + 1, sizeof(bool));
    for (size_t i = 0; i < g->nodes.len; i++) {
        const hc_node *n = g->nodes.data[i];
        for (int k = 0; k < n->ninputs; k++)
            if (n->inputs[k] && !is_statistic_use(n, k)) weight[n->inputs[k]->id] = true;
    }
    int64_t count = 0;
    for (size_t i = 0; i < g->tensors.len; i++) {
        const hc_tensor *t = g->tensors.data[i];
        if (t->data && hc_dtype_is_float(t->dtype) && weight[t->id]) count += hc_tensor_numel(t);
    }
    free(weight);
    return count;
}

/* ---- FLOPs ----------------------------------------------------------------------- */
/* Children that compute values (a tensor access's indices only address data). */
static int value_children(const hc_expr *e, const hc_expr **out) {
    switch (e->kind) {
    case HC_E_BINARY: out[0] = e->u.bin.a, out[1] = e->u.bin.b; return 2;
    case HC_E_UNARY: out[0] = e->u.un.a; return 1;
    case HC_E_SELECT: out[0] = e->u.sel.cond, out[1] = e->u.sel.t, out[2] = e->u.sel.f; return 3;
    case HC_E_CAST: out[0] = e->u.cast.a; return 1;
    case HC_E_CALL:
        for (int i = 0; i < e->u.call.nargs && i < 3; i++) out[i] = e->u.call.args[i];
        return HC_MIN(e->u.call.nargs, 3);
    case HC_E_REDUCE: out[0] = e->u.reduce.value; return 1;
    default: return 0;
    }
}

/* Iterations of reductions per output element (nested reductions multiply). */
static double reduce_work(const hc_expr *e) {
    const hc_expr *c[3];
    int n = value_children(e, c);
    double w = 0;
    for (int i = 0; i < n; i++) w += reduce_work(c[i]);
    if (e->kind != HC_E_REDUCE) return w;
    double ext = 1;
    for (int i = 0; i < e->u.reduce.naxes; i++) ext *= (double)e->u.reduce.extents[i];
    return ext * (w > 0 ? w : 1);
}

static bool does_arithmetic(const hc_expr *e) {
    if (e->kind == HC_E_BINARY || e->kind == HC_E_UNARY || e->kind == HC_E_CALL ||
        e->kind == HC_E_CAST || e->kind == HC_E_SELECT)
        return true;
    const hc_expr *c[3];
    int n = value_children(e, c);
    for (int i = 0; i < n; i++)
        if (does_arithmetic(c[i])) return true;
    return false;
}

/* The estimate: 2 FLOPs per iteration of a reduction (a multiply-add) per output
 * element, 1 per element for elementwise arithmetic, 0 for data movement (transpose,
 * reshape, gather, ...), summed over the compute nodes of each node's Task. */
static double task_flops(hc_arena *a, const hc_task *t) {
    int n;
    hc_tnode **nodes = hc_task_compute_nodes(a, t, &n);
    double f = 0;
    for (int i = 0; i < n; i++) {
        double numel = (double)hc_tnode_numel(nodes[i]);
        double w = reduce_work(nodes[i]->value);
        if (w > 0) f += 2 * numel * w;
        else if (does_arithmetic(nodes[i]->value)) f += numel;
    }
    return f;
}

static bool all_outputs_constant(const hc_node *n) {
    for (int i = 0; i < n->noutputs; i++)
        if (n->outputs[i] && !n->outputs[i]->data) return false;
    return true;
}

static double count_flops(const hc_graph *g, int *skipped) {
    hc_arena a;
    hc_arena_init(&a);
    double f = 0;
    *skipped = 0;
    for (size_t i = 0; i < g->nodes.len; i++) {
        const hc_node *n = g->nodes.data[i];
        const hc_op_def *def = hc_op_get(n->op);
        if (all_outputs_constant(n)) continue;
        hc_error err = {0};
        hc_task *t = def && def->task ? def->task(&a, n, &err) : NULL;
        if (t) f += task_flops(&a, t);
        else (*skipped)++;
    }
    hc_arena_free(&a);
    return f;
}

static int write_dot(const char *path, const hc_graph *g) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_graph_dot(&sb, g);
    hc_error err = {0};
    hc_status st = hc_write_file(path, sb.buf ? sb.buf : "", sb.len, &err);
    hc_sb_free(&sb);
    if (st != HC_OK) fprintf(stderr, "hidetc inspect: %s\n", err.msg);
    else printf("wrote %s\n", path);
    return st == HC_OK ? 0 : 1;
}

static void print_fusion(const hc_model *m) {
    int n = hc_model_num_kernels(m);
    for (int i = 0; i < n; i++) {
        hc_sb sb;
        hc_sb_init(&sb);
        hc_group_print(&sb, hc_model_kernel_group(m, i));
        const hc_group *g = hc_model_kernel_group(m, i);
        printf("kernel %d: %s%s", i, hc_sb_str(&sb),
               hc_model_kernel_templated(m, i) ? " [template]" : "");
        unsigned pre = hc_model_kernel_prepacked(m, i);
        for (int j = 0; pre && j < g->anchor->ninputs; j++)
            if (pre & (1u << j)) printf(" [prepacked '%s']", g->anchor->inputs[j]->name);
        printf("\n");
        hc_sb_free(&sb);
    }
    printf("kernels: %d\n", n);
}

static void print_tune_space(const hc_model *m, int threads) {
    hc_target t = *hc_model_target(m);
    if (threads > 0) t.caps.num_cores = threads;
    int n = hc_model_num_kernels(m), np = hc_model_num_programs(m);
    int *uses = calloc((size_t)np + 1, sizeof(int)), *first = calloc((size_t)np + 1, sizeof(int));
    for (int p = 0; p < np; p++) first[p] = -1;
    for (int i = 0; i < n; i++) {
        int p = hc_model_kernel_program(m, i);
        if (first[p] < 0) first[p] = i;
        uses[p]++;
    }
    long total[3] = {0, 0, 0};
    int tasks = 0;
    for (int p = 0; p < np; p++) {
        int i = first[p];
        if (i < 0 || !hc_model_kernel_templated(m, i)) continue;
        const hc_node *a = hc_model_kernel_node(m, i);
        const hc_template *def = hc_target_template(&t, a->op);
        if (!def || !def->space) continue;
        int c[3];
        for (int l = 0; l < 3; l++) c[l] = def->space(a, &t, l), total[l] += c[l];
        tasks++;
        printf("task %s '%s' (%d kernel%s): level0 %d level1 %d level2 %d\n", op_label(a->op),
               a->name, uses[p], uses[p] == 1 ? "" : "s", c[0], c[1], c[2]);
    }
    printf("tune-space: %d tasks; candidates: level0 %ld level1 %ld level2 %ld\n", tasks,
           total[0], total[1], total[2]);
    free(uses), free(first);
}

/* Schedule (no code generation) and report fusion and/or schedule spaces. */
static int inspect_schedule(const inspect_args *r) {
    hc_error err = {0};
    hc_graph *g;
    if (cli_load_model(r->model, &g, &err) != HC_OK) {
        fprintf(stderr, "hidetc inspect: %s\n", err.msg);
        return 1;
    }
    hc_compile_options opt = r->co;
    opt.num_threads = (int)r->threads;
    opt.schedule_only = true;
    opt.tune_level = 0;
    hc_model *m;
    if (hc_model_compile(g, &opt, &m, &err) != HC_OK) {
        fprintf(stderr, "hidetc inspect: %s\n", err.msg);
        return 1;
    }
    if (r->fusion) print_fusion(m);
    if (r->tune_space) print_tune_space(m, (int)r->threads);
    hc_model_free(m);
    return 0;
}

int cmd_inspect(int argc, char **argv) {
    inspect_args r;
    int rc = parse_args(argc, argv, &r);
    if (rc) return rc < 0 ? 0 : rc;
    hc_error err = {0};
    hc_graph *g;
    if (cli_load_model_symbolic(r.model, &g, &err) != HC_OK) {
        fprintf(stderr, "hidetc inspect: %s\n", err.msg);
        return 1;
    }
    printf("model: %s (opset %d)\n", g->name ? g->name : "", g->opset);
    int64_t params = count_parameters(g);
    int count[HC_OPK_COUNT];
    count_ops(g, count);
    size_t nnodes = g->nodes.len;
    if (hc_pass_infer_shapes(g, &err) != HC_OK) {
        fprintf(stderr, "hidetc inspect: %s\n", err.msg);
        hc_graph_free(g);
        return 1;
    }
    print_tensors("inputs", g->inputs.data, g->inputs.len);
    print_tensors("outputs", g->outputs.data, g->outputs.len);
    bool symbolic = hc_graph_has_symbols(g);
    if (symbolic) print_symbols(g);
    print_histogram(count, nnodes);
    printf("parameters: %lld\n", (long long)params);
    int skipped;
    double flops = count_flops(g, &skipped);
    printf("flops: %.0f (%.3g GFLOPs; estimated from the operators' Tasks: 2 per reduction "
           "step, 1 per element of elementwise arithmetic, 0 for data movement",
           flops, flops / 1e9);
    if (skipped) printf("; %d nodes without a Task not counted", skipped);
    if (symbolic) printf("; at the symbols' hint values");
    printf(")\n");
    if (r.dot) rc = write_dot(r.dot, g);
    hc_graph_free(g);
    if (!rc && symbolic && (r.fusion || r.tune_space || r.co.dump_stage)) {
        fprintf(stderr, "hidetc inspect: --fusion, --tune-space and --dump-ir schedule the "
                "model, and kernels are built for fixed shapes only: fix the symbols with "
                "--dim NAME=N or --shape INPUT=D0,D1,... (docs/dynamic.md)\n");
        return 1;
    }
    if (!rc && (r.fusion || r.tune_space || r.co.dump_stage)) rc = inspect_schedule(&r);
    return rc;
}
