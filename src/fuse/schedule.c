/* schedule.c — one program per group: the anchor's template plus the post-scheduling
 * rewrite, or the composed Task through the rule-based auto-scheduler (fuse.h). */
#include "fuse/fuse.h"

static hc_func *schedule_node(hc_arena *a, const hc_node *n, const hc_target *t,
                              const hc_sched_opts *opts, const char *fname, bool *templated,
                              hc_error *err) {
    const hc_op_def *def = hc_op_get(n->op);
    hc_task *task = hc_fuse_node_task(a, n, err);
    if (!task) return NULL;
    hc_func *f = NULL;
    *templated = false;
    if (def->schedule) {
        if (err) err->status = HC_OK;
        f = def->schedule(a, n, task, t, fname, opts, err);
        if (!f && err && err->status != HC_OK) return NULL;
        *templated = f != NULL;
    }
    if (!f) f = hc_auto_schedule(a, task, t, err);
    return f;
}

hc_func *hc_fuse_schedule(hc_arena *a, const hc_group *grp, const hc_target *t,
                          const hc_sched_opts *opts, const char *fname, bool *templated,
                          const char **why, hc_error *err) {
    *why = NULL;
    *templated = false;
    hc_sched_opts o = opts ? *opts : (hc_sched_opts){0};
    if (hc_group_size(grp) == 1) {
        hc_func *f = schedule_node(a, grp->anchor, t, &o, fname, templated, err);
        if (f) f->name = fname;
        return f;
    }
    const hc_op_def *def = hc_op_get(grp->anchor->op);
    if (def && def->schedule) {
        hc_task *task = hc_fuse_node_task(a, grp->anchor, err);
        if (!task) return NULL;
        o.write_once = grp->nepilogue > 0;
        if (err) err->status = HC_OK;
        hc_func *f = def->schedule(a, grp->anchor, task, t, fname, &o, err);
        if (!f && err && err->status != HC_OK) return NULL;
        if (f) {
            hc_func *r = hc_fuse_rewrite(a, grp, f, why);
            if (!r) return NULL; /* *why says why: the caller splits the group */
            *templated = true;
            r->name = fname;
            return r;
        }
    }
    hc_error e = {0};
    hc_task *task = hc_fuse_compose(a, grp, &e);
    hc_func *f = task ? hc_auto_schedule(a, task, t, &e) : NULL;
    if (!f) {
        *why = hc_arena_printf(a, "the composed task could not be scheduled: %s", e.msg);
        return NULL;
    }
    f->name = fname;
    return f;
}
