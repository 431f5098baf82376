/* runtime.c — the CPU executor: a compiled graph is a list of kernels (one scheduled,
 * JIT-compiled program per node), a memory plan (plan.c) and the weights.
 *
 * Every tensor a kernel touches has a location decided at compile time: the caller's
 * input or output buffer, a constant's data, an offset in the arena, or (empty tensors)
 * a dummy. The argument arrays of all kernels are prepared once; a run only writes the
 * caller's buffer pointers into their slots, so it allocates nothing. */
#include <string.h>

#include "fuse/fuse.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "runtime/runtime_internal.h"
#include "tune/tune.h"

/* Empty tensors point here: kernels never dereference them, but NULL would upset
 * kernels that compute addresses up front. */
static _Alignas(64) char empty_buffer[64];

static bool is_empty(const hc_tensor *t) { return hc_tensor_numel(t) == 0; }
static bool is_const(const hc_tensor *t) { return t->data != NULL; }

/* ---- locations ------------------------------------------------------------------- */
static hc_status locate_outputs(hc_model *m, hc_error *err) {
    hc_graph *g = m->g;
    for (size_t i = 0; i < g->outputs.len; i++) {
        hc_tensor *t = g->outputs.data[i];
        out_copy c = {.output = (int)i, .bytes = hc_tensor_nbytes(t)};
        if (is_empty(t)) continue;
        loc *l = &m->locs[t->id];
        if (l->kind == LOC_INPUT) c.src = COPY_INPUT, c.index = l->index;
        else if (l->kind == LOC_OUTPUT) c.src = COPY_OUTPUT, c.index = l->index;
        else if (is_const(t)) c.src = COPY_CONST, c.data = t->data;
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
        m->locs[t->id] = is_empty(t) ? (loc){LOC_EMPTY, 0} : (loc){LOC_INPUT, (int)i};
    }
}

