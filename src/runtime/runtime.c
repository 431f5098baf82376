/* runtime.c — a compiled model: the locations of its tensors and the memory plan, the
 * argument arrays of its kernels, and running it through its target's executor. The
 * compile pipeline that makes one is src/compile/compile.c.
 *
 * Every tensor a kernel touches has a location decided at compile time: the caller's
 * input or output buffer, a constant's data, an offset in the arena, or (empty tensors)
 * a dummy. The argument arrays of all kernels are prepared once; a run only writes the
 * caller's buffer pointers into their slots, so it allocates nothing. */
#include <math.h>
#include <string.h>

#include "fuse/fuse.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "runtime/runtime_internal.h"

/* Empty tensors point here: kernels never dereference them, but NULL would upset
 * kernels that compute addresses up front. */
static _Alignas(64) char empty_buffer[64];

struct sym_plan;
static void sym_plan_free(struct sym_plan *p);


/* ---- locations ------------------------------------------------------------------- */
static hc_status locate_outputs(hc_model *m, hc_error *err) {
    hc_graph *g = m->g;
    for (size_t i = 0; i < g->outputs.len; i++) {
        hc_tensor *t = g->outputs.data[i];
        out_copy c = {.output = (int)i, .bytes = hc_tensor_nbytes(t)};
        if (hc_rt_is_empty(t)) continue;
        loc *l = &m->locs[t->id];
        if (l->kind == LOC_INPUT) c.src = COPY_INPUT, c.index = l->index;
        else if (l->kind == LOC_OUTPUT) c.src = COPY_OUTPUT, c.index = l->index;
        else if (hc_rt_is_const(t)) c.src = COPY_CONST, c.data = t->data;
        else if (!t->producer)
            return hc_error_set(err, HC_ERR_INVALID,
                                "graph output '%s' has no producer and is not an input", t->name);
        else {
            *l = (loc){LOC_OUTPUT, (int)i};
            continue;
        }
        hc_vec_push(&m->copies, c);
    }
    return HC_OK;
}

static void locate_graph_inputs(hc_model *m) {
    for (size_t i = 0; i < m->g->inputs.len; i++) {
        hc_tensor *t = m->g->inputs.data[i];
        m->locs[t->id] = hc_rt_is_empty(t) ? (loc){LOC_EMPTY, 0} : (loc){LOC_INPUT, (int)i};
    }
}

/* A node runs as a kernel unless all its outputs are constant (folded) or empty. */
hc_status hc_rt_node_needs_kernel(const hc_node *n, bool *out, hc_error *err) {
    int nconst = 0, nempty = 0, npresent = 0;
    for (int i = 0; i < n->noutputs; i++) {
        const hc_tensor *t = n->outputs[i];
        if (!t) continue;
        npresent++;
        if (hc_rt_is_const(t)) nconst++;
        else if (hc_rt_is_empty(t)) nempty++;
    }
    if (nconst && nconst != npresent)
        return hc_error_set(err, HC_ERR_UNSUPPORTED,
                            "node '%s': some outputs are constant and others are not", n->name);
    *out = npresent && nconst + nempty < npresent;
    return HC_OK;
}

/* A plan entry for t, live at kernel k. A slice of an in-place Concat's output lies inside
 * the entry of the outermost such output (the root of a chain of nested Concats), which is
 * made when its first slice is written and lives as long as any of its slices. */
static void add_entry(hc_model *m, const hc_tensor *t, int k) {
    hc_plan_entry e = {.tensor = t, .bytes = hc_tensor_nbytes(t), .first = k, .last = k,
                       .alias_of = -1};
    if (t->sym)
        e.sym_bytes = hc_sym_mul_c(&m->arena, hc_tensor_numel_sym(&m->arena, t),
                                   hc_dtype_size(t->dtype));
    if (m->alias_parent && m->alias_parent[t->id]) {
        size_t delta = 0;
        const hc_tensor *r = t;
        for (; m->alias_parent[r->id]; r = m->alias_parent[r->id]) delta += m->alias_delta[r->id];
        loc *rl = &m->locs[r->id];
        if (rl->kind == LOC_NONE) add_entry(m, r, k);
        HC_ASSERT(rl->kind == LOC_ARENA);
        m->plan.data[rl->index].last = k;
        e.alias_of = rl->index;
        e.offset = delta; /* from the root's offset, which plan_memory adds */
    }
    m->locs[t->id] = (loc){LOC_ARENA, (int)m->plan.len};
    hc_vec_push(&m->plan, e);
}

/* Give the outputs of kernel k arena places, and extend the live ranges of its inputs. */
static hc_status locate_kernel(hc_model *m, const hc_group *grp, int k, hc_error *err) {
    const hc_node *n = grp->anchor;
    const kernel *kk = &m->kernels.data[k];
    bool alternative = kk->nalt && kk->alt != k; /* writes what the set's first entry wrote */
    for (int i = 0; i < grp->ninputs; i++) {
        const hc_tensor *t = grp->inputs[i];
        loc *l = &m->locs[t->id];
        if (l->kind == LOC_NONE) {
            if (hc_rt_is_empty(t)) *l = (loc){LOC_EMPTY, 0};
            else if (hc_rt_is_const(t)) *l = (loc){LOC_CONST, 0};
            else if (m->alias_parent && m->alias_parent[t->id] && t->producer &&
                     t->producer->op == HC_OPK_CONCAT)
                add_entry(m, t, k); /* a nested in-place Concat's output: no kernel wrote
                                     * it, its slices are in place already */
            else
                return hc_error_set(err, HC_ERR_INVALID,
                                    "node '%s' reads '%s', which is not an input, a constant "
                                    "or computed earlier", n->name, t->name);
        }
        if (l->kind == LOC_ARENA) {
            hc_plan_entry *e = &m->plan.data[l->index];
            e->last = k;
            if (e->alias_of >= 0) m->plan.data[e->alias_of].last = k;
        }
    }
    for (int i = 0; i < grp->noutputs; i++) {
        const hc_tensor *t = grp->outputs[i];
        loc *l = &m->locs[t->id];
        if (l->kind == LOC_OUTPUT) continue;
        if (alternative && l->kind == LOC_ARENA) { /* live from the set's first entry */
            m->plan.data[l->index].last = HC_MAX(m->plan.data[l->index].last, k);
            continue;
        }
        if (alternative && l->kind == LOC_EMPTY) continue;
        if (l->kind != LOC_NONE)
            return hc_error_set(err, HC_ERR_INVALID, "node '%s': output '%s' is written twice",
                                n->name, t->name);
        if (hc_rt_is_empty(t)) {
            *l = (loc){LOC_EMPTY, 0};
            continue;
        }
        add_entry(m, t, k);
    }
    return HC_OK;
}

