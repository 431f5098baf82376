/* compile.c — THE pipeline: a graph becomes a compiled model. hc_model_compile reads top
 * to bottom: optimize the graph -> partition -> per group: schedule (the target's template
 * or auto-scheduler) -> post-scheduling fusion rewrite -> tune -> pre-pack weights -> plan
 * memory -> lower -> verify -> emit -> build. --dump-ir STAGE prints the programs after a
 * stage; HIDETC_VERIFY=1 verifies them between stages (docs/targets.md). Tuning and
 * pre-packing are tune_kernels.c. */
#include <stdlib.h>
#include <string.h>

#include "compile/compile_internal.h"

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
    hc_model *m = ctx;
    if (m->opt.dump_stage == st) dump_func(st, f);
    if (m->opt.verify) {
        hc_error e = {0};
        if (hc_verify_func(f, false, &e) != HC_OK)
            HC_ASSERT_MSG(0, hc_arena_printf(&m->arena, "after stage %s: %s", hc_stage_name(st),
                                             e.msg));
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
void hc_compile_program_key(hc_arena *a, const hc_func *f, char key[33], size_t *cost) {
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

hc_status hc_compile_check_params(const kernel *k, hc_error *err) {
    int want = k->group.ninputs + k->group.noutputs + k->nsyms;
    if (k->func->nparams != want)
        return hc_error_set(err, HC_ERR_INVALID,
                            "node '%s': its program takes %d buffers, the kernel has %d inputs "
                            "and outputs", k->node->name, k->func->nparams, want);
    return HC_OK;
}

/* ---- partition and scheduling ------------------------------------------------------ */
/* Groups whose one output is the data input of a depthwise NCHW conv (a plain Conv with
 * one input channel per group; the blocked ones are NCHWC ops by now): its template gives
 * each thread a contiguous range of channel planes, so the producer's default splits its
 * output channels the same way (hc_sched_opts.rows_to_consumer). MobileNet-V2 on Zen 3:
 * bench/results/ab_zen3.md. */
static void mark_depthwise_producers(const hc_graph *g, hc_partition *part) {
    for (int i = 0; i < part->ngroups; i++) {
        hc_group *grp = &part->groups[i];
        if (grp->noutputs != 1) continue;
        const hc_tensor *y = grp->outputs[0];
        for (size_t j = 0; j < g->nodes.len && !grp->feeds_depthwise; j++) {
            const hc_node *n = g->nodes.data[j];
            if (n->op != HC_OPK_CONV || n->ninputs < 2 || n->inputs[0] != y || y->ndim != 4)
                continue;
            int64_t groups = hc_node_attr_int(n, "group", 1);
            grp->feeds_depthwise = groups > 1 && groups == y->shape[1] && n->inputs[1] &&
                                   n->inputs[1]->ndim == 4 && n->inputs[1]->shape[1] == 1;
        }
    }
}

/* The kernel nodes (graph order; in-place Concats and folded nodes run none) partitioned
 * into fused groups. */
static hc_status partition(hc_model *m, const hc_target *target, hc_partition *part,
                           hc_error *err) {
    HC_VEC(hc_node *) nodes = {0};
    hc_status st = HC_OK;
    hc_rt_plan_inplace_concats(m);
    for (size_t i = 0; i < m->g->nodes.len && st == HC_OK; i++) {
        hc_node *n = m->g->nodes.data[i];
        bool run = false;
        st = hc_rt_node_needs_kernel(n, &run, err);
        if (run && !hc_rt_concat_in_place(m, n)) hc_vec_push(&nodes, n);
    }
    if (st == HC_OK)
        st = hc_fuse_partition(&m->arena, m->g, target, (int)nodes.len, nodes.data,
                               !m->opt.no_fusion, part, err);
    hc_vec_free(&nodes);
    if (st == HC_OK) mark_depthwise_producers(m->g, part);
    return st;
}

/* Group i of part as one kernel: the anchor's template or the auto-scheduler, then the
 * fusion rewrite. Where the fusion cannot apply, group i is replaced by one group per
 * member (the reason kept) and scheduled as the first of them; the caller goes on with
 * the next. */
static hc_status schedule_group(hc_model *m, const hc_target *target, hc_partition *part,
                                int i, hc_error *err) {
    const hc_group *grp = &part->groups[i];
    hc_sched_opts o = {.observe = observe_stage, .observe_ctx = m};
    kernel k = {.node = grp->anchor, .group = *grp, .ncand = 1};
    const char *why = NULL;
    if (err) err->status = HC_OK;
    k.func = hc_fuse_schedule(&m->arena, grp, target, &o,
                              kernel_fname(m, grp->anchor, (int)m->kernels.len), &k.templated,
                              &why, err);
    if (!k.func && why && hc_group_size(grp) > 1) {
        hc_partition_split(&m->arena, part, i, why);
        return schedule_group(m, target, part, i, err); /* a single node: no fusion to fail */
    }
    if (!k.func) {
        hc_status st = err && err->status ? err->status : HC_ERR_UNSUPPORTED;
        if (why) hc_error_set(err, st, "node '%s': %s", grp->anchor->name, why);
        return st;
    }
    hc_status st = hc_compile_check_params(&k, err);
    hc_error ce = {0};
    if (st == HC_OK && target->check && (st = target->check(k.func, target, &ce)) != HC_OK) {
        char msg[sizeof ce.msg];
        snprintf(msg, sizeof msg, "%s", ce.msg);
        hc_error_set(err, st, "node '%s' (%s): %s", grp->anchor->name,
                     hc_op_name(grp->anchor->op), msg);
    }
    if (st == HC_OK) hc_vec_push(&m->kernels, k);
    return st;
}

/* A kernel with symbolic extents reads the symbols' values from one more parameter,
 * the graph's symbols in their order (docs/dynamic.md). */
static hc_status bind_kernel_symbols(hc_model *m, hc_error *err) {
    const hc_graph *g = m->g;
    m->symbolic = hc_graph_has_symbols(g);
    if (m->symbolic && hc_exec_is_device(m->target->exec))
        return hc_error_set(err, HC_ERR_UNSUPPORTED, "the model has symbolic dimensions; the "
                            "%s target runs static shapes only: fix them with --dim or --shape",
                            m->target->name);
    int ns = (int)g->sym_names.len;
    for (size_t i = 0; ns && i < m->kernels.len; i++) {
        kernel *k = &m->kernels.data[i];
        int *slots = HC_NEW_ARRAY(&m->arena, int, ns + 1);
        int n = hc_program_symbols(&m->arena, k->func, ns, g->sym_names.data, slots, err);
        if (n < 0) return err ? err->status : HC_ERR_INVALID;
        /* every symbol of the kernel's tensors must reach its program: one that does not
         * was taken at its hint value somewhere (a bug; refused, never run) */
        for (int pass = 0; pass < 2; pass++) {
            int cnt = pass ? k->group.noutputs : k->group.ninputs;
            for (int j = 0; j < cnt; j++) {
                const hc_tensor *t = pass ? k->group.outputs[j] : k->group.inputs[j];
                for (int d = 0; t->sym && d < t->ndim; d++) {
                    const char *names[16];
                    int nn = 0;
                    if (t->sym[d]) hc_sym_vars(t->sym[d], names, &nn, 16);
                    for (int q = 0; q < nn; q++) {
                        bool found = false;
                        for (int s = 0; s < n; s++) found |= !strcmp(g->sym_names.data[slots[s]], names[q]);
                        if (!found)
                            return hc_error_set(err, HC_ERR_UNSUPPORTED,
                                                "node '%s' (%s): its kernel does not take the "
                                                "symbol '%s' of tensor '%s' (an unsupported "
                                                "case: fix the symbols with --dim)",
                                                k->node->name, hc_op_name(k->node->op), names[q],
                                                t->name);
                    }
                }
            }
        }
        k->func = hc_func_with_symbols(&m->arena, k->func, g->sym_names.data, slots, n);
        k->nsyms = n, k->sym_slots = slots;
    }
    return HC_OK;
}

/* Kernels whose programs are identical share one compiled function. */
static void dedup_kernels(hc_model *m) {
    for (size_t i = 0; i < m->kernels.len; i++) {
        kernel *k = &m->kernels.data[i];
        unique_fn u = {.func = k->func};
        hc_compile_program_key(&m->arena, k->func, u.key, &u.cost);
        k->unique = -1;
        for (size_t j = 0; j < m->uniques.len && k->unique < 0; j++)
            if (!strcmp(m->uniques.data[j].key, u.key)) k->unique = (int)j;
        if (k->unique < 0) {
            k->unique = (int)m->uniques.len;
            hc_vec_push(&m->uniques, u);
        }
        if (m->verbose) {
            hc_sb sb;
            hc_sb_init(&sb);
            hc_group_print(&sb, &k->group);
            fprintf(stderr, "hidetc: kernel %zu: %s (%s%s%s)%s\n", i, sb.buf,
                    k->templated ? "template" : "auto-scheduled",
                    k->func->config ? ": " : "", k->func->config ? k->func->config : "",
                    m->uniques.data[k->unique].func != k->func
                        ? ", same program as an earlier kernel"
                        : "");
            hc_sb_free(&sb);
        }
    }
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

/* Lower and emit every program (for --dump-ir, emit_source) without building anything. */
static void emit_only(hc_model *m) {
    if (m->uniques.len == 0) return;
    assign_chunks(m, 1);
    char *src = chunk_source(m, 0, m->target);
    if (m->opt.emit_source) m->source = src;
    else free(src);
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
    if (t->kind == HC_TARGET_GPU) m->sources = srcs; /* a model file holds device code */
    else {
        for (int c = 0; c < nchunks; c++) free(srcs[c]);
        free(srcs);
    }
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

/* The options as the pipeline applies them: defaults, the environment, the blocked
 * layout's block (one vector: the templates take no other). */
static hc_status settle_options(hc_model *m, const hc_compile_options *opt, hc_error *err) {
    m->target = opt && opt->target ? opt->target : hc_target_default();
    m->num_threads = opt && opt->num_threads > 0 ? opt->num_threads
                                                   : HC_MAX(1, m->target->caps.num_cores);
    m->verbose = opt && opt->verbose;
    if (opt) m->opt = *opt;
    m->pin_threads = m->opt.pin_threads;
    const char *dump = getenv("HIDETC_DUMP"), *verify = getenv("HIDETC_VERIFY");
    if (!m->opt.dump_stage && dump && *dump) m->opt.dump_stage = hc_stage_parse(dump);
    if (verify && !strcmp(verify, "1")) m->opt.verify = true;
    if (!m->opt.paths.target) m->opt.paths.target = m->target;
    if (m->opt.tune_nshapes && m->opt.tune_level <= 0)
        return hc_error_set(err, HC_ERR_INVALID, "--tune-shapes: tuning is off: give --tune 1 "
                            "or 2 (tune_level)");
    if (m->target->kind == HC_TARGET_GPU) {
        /* the GPU targets have templates for neither the channel-blocked layout, nor
         * Winograd, nor the direct conv: their convs are im2col + the matmul template
         * (the im2col a prologue), grouped convs are auto-scheduled (docs/gpu.md) */
        m->opt.paths.no_nchwc = m->opt.paths.no_winograd = m->opt.paths.no_direct = true;
        m->opt.paths.force_winograd = m->opt.paths.force_direct = false;
        m->num_threads = 1;
    }
    int lanes = hc_target_f32_lanes(m->target); /* docs/nchwc.md */
    /* the int8 conv template (conv_nchwc_cpu.c) needs AVX2 or AVX-512 */
    m->opt.paths.int8_block = m->target->kind == HC_TARGET_CPU &&
                                      m->target->caps.isa >= HC_ISA_AVX2 && !m->opt.paths.no_int8
                                  ? lanes
                                  : 0;
    if (m->opt.paths.no_nchwc) m->opt.paths.nchwc_block = 0;
    else if (m->opt.paths.nchwc_block == 0) m->opt.paths.nchwc_block = lanes;
    else if (m->opt.paths.nchwc_block != lanes)
        return hc_error_set(err, HC_ERR_INVALID,
                            "nchwc_block %d: the channel-blocked layout takes blocks of the "
                            "target's %d f32 lanes (or 0 for them, or no_nchwc)",
                            m->opt.paths.nchwc_block, lanes);
    return HC_OK;
}

static void progress(const hc_model *m, const char *stage, int done, int total) {
    if (m->opt.progress) m->opt.progress(m->opt.progress_user, stage, done, total);
}

hc_status hc_model_compile(hc_graph *g, const hc_compile_options *opt, hc_model **out,
                           hc_error *err) {
    *out = NULL;
    hc_model *m = hc_rt_model_new();
    m->g = g;
    hc_arena_init(&m->arena);
    hc_status st = settle_options(m, opt, err);
    hc_target target = *m->target; /* scheduled for the run's threads */
    target.caps.num_cores = m->num_threads;
    hc_partition part = {0};
    if (st == HC_OK) progress(m, "optimize", 0, 1);
    if (st == HC_OK) st = hc_graph_optimize_with(g, &m->opt.paths, err);
    if (st == HC_OK) progress(m, "optimize", 1, 1);
    if (st == HC_OK) st = partition(m, &target, &part, err);
    for (int i = 0; st == HC_OK && i < part.ngroups; i++) {
        st = schedule_group(m, &target, &part, i, err); /* schedule, fusion rewrite */
        if (st == HC_OK) progress(m, "schedule", i + 1, part.ngroups);
    }
    if (st == HC_OK && m->opt.tune_level) progress(m, "tune", 0, 1);
    if (st == HC_OK) st = hc_compile_tune_all(m, &target, err);
    if (st == HC_OK && m->opt.tune_level) progress(m, "tune", 1, 1);
    if (st == HC_OK) st = hc_compile_prepack_all(m, &target, err);
    if (st == HC_OK) st = bind_kernel_symbols(m, err);
    if (st == HC_OK) dedup_kernels(m);
    if (st == HC_OK) st = hc_rt_plan_memory(m, err);
    if (st == HC_OK) st = hc_rt_check_budget(m, err); /* --max-memory */
    if (st == HC_OK && !m->opt.schedule_only) {
        progress(m, "build", 0, 1);
        st = compile_all(m, opt, err); /* lower, verify, emit, build */
        if (st == HC_OK) progress(m, "build", 1, 1);
    }
    if (st == HC_OK && m->opt.schedule_only &&
        (m->opt.dump_stage >= HC_STAGE_LOWERED || m->opt.emit_source))
        emit_only(m); /* inspect --dump-ir lowered|source: also for a target that cannot run */
    if (st != HC_OK) {
        hc_model_free(m);
        return st;
    }
    if (st == HC_OK && !m->opt.schedule_only) {
        st = hc_rt_prepare_args(m, err);
        if (st == HC_OK && m->verbose) hc_rt_report_plan(m);
    }
    if (st != HC_OK) {
        hc_model_free(m);
        return st;
    }
    progress(m, "done", 1, 1);
    *out = m;
    return HC_OK;
}
