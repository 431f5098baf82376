/* budget.c — the memory budget of a compile (hc_compile_options.max_memory, the CLI's
 * --max-memory): what one run of the planned model holds at once, the arena of
 * intermediate tensors, every constant a kernel or an output copy reads, and the graph's
 * inputs and outputs, against the budget; over it, an error that names the largest
 * tensor, before any of it is allocated or any kernel compiled. */
#include "runtime/runtime_internal.h"

typedef struct tally {
    size_t total;
    const char *kind, *name;
    size_t largest;
} tally;

static void add(tally *t, const char *kind, const char *name, size_t bytes) {
    t->total = bytes > SIZE_MAX - t->total ? SIZE_MAX : t->total + bytes;
    if (bytes > t->largest) t->largest = bytes, t->kind = kind, t->name = name;
}

hc_status hc_rt_check_budget(const hc_model *m, hc_error *err) {
    size_t budget = m->opt.max_memory;
    if (!budget) return HC_OK;
    tally t = {0};
    size_t consts = 0, io = 0;
    bool *seen = hc_xcalloc(m->g->tensors.len + 1, 1);
    for (size_t i = 0; i < m->kernels.len; i++) {
        const hc_group *grp = &m->kernels.data[i].group;
        for (int j = 0; j < grp->ninputs; j++) {
            const hc_tensor *x = grp->inputs[j];
            if (!x || !x->data) continue;
            /* constants made by passes may lie outside the tensor list: count by id only
             * where the id names this very tensor */
            bool listed = x->id >= 0 && (size_t)x->id < m->g->tensors.len &&
                          m->g->tensors.data[x->id] == x;
            if (listed && seen[x->id]) continue;
            if (listed) seen[x->id] = true;
            add(&t, "constant", x->name, hc_tensor_nbytes(x));
            consts += hc_tensor_nbytes(x);
        }
    }
    free(seen);
    for (size_t i = 0; i < m->copies.len; i++)
        if (m->copies.data[i].src == COPY_CONST) {
            const hc_tensor *y = m->g->outputs.data[m->copies.data[i].output];
            add(&t, "constant copied to output", y->name, m->copies.data[i].bytes);
            consts += m->copies.data[i].bytes;
        }
    for (size_t i = 0; i < m->g->inputs.len; i++) {
        add(&t, "input", m->g->inputs.data[i]->name, hc_tensor_nbytes(m->g->inputs.data[i]));
        io += hc_tensor_nbytes(m->g->inputs.data[i]);
    }
    for (size_t i = 0; i < m->g->outputs.len; i++) {
        add(&t, "output", m->g->outputs.data[i]->name, hc_tensor_nbytes(m->g->outputs.data[i]));
        io += hc_tensor_nbytes(m->g->outputs.data[i]);
    }
    /* the arena: its size counts; its largest entry competes for "the largest" */
    t.total = m->arena_bytes > SIZE_MAX - t.total ? SIZE_MAX : t.total + m->arena_bytes;
    for (size_t i = 0; i < m->plan.len; i++)
        if (m->plan.data[i].bytes > t.largest)
            t.largest = m->plan.data[i].bytes, t.kind = "intermediate",
            t.name = m->plan.data[i].tensor->name;
    if (t.total <= budget) return HC_OK;
    return hc_error_set(err, HC_ERR_NOMEM,
                        "the compiled model needs %zu bytes, more than --max-memory %zu "
                        "(arena %zu, constants %zu, inputs and outputs %zu); the largest: "
                        "%s '%.200s' (%zu bytes)", t.total, budget, m->arena_bytes, consts, io,
                        t.kind ? t.kind : "none", t.name ? t.name : "", t.largest);
}