/* ---- in-place Concat --------------------------------------------------------------- */
/* A Concat whose inputs are slices of its output laid end to end (every dimension before
 * the axis is 1, as at batch 1 along channels) runs no kernel: each input's producer
 * writes its slice of the output directly. Every present, non-empty input must be an
 * intermediate tensor (not a graph input, output or constant) computed by a kernel or by
 * another in-place Concat, appearing once in this Concat and not already a slice of another;
 * the output must be an intermediate tensor too. Otherwise the Concat stays a kernel. */
bool hc_rt_concat_in_place(const hc_model *m, const hc_node *n) {
    if (n->op != HC_OPK_CONCAT || n->noutputs < 1 || !n->outputs[0] || !m->alias_parent)
        return false;
    const hc_tensor *y = n->outputs[0];
    bool any = false;
    for (int i = 0; i < n->ninputs; i++) {
        const hc_tensor *t = n->inputs[i];
        if (!t || hc_rt_is_empty(t)) continue;
        if (m->alias_parent[t->id] != y) return false;
        any = true;
    }
    return any;
}

void hc_rt_plan_inplace_concats(hc_model *m) {
    hc_graph *g = m->g;
    size_t nt = g->tensors.len;
    m->alias_parent = HC_NEW_ARRAY(&m->arena, const hc_tensor *, nt + 1);
    m->alias_delta = HC_NEW_ARRAY(&m->arena, size_t, nt + 1);
    memset(m->alias_parent, 0, sizeof(*m->alias_parent) * (nt + 1));
    memset(m->alias_delta, 0, sizeof(*m->alias_delta) * (nt + 1));
    if (m->opt.no_fusion) return; /* unfused models run every node as its own kernel */
    if (hc_graph_has_symbols(m->g)) return; /* slice offsets would depend on the symbols */
    bool *external = hc_xcalloc(nt + 1, sizeof(bool)); /* graph inputs and outputs */
    for (size_t i = 0; i < g->inputs.len; i++) external[g->inputs.data[i]->id] = true;
    for (size_t i = 0; i < g->outputs.len; i++) external[g->outputs.data[i]->id] = true;
    for (size_t ni = 0; ni < g->nodes.len; ni++) {
        const hc_node *n = g->nodes.data[ni];
        if (n->op != HC_OPK_CONCAT || n->noutputs < 1 || !n->outputs[0]) continue;
        const hc_tensor *y = n->outputs[0];
        if (external[y->id] || hc_rt_is_const(y) || hc_rt_is_empty(y) || !y->shape_known) continue;
        int axis = (int)hc_node_attr_int(n, "axis", 0);
        if (axis < 0) axis += y->ndim;
        if (axis < 0 || axis >= y->ndim) continue;
        int64_t outer = 1;
        for (int d = 0; d < axis; d++) outer *= y->shape[d];
        bool ok = outer == 1;
        for (int i = 0; ok && i < n->ninputs; i++) {
            const hc_tensor *t = n->inputs[i];
            if (!t || hc_rt_is_empty(t)) continue;
            ok = !external[t->id] && !hc_rt_is_const(t) && t->producer && !m->alias_parent[t->id] &&
                 t->dtype == y->dtype;
            for (int j = 0; ok && j < i; j++) ok = n->inputs[j] != t;
        }
        if (!ok) continue;
        size_t delta = 0;
        for (int i = 0; i < n->ninputs; i++) {
            const hc_tensor *t = n->inputs[i];
            if (!t || hc_rt_is_empty(t)) continue;
            m->alias_parent[t->id] = y;
            m->alias_delta[t->id] = delta;
            delta += hc_tensor_nbytes(t);
        }
        HC_ASSERT(delta == hc_tensor_nbytes(y));
    }
    free(external);
}

hc_status hc_rt_plan_memory(hc_model *m, hc_error *err) {
    m->locs = HC_NEW_ARRAY(&m->arena, loc, m->g->tensors.len + 1);
    locate_graph_inputs(m);
    hc_status st = locate_outputs(m, err);
    for (size_t i = 0; st == HC_OK && i < m->kernels.len; i++)
        st = locate_kernel(m, &m->kernels.data[i].group, (int)i, err);
    if (st != HC_OK) return st;
    int n = (int)m->plan.len, np = 0;
    size_t *bytes = hc_xmalloc(sizeof(size_t) * (size_t)(n + 1));
    size_t *offs = hc_xmalloc(sizeof(size_t) * (size_t)(n + 1));
    int *first = hc_xmalloc(sizeof(int) * (size_t)(n + 1));
    int *last = hc_xmalloc(sizeof(int) * (size_t)(n + 1));
    int *placed = hc_xmalloc(sizeof(int) * (size_t)(n + 1)); /* planner slot -> entry */
    for (int i = 0; i < n; i++) {
        hc_plan_entry *e = &m->plan.data[i];
        if (e->alias_of >= 0) continue; /* inside its root's room */
        bytes[np] = e->bytes, first[np] = e->first, last[np] = e->last, placed[np++] = i;
        m->intermediate_bytes += e->bytes;
    }
    m->arena_bytes = hc_plan_memory(np, bytes, first, last, offs);
    for (int i = 0; i < np; i++) m->plan.data[placed[i]].offset = offs[i];
    for (int i = 0; i < n; i++) { /* roots come before their aliases */
        hc_plan_entry *e = &m->plan.data[i];
        if (e->alias_of >= 0) e->offset += m->plan.data[e->alias_of].offset;
    }
    free(bytes), free(offs), free(first), free(last), free(placed);
    return HC_OK;
}

