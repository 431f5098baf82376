/* schedule.c — one program per group: the anchor's template plus the post-scheduling
 * rewrite, or the composed Task through the rule-based auto-scheduler (fuse.h). */
#include "fuse/fuse.h"

/* The anchor's template program, or NULL with err->status == HC_OK when the op has no
 * template or it declines (then the auto-scheduler applies). */
static hc_func *template_program(hc_arena *a, const hc_node *n, const hc_task *task,
                                 const hc_target *t, const hc_sched_opts *o, const char *fname,
                                 hc_error *err) {
    const hc_template *tp = hc_target_template(t, n->op);
    if (err) err->status = HC_OK;
    if (tp && !tp->symbolic && hc_task_is_symbolic(task)) return NULL;
    return tp ? tp->schedule(a, n, task, t, fname, o, err) : NULL;
}

static bool failed(const hc_error *err) { return err && err->status != HC_OK; }

static void observe(const hc_sched_opts *o, hc_stage stage, const hc_func *f) {
    if (o->observe && f) o->observe(o->observe_ctx, stage, f);
}

/* Whether tensor x is made by prologue nodes of grp that compute something: not only
 * views (reshape-like ops and Identity keep the element order), which cost the anchor's
 * loads nothing. */
static bool prologue_computes(const hc_group *grp, const hc_tensor *x) {
    const hc_node *p = x ? x->producer : NULL;
    bool member = false;
    for (int j = 0; p && j < grp->nprologue && !member; j++) member = grp->prologue[j] == p;
    if (!member) return false;
    if (hc_op_is_reshape_like(p->op) || p->op == HC_OPK_IDENTITY)
        return prologue_computes(grp, p->inputs[0]);
    return true;
}

hc_func *hc_fuse_schedule(hc_arena *a, const hc_group *grp, const hc_target *t,
                          const hc_sched_opts *opts, const char *fname, bool *templated,
                          const char **why, hc_error *err) {
    *why = NULL;
    *templated = false;
    hc_sched_opts o = opts ? *opts : (hc_sched_opts){0};
    bool single = hc_group_size(grp) == 1;
    hc_task *task = hc_fuse_node_task(a, grp->anchor, err);
    if (!task) return NULL;
    if (!single) o.write_once = grp->nepilogue > 0;
    o.rows_to_consumer = grp->feeds_depthwise;
    o.prologued = 0;
    for (int i = 0; i < grp->anchor->ninputs && i < 32; i++)
        if (prologue_computes(grp, grp->anchor->inputs[i])) o.prologued |= 1u << i;
    hc_func *f = template_program(a, grp->anchor, task, t, &o, fname, err);
    if (!f && failed(err)) return NULL;
    observe(&o, HC_STAGE_SCHEDULED, f);
    if (f && !single) f = hc_fuse_rewrite(a, grp, f, why); /* NULL: *why says why */
    if (f) {
        *templated = true;
        f->name = fname;
        observe(&o, HC_STAGE_FUSED, f);
        return f;
    }
    if (*why) return NULL; /* the caller splits the group */
    if (single) {
        f = t->auto_schedule(a, task, t, err);
    } else {
        hc_error e = {0};
        hc_task *composed = hc_fuse_compose(a, grp, &e);
        f = composed ? t->auto_schedule(a, composed, t, &e) : NULL;
        if (!f) *why = hc_arena_printf(a, "the composed task could not be scheduled: %s", e.msg);
    }
    if (f) {
        f->name = fname;
        observe(&o, HC_STAGE_SCHEDULED, f); /* a composed task is scheduled fused */
        observe(&o, HC_STAGE_FUSED, f);
    }
    return f;
}
