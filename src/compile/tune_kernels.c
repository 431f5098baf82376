/* tune_kernels.c — the compile pipeline's tuning and weight pre-packing: every templated
 * kernel's candidates, fused with its group, timed on the real shapes through the target
 * (src/tune), the winner kept as a record; then the chosen programs with their constant
 * weights packed once. */
#include <stdlib.h>
#include <string.h>

#include "compile/compile_internal.h"

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
        if (!t || !hc_rt_is_const(t) || hc_rt_is_empty(t) || group_reads(&k->group, t) != 1)
            continue;
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
        if (i < ag->ninputs && hc_rt_is_const(t)) {
            args[i] = t->data;
            continue;
        }
        size_t bytes = (hc_tensor_nbytes(t) + 63) / 64 * 64;
        args[i] = aligned_alloc(64, bytes ? bytes : 64);
        fill_random(args[i], t, &rng);
    }
    /* a device target times its kernels on device copies of the same data */
    const hc_executor *ex = target->exec;
    void **host = NULL;
    if (hc_exec_is_device(ex)) {
        host = args;
        args = hc_xcalloc((size_t)np + 1, sizeof(void *));
        hc_status dst = HC_OK;
        for (int i = 0; i < np && dst == HC_OK; i++) {
            size_t bytes = hc_tensor_nbytes(group_param(ag, i));
            if (!(args[i] = ex->alloc(bytes ? bytes : 64)))
                dst = hc_error_set(err, HC_ERR_NOMEM, "tune: out of device memory for '%s'",
                                   group_param(ag, i)->name);
            else dst = ex->upload(args[i], host[i], bytes, err);
        }
        if (dst != HC_OK) {
            for (int i = 0; i < np; i++) {
                if (args[i]) ex->release(args[i]);
                if (!(i < ag->ninputs && hc_rt_is_const(group_param(ag, i)))) free(host[i]);
            }
            free(args), free(host);
            return dst;
        }
    }
    packed_set ps = {0};
    void ***each = candidate_args(m, k, job, target, args, np, &ps);
    /* candidates that are the same program (with pre-packed weights, pack_a / pack_b of
     * a pre-packed operand change nothing) are measured once */
    int nu = 0, *uniq = hc_xmalloc(sizeof(int) * (size_t)job->ncand);
    char(*keys)[33] = hc_xmalloc(sizeof *keys * (size_t)job->ncand);
    for (int c = 0; c < job->ncand; c++) {
        size_t cost;
        hc_compile_program_key(&m->arena, cands[c], keys[c], &cost);
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
                if (!hc_rt_is_const(ag->inputs[i])) continue;
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
    if (host) { /* device copies, then the host data */
        for (int i = 0; i < np; i++) ex->release(args[i]);
        free(args);
        args = host;
    }
    for (int i = 0; i < np; i++)
        if (!(i < ag->ninputs && hc_rt_is_const(group_param(ag, i)))) free(args[i]);
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
            if (!hc_rt_is_const(t)) continue;
            bool listed = t->id >= 0 && (size_t)t->id < nt && m->g->tensors.data[t->id] == t;
            if (listed && seen[t->id]) continue;
            if (listed) seen[t->id] = true;
            total += hc_tensor_nbytes(t);
        }
    }
    free(seen);
    return total;
}

/* Whether a tensor of the group has a symbolic dimension (dynamic shapes). */
static bool group_is_symbolic(const hc_group *g) {
    for (int i = 0; i < g->ninputs + g->noutputs; i++)
        if (hc_tensor_is_symbolic(group_param(g, i))) return true;
    return false;
}

hc_status hc_compile_tune_all(hc_model *m, const hc_target *target, hc_error *err) {
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
        /* a kernel with symbolic extents is not tuned: timing it needs the symbols'
         * values as arguments; it runs its space's default (decided at the hints) */
        if (group_is_symbolic(&k->group)) continue;
        int n = def->space(k->node, target, level);
        k->ncand = HC_MAX(n, 1);
        if (n <= 1) continue;
        tune_job j = {.kernel = (int)i, .ncand = n, .cold = cold};
        /* the signature: the fused group's default program (shapes and fused code) */
        char sig[33];
        size_t cost;
        hc_compile_program_key(&m->arena, k->func, sig, &cost);
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
 * layout its template's config reads (hc_template.prepack): the kernel is rescheduled with
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
    return hc_compile_check_params(k, err);
}

hc_status hc_compile_prepack_all(hc_model *m, const hc_target *target, hc_error *err) {
    hc_status st = HC_OK;
    for (size_t i = 0; i < m->kernels.len && st == HC_OK; i++)
        st = prepack_kernel(m, &m->kernels.data[i], target, err);
    return st;
}