/* ---- arguments ------------------------------------------------------------------- */
static void *bind_arg(hc_model *m, const hc_tensor *t, int kernel, int arg) {
    const loc *l = &m->locs[t->id];
    switch (l->kind) {
    case LOC_EMPTY: return empty_buffer;
    case LOC_CONST: return t->data;
    case LOC_ARENA: return (char *)m->mem + m->plan.data[l->index].offset;
    case LOC_INPUT:
    case LOC_OUTPUT: {
        binding b = {kernel, arg, l->index, l->kind == LOC_OUTPUT};
        hc_vec_push(&m->binds, b);
        return NULL;
    }
    case LOC_NONE: break;
    }
    hc_unreachable();
}

/* ---- device memory ------------------------------------------------------------------ */
#define DEV_ALIGN 256 /* every device buffer starts on a 256-byte boundary (CUDA's own) */

static size_t dev_round(size_t n) { return (n + DEV_ALIGN - 1) / DEV_ALIGN * DEV_ALIGN; }

static hc_status dev_nomem(const char *what, size_t bytes, hc_error *err) {
    return hc_error_set(err, HC_ERR_NOMEM, "out of device memory: %s (%zu bytes)", what, bytes);
}

/* A constant's place in dev_consts: the offset of the first constant with the same data
 * (views of one constant share it). consts_off[i] for tensor id i, (size_t)-1: none. */
static hc_status upload_consts(hc_model *m, size_t *consts_off, hc_error *err) {
    const hc_executor *ex = m->target->exec;
    size_t total = 0;
    HC_VEC(const hc_tensor *) cs = {0};
    for (size_t i = 0; i < m->kernels.len; i++) {
        const kernel *k = &m->kernels.data[i];
        for (int j = 0; j < k->group.ninputs; j++) {
            const hc_tensor *t = k->group.inputs[j];
            if (m->locs[t->id].kind != LOC_CONST || consts_off[t->id] != (size_t)-1) continue;
            for (size_t c = 0; c < cs.len && consts_off[t->id] == (size_t)-1; c++)
                if (cs.data[c]->data == t->data && hc_tensor_nbytes(cs.data[c]) >= hc_tensor_nbytes(t))
                    consts_off[t->id] = consts_off[cs.data[c]->id];
            if (consts_off[t->id] != (size_t)-1) continue;
            consts_off[t->id] = total;
            total += dev_round(hc_tensor_nbytes(t));
            hc_vec_push(&cs, t);
        }
    }
    hc_status st = HC_OK;
    if (total && !(m->dev_consts = ex->alloc(total))) st = dev_nomem("the weights", total, err);
    for (size_t c = 0; c < cs.len && st == HC_OK; c++)
        st = ex->upload((char *)m->dev_consts + consts_off[cs.data[c]->id], cs.data[c]->data,
                        hc_tensor_nbytes(cs.data[c]), err);
    hc_vec_free(&cs);
    return st;
}

/* Device buffers for the graph's n tensors ts (NULL for empty ones). */
static hc_status alloc_io(hc_model *m, size_t n, hc_tensor *const *ts, void ***out, hc_error *err) {
    *out = HC_NEW_ARRAY(&m->arena, void *, n + 1);
    for (size_t i = 0; i < n; i++) {
        size_t bytes = hc_tensor_nbytes(ts[i]);
        (*out)[i] = NULL;
        if (bytes && !((*out)[i] = m->target->exec->alloc(bytes)))
            return dev_nomem(ts[i]->name, bytes, err);
    }
    return HC_OK;
}

hc_status hc_rt_alloc_device_io(hc_model *m, hc_error *err) {
    hc_status st = HC_OK;
    if (!(m->dev_empty = m->target->exec->alloc(DEV_ALIGN)))
        st = dev_nomem("a placeholder", DEV_ALIGN, err);
    if (st == HC_OK) st = alloc_io(m, m->g->inputs.len, m->g->inputs.data, &m->dev_in, err);
    if (st == HC_OK) st = alloc_io(m, m->g->outputs.len, m->g->outputs.data, &m->dev_out, err);
    return st;
}

static void *bind_device_arg(hc_model *m, const hc_tensor *t, const size_t *consts_off) {
    const loc *l = &m->locs[t->id];
    switch (l->kind) {
    case LOC_EMPTY: return m->dev_empty;
    case LOC_CONST: return (char *)m->dev_consts + consts_off[t->id];
    case LOC_ARENA: return (char *)m->mem + m->plan.data[l->index].offset;
    case LOC_INPUT: return m->dev_in[l->index];
    case LOC_OUTPUT: return m->dev_out[l->index];
    case LOC_NONE: break;
    }
    hc_unreachable();
}

static hc_status prepare_device(hc_model *m, hc_error *err) {
    size_t nt = m->g->tensors.len + 1;
    size_t *consts_off = hc_xmalloc(sizeof(size_t) * nt);
    for (size_t i = 0; i < nt; i++) consts_off[i] = (size_t)-1;
    hc_status st = hc_rt_alloc_device_io(m, err);
    if (st == HC_OK) st = upload_consts(m, consts_off, err);
    for (size_t i = 0; i < m->kernels.len && st == HC_OK; i++) {
        kernel *k = &m->kernels.data[i];
        k->nargs = k->func->nparams;
        k->args = HC_NEW_ARRAY(&m->arena, void *, k->nargs + 1);
        int a = 0;
        for (int j = 0; j < k->group.ninputs; j++)
            k->args[a++] = bind_device_arg(m, k->group.inputs[j], consts_off);
        for (int j = 0; j < k->group.noutputs; j++)
            k->args[a++] = bind_device_arg(m, k->group.outputs[j], consts_off);
        HC_ASSERT(a == k->nargs);
    }
    free(consts_off);
    return st;
}

static void release_device(hc_model *m) {
    const hc_executor *ex = m->target->exec;
    for (size_t i = 0; m->dev_in && i < m->g->inputs.len; i++) ex->release(m->dev_in[i]);
    for (size_t i = 0; m->dev_out && i < m->g->outputs.len; i++) ex->release(m->dev_out[i]);
    if (m->dev_consts) ex->release(m->dev_consts);
    if (m->dev_empty) ex->release(m->dev_empty);
}

