/* select.c — the config a template's schedule opts ask for (select.h). */
#include "target/cpu/templates/select.h"

bool hc_cpu_candidate_in_range(const hc_node *n, const hc_sched_opts *opts, int count,
                               hc_error *err) {
    if (opts->candidate >= 0 && opts->candidate < count) return true;
    hc_node_fail(n, HC_ERR_INVALID, err, "schedule candidate %d of %d (level %d)", opts->candidate,
                 count, opts->level);
    return false;
}
