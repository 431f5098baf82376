/* tune_kernels.c — the compile pipeline's tuning and weight pre-packing: every templated
 * kernel's candidates, fused with its group, timed on the real shapes through the target
 * (src/tune), the winner kept as a record; then the chosen programs with their constant
 * weights packed once. */
#include <math.h>
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
/* tests: a hook that decides the winners instead of timing (hc_compile_set_tune_hook) */
static hc_tune_hook_fn tune_hook;
static void *tune_hook_user;

void hc_compile_set_tune_hook(hc_tune_hook_fn fn, void *user) {
    tune_hook = fn, tune_hook_user = user;
}

typedef struct tune_job {
    int kernel;
    int ncand;
    unsigned prepacked; /* candidates are measured with these inputs pre-packed */
    bool cold;          /* the weights are evicted from the caches before each timed run */
    char key[33];
    /* a symbolic kernel (dynamic shapes): the binding its candidates are timed at, the
     * model's symbols' values (the candidates take them as parameters); NULL: static */
    int64_t *point;
} tune_job;

static void fill_random(void *buf, const hc_tensor *t, size_t bytes, hc_rng *rng) {
    if (t->dtype == HC_F32) {
        float *f = buf;
        for (size_t i = 0; i < bytes / sizeof(float); i++) f[i] = (float)hc_rng_uniform(rng, -1, 1);
    } else {
        memset(buf, 0, bytes);
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
    size_t ns = m->g->sym_names.len; /* room for the symbols' values after the buffers */
    for (int c = 0; c < job->ncand; c++) {
        each[c] = hc_xcalloc((size_t)np + ns + 1, sizeof(void *));
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

/* Candidate c as a symbolic kernel takes it: the symbols it uses appended as parameters
 * (their slots in *slots, *n of them), so that it can be timed at a binding. */
static hc_func *with_symbols(hc_model *m, hc_func *f, int **slots, int *n, hc_error *err) {
    int ns = (int)m->g->sym_names.len;
    *slots = HC_NEW_ARRAY(&m->arena, int, ns + 1);
    *n = hc_program_symbols(&m->arena, f, ns, m->g->sym_names.data, *slots, err);
    if (*n < 0) return NULL;
    return hc_func_with_symbols(&m->arena, f, m->g->sym_names.data, *slots, *n);
}

/* What the tuning of a model spent (hidetc --verbose): jobs timed and their distinct
 * candidates, the compiler's and the timing's wall time; jobs the records answered. */
typedef struct tune_stats {
    int tuned, distinct, cached;
    double compile_ms, bench_ms;
} tune_stats;

/* Run one tuning job: the winner from its record, or every candidate scheduled, fused and
 * timed. *best: the winner; *cands: the candidates' programs (NULL when the record gave
 * the winner), under the names cand<kernel>_<c>, without symbol parameters; *stats: what
 * the timing spent, added. */
static hc_status run_job(hc_model *m, const tune_job *job, const hc_target *target, hc_progress *pg,
                         int *best, bool *cached, hc_func ***cands_out, double *ms,
                         tune_stats *stats, hc_error *err) {
    kernel *k = &m->kernels.data[job->kernel];
    hc_tune_record rec;
    *cands_out = NULL, *cached = false;
    if (hc_tune_record_get(m->opt.jit, job->key, &rec) && rec.ncand == job->ncand &&
        rec.best >= 0 && rec.best < job->ncand) {
        hc_progress_step(pg, job->ncand);
        hc_progress_task_done(pg);
        *best = rec.best, *cached = true;
        for (int c = 0; c < job->ncand && c < HC_TUNE_RECORD_TIMES; c++) ms[c] = rec.times[c];
        return HC_OK;
    }
    const hc_group *ag = &k->group;
    hc_func **cands = HC_NEW_ARRAY(&m->arena, hc_func *, job->ncand);
    hc_func **timed = HC_NEW_ARRAY(&m->arena, hc_func *, job->ncand);
    int **cslots = HC_NEW_ARRAY(&m->arena, int *, job->ncand);
    int *cns = HC_NEW_ARRAY(&m->arena, int, job->ncand);
    for (int c = 0; c < job->ncand; c++) {
        const char *name = hc_arena_printf(&m->arena, "cand%d_%d", job->kernel, c);
        if (c == 0 && !job->prepacked) { /* the default program, scheduled: renamed copy */
            cands[0] = HC_NEW(&m->arena, hc_func);
            *cands[0] = *k->func;
            cands[0]->name = name;
        } else {
            cands[c] = schedule_candidate(m, k, target, c, job->prepacked, name, err);
            if (!cands[c]) return err ? err->status : HC_ERR_UNSUPPORTED;
        }
        timed[c] = cands[c], cns[c] = 0;
        if (job->point && !(timed[c] = with_symbols(m, cands[c], &cslots[c], &cns[c], err)))
            return err ? err->status : HC_ERR_INVALID;
    }
    hc_sym_binding bind = {(int)m->g->sym_names.len, m->g->sym_names.data, job->point};
    int np = ag->ninputs + ag->noutputs;
    void **args = hc_xcalloc((size_t)np + 1, sizeof(void *));
    size_t *nbytes = hc_xcalloc((size_t)np + 1, sizeof(size_t));
    hc_rng rng = {0x1234};
    hc_status st = HC_OK;
    for (int i = 0; i < np; i++) {
        const hc_tensor *t = group_param(ag, i);
        nbytes[i] = hc_tensor_nbytes(t);
        if (i < ag->ninputs && hc_rt_is_const(t)) {
            args[i] = t->data;
            continue;
        }
        if (job->point && !hc_tensor_nbytes_at(t, &bind, &nbytes[i]) && st == HC_OK)
            st = hc_error_set(err, HC_ERR_INVALID, "tuning '%s': tensor '%s' has no size at "
                              "the tuning binding", k->node->name, t->name);
        size_t bytes = (nbytes[i] + 63) / 64 * 64;
        args[i] = aligned_alloc(64, bytes ? bytes : 64);
        fill_random(args[i], t, nbytes[i], &rng);
    }
    /* a device target times its kernels on device copies of the same data */
    const hc_executor *ex = target->exec;
    void **host = NULL;
    if (st == HC_OK && hc_exec_is_device(ex)) {
        host = args;
        args = hc_xcalloc((size_t)np + 1, sizeof(void *));
        hc_status dst = HC_OK;
        for (int i = 0; i < np && dst == HC_OK; i++) {
            size_t bytes = nbytes[i];
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
            free(args), free(host), free(nbytes);
            return dst;
        }
    }
    if (st != HC_OK) {
        for (int i = 0; i < np; i++)
            if (!(i < ag->ninputs && hc_rt_is_const(group_param(ag, i)))) free(args[i]);
        free(args), free(nbytes);
        return st;
    }
    free(nbytes);
    packed_set ps = {0};
    void ***each = candidate_args(m, k, job, target, args, np, &ps);
    for (int c = 0; c < job->ncand; c++) /* the symbols' values, by address */
        for (int j = 0; j < cns[c]; j++) each[c][np + j] = &job->point[cslots[c][j]];
    /* candidates that are the same program (with pre-packed weights, pack_a / pack_b of
     * a pre-packed operand change nothing) are measured once */
    int nu = 0, *uniq = hc_xmalloc(sizeof(int) * (size_t)job->ncand);
    char(*keys)[33] = hc_xmalloc(sizeof *keys * (size_t)job->ncand);
    for (int c = 0; c < job->ncand; c++) {
        size_t cost;
        hc_compile_program_key(&m->arena, timed[c], keys[c], &cost);
        bool dup = false;
        for (int q = 0; q < nu && !dup; q++) dup = !strcmp(keys[uniq[q]], keys[c]);
        if (!dup) uniq[nu++] = c;
    }
    hc_func **ucands = hc_xmalloc(sizeof *ucands * (size_t)nu);
    void ***uargs = hc_xmalloc(sizeof *uargs * (size_t)nu);
    for (int q = 0; q < nu; q++) ucands[q] = timed[uniq[q]], uargs[q] = each[uniq[q]];
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
    st = hc_tune_select_each(&m->arena, nu, ucands, (void *const *const *)uargs, cold, target,
                             m->opt.jit, pg, &res, err);
    free(cold);
    stats->tuned++, stats->distinct += nu;
    stats->compile_ms += res.compile_ms, stats->bench_ms += res.bench_ms;
    if (st == HC_OK) res.best = uniq[res.best];
    for (int c = 0; st == HC_OK && res.ms && c < job->ncand; c++) /* each candidate's median */
        for (int q = 0; q < nu; q++)
            if (!strcmp(keys[uniq[q]], keys[c])) ms[c] = res.ms[q];
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
    rec = (hc_tune_record){res.best, res.best_ms, job->ncand, {0}};
    for (int c = 0; c < job->ncand && c < HC_TUNE_RECORD_TIMES; c++) rec.times[c] = (float)ms[c];
    st = hc_tune_record_put(m->opt.jit, job->key, &rec, err);
    if (st != HC_OK) return st;
    *best = res.best;
    *cands_out = cands;
    return HC_OK;
}

/* Kernel k runs candidate `chosen`: its program, under the kernel's name (cands: the
 * tuned programs, or NULL to schedule it). With pre-packed weights prepack_kernel
 * schedules it, since it also binds the packed constants. */
static hc_status apply_choice(hc_model *m, kernel *k, const hc_target *target, int chosen,
                              unsigned prepacked, hc_func **cands, hc_error *err) {
    k->chosen = chosen;
    if (chosen == 0 || prepacked) return HC_OK; /* the default program is scheduled */
    hc_func *f = cands ? cands[chosen] : NULL;
    if (!f && !(f = schedule_candidate(m, k, target, chosen, 0, k->func->name, err)))
        return err ? err->status : HC_ERR_UNSUPPORTED;
    f->name = k->func->name;
    k->func = f;
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

/* ---- dynamic shapes: tuning at bindings, dispatch (docs/dynamic.md) ------------------ */
enum { MAX_TUNE_POINTS = 64 };

static int symbol_index(const hc_graph *g, const char *name) {
    for (size_t i = 0; i < g->sym_names.len; i++)
        if (!strcmp(g->sym_names.data[i], name)) return (int)i;
    return -1;
}

static const char *binding_text(hc_arena *a, const hc_graph *g, const int64_t *v,
                                const int *slots, int n) {
    hc_sb sb;
    hc_sb_init(&sb);
    for (int j = 0; j < n; j++)
        hc_sb_printf(&sb, "%s%s=%lld", j ? "," : "", g->sym_names.data[slots[j]],
                     (long long)v[slots[j]]);
    const char *s = hc_arena_strdup(a, sb.len ? sb.buf : "");
    hc_sb_free(&sb);
    return s;
}

/* The bindings symbolic kernels are tuned at (*n of them, each the model's symbols'
 * values): every combination of opt.tune_shapes' values, the other symbols at their
 * hints; without tune_shapes, the hints. Each is checked against the graph's
 * constraints. */
static hc_status tune_points(hc_model *m, int64_t **out, int *nout, hc_error *err) {
    const hc_graph *g = m->g;
    const hc_compile_options *o = &m->opt;
    size_t ns = g->sym_names.len;
    *out = NULL, *nout = 0;
    if (o->tune_nshapes && !ns)
        return hc_error_set(err, HC_ERR_INVALID, "--tune-shapes: the model has no symbolic "
                            "dimensions");
    if (!ns) return HC_OK; /* static kernels only: no bindings */
    int total = 1, *slot = hc_xcalloc((size_t)o->tune_nshapes + 1, sizeof(int));
    for (int i = 0; i < o->tune_nshapes; i++) {
        const hc_tune_shape *ts = &o->tune_shapes[i];
        slot[i] = symbol_index(g, ts->name);
        hc_status st = HC_OK;
        if (slot[i] < 0) {
            hc_sb sb;
            hc_sb_init(&sb);
            for (size_t k = 0; k < ns; k++) hc_sb_printf(&sb, "%s%s", k ? ", " : "", g->sym_names.data[k]);
            st = hc_error_set(err, HC_ERR_INVALID, "--tune-shapes %s: the model has no such "
                              "symbol (its symbols: %s)", ts->name, sb.buf);
            hc_sb_free(&sb);
        }
        for (int j = 0; j < i && st == HC_OK; j++)
            if (slot[j] == slot[i])
                st = hc_error_set(err, HC_ERR_INVALID, "--tune-shapes %s: given twice", ts->name);
        if (st == HC_OK && ts->nvalues < 1)
            st = hc_error_set(err, HC_ERR_INVALID, "--tune-shapes %s: no values", ts->name);
        for (int j = 0; j < ts->nvalues && st == HC_OK; j++)
            if (ts->values[j] < 1)
                st = hc_error_set(err, HC_ERR_INVALID, "--tune-shapes %s=%lld: a value must be "
                                  "at least 1", ts->name, (long long)ts->values[j]);
        if (st == HC_OK && (int64_t)total * ts->nvalues > MAX_TUNE_POINTS)
            st = hc_error_set(err, HC_ERR_INVALID, "--tune-shapes: more than %d bindings to "
                              "tune at", MAX_TUNE_POINTS);
        if (st != HC_OK) {
            free(slot);
            return st;
        }
        total *= ts->nvalues;
    }
    int64_t *pts = hc_xmalloc(sizeof(int64_t) * (size_t)total * (ns ? ns : 1));
    for (int p = 0; p < total; p++) {
        int64_t *v = pts + (size_t)p * ns;
        memcpy(v, g->sym_hints.data, sizeof(int64_t) * ns);
        for (int i = 0, r = p; i < o->tune_nshapes; i++) { /* mixed radix: the first fastest */
            v[slot[i]] = o->tune_shapes[i].values[r % o->tune_shapes[i].nvalues];
            r /= o->tune_shapes[i].nvalues;
        }
        hc_sym_binding b = {(int)ns, g->sym_names.data, v};
        hc_error e = {0};
        if (hc_graph_check_binding(g, &b, &e) != HC_OK) {
            int *all = hc_xmalloc(sizeof(int) * (ns + 1));
            for (size_t k = 0; k < ns; k++) all[k] = (int)k;
            hc_error_set(err, HC_ERR_INVALID, "--tune-shapes: the binding %s: %s",
                         binding_text(&m->arena, g, v, all, (int)ns), e.msg);
            free(all), free(slot), free(pts);
            return err ? err->status : HC_ERR_INVALID;
        }
    }
    free(slot);
    *out = pts, *nout = total;
    return HC_OK;
}

/* A kernel's tuning: its jobs (one per binding for a symbolic kernel) and their
 * winners. */
typedef struct kernel_tuning {
    int first_job, njobs;
} kernel_tuning;

typedef struct job_result {
    int best;
    bool cached;
    hc_func **cands;
    double *ms; /* per candidate: its median at the job's binding (0: unknown) */
} job_result;

/* Symbolic kernel k's tuning bindings: pts projected on the symbols its program takes
 * (the others at their hints), duplicates dropped; *slots and *nslots: those symbols. */
static int kernel_points(hc_model *m, const kernel *k, const int64_t *pts, int npts,
                         int64_t **out, int **slots, int *nslots, hc_error *err) {
    const hc_graph *g = m->g;
    size_t ns = g->sym_names.len;
    *slots = HC_NEW_ARRAY(&m->arena, int, ns + 1);
    *nslots = hc_program_symbols(&m->arena, k->func, (int)ns, g->sym_names.data, *slots, err);
    if (*nslots < 0) return -1;
    int64_t *kp = HC_NEW_ARRAY(&m->arena, int64_t, (size_t)npts * ns + 1);
    int n = 0;
    for (int p = 0; p < npts; p++) {
        int64_t *v = kp + (size_t)n * ns;
        memcpy(v, g->sym_hints.data, sizeof(int64_t) * ns);
        for (int j = 0; j < *nslots; j++) v[(*slots)[j]] = pts[(size_t)p * ns + (size_t)(*slots)[j]];
        bool dup = false;
        for (int q = 0; q < n && !dup; q++) dup = !memcmp(kp + (size_t)q * ns, v, sizeof(int64_t) * ns);
        if (!dup) n++;
    }
    *out = kp;
    return n;
}

/* A config kept for another binding is enough there unless the binding's winner is more
 * than this much faster: every alternative is one more program and, where its config
 * packs the weights differently, one more copy of them. */
#define DISPATCH_GAIN 0.05

/* Candidate c's time in job result r: +inf when unknown (not measured, or a record
 * without times), so that only measured configs stand in for a winner. */
static double time_of(const job_result *r, int c) {
    return r->ms && r->ms[c] > 0 ? r->ms[c] : INFINITY;
}

/* The configs symbolic kernel k keeps over its jobs (kt's): the winner at the most
 * bindings first (ties: the earliest), then, binding by binding, its winner where every
 * config kept so far is more than DISPATCH_GAIN slower; each binding then goes to the
 * kept config fastest there (assign[j]: an index into kept). Returns how many. */
static int choose_configs(const job_result *res, const kernel_tuning *kt, int *kept,
                          int *assign) {
    const job_result *r = res + kt->first_job;
    int n = kt->njobs, first = 0, most = 0, nk = 0;
    for (int j = 0; j < n; j++) {
        int cnt = 0;
        for (int q = 0; q < n; q++) cnt += r[q].best == r[j].best;
        if (cnt > most) most = cnt, first = r[j].best;
    }
    kept[nk++] = first;
    for (int j = 0; j < n; j++) {
        double best = time_of(&r[j], r[j].best), have = INFINITY;
        bool in = false;
        for (int q = 0; q < nk; q++) have = fmin(have, time_of(&r[j], kept[q])), in |= kept[q] == r[j].best;
        if (!in && !(isfinite(best) && have <= (1 + DISPATCH_GAIN) * best)) kept[nk++] = r[j].best;
    }
    for (int j = 0; j < n; j++) {
        assign[j] = 0;
        for (int q = 0; q < nk; q++) {
            if (kept[q] == r[j].best) { /* its own winner, when kept */
                assign[j] = q;
                break;
            }
            if (time_of(&r[j], kept[q]) < time_of(&r[j], kept[assign[j]])) assign[j] = q;
        }
    }
    return nk;
}

/* Symbolic kernel k with several configs kept: one entry per config (kept's order), each
 * with the bindings assigned to it, pushed onto `out` as a set of alternatives. */
static hc_status push_alternatives(hc_model *m, const kernel *k, const tune_job *jobs,
                                   const job_result *res, const kernel_tuning *kt,
                                   const int *kept, int nkept, const int *assign,
                                   const hc_target *target, void *outv, hc_error *err) {
    HC_VEC(kernel) *out = outv;
    size_t ns = m->g->sym_names.len;
    int first = (int)out->len;
    hc_func **cands = NULL; /* any job's candidates: every one has them all */
    for (int j = 0; j < kt->njobs && !cands; j++) cands = res[kt->first_job + j].cands;
    hc_status st = HC_OK;
    for (int w = 0; w < nkept && st == HC_OK; w++) {
        kernel e = *k;
        e.alt = first, e.nalt = nkept;
        e.points = HC_NEW_ARRAY(&m->arena, int64_t, (size_t)kt->njobs * ns + 1);
        e.npoints = 0;
        bool cached = true;
        for (int j = 0; j < kt->njobs; j++) {
            cached &= res[kt->first_job + j].cached;
            if (assign[j] != w) continue;
            memcpy(e.points + (size_t)e.npoints++ * ns, jobs[kt->first_job + j].point,
                   sizeof(int64_t) * ns);
        }
        e.tune_cached = cached;
        hc_func *f = HC_NEW(&m->arena, hc_func); /* each alternative its own name */
        *f = *k->func;
        if (w) f->name = hc_arena_printf(&m->arena, "%s_d%d", k->func->name, w);
        e.func = f;
        st = apply_choice(m, &e, target, kept[w], jobs[kt->first_job].prepacked, cands, err);
        if (st == HC_OK) hc_vec_push(out, e);
    }
    return st;
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
    int64_t *pts = NULL;
    int npts = 0;
    hc_status st = tune_points(m, &pts, &npts, err);
    if (st != HC_OK) return st;
    HC_VEC(tune_job) jobs = {0};
    kernel_tuning *kt = hc_xcalloc(m->kernels.len + 1, sizeof *kt);
    int total = 0, tasks = 0;
    for (size_t i = 0; i < m->kernels.len && st == HC_OK; i++) {
        kernel *k = &m->kernels.data[i];
        const hc_template *def = hc_target_template(target, k->node->op);
        kt[i].first_job = (int)jobs.len;
        if (!k->templated || !def || !def->space) continue;
        int n = def->space(k->node, target, level);
        k->ncand = HC_MAX(n, 1);
        if (n <= 1) continue;
        /* the signature: the fused group's default program (shapes and fused code) */
        char sig[33];
        size_t cost;
        hc_compile_program_key(&m->arena, k->func, sig, &cost);
        hc_sched_opts o = {.level = level};
        int64_t size[MAXIN];
        unsigned prepacked = prepack_mask(m, k, target, &o, size);
        /* a symbolic kernel: one job per binding, its candidates given the symbols */
        int64_t *kp = NULL;
        int *slots = NULL, nslots = 0, nk = 1;
        if (group_is_symbolic(&k->group) &&
            (nk = kernel_points(m, k, pts, npts, &kp, &slots, &nslots, err)) < 0)
            st = err ? err->status : HC_ERR_INVALID;
        for (int p = 0; p < nk && st == HC_OK; p++) {
            tune_job j = {.kernel = (int)i, .ncand = n, .cold = cold, .prepacked = prepacked};
            const char *at = "";
            if (kp) {
                j.point = kp + (size_t)p * m->g->sym_names.len;
                at = hc_arena_printf(&m->arena, " at %s",
                                     binding_text(&m->arena, m->g, j.point, slots, nslots));
            }
            /* candidates measured pre-packed or not are different records */
            hc_tune_key(hc_arena_printf(&m->arena, "%s prepacked %u%s%s", sig, prepacked,
                                        cold ? " cold" : "", at),
                        level, target, j.key);
            bool dup = false;
            for (size_t q = 0; q < jobs.len && !dup; q++) dup = !strcmp(jobs.data[q].key, j.key);
            if (!dup) total += n, tasks++;
            hc_vec_push(&jobs, j);
            kt[i].njobs++;
        }
    }
    job_result *res = hc_xcalloc(jobs.len + 1, sizeof *res);
    tune_stats stats = {0};
    hc_progress pg;
    hc_progress_begin(&pg, "tuning", tasks, total);
    for (size_t i = 0; i < jobs.len && st == HC_OK; i++) {
        bool dup = false;
        for (size_t q = 0; q < i && !dup; q++) dup = !strcmp(jobs.data[q].key, jobs.data[i].key);
        hc_progress quiet = {0}; /* tuned just before: its record is there, no steps */
        res[i].ms = HC_NEW_ARRAY(&m->arena, double, jobs.data[i].ncand + 1);
        memset(res[i].ms, 0, sizeof(double) * (size_t)(jobs.data[i].ncand + 1));
        if (tune_hook) { /* tests: the winner decided by the hook, nothing timed */
            const tune_job *j = &jobs.data[i];
            res[i].best = tune_hook(tune_hook_user, j->kernel, m->g->sym_names.data,
                                    j->point, (int)m->g->sym_names.len, j->ncand, res[i].ms);
            if (res[i].best < 0 || res[i].best >= j->ncand) res[i].best = 0;
            continue;
        }
        st = run_job(m, &jobs.data[i], target, dup ? &quiet : &pg, &res[i].best, &res[i].cached,
                     &res[i].cands, res[i].ms, &stats, err);
        if (res[i].cached && !dup) stats.cached++; /* a duplicate was tuned just before */
    }
    hc_progress_end(&pg);
    if (st == HC_OK && m->verbose && !tune_hook)
        fprintf(stderr,
                "hidetc: tuning: %d tasks timed (%d distinct candidates: compiling them "
                "%.1f s, timing them %.1f s), %d from the tuning records\n",
                stats.tuned, stats.distinct, stats.compile_ms / 1000, stats.bench_ms / 1000,
                stats.cached);
    /* apply: one choice per kernel, or a set of alternatives (dispatch) */
    HC_VEC(kernel) out = {0};
    bool any_set = false;
    for (size_t i = 0; i < m->kernels.len && st == HC_OK; i++) {
        kernel *k = &m->kernels.data[i];
        const kernel_tuning *t = &kt[i];
        int *kept = hc_xmalloc(sizeof(int) * (size_t)(t->njobs + 1));
        int *assign = hc_xmalloc(sizeof(int) * (size_t)(t->njobs + 1));
        int nkept = t->njobs ? choose_configs(res, t, kept, assign) : 0;
        if (nkept == 1) { /* one config for every binding */
            hc_func **cands = NULL;
            k->tune_cached = true; /* every binding's winner from its record */
            for (int j = 0; j < t->njobs; j++) {
                k->tune_cached &= res[t->first_job + j].cached;
                if (!cands) cands = res[t->first_job + j].cands;
            }
            st = apply_choice(m, k, target, kept[0], jobs.data[t->first_job].prepacked, cands,
                              err);
        }
        if (st == HC_OK && nkept <= 1) hc_vec_push(&out, *k);
        else if (st == HC_OK) {
            any_set = true;
            st = push_alternatives(m, k, jobs.data, res, t, kept, nkept, assign, target, &out, err);
        }
        free(kept), free(assign);
    }
    if (st == HC_OK && any_set) { /* the kernels, with the alternatives in place */
        hc_vec_free(&m->kernels);
        m->kernels.data = out.data, m->kernels.len = out.len, m->kernels.cap = out.cap;
    } else {
        hc_vec_free(&out);
    }
    if (st == HC_OK && any_set && m->verbose)
        for (size_t i = 0; i < m->kernels.len; i++) {
            const kernel *k = &m->kernels.data[i];
            if (!k->nalt) continue;
            fprintf(stderr, "hidetc: kernel %zu ('%s'): dispatch entry %d of %d, candidate %d, "
                    "tuned best at %d binding%s\n", i, k->node->name, (int)i - k->alt + 1,
                    k->nalt, k->chosen, k->npoints, k->npoints == 1 ? "" : "s");
        }
    free(res), free(kt), free(pts);
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
/* The weights packed so far: the source tensor and its packed copy. Two kernels whose
 * configs pack one weight into the same bytes (a dispatch set's alternatives, or two
 * kernels reading one weight) share one copy. */
typedef struct packed_weight {
    const hc_tensor *src;
    hc_tensor *packed;
} packed_weight;
typedef HC_VEC(packed_weight) packed_list;

static hc_status prepack_kernel(hc_model *m, kernel *k, const hc_target *target,
                                packed_list *done, hc_error *err) {
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
        size_t bytes = (size_t)size[i] * sizeof(float);
        float *buf = malloc(bytes ? bytes : 1);
        if (!buf) return hc_error_set(err, HC_ERR_NOMEM, "node '%s': no memory to pack '%s'",
                                      an->name, t->name);
        def->prepack(an, target, &o, i, t->data, buf);
        hc_tensor *p = NULL;
        for (size_t q = 0; q < done->len && !p; q++) /* the same bytes packed before: shared */
            if (done->data[q].src == t && hc_tensor_nbytes(done->data[q].packed) == bytes &&
                !memcmp(done->data[q].packed->data, buf, bytes))
                p = done->data[q].packed;
        if (!p) {
            const char *name = hc_arena_printf(&m->arena, "%s.packed%d", t->name,
                                               (int)(k - m->kernels.data));
            p = hc_graph_constant(m->g, name, HC_F32, 1, &size[i], buf);
            hc_vec_push(done, ((packed_weight){t, p}));
        }
        free(buf);
        ins[j] = p;
    }
    k->group.inputs = ins;
    k->func = f;
    k->prepacked = mask;
    return hc_compile_check_params(k, err);
}

hc_status hc_compile_prepack_all(hc_model *m, const hc_target *target, hc_error *err) {
    hc_status st = HC_OK;
    packed_list done = {0};
    for (size_t i = 0; i < m->kernels.len && st == HC_OK; i++)
        st = prepack_kernel(m, &m->kernels.data[i], target, &done, err);
    hc_vec_free(&done);
    return st;
}