hc_status hc_rt_prepare_args(hc_model *m, hc_error *err) {
    size_t bytes = (m->arena_bytes + 63) / 64 * 64;
    m->mem = m->target->exec->alloc(bytes ? bytes : 64);
    if (!m->mem)
        return hc_error_set(err, HC_ERR_NOMEM, "out of memory: the memory plan's arena "
                            "(%zu bytes)", bytes);
    if (hc_exec_is_device(m->target->exec)) return prepare_device(m, err);
    for (size_t i = 0; i < m->kernels.len; i++) {
        kernel *k = &m->kernels.data[i];
        k->nargs = k->func->nparams;
        k->args = HC_NEW_ARRAY(&m->arena, void *, k->nargs + 1);
        k->arg_locs = HC_NEW_ARRAY(&m->arena, loc, k->nargs + 1);
        int a = 0;
        for (int j = 0; j < k->group.ninputs; j++)
            k->arg_locs[a] = m->locs[k->group.inputs[j]->id],
            k->args[a] = bind_arg(m, k->group.inputs[j], (int)i, a), a++;
        for (int j = 0; j < k->group.noutputs; j++)
            k->arg_locs[a] = m->locs[k->group.outputs[j]->id],
            k->args[a] = bind_arg(m, k->group.outputs[j], (int)i, a), a++;
        for (int j = 0; j < k->nsyms; j++) k->args[a++] = NULL; /* a run's context's values */
        HC_ASSERT(a == k->nargs);
    }
    return HC_OK;
}

/* ---- runs in flight ---------------------------------------------------------------- */
/* Every run holds a context: the arena its intermediate tensors live in and the kernels'
 * argument arrays pointing into it (with the caller's buffers written into the bound
 * slots). The first context is the model's own (m->mem, the kernels' args); a run that
 * finds none free makes one, a copy of the model's with its arena pointers moved to a new
 * arena, and gives it back to the free list after, so a model holds as many arenas as it
 * ever had runs in flight at once and a run allocates nothing once they exist. The
 * weights, the kernels and their libraries are shared. Device models run one at a time
 * (their input and output buffers and the recorded launches are the model's). */
hc_model *hc_rt_model_new(void) {
    hc_model *m = hc_xcalloc(1, sizeof *m);
    pthread_mutex_init(&m->ctx_lock, NULL);
    pthread_mutex_init(&m->run_lock, NULL);
    return m;
}

static size_t arena_alloc_bytes(const hc_model *m) {
    size_t bytes = (m->arena_bytes + 63) / 64 * 64;
    return bytes ? bytes : 64;
}

static run_ctx *model_ctx(hc_model *m) {
    run_ctx *c = HC_NEW(&m->arena, run_ctx);
    memset(c, 0, sizeof *c);
    c->mem = m->mem;
    c->args = HC_NEW_ARRAY(&m->arena, void **, m->kernels.len + 1);
    for (size_t i = 0; i < m->kernels.len; i++) c->args[i] = m->kernels.data[i].args;
    return c;
}

/* A copy of the model's context over a new arena; NULL when out of memory. */
static run_ctx *new_ctx(hc_model *m) {
    void *mem = m->target->exec->alloc(arena_alloc_bytes(m));
    if (!mem) return NULL;
    size_t nargs = 0;
    for (size_t i = 0; i < m->kernels.len; i++) nargs += (size_t)m->kernels.data[i].nargs;
    run_ctx *c = calloc(1, sizeof *c);
    void **all = malloc(sizeof(void *) * (nargs + 1));
    void ***args = malloc(sizeof(void **) * (m->kernels.len + 1));
    if (!c || !all || !args) {
        free(c), free(all), free(args);
        m->target->exec->release(mem);
        return NULL;
    }
    const char *lo = m->mem, *hi = lo + arena_alloc_bytes(m);
    for (size_t i = 0, a = 0; i < m->kernels.len; i++) {
        args[i] = all + a;
        a += (size_t)m->kernels.data[i].nargs;
    }
    /* the caller-buffer slots are written by every run (a run in flight writes the model's
     * own): never read them here, the run fills them */
    bool *bound = calloc(nargs + 1, sizeof(bool));
    if (!bound) {
        free(c), free(all), free(args);
        m->target->exec->release(mem);
        return NULL;
    }
    for (size_t b = 0; b < m->binds.len; b++)
        bound[(size_t)(args[m->binds.data[b].kernel] - all) + (size_t)m->binds.data[b].arg] = true;
    for (size_t i = 0, a = 0; i < m->kernels.len; i++) {
        const kernel *k = &m->kernels.data[i];
        for (int j = 0; j < k->nargs; j++, a++) {
            char *p = bound[a] ? NULL : k->args[j];
            uintptr_t u = (uintptr_t)p, ulo = (uintptr_t)lo, uhi = (uintptr_t)hi;
            all[a] = p && u >= ulo && u < uhi ? (char *)mem + (u - ulo) : p; /* into the arena */
        }
    }
    free(bound);
    *c = (run_ctx){.mem = mem, .args = args, .all_args = all, .own = true};
    return c;
}

/* A symbolic model's context: argument arrays of its own; the arena and the arguments
 * into it are made for a binding's plan by sym_prepare. */
static run_ctx *sym_ctx_new(hc_model *m) {
    size_t nargs = 0;
    for (size_t i = 0; i < m->kernels.len; i++) nargs += (size_t)m->kernels.data[i].nargs;
    run_ctx *c = calloc(1, sizeof *c);
    void **all = calloc(nargs + 1, sizeof(void *));
    void ***args = malloc(sizeof(void **) * (m->kernels.len + 1));
    int64_t *syms = calloc(m->g->sym_names.len + 1, sizeof(int64_t));
    if (!c || !all || !args || !syms) {
        free(c), free(all), free(args), free(syms);
        return NULL;
    }
    for (size_t i = 0, a = 0; i < m->kernels.len; i++) {
        args[i] = all + a;
        a += (size_t)m->kernels.data[i].nargs;
    }
    *c = (run_ctx){.args = args, .all_args = all, .own = true, .syms = syms};
    return c;
}