/* A node runs as a kernel unless all its outputs are constant (folded) or empty. */
static hc_status node_needs_kernel(const hc_node *n, bool *out, hc_error *err) {
    int nconst = 0, nempty = 0, npresent = 0;
    for (int i = 0; i < n->noutputs; i++) {
        const hc_tensor *t = n->outputs[i];
        if (!t) continue;
        npresent++;
        if (is_const(t)) nconst++;
        else if (is_empty(t)) nempty++;
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
    for (int i = 0; i < grp->ninputs; i++) {
        const hc_tensor *t = grp->inputs[i];
        loc *l = &m->locs[t->id];
        if (l->kind == LOC_NONE) {
            if (is_empty(t)) *l = (loc){LOC_EMPTY, 0};
            else if (is_const(t)) *l = (loc){LOC_CONST, 0};
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
        if (l->kind != LOC_NONE)
            return hc_error_set(err, HC_ERR_INVALID, "node '%s': output '%s' is written twice",
                                n->name, t->name);
        if (is_empty(t)) {
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
static bool concat_in_place(const hc_model *m, const hc_node *n) {
    if (n->op != HC_OPK_CONCAT || n->noutputs < 1 || !n->outputs[0] || !m->alias_parent)
        return false;
    const hc_tensor *y = n->outputs[0];
    bool any = false;
    for (int i = 0; i < n->ninputs; i++) {
        const hc_tensor *t = n->inputs[i];
        if (!t || is_empty(t)) continue;
        if (m->alias_parent[t->id] != y) return false;
        any = true;
    }
    return any;
}

static void plan_inplace_concats(hc_model *m) {
    hc_graph *g = m->g;
    size_t nt = g->tensors.len;
    m->alias_parent = HC_NEW_ARRAY(&m->arena, const hc_tensor *, nt + 1);
    m->alias_delta = HC_NEW_ARRAY(&m->arena, size_t, nt + 1);
    memset(m->alias_parent, 0, sizeof(*m->alias_parent) * (nt + 1));
    memset(m->alias_delta, 0, sizeof(*m->alias_delta) * (nt + 1));
    if (m->opt.no_fusion) return; /* unfused models run every node as its own kernel */
    bool *external = hc_xcalloc(nt + 1, sizeof(bool)); /* graph inputs and outputs */
    for (size_t i = 0; i < g->inputs.len; i++) external[g->inputs.data[i]->id] = true;
    for (size_t i = 0; i < g->outputs.len; i++) external[g->outputs.data[i]->id] = true;
    for (size_t ni = 0; ni < g->nodes.len; ni++) {
        const hc_node *n = g->nodes.data[ni];
        if (n->op != HC_OPK_CONCAT || n->noutputs < 1 || !n->outputs[0]) continue;
        const hc_tensor *y = n->outputs[0];
        if (external[y->id] || is_const(y) || is_empty(y) || !y->shape_known) continue;
        int axis = (int)hc_node_attr_int(n, "axis", 0);
        if (axis < 0) axis += y->ndim;
        if (axis < 0 || axis >= y->ndim) continue;
        int64_t outer = 1;
        for (int d = 0; d < axis; d++) outer *= y->shape[d];
        bool ok = outer == 1;
        for (int i = 0; ok && i < n->ninputs; i++) {
            const hc_tensor *t = n->inputs[i];
            if (!t || is_empty(t)) continue;
            ok = !external[t->id] && !is_const(t) && t->producer && !m->alias_parent[t->id] &&
                 t->dtype == y->dtype;
            for (int j = 0; ok && j < i; j++) ok = n->inputs[j] != t;
        }
        if (!ok) continue;
        size_t delta = 0;
        for (int i = 0; i < n->ninputs; i++) {
            const hc_tensor *t = n->inputs[i];
            if (!t || is_empty(t)) continue;
            m->alias_parent[t->id] = y;
            m->alias_delta[t->id] = delta;
            delta += hc_tensor_nbytes(t);
        }
        HC_ASSERT(delta == hc_tensor_nbytes(y));
    }
    free(external);
}

static hc_status plan_memory(hc_model *m, hc_error *err) {
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

/* ---- stages: --dump-ir and the verifier -------------------------------------------- */
static void dump_func(hc_stage st, const hc_func *f) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_print_func(&sb, f);
    fprintf(stderr, "== hidetc %s: %s ==\n%s\n", hc_stage_name(st), f->name, hc_sb_str(&sb));
    hc_sb_free(&sb);
}

/* A program leaving a stage: printed when it is the stage asked for, verified under
 * HIDETC_VERIFY (a program that fails is a compiler bug: an assert names it). */
static void observe_stage(void *ctx, hc_stage st, const hc_func *f) {
    const hc_model *m = ctx;
    if (m->opt.dump_stage == st) dump_func(st, f);
    if (m->opt.verify) {
        hc_error e = {0};
        if (hc_verify_func(f, false, &e) != HC_OK)
            HC_ASSERT_MSG(0, hc_arena_printf((hc_arena *)&m->arena, "after stage %s: %s",
                                             hc_stage_name(st), e.msg));
    }
}

/* ---- scheduling ------------------------------------------------------------------ */
typedef HC_VEC(hc_var *) var_vec;

static void collect_var(var_vec *vs, hc_var *v) {
    if (v->builtin == HC_BUILTIN_NONE) hc_vec_push(vs, v);
}

/* Collects every variable a statement binds, and blanks comments (they name nodes). */
static hc_stmt *canon_stmt(hc_mutator *mu, hc_stmt *s) {
    var_vec *vs = mu->ctx;
    switch (s->kind) {
    case HC_S_DECLARE: collect_var(vs, s->u.decl.var); break;
    case HC_S_LET: collect_var(vs, s->u.let.var); break;
    case HC_S_FOR: collect_var(vs, s->u.for_.var); break;
    case HC_S_FOR_MAPPING:
        for (int i = 0; i < s->u.fmap.nvars; i++) collect_var(vs, s->u.fmap.vars[i]);
        break;
    case HC_S_COMMENT: return hc_comment(mu->a, "");
    default: break;
    }
    return s;
}

/* A key that is equal for two programs that differ only in names: the program printed
 * with every variable renamed to a fixed hint (the printer numbers them in order of
 * appearance), without comments, under a fixed function name. */
static void program_key(hc_arena *a, const hc_func *f, char key[33], size_t *cost) {
    var_vec vs = {0};
    for (int i = 0; i < f->nparams; i++) collect_var(&vs, f->params[i]);
    hc_mutator mu = {.a = a, .ctx = &vs, .stmt = canon_stmt};
    hc_func tmp = *f;
    tmp.name = "kernel";
    tmp.body = hc_mutate_stmt(&mu, f->body);
    const char **saved = hc_xmalloc(sizeof(char *) * (vs.len + 1));
    for (size_t i = 0; i < vs.len; i++) saved[i] = vs.data[i]->name;
    for (size_t i = 0; i < vs.len; i++) vs.data[i]->name = "v";
    hc_sb sb;
    hc_sb_init(&sb);
    hc_print_func(&sb, &tmp);
    for (size_t i = vs.len; i-- > 0;) vs.data[i]->name = saved[i];
    hc_hasher h;
    hc_hash_init(&h);
    hc_hash_update(&h, sb.buf, sb.len);
    hc_hash_hex(&h, key);
    *cost = sb.len;
    hc_sb_free(&sb);
    free(saved);
    hc_vec_free(&vs);
}

static const char *kernel_fname(hc_model *m, const hc_node *n, int idx) {
    const char *base = hc_sched_func_name(&m->arena, n->name);
    return hc_arena_printf(&m->arena, "k%d_%.40s", idx, base);
}

static hc_status check_params(const kernel *k, hc_error *err) {
    int want = k->group.ninputs + k->group.noutputs;
    if (k->func->nparams != want)
        return hc_error_set(err, HC_ERR_INVALID,
                            "node '%s': its program takes %d buffers, the kernel has %d inputs "
                            "and outputs", k->node->name, k->func->nparams, want);
    return HC_OK;
}

/* ---- weight pre-packing ------------------------------------------------------------ */
/* How many times the members of a group read tensor t. */
static int group_reads(const hc_group *g, const hc_tensor *t) {
    int uses = 0;
    for (int m = 0; m < hc_group_size(g); m++) {
        const hc_node *n = m == 0                ? g->anchor
                           : m <= g->nprologue ? g->prologue[m - 1]
                                                 : g->epilogue[m - 1 - g->nprologue];
        for (int i = 0; i < n->ninputs; i++) uses += n->inputs[i] == t;
    }
    return uses;
}

enum { MAXIN = 8 };

/* Which anchor inputs of kernel k can arrive pre-packed with opts o (bit i), and the
 * packed element counts (size[i]); 0 when none or pre-packing is off. */
static unsigned prepack_mask(const hc_model *m, const kernel *k, const hc_target *target,
                             const hc_sched_opts *o, int64_t size[MAXIN]) {
    const hc_node *an = k->node;
    const hc_template *def = hc_target_template(target, an->op);
    unsigned mask = 0;
    if (m->opt.no_prepack || !k->templated || !def || !def->prepack) return 0;
    for (int i = 0; i < an->ninputs && i < MAXIN; i++) {
        const hc_tensor *t = an->inputs[i];
        size[i] = 0;
        if (!t || !is_const(t) || is_empty(t) || group_reads(&k->group, t) != 1) continue;
        size[i] = def->prepack(an, target, o, i, NULL, NULL);
        if (size[i] > 0) mask |= 1u << i;
    }
    return mask;
}

/* The index of tensor t among kernel k's group inputs, or -1. */
static int group_input_index(const kernel *k, const hc_tensor *t) {
    for (int j = 0; j < k->group.ninputs; j++)
        if (k->group.inputs[j] == t) return j;
    return -1;
}

/* ---- tuning ---------------------------------------------------------------------- */
typedef struct tune_job {
    int kernel;
    int ncand;
    unsigned prepacked; /* candidates are measured with these inputs pre-packed */
    bool cold;          /* the weights are evicted from the caches before each timed run */
    char key[33];
} tune_job;

static void fill_random(void *buf, const hc_tensor *t, hc_rng *rng) {
    int64_t n = hc_tensor_numel(t);
    if (t->dtype == HC_F32) {
        float *f = buf;
        for (int64_t i = 0; i < n; i++) f[i] = (float)hc_rng_uniform(rng, -1, 1);
    } else {
        memset(buf, 0, hc_tensor_nbytes(t));
    }
}

static const hc_tensor *group_param(const hc_group *g, int i) {
    return i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs];
}

/* Benchmark every candidate of the anchor's space, each with the group fused into it, on
 * the real shapes; keep the best. The fused program is what is measured: a prologue
 * changes what a config costs (an im2col gather in the packing of B makes reading B in
 * place ruinous), so tuning the anchor alone picks wrong configs. */
/* Kernel k's group scheduled with candidate c of its anchor's space, named `name`. */
static hc_func *schedule_candidate(hc_model *m, const kernel *k, const hc_target *target, int c,
                                   unsigned prepacked, const char *name, hc_error *err) {
    hc_sched_opts o = {.level = m->opt.tune_level, .candidate = c, .prepacked = prepacked};
    bool templated;
    const char *why = NULL;
    hc_func *f = hc_fuse_schedule(&m->arena, &k->group, target, &o, name, &templated, &why, err);
    if (!f)
        hc_error_set(err, err && err->status ? err->status : HC_ERR_UNSUPPORTED,
                     "tuning '%s': candidate %d could not be scheduled%s%s", k->node->name, c,
                     why ? ": " : "", why ? why : "");
    return f;
}

/* Packed copies of weights for tuning, shared by the candidates whose layouts agree. */
typedef struct packed_set {
    HC_VEC(float *) buf;
    HC_VEC(int64_t) n;
} packed_set;

static void packed_set_free(packed_set *ps) {
    for (size_t q = 0; q < ps->buf.len; q++) free(ps->buf.data[q]);
    hc_vec_free(&ps->buf);
    hc_vec_free(&ps->n);
}

/* One argument array per candidate: `args` (np buffers), with each weight the job
 * pre-packs replaced by a copy packed in that candidate's layout. */
static void ***candidate_args(hc_model *m, const kernel *k, const tune_job *job,
                              const hc_target *target, void **args, int np, packed_set *ps) {
    void ***each = hc_xcalloc((size_t)job->ncand, sizeof *each);
    for (int c = 0; c < job->ncand; c++) {
        each[c] = hc_xmalloc(sizeof(void *) * ((size_t)np + 1));
        memcpy(each[c], args, sizeof(void *) * (size_t)np);
        if (!job->prepacked) continue;
        hc_sched_opts o = {.level = m->opt.tune_level, .candidate = c};
        int64_t size[MAXIN] = {0};
        unsigned mask = prepack_mask(m, k, target, &o, size);
        HC_ASSERT(mask == job->prepacked);
        for (int i = 0; i < MAXIN; i++) {
            if (!(mask & (1u << i))) continue;
            const hc_tensor *t = k->node->inputs[i];
            int j = group_input_index(k, t);
            HC_ASSERT(j >= 0);
            size_t bytes = (size_t)size[i] * sizeof(float);
            float *buf = aligned_alloc(64, (bytes + 63) / 64 * 64);
            HC_ASSERT(buf);
            hc_target_template(target, k->node->op)->prepack(k->node, target, &o, i, t->data,
                                                             buf);
            for (size_t q = 0; q < ps->buf.len && buf; q++)
                if (ps->n.data[q] == size[i] && !memcmp(ps->buf.data[q], buf, bytes))
                    free(buf), buf = NULL, each[c][j] = ps->buf.data[q];
            if (buf) {
                hc_vec_push(&ps->buf, buf);
                hc_vec_push(&ps->n, size[i]);
                each[c][j] = buf;
            }
        }
    }
    return each;
}

static hc_status tune_kernel(hc_model *m, const tune_job *job, const hc_target *target,
                             hc_progress *pg, hc_error *err) {
    kernel *k = &m->kernels.data[job->kernel];
    hc_tune_record rec;
    if (hc_tune_record_get(m->opt.jit, job->key, &rec) && rec.ncand == job->ncand &&
        rec.best >= 0 && rec.best < job->ncand) {
        hc_progress_step(pg, job->ncand);
        hc_progress_task_done(pg);
        k->chosen = rec.best, k->tune_cached = true;
        /* the default program is already scheduled; pre-packed ones prepack_kernel makes */
        if (k->chosen == 0 || job->prepacked) return HC_OK;
        hc_func *f = schedule_candidate(m, k, target, k->chosen, 0, k->func->name, err);
        if (!f) return err ? err->status : HC_ERR_UNSUPPORTED;
        k->func = f;
        return HC_OK;
    }
    const hc_group *ag = &k->group;
    hc_func **cands = HC_NEW_ARRAY(&m->arena, hc_func *, job->ncand);
    for (int c = 0; c < job->ncand; c++) {
        const char *name = hc_arena_printf(&m->arena, "cand%d_%d", job->kernel, c);
        if (c == 0 && !job->prepacked) { /* the default program, scheduled: renamed copy */
            cands[0] = HC_NEW(&m->arena, hc_func);
            *cands[0] = *k->func;
            cands[0]->name = name;
            continue;
        }
        cands[c] = schedule_candidate(m, k, target, c, job->prepacked, name, err);
        if (!cands[c]) return err ? err->status : HC_ERR_UNSUPPORTED;
    }
    int np = ag->ninputs + ag->noutputs;
    void **args = hc_xcalloc((size_t)np + 1, sizeof(void *));
    hc_rng rng = {0x1234};
    for (int i = 0; i < np; i++) {
        const hc_tensor *t = group_param(ag, i);
        if (i < ag->ninputs && is_const(t)) {
            args[i] = t->data;
            continue;
        }
        size_t bytes = (hc_tensor_nbytes(t) + 63) / 64 * 64;
        args[i] = aligned_alloc(64, bytes ? bytes : 64);
        fill_random(args[i], t, &rng);
    }
    packed_set ps = {0};
    void ***each = candidate_args(m, k, job, target, args, np, &ps);
    /* candidates that are the same program (with pre-packed weights, pack_a / pack_b of
     * a pre-packed operand change nothing) are measured once */
    int nu = 0, *uniq = hc_xmalloc(sizeof(int) * (size_t)job->ncand);
    char(*keys)[33] = hc_xmalloc(sizeof *keys * (size_t)job->ncand);
    for (int c = 0; c < job->ncand; c++) {
        size_t cost;
        program_key(&m->arena, cands[c], keys[c], &cost);
        bool dup = false;
        for (int q = 0; q < nu && !dup; q++) dup = !strcmp(keys[uniq[q]], keys[c]);
        if (!dup) uniq[nu++] = c;
    }
    hc_func **ucands = hc_xmalloc(sizeof *ucands * (size_t)nu);
    void ***uargs = hc_xmalloc(sizeof *uargs * (size_t)nu);
    for (int q = 0; q < nu; q++) ucands[q] = cands[uniq[q]], uargs[q] = each[uniq[q]];
    if (pg && nu < job->ncand) hc_progress_step(pg, job->ncand - nu);
    /* with cold weights: each candidate's constants (its own packed copies) */
    hc_tune_cold *cold = NULL;
    if (job->cold) {
        cold = hc_xcalloc((size_t)nu, sizeof *cold);
        for (int q = 0; q < nu; q++) {
            void **ca = each[uniq[q]];
            const void **ptr = HC_NEW_ARRAY(&m->arena, const void *, (size_t)ag->ninputs + 1);
            size_t *bytes = HC_NEW_ARRAY(&m->arena, size_t, (size_t)ag->ninputs + 1);
            int nc = 0;
            for (int i = 0; i < ag->ninputs; i++) {
                if (!is_const(ag->inputs[i])) continue;
                size_t b = hc_tensor_nbytes(ag->inputs[i]);
                for (size_t p = 0; p < ps.buf.len; p++)
                    if (ca[i] == ps.buf.data[p]) b = (size_t)ps.n.data[p] * sizeof(float);
                ptr[nc] = ca[i], bytes[nc++] = b;
            }
            cold[q] = (hc_tune_cold){nc, ptr, bytes};
        }
    }
    hc_tune_result res = {0};
    hc_status st = hc_tune_select_each(&m->arena, nu, ucands, (void *const *const *)uargs, cold,
                                       target, m->opt.jit, pg, &res, err);
    free(cold);
    if (st == HC_OK) res.best = uniq[res.best];
    free(ucands), free(uargs), free(uniq), free(keys);
    for (int c = 0; c < job->ncand; c++) free(each[c]);
    free(each);
    packed_set_free(&ps);
    for (int i = 0; i < np; i++)
        if (!(i < ag->ninputs && is_const(group_param(ag, i)))) free(args[i]);
    free(args);
    free(res.ms);
    if (st != HC_OK) return st;
    hc_progress_task_done(pg);
    rec = (hc_tune_record){res.best, res.best_ms, job->ncand};
    st = hc_tune_record_put(m->opt.jit, job->key, &rec, err);
    if (st != HC_OK) return st;
    k->chosen = res.best;
    /* the winner's program, under the kernel's name; with pre-packed weights prepack_kernel
     * schedules it, since it also binds the packed constants */
    if (k->chosen != 0 && !job->prepacked) {
        cands[k->chosen]->name = k->func->name;
        k->func = cands[k->chosen];
    }
    return HC_OK;
}

/* Bytes of the constants the kernels read, each tensor once. */
static size_t kernel_const_bytes(const hc_model *m) {
    size_t nt = m->g->tensors.len, total = 0;
    bool *seen = hc_xcalloc(nt ? nt : 1, sizeof *seen);
    for (size_t i = 0; i < m->kernels.len; i++) {
        const hc_group *g = &m->kernels.data[i].group;
        for (int j = 0; j < g->ninputs; j++) {
            const hc_tensor *t = g->inputs[j];
            if (!is_const(t)) continue;
            bool listed = t->id >= 0 && (size_t)t->id < nt && m->g->tensors.data[t->id] == t;
            if (listed && seen[t->id]) continue;
            if (listed) seen[t->id] = true;
            total += hc_tensor_nbytes(t);
        }
    }
    free(seen);
    return total;
}

static hc_status tune_all(hc_model *m, const hc_target *target, hc_error *err) {
    int level = m->opt.tune_level;
    if (level <= 0) return HC_OK;
    /* Weights that do not all fit in the last-level cache come from memory in every
     * inference; tuned with them in the caches (as repeated runs leave them), GPT-2's
     * attention projections chose configs 20% slower in the model. */
    bool cold = m->opt.tune_weights == HC_TUNE_WEIGHTS_COLD ||
                (m->opt.tune_weights == HC_TUNE_WEIGHTS_AUTO &&
                 kernel_const_bytes(m) > (size_t)target->caps.l3_bytes);
    if (m->verbose)
        fprintf(stderr, "hidetc: tuning with the weights %s\n",
                cold ? "evicted from the caches before each run" : "as the runs leave them");
    HC_VEC(tune_job) jobs = {0};
    int total = 0, tasks = 0;
    for (size_t i = 0; i < m->kernels.len; i++) {
        kernel *k = &m->kernels.data[i];
        const hc_template *def = hc_target_template(target, k->node->op);
        if (!k->templated || !def || !def->space) continue;
        int n = def->space(k->node, target, level);
        k->ncand = HC_MAX(n, 1);
        if (n <= 1) continue;
        tune_job j = {.kernel = (int)i, .ncand = n, .cold = cold};
        /* the signature: the fused group's default program (shapes and fused code) */
        char sig[33];
        size_t cost;
        program_key(&m->arena, k->func, sig, &cost);
        hc_sched_opts o = {.level = level};
        int64_t size[MAXIN];
        j.prepacked = prepack_mask(m, k, target, &o, size);
        /* candidates measured pre-packed or not are different records */
        hc_tune_key(hc_arena_printf(&m->arena, "%s prepacked %u%s", sig, j.prepacked,
                                    cold ? " cold" : ""),
                    level, target, j.key);
        bool dup = false;
        for (size_t q = 0; q < jobs.len && !dup; q++) dup = !strcmp(jobs.data[q].key, j.key);
        if (!dup) total += n, tasks++;
        hc_vec_push(&jobs, j);
    }
    hc_progress pg;
    hc_progress_begin(&pg, "tuning", tasks, total);
    hc_status st = HC_OK;
    for (size_t i = 0; i < jobs.len && st == HC_OK; i++) {
        bool dup = false;
        for (size_t q = 0; q < i && !dup; q++) dup = !strcmp(jobs.data[q].key, jobs.data[i].key);
        if (dup) { /* tuned just before: its record is there, without progress steps */
            hc_progress quiet = {0};
            st = tune_kernel(m, &jobs.data[i], target, &quiet, err);
        } else {
            st = tune_kernel(m, &jobs.data[i], target, &pg, err);
        }
    }
    hc_progress_end(&pg);
    hc_vec_free(&jobs);
    return st;
}

/* ---- weight pre-packing (after tuning) ---------------------------------------- */
/* A templated kernel whose anchor reads a constant weight directly (not through a
 * prologue, and nowhere else in the group) gets that weight packed once, here, in the
 * layout its template's config reads (hc_op_def.prepack): the kernel is rescheduled with
 * opts.prepacked and reads a new constant instead, so it packs nothing per call. The
 * original stays in the graph (other kernels may read it); a compiled model file keeps
 * only the constants its kernels read. */
static hc_status prepack_kernel(hc_model *m, kernel *k, const hc_target *target, hc_error *err) {
    const hc_node *an = k->node;
    const hc_template *def = hc_target_template(target, an->op);
    hc_sched_opts o = {.level = m->opt.tune_level, .candidate = k->chosen};
    int64_t size[MAXIN] = {0};
    unsigned mask = prepack_mask(m, k, target, &o, size);
    if (!mask) return HC_OK;
    o.prepacked = mask;
    bool templated = false;
    const char *why = NULL;
    hc_error e = {0};
    hc_func *f = hc_fuse_schedule(&m->arena, &k->group, target, &o, k->func->name, &templated,
                                  &why, &e);
    if (!f || !templated) { /* the chosen program, packing per call */
        if (m->verbose)
            fprintf(stderr, "hidetc: kernel '%s': weights not pre-packed: %s\n", an->name,
                    why ? why : e.msg);
        if (k->chosen == 0) return HC_OK;
        f = schedule_candidate(m, k, target, k->chosen, 0, k->func->name, err);
        if (!f) return err ? err->status : HC_ERR_UNSUPPORTED;
        k->func = f;
        return HC_OK;
    }
    hc_tensor **ins = HC_NEW_ARRAY(&m->arena, hc_tensor *, k->group.ninputs + 1);
    memcpy(ins, k->group.inputs, sizeof(hc_tensor *) * (size_t)k->group.ninputs);
    for (int i = 0; i < MAXIN; i++) {
        if (!(mask & (1u << i))) continue;
        const hc_tensor *t = an->inputs[i];
        int j = group_input_index(k, t);
        if (j < 0)
            return hc_error_set(err, HC_ERR_INVALID, "node '%s': weight '%s' is not a kernel "
                                "input", an->name, t->name);
        const char *name = hc_arena_printf(&m->arena, "%s.packed%d", t->name, (int)m->kernels.len);
        hc_tensor *p = hc_graph_constant(m->g, name, HC_F32, 1, &size[i], NULL);
        if (!p) return hc_error_set(err, HC_ERR_NOMEM, "node '%s': no memory to pack '%s'",
                                    an->name, t->name);
        def->prepack(an, target, &o, i, t->data, p->data);
        ins[j] = p;
    }
    k->group.inputs = ins;
    k->func = f;
    k->prepacked = mask;
    return check_params(k, err);
}

static hc_status prepack_all(hc_model *m, const hc_target *target, hc_error *err) {
    hc_status st = HC_OK;
    for (size_t i = 0; i < m->kernels.len && st == HC_OK; i++)
        st = prepack_kernel(m, &m->kernels.data[i], target, err);
    return st;
}

/* ---- scheduling ------------------------------------------------------------------ */
/* Partition the kernel nodes into fused groups and schedule each group; a group whose
 * fusion cannot apply is split into one kernel per node (the reason is kept). */
static hc_status schedule_groups(hc_model *m, const hc_target *target, hc_error *err) {
    HC_VEC(hc_node *) nodes = {0};
    hc_status st = HC_OK;
    plan_inplace_concats(m);
    for (size_t i = 0; i < m->g->nodes.len && st == HC_OK; i++) {
        hc_node *n = m->g->nodes.data[i];
        bool run = false;
        st = node_needs_kernel(n, &run, err);
        if (run && !concat_in_place(m, n)) hc_vec_push(&nodes, n);
    }
    hc_partition part = {0};
    if (st == HC_OK)
        st = hc_fuse_partition(&m->arena, m->g, target, (int)nodes.len, nodes.data,
                               !m->opt.no_fusion, &part, err);
    hc_vec_free(&nodes);
    hc_sched_opts o = {.observe = observe_stage, .observe_ctx = m};
    for (int i = 0; st == HC_OK && i < part.ngroups; i++) {
        const hc_group *grp = &part.groups[i];
        kernel k = {.node = grp->anchor, .group = *grp, .ncand = 1};
        const char *why = NULL;
        if (err) err->status = HC_OK;
        k.func = hc_fuse_schedule(&m->arena, grp, target, &o,
                                  kernel_fname(m, grp->anchor, (int)m->kernels.len),
                                  &k.templated, &why, err);
        if (!k.func && why && hc_group_size(grp) > 1) {
            hc_partition_split(&m->arena, &part, i, why);
            i--; /* schedule the members one by one */
            continue;
        }
        if (!k.func) {
            st = err && err->status ? err->status : HC_ERR_UNSUPPORTED;
            if (why) hc_error_set(err, st, "node '%s': %s", grp->anchor->name, why);
            break;
        }
        st = check_params(&k, err);
        if (st == HC_OK) hc_vec_push(&m->kernels, k);
    }
    if (st == HC_OK) st = tune_all(m, target, err);
    if (st == HC_OK) st = prepack_all(m, target, err);
    return st;
}

/* Kernels whose programs are identical share one compiled function. */
static void dedup_kernel(hc_model *m, kernel *k) {
    unique_fn u = {.func = k->func};
    program_key(&m->arena, k->func, u.key, &u.cost);
    for (size_t i = 0; i < m->uniques.len; i++)
        if (!strcmp(m->uniques.data[i].key, u.key)) {
            k->unique = (int)i;
            return;
        }
    k->unique = (int)m->uniques.len;
    hc_vec_push(&m->uniques, u);
}

static hc_status schedule_all(hc_model *m, hc_error *err) {
    hc_target target = *m->target;
    target.caps.num_cores = m->num_threads;
    hc_status st = schedule_groups(m, &target, err);
    if (st != HC_OK) return st;
    for (size_t i = 0; i < m->kernels.len; i++) {
        kernel *k = &m->kernels.data[i];
        dedup_kernel(m, k);
        if (m->verbose) {
            hc_sb sb;
            hc_sb_init(&sb);
            hc_group_print(&sb, &k->group);
            fprintf(stderr, "hidetc: kernel %zu: %s (%s)%s\n", i, sb.buf,
                    k->templated ? "template" : "auto-scheduled",
                    m->uniques.data[k->unique].func != k->func
                        ? ", same program as an earlier kernel"
                        : "");
            hc_sb_free(&sb);
        }
    }
    return HC_OK;
}

/* ---- compilation ----------------------------------------------------------------- */
/* Spread the unique functions over `nchunks` sources, largest first onto the least
 * loaded chunk, so the parallel compiler jobs take about the same time. */
static void assign_chunks(hc_model *m, int nchunks) {
    size_t n = m->uniques.len;
    int *order = hc_xmalloc(sizeof(int) * (n + 1));
    size_t *load = hc_xcalloc((size_t)nchunks, sizeof(size_t));
    for (size_t i = 0; i < n; i++) order[i] = (int)i;
    for (size_t i = 1; i < n; i++) /* insertion sort: stable, by decreasing cost */
        for (size_t j = i; j > 0 && m->uniques.data[order[j]].cost >
                                        m->uniques.data[order[j - 1]].cost; j--) {
            int tmp = order[j];
            order[j] = order[j - 1], order[j - 1] = tmp;
        }
    for (size_t i = 0; i < n; i++) {
        int best = 0;
        for (int c = 1; c < nchunks; c++)
            if (load[c] < load[best]) best = c;
        m->uniques.data[order[i]].chunk = best;
        load[best] += m->uniques.data[order[i]].cost;
    }
    free(order), free(load);
}

static char *chunk_source(hc_model *m, int c, const hc_target *t) {
    HC_VEC(hc_func *) fs = {0};
    for (size_t i = 0; i < m->uniques.len; i++)
        if (m->uniques.data[i].chunk == c) hc_vec_push(&fs, m->uniques.data[i].func);
    const char *name = hc_arena_printf(&m->arena, "%s_%d", m->g->name ? m->g->name : "model", c);
    hc_module *mod = hc_module_new(&m->arena, name, (int)fs.len, fs.data);
    hc_module *lm = t->lower(&m->arena, mod, t);
    hc_error err = {0};
    if (hc_verify_module(lm, &err) != HC_OK) HC_ASSERT_MSG(0, err.msg); /* a lowering bug */
    if (m->opt.dump_stage == HC_STAGE_LOWERED)
        for (int i = 0; i < lm->nfuncs; i++) dump_func(HC_STAGE_LOWERED, lm->funcs[i]);
    char *src = t->emit(&m->arena, lm, t);
    if (m->opt.dump_stage == HC_STAGE_SOURCE)
        fprintf(stderr, "== hidetc source: %s ==\n%s\n", name, src);
    hc_vec_free(&fs);
    return src;
}

/* Lower and emit every program (for --dump-ir) without building anything. */
static void emit_only(hc_model *m) {
    if (m->uniques.len == 0) return;
    assign_chunks(m, 1);
    free(chunk_source(m, 0, m->target));
}

static hc_status resolve_symbols(hc_model *m, hc_error *err) {
    for (size_t i = 0; i < m->kernels.len; i++) {
        kernel *k = &m->kernels.data[i];
        const unique_fn *u = &m->uniques.data[k->unique];
        char sym[256];
        snprintf(sym, sizeof sym, "%s__packed", u->func->name);
        k->fn = (hc_packed_fn)m->target->symbol(m->libs[u->chunk], sym);
        if (!k->fn)
            return hc_error_set(err, HC_ERR_COMPILE, "kernel '%s' (node '%s') not found in %s",
                                sym, k->node->name, m->target->lib_path(m->libs[u->chunk]));
    }
    return HC_OK;
}

static hc_status compile_all(hc_model *m, const hc_compile_options *opt, hc_error *err) {
    if (m->uniques.len == 0) return HC_OK;
    const hc_target *t = m->target;
    int cores = HC_MAX(1, t->caps.num_cores);
    int nchunks = (int)HC_MIN((size_t)cores, m->uniques.len);
    assign_chunks(m, nchunks);
    char **srcs = hc_xcalloc((size_t)nchunks, sizeof(char *));
    for (int c = 0; c < nchunks; c++) srcs[c] = chunk_source(m, c, t);
    m->nlibs = nchunks;
    m->libs = hc_xcalloc((size_t)nchunks, sizeof(hc_jit_lib *));
    double t0 = hc_now_ms();
    hc_status st = t->build(t, nchunks, (const char *const *)srcs, opt ? opt->jit : NULL, cores,
                            m->libs, err);
    for (int c = 0; c < nchunks; c++) free(srcs[c]);
    free(srcs);
    if (st != HC_OK) return st;
    if (m->verbose) {
        int cached = 0;
        for (int c = 0; c < nchunks; c++) cached += t->lib_cached(m->libs[c]);
        fprintf(stderr, "hidetc: %zu kernels, %zu distinct programs, %d sources (%d cached), "
                        "%.0f ms\n", m->kernels.len, m->uniques.len, nchunks, cached,
                hc_now_ms() - t0);
    }
    return resolve_symbols(m, err);
}

/* ---- arguments ------------------------------------------------------------------- */
static void *bind_arg(hc_model *m, const hc_tensor *t, void **slot) {
    const loc *l = &m->locs[t->id];
    switch (l->kind) {
    case LOC_EMPTY: return empty_buffer;
    case LOC_CONST: return t->data;
    case LOC_ARENA: return (char *)m->mem + m->plan.data[l->index].offset;
    case LOC_INPUT:
    case LOC_OUTPUT: {
        binding b = {slot, l->index, l->kind == LOC_OUTPUT};
        hc_vec_push(&m->binds, b);
        return NULL;
    }
    case LOC_NONE: break;
    }
    hc_unreachable();
}

static void prepare_args(hc_model *m) {
    size_t bytes = (m->arena_bytes + 63) / 64 * 64;
    m->mem = m->target->exec->alloc(bytes);
    HC_ASSERT(m->mem);
    for (size_t i = 0; i < m->kernels.len; i++) {
        kernel *k = &m->kernels.data[i];
        k->nargs = k->func->nparams;
        k->args = HC_NEW_ARRAY(&m->arena, void *, k->nargs + 1);
        int a = 0;
        for (int j = 0; j < k->group.ninputs; j++)
            k->args[a] = bind_arg(m, k->group.inputs[j], &k->args[a]), a++;
        for (int j = 0; j < k->group.noutputs; j++)
            k->args[a] = bind_arg(m, k->group.outputs[j], &k->args[a]), a++;
        HC_ASSERT(a == k->nargs);
    }
}

/* ---- public ---------------------------------------------------------------------- */
static void report_plan(const hc_model *m) {
    double pct = m->intermediate_bytes ? 100.0 * (double)m->arena_bytes /
                                             (double)m->intermediate_bytes
                                       : 100.0;
    fprintf(stderr, "hidetc: memory plan: %zu intermediate tensors, %zu bytes in total, "
                    "arena %zu bytes (%.1f%%)\n", m->plan.len, m->intermediate_bytes,
            m->arena_bytes, pct);
}

hc_status hc_model_compile(hc_graph *g, const hc_compile_options *opt, hc_model **out,
                           hc_error *err) {
    *out = NULL;
    hc_model *m = hc_xcalloc(1, sizeof *m);
    m->g = g;
    hc_arena_init(&m->arena);
    m->target = opt && opt->target ? opt->target : hc_target_default();
    m->num_threads = opt && opt->num_threads > 0 ? opt->num_threads
                                                   : HC_MAX(1, m->target->caps.num_cores);
    m->verbose = opt && opt->verbose;
    if (opt) m->opt = *opt;
    const char *dump = getenv("HIDETC_DUMP"), *verify = getenv("HIDETC_VERIFY");
    if (!m->opt.dump_stage && dump && *dump) m->opt.dump_stage = hc_stage_parse(dump);
    if (verify && !strcmp(verify, "1")) m->opt.verify = true;
    /* the channel-blocked layout with blocks of one vector (docs/nchwc.md): the templates
     * take no other block (the auto-scheduler would get those ops) */
    int lanes = hc_target_f32_lanes(m->target);
    hc_status st = HC_OK;
    if (m->opt.paths.no_nchwc) m->opt.paths.nchwc_block = 0;
    else if (m->opt.paths.nchwc_block == 0) m->opt.paths.nchwc_block = lanes;
    else if (m->opt.paths.nchwc_block != lanes)
        st = hc_error_set(err, HC_ERR_INVALID,
                          "nchwc_block %d: the channel-blocked layout takes blocks of the "
                          "target's %d f32 lanes (or 0 for them, or no_nchwc)",
                          m->opt.paths.nchwc_block, lanes);
    if (!m->opt.paths.target) m->opt.paths.target = m->target;
    if (st == HC_OK) st = hc_graph_optimize_with(g, &m->opt.paths, err);
    if (st == HC_OK) st = schedule_all(m, err);
    if (st == HC_OK) st = plan_memory(m, err);
    if (st == HC_OK && !m->opt.schedule_only) st = compile_all(m, opt, err);
    if (st == HC_OK && m->opt.schedule_only && m->opt.dump_stage >= HC_STAGE_LOWERED)
        emit_only(m); /* inspect --dump-ir lowered|source: also for a target that cannot run */
    if (st != HC_OK) {
        hc_model_free(m);
        return st;
    }
    if (m->opt.schedule_only) {
        *out = m;
        return HC_OK;
    }
    prepare_args(m);
    if (m->verbose) report_plan(m);
    *out = m;
    return HC_OK;
}

void hc_model_free(hc_model *m) {
    if (!m) return;
    if (m->release) m->release(m);
    for (int i = 0; i < m->nlibs; i++)
        if (m->libs[i]) m->target->lib_close(m->libs[i]);
    free(m->libs);
    if (m->mem) m->target->exec->release(m->mem);
    hc_vec_free(&m->kernels);
    hc_vec_free(&m->uniques);
    hc_vec_free(&m->plan);
    hc_vec_free(&m->binds);
    hc_vec_free(&m->copies);
    hc_arena_free(&m->arena);
    hc_graph_free(m->g);
    free(m);
}

const hc_target *hc_model_target(const hc_model *m) { return m->target; }
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
        if (!is_empty(m->g->inputs.data[i]) && !inputs[i])
            return hc_error_set(err, HC_ERR_INVALID, "input '%s': buffer is NULL",
                                m->g->inputs.data[i]->name);
    for (size_t i = 0; i < m->g->outputs.len; i++)
        if (!is_empty(m->g->outputs.data[i]) && !outputs[i])
            return hc_error_set(err, HC_ERR_INVALID, "output '%s': buffer is NULL",
                                m->g->outputs.data[i]->name);
    return HC_OK;
}

static hc_status run(hc_model *m, void *const *inputs, void *const *outputs, double *ms,
                     hc_error *err) {
    if (m->opt.schedule_only)
        return hc_error_set(err, HC_ERR_INVALID, "hc_model_run: the model was compiled with "
                                                 "schedule_only (for inspection)");
    if ((m->g->inputs.len && !inputs) || (m->g->outputs.len && !outputs))
        return hc_error_set(err, HC_ERR_INVALID, "hc_model_run: inputs or outputs is NULL");
    hc_status st = check_buffers(m, inputs, outputs, err);
    if (st != HC_OK) return st;
    for (size_t i = 0; i < m->binds.len; i++) {
        const binding *b = &m->binds.data[i];
        *b->slot = b->output ? outputs[b->index] : inputs[b->index];
    }
    const hc_executor *ex = m->target->exec;
    hc_run_state rs;
    ex->begin(m->num_threads, &rs);
    for (size_t i = 0; i < m->kernels.len; i++) {
        double t0 = ms ? hc_now_ms() : 0;
        ex->launch(m->kernels.data[i].fn, m->kernels.data[i].args);
        if (ms) ms[i] = hc_now_ms() - t0;
    }
    ex->end(&rs);
    for (size_t i = 0; i < m->copies.len; i++) {
        const out_copy *c = &m->copies.data[i];
        const void *src = c->src == COPY_CONST   ? c->data
                          : c->src == COPY_INPUT ? inputs[c->index]
                                                 : outputs[c->index];
        memmove(outputs[c->output], src, c->bytes);
    }
    return HC_OK;
}

hc_status hc_model_run(hc_model *m, void *const *inputs, void *const *outputs, hc_error *err) {
    return run(m, inputs, outputs, NULL, err);
}

hc_status hc_model_run_profile(hc_model *m, void *const *inputs, void *const *outputs, double *ms,
                               hc_error *err) {
    return run(m, inputs, outputs, ms, err);
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

unsigned hc_model_kernel_prepacked(const hc_model *m, int i) {
    HC_ASSERT(i >= 0 && (size_t)i < m->kernels.len);
    return m->kernels.data[i].prepacked;
}