static hc_status ctx_acquire(hc_model *m, run_ctx **out, hc_error *err) {
    pthread_mutex_lock(&m->ctx_lock);
    if (!m->ctxs.len && !m->symbolic) { /* the model's own, made on the first run */
        run_ctx *c = model_ctx(m);
        hc_vec_push(&m->ctxs, c);
        c->next = m->free_ctx, m->free_ctx = c;
    }
    run_ctx *c = m->free_ctx;
    if (c) m->free_ctx = c->next;
    pthread_mutex_unlock(&m->ctx_lock);
    if (!c) {
        if (!(c = m->symbolic ? sym_ctx_new(m) : new_ctx(m)))
            return hc_error_set(err, HC_ERR_NOMEM, "out of memory: another arena for a "
                                "concurrent run (%zu bytes)", arena_alloc_bytes(m));
        pthread_mutex_lock(&m->ctx_lock);
        hc_vec_push(&m->ctxs, c);
        pthread_mutex_unlock(&m->ctx_lock);
    }
    *out = c;
    return HC_OK;
}

static void ctx_release(hc_model *m, run_ctx *c) {
    pthread_mutex_lock(&m->ctx_lock);
    c->next = m->free_ctx, m->free_ctx = c;
    pthread_mutex_unlock(&m->ctx_lock);
}

static void free_ctxs(hc_model *m) {
    for (size_t i = 0; i < m->ctxs.len; i++) {
        run_ctx *c = m->ctxs.data[i];
        if (!c->own) continue; /* the model's own: its arena */
        if (c->mem) m->target->exec->release(c->mem);
        free(c->syms);
        free(c->all_args);
        free(c->args);
        free(c);
    }
    hc_vec_free(&m->ctxs);
}

int hc_model_num_run_contexts(const hc_model *m) { return (int)m->ctxs.len; }
void hc_model_set_pin_threads(hc_model *m, bool pin) { m->pin_threads = pin; }

/* ---- public ---------------------------------------------------------------------- */
void hc_rt_report_plan(const hc_model *m) {
    double pct = m->intermediate_bytes ? 100.0 * (double)m->arena_bytes /
                                             (double)m->intermediate_bytes
                                       : 100.0;
    fprintf(stderr, "hidetc: memory plan: %zu intermediate tensors, %zu bytes in total, "
                    "arena %zu bytes (%.1f%%)\n", m->plan.len, m->intermediate_bytes,
            m->arena_bytes, pct);
}

void hc_model_free(hc_model *m) {
    if (!m) return;
    if (m->replay) m->target->exec->replay_free(m->replay); /* before its kernels go */
    if (m->release) m->release(m);
    for (int i = 0; i < m->nlibs; i++)
        if (m->libs[i]) m->target->lib_close(m->libs[i]);
    free(m->libs);
    if (m->target && hc_exec_is_device(m->target->exec)) release_device(m);
    free_ctxs(m);
    for (size_t i = 0; i < m->sym_plans.len; i++) sym_plan_free(m->sym_plans.data[i]);
    hc_vec_free(&m->sym_plans);
    if (m->mem) m->target->exec->release(m->mem);
    free(m->source);
    for (int i = 0; m->sources && i < m->nlibs; i++) free(m->sources[i]);
    free(m->sources);
    hc_vec_free(&m->kernels);
    hc_vec_free(&m->uniques);
    hc_vec_free(&m->plan);
    hc_vec_free(&m->binds);
    hc_vec_free(&m->copies);
    hc_arena_free(&m->arena);
    hc_graph_free(m->g);
    pthread_mutex_destroy(&m->ctx_lock);
    pthread_mutex_destroy(&m->run_lock);
    free(m);
}

const hc_target *hc_model_target(const hc_model *m) { return m->target; }
const char *hc_model_source(const hc_model *m) { return m->source; }
int hc_model_num_inputs(const hc_model *m) { return (int)m->g->inputs.len; }
int hc_model_num_outputs(const hc_model *m) { return (int)m->g->outputs.len; }
const hc_tensor *hc_model_input(const hc_model *m, int i) {
    HC_ASSERT(i >= 0 && (size_t)i < m->g->inputs.len);
    return m->g->inputs.data[i];
}
const hc_tensor *hc_model_output(const hc_model *m, int i) {
    HC_ASSERT(i >= 0 && (size_t)i < m->g->outputs.len);
    return m->g->outputs.data[i];
}
const hc_graph *hc_model_graph(const hc_model *m) { return m->g; }
int hc_model_num_kernels(const hc_model *m) { return (int)m->kernels.len; }
int hc_model_num_programs(const hc_model *m) { return (int)m->uniques.len; }
size_t hc_model_arena_bytes(const hc_model *m) { return m->arena_bytes; }
size_t hc_model_intermediate_bytes(const hc_model *m) { return m->intermediate_bytes; }
const hc_plan_entry *hc_model_plan(const hc_model *m, int *count) {
    *count = (int)m->plan.len;
    return m->plan.data;
}

static hc_status check_buffers(const hc_model *m, void *const *inputs, void *const *outputs,
                               hc_error *err) {
    for (size_t i = 0; i < m->g->inputs.len; i++)
        if (!hc_rt_is_empty(m->g->inputs.data[i]) && !inputs[i])
            return hc_error_set(err, HC_ERR_INVALID, "input '%s': buffer is NULL",
                                m->g->inputs.data[i]->name);
    for (size_t i = 0; i < m->g->outputs.len; i++)
        if (!hc_rt_is_empty(m->g->outputs.data[i]) && !outputs[i])
            return hc_error_set(err, HC_ERR_INVALID, "output '%s': buffer is NULL",
                                m->g->outputs.data[i]->name);
    return HC_OK;
}

static hc_status run_in(hc_model *m, run_ctx *c, void *const *inputs, void *const *outputs,
                        double *ms, hc_error *err);

/* ---- dynamic shapes (docs/dynamic.md) ------------------------------------------------- */
/* The memory plan of one binding of the symbols: every symbolic tensor's size evaluated
 * there and the arena planned as at compile time. Plans are kept, so a binding seen
 * before costs a lookup. */
typedef struct sym_plan {
    int64_t *values;
    size_t *offsets; /* per plan entry */
    size_t total;
    size_t *out_bytes; /* per graph output */
    bool *runs;        /* per kernel: whether it runs at this binding (dispatch) */
} sym_plan;

#define MAX_RUN_SYMS 64

static hc_sym_binding binding_of(const hc_model *m, const int64_t *values) {
    return (hc_sym_binding){(int)m->g->sym_names.len, m->g->sym_names.data, values};
}

static hc_status sym_bind(const hc_model *m, const int64_t *const *dims, int64_t *values,
                          hc_error *err) {
    const hc_graph *g = m->g;
    size_t n = g->inputs.len;
    if (g->sym_names.len > MAX_RUN_SYMS)
        return hc_error_set(err, HC_ERR_UNSUPPORTED, "the model has %zu symbols; at most %d",
                            g->sym_names.len, MAX_RUN_SYMS);
    const char **names = hc_xmalloc(sizeof(char *) * (n + 1));
    int *ndims = hc_xmalloc(sizeof(int) * (n + 1));
    int64_t(*shapes)[HC_MAX_DIMS] = hc_xmalloc(sizeof(*shapes) * (n + 1));
    for (size_t i = 0; i < n; i++) {
        const hc_tensor *t = g->inputs.data[i];
        names[i] = t->name, ndims[i] = t->ndim;
        for (int d = 0; d < t->ndim; d++) shapes[i][d] = dims[i] ? dims[i][d] : t->shape[d];
    }
    hc_status st = hc_graph_bind_inputs(g, (int)n, names, ndims, (const int64_t(*)[HC_MAX_DIMS])shapes,
                                        values, err);
    free(names), free(ndims), free(shapes);
    for (size_t k = 0; st == HC_OK && k < g->sym_names.len; k++)
        if (values[k] < 0)
            st = hc_error_set(err, HC_ERR_INVALID, "no input fixes the symbol '%s'",
                              g->sym_names.data[k]);
    return st;
}

static void sym_plan_free(sym_plan *p) {
    if (!p) return;
    free(p->values), free(p->offsets), free(p->out_bytes), free(p->runs), free(p);
}

/* The plan of binding `values` (made and kept on first use); NULL and err when a size
 * cannot be had there. Called under m->ctx_lock. */
static const sym_plan *sym_plan_get(hc_model *m, const int64_t *values, hc_error *err) {
    size_t ns = m->g->sym_names.len;
    for (size_t i = 0; i < m->sym_plans.len; i++)
        if (!memcmp(m->sym_plans.data[i]->values, values, sizeof(int64_t) * ns))
            return m->sym_plans.data[i];
    hc_sym_binding b = binding_of(m, values);
    int n = (int)m->plan.len;
    sym_plan *p = hc_xcalloc(1, sizeof *p);
    p->values = hc_xmalloc(sizeof(int64_t) * (ns + 1));
    memcpy(p->values, values, sizeof(int64_t) * ns);
    p->offsets = hc_xcalloc((size_t)n + 1, sizeof(size_t));
    p->out_bytes = hc_xcalloc(m->g->outputs.len + 1, sizeof(size_t));
    size_t *bytes = hc_xmalloc(sizeof(size_t) * (size_t)(n + 1));
    int *first = hc_xmalloc(sizeof(int) * (size_t)(n + 1)), *last = hc_xmalloc(sizeof(int) * (size_t)(n + 1));
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        const hc_plan_entry *e = &m->plan.data[i];
        HC_ASSERT(e->alias_of < 0); /* no in-place Concat in a symbolic model */
        bytes[i] = e->bytes, first[i] = e->first, last[i] = e->last;
        if (e->sym_bytes) ok = hc_tensor_nbytes_at(e->tensor, &b, &bytes[i]);
        if (!ok)
            hc_error_set(err, HC_ERR_INVALID, "tensor '%s' is too large at this binding",
                         e->tensor->name);
    }
    for (size_t i = 0; i < m->g->outputs.len && ok; i++)
        if (!(ok = hc_tensor_nbytes_at(m->g->outputs.data[i], &b, &p->out_bytes[i])))
            hc_error_set(err, HC_ERR_INVALID, "output '%s' is too large at this binding",
                         m->g->outputs.data[i]->name);
    if (ok) p->total = hc_plan_memory(n, bytes, first, last, p->offsets);
    if (ok && m->opt.max_memory && p->total > m->opt.max_memory) {
        hc_error_set(err, HC_ERR_NOMEM, "the memory plan at this binding needs %zu bytes, "
                     "over the budget of %zu", p->total, m->opt.max_memory);
        ok = false;
    }
    free(bytes), free(first), free(last);
    if (!ok) {
        sym_plan_free(p);
        return NULL;
    }
    p->runs = hc_xmalloc(sizeof(bool) * (m->kernels.len + 1));
    hc_rt_dispatch(m, values, p->runs);
    hc_vec_push(&m->sym_plans, p);
    return p;
}

/* log(v) for a symbol's value (>= 1 for the distance; 0 and 1 are the same size). */
static double log_size(int64_t v) { return log((double)(v < 1 ? 1 : v)); }

void hc_rt_dispatch(const hc_model *m, const int64_t *values, bool *runs) {
    size_t ns = m->g->sym_names.len, nk = m->kernels.len;
    for (size_t i = 0; i < nk; i++) runs[i] = true;
    for (size_t i = 0; i < nk; i++) {
        const kernel *k = &m->kernels.data[i];
        if (k->nalt < 2 || k->alt != (int)i) continue;
        int best = (int)i;
        double best_d = INFINITY;
        for (int e = (int)i; e < (int)i + k->nalt && (size_t)e < nk; e++) {
            const kernel *ke = &m->kernels.data[e];
            runs[e] = false;
            for (int q = 0; q < ke->npoints; q++) {
                const int64_t *pt = ke->points + (size_t)q * ns;
                double d = 0;
                for (int j = 0; j < k->nsyms; j++)
                    d += fabs(log_size(values[k->sym_slots[j]]) - log_size(pt[k->sym_slots[j]]));
                if (d < best_d - 1e-12) best_d = d, best = e;
            }
        }
        runs[best] = true;
    }
}

hc_status hc_model_bind(const hc_model *m, const int64_t *const *dims, int64_t *values,
                        hc_error *err) {
    if (!m->g->sym_names.len) return HC_OK;
    return sym_bind(m, dims, values, err);
}

hc_status hc_model_kernels_at(hc_model *m, const int64_t *const *dims, bool *runs,
                              hc_error *err) {
    if (!m->symbolic) {
        for (size_t i = 0; i < m->kernels.len; i++) runs[i] = true;
        return HC_OK;
    }
    int64_t values[MAX_RUN_SYMS];
    hc_status st = sym_bind(m, dims, values, err);
    if (st == HC_OK) hc_rt_dispatch(m, values, runs);
    return st;
}

/* Point context c's arguments into an arena planned by p (grown when too small). */
static hc_status sym_prepare(hc_model *m, run_ctx *c, const sym_plan *p, hc_error *err) {
    size_t ns = m->g->sym_names.len;
    if (c->plan == p) return HC_OK;
    size_t need = (p->total + 63) / 64 * 64;
    if (!need) need = 64;
    if (c->mem_bytes < need) {
        if (c->mem) m->target->exec->release(c->mem);
        c->mem = m->target->exec->alloc(need);
        c->mem_bytes = c->mem ? need : 0;
        c->plan = NULL;
        if (!c->mem)
            return hc_error_set(err, HC_ERR_NOMEM, "out of memory: the memory plan's arena "
                                "at this binding (%zu bytes)", need);
    }
    memcpy(c->syms, p->values, sizeof(int64_t) * ns);
    for (size_t i = 0; i < m->kernels.len; i++) {
        const kernel *k = &m->kernels.data[i];
        int a = k->group.ninputs + k->group.noutputs;
        for (int j = 0; j < a; j++) {
            const loc *l = &k->arg_locs[j];
            if (l->kind == LOC_ARENA) c->args[i][j] = (char *)c->mem + p->offsets[l->index];
            else if (l->kind == LOC_EMPTY || l->kind == LOC_CONST) c->args[i][j] = k->args[j];
        }
        for (int j = 0; j < k->nsyms; j++) c->args[i][a + j] = &c->syms[k->sym_slots[j]];
    }
    c->plan = p;
    return HC_OK;
}

static hc_status run(hc_model *m, void *const *inputs, const int64_t *const *dims,
                     void *const *outputs, double *ms, hc_error *err) {
    if (m->opt.schedule_only)
        return hc_error_set(err, HC_ERR_INVALID, "hc_model_run: the model was compiled with "
                                                 "schedule_only (for inspection)");
    if ((m->g->inputs.len && !inputs) || (m->g->outputs.len && !outputs))
        return hc_error_set(err, HC_ERR_INVALID, "hc_model_run: inputs or outputs is NULL");
    hc_status st = check_buffers(m, inputs, outputs, err);
    if (st != HC_OK) return st;
    const hc_executor *ex = m->target->exec;
    bool dev = hc_exec_is_device(ex);
    if (!m->symbolic && dims) { /* a static model: the dims must be its own */
        for (size_t i = 0; i < m->g->inputs.len; i++) {
            const hc_tensor *t = m->g->inputs.data[i];
            for (int d = 0; dims[i] && d < t->ndim; d++)
                if (dims[i][d] != t->shape[d])
                    return hc_error_set(err, HC_ERR_INVALID, "input '%s', dimension %d: %lld "
                                        "given, the model was compiled for %lld", t->name, d,
                                        (long long)dims[i][d], (long long)t->shape[d]);
        }
    }
    if (m->symbolic) {
        if (!dims)
            return hc_error_set(err, HC_ERR_INVALID, "the model has symbolic dimensions: "
                                "give the inputs' dimensions (hc_model_run_dims)");
        int64_t values[MAX_RUN_SYMS];
        if ((st = sym_bind(m, dims, values, err)) != HC_OK) return st;
        pthread_mutex_lock(&m->ctx_lock);
        const sym_plan *p = sym_plan_get(m, values, err);
        pthread_mutex_unlock(&m->ctx_lock);
        if (!p) return err && err->status ? err->status : HC_ERR_INVALID;
        run_ctx *c = NULL;
        if ((st = ctx_acquire(m, &c, err)) != HC_OK) return st;
        st = sym_prepare(m, c, p, err);
        if (st == HC_OK) st = run_in(m, c, inputs, outputs, ms, err);
        ctx_release(m, c);
        return st;
    }
    if (dev) { /* one at a time: the device buffers and recorded launches are the model's */
        pthread_mutex_lock(&m->run_lock);
        st = run_in(m, NULL, inputs, outputs, ms, err);
        pthread_mutex_unlock(&m->run_lock);
        return st;
    }
    run_ctx *c = NULL;
    if ((st = ctx_acquire(m, &c, err)) != HC_OK) return st;
    st = run_in(m, c, inputs, outputs, ms, err);
    ctx_release(m, c);
    return st;
}

/* One run in context c (NULL: the model's own, on a device). */
static hc_status run_in(hc_model *m, run_ctx *c, void *const *inputs, void *const *outputs,
                        double *ms, hc_error *err) {
    const hc_executor *ex = m->target->exec;
    bool dev = hc_exec_is_device(ex);
    hc_status st = HC_OK;
    for (size_t i = 0; c && i < m->binds.len; i++) {
        const binding *b = &m->binds.data[i];
        c->args[b->kernel][b->arg] = b->output ? outputs[b->index] : inputs[b->index];
    }
    for (size_t i = 0; dev && i < m->g->inputs.len && st == HC_OK; i++)
        if (m->dev_in[i])
            st = ex->upload(m->dev_in[i], inputs[i], hc_tensor_nbytes(m->g->inputs.data[i]), err);
    if (st != HC_OK) return st;
    hc_run_state rs;
    ex->begin(m->num_threads, m->pin_threads, &rs);
    /* replay the first run's launches (CUDA graphs): the arguments never change */
    bool record = !ms && ex->record_begin && !m->opt.no_graph && !m->replay && !m->replay_failed;
    if (!ms && m->replay) {
        ex->replay(m->replay);
    } else {
        if (record && !ex->record_begin()) record = false, m->replay_failed = true;
        const sym_plan *sp = c ? c->plan : NULL;
        for (size_t i = 0; i < m->kernels.len; i++) {
            if (sp && !sp->runs[i]) { /* an alternative of another config (dispatch) */
                if (ms) ms[i] = 0;
                continue;
            }
            double t0 = ms ? hc_now_ms() : 0;
            ex->launch(m->kernels.data[i].fn, c ? c->args[i] : m->kernels.data[i].args);
            if (ms && ex->check) ex->check(NULL); /* a device kernel's time: wait for it */
            if (ms) ms[i] = hc_now_ms() - t0;
        }
        if (record && (m->replay = ex->record_end())) ex->replay(m->replay);
        else if (record) { /* recorded nothing and ran nothing: run them now */
            m->replay_failed = true;
            for (size_t i = 0; i < m->kernels.len; i++)
                ex->launch(m->kernels.data[i].fn, m->kernels.data[i].args);
        }
    }
    ex->end(&rs);
    if (ex->check && (st = ex->check(err)) != HC_OK) return st;
    for (size_t i = 0; dev && i < m->g->outputs.len && st == HC_OK; i++) {
        bool copied = false; /* an output that is an input, a constant or another output */
        for (size_t c = 0; c < m->copies.len; c++) copied |= m->copies.data[c].output == (int)i;
        if (m->dev_out[i] && !copied)
            st = ex->download(outputs[i], m->dev_out[i], hc_tensor_nbytes(m->g->outputs.data[i]),
                              err);
    }
    if (st != HC_OK) return st;
    const sym_plan *p = c ? c->plan : NULL;
    for (size_t i = 0; i < m->copies.len; i++) {
        const out_copy *oc = &m->copies.data[i];
        const void *src = oc->src == COPY_CONST   ? oc->data
                          : oc->src == COPY_INPUT ? inputs[oc->index]
                                                  : outputs[oc->index];
        memmove(outputs[oc->output], src, p ? p->out_bytes[oc->output] : oc->bytes);
    }
    return HC_OK;
}

hc_status hc_model_run(hc_model *m, void *const *inputs, void *const *outputs, hc_error *err) {
    return run(m, inputs, NULL, outputs, NULL, err);
}

hc_status hc_model_run_profile(hc_model *m, void *const *inputs, void *const *outputs, double *ms,
                               hc_error *err) {
    return run(m, inputs, NULL, outputs, ms, err);
}

hc_status hc_model_run_dims(hc_model *m, void *const *inputs, const int64_t *const *dims,
                            void *const *outputs, double *ms, hc_error *err) {
    return run(m, inputs, dims, outputs, ms, err);
}

bool hc_model_is_symbolic(const hc_model *m) { return m->symbolic; }

hc_status hc_model_output_dims(const hc_model *m, const int64_t *const *dims, int i,
                               int64_t *out, hc_error *err) {
    HC_ASSERT(i >= 0 && (size_t)i < m->g->outputs.len);
    const hc_tensor *t = m->g->outputs.data[i];
    if (!m->symbolic || !t->sym) {
        memcpy(out, t->shape, sizeof(int64_t) * (size_t)t->ndim);
        return HC_OK;
    }
    int64_t values[MAX_RUN_SYMS];
    hc_status st = sym_bind(m, dims, values, err);
    if (st != HC_OK) return st;
    hc_sym_binding b = binding_of(m, values);
    for (int d = 0; d < t->ndim; d++) {
        out[d] = t->shape[d];
        if (t->sym[d] && !hc_sym_eval(t->sym[d], &b, &out[d]))
            return hc_error_set(err, HC_ERR_INVALID, "output '%s', dimension %d cannot be "
                                "evaluated at this binding", t->name, d);
    }
    return HC_OK;
}

const hc_node *hc_model_kernel_node(const hc_model *m, int i) {
    HC_ASSERT(i >= 0 && (size_t)i < m->kernels.len);
    return m->kernels.data[i].node;
}

const hc_group *hc_model_kernel_group(const hc_model *m, int i) {
    HC_ASSERT(i >= 0 && (size_t)i < m->kernels.len);
    return &m->kernels.data[i].group;
}

int hc_model_kernel_program(const hc_model *m, int i) {
    HC_ASSERT(i >= 0 && (size_t)i < m->kernels.len);
    return m->kernels.data[i].unique;
}

void hc_model_kernel_tuning(const hc_model *m, int i, int *ncand, int *chosen, bool *cached) {
    HC_ASSERT(i >= 0 && (size_t)i < m->kernels.len);
    const kernel *k = &m->kernels.data[i];
    if (ncand) *ncand = k->ncand;
    if (chosen) *chosen = k->chosen;
    if (cached) *cached = k->tune_cached;
}

bool hc_model_kernel_templated(const hc_model *m, int i) {
    HC_ASSERT(i >= 0 && (size_t)i < m->kernels.len);
    return m->kernels.data[i].templated;
}

const char *hc_model_kernel_config(const hc_model *m, int i) {
    HC_ASSERT(i >= 0 && (size_t)i < m->kernels.len);
    const hc_func *f = m->kernels.data[i].func;
    return f ? f->config : NULL;
}

unsigned hc_model_kernel_prepacked(const hc_model *m, int i) {
    HC_ASSERT(i >= 0 && (size_t)i < m->kernels.len);
    return m->kernels.data[i].prepacked;
}

void hc_model_kernel_dispatch(const hc_model *m, int i, int *first, int *nalt, int *npoints,
                              const int64_t **points) {
    HC_ASSERT(i >= 0 && (size_t)i < m->kernels.len);
    const kernel *k = &m->kernels.data[i];
    if (first) *first = k->nalt ? k->alt : i;
    if (nalt) *nalt = k->nalt;
    if (npoints) *npoints = k->npoints;
    if (points) *points = k->points;
}
