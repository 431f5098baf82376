/* select.h — the config a template's schedule opts ask for (select.c). */
#ifndef HC_TARGET_CPU_TEMPLATES_SELECT_H
#define HC_TARGET_CPU_TEMPLATES_SELECT_H

#include <stdlib.h>

#include "graph/graph.h"
#include "target/target.h"

/* Whether opts->candidate is one of the `count` candidates at opts->level; false with err
 * set (naming the node) otherwise. */
bool hc_cpu_candidate_in_range(const hc_node *n, const hc_sched_opts *opts, int count,
                               hc_error *err);

/* Sets `cfg` (a config lvalue) to candidate opts->candidate of the schedule space
 * `space(target, shape, opts->level, out, max)` when opts ask for one (level > 0 or
 * candidate > 0) and leaves it alone otherwise; false with err set on a candidate out of
 * range. */
#define HC_CPU_SELECT_CONFIG(cfg, space, target, shape, n, opts, err)                              \
    __extension__({                                                                                \
        bool _hc_ok = true;                                                                        \
        const hc_sched_opts *_hc_o = (opts);                                                       \
        if (_hc_o && (_hc_o->level > 0 || _hc_o->candidate > 0)) {                                 \
            int _hc_count = space((target), (shape), _hc_o->level, NULL, 0);                       \
            _hc_ok = hc_cpu_candidate_in_range((n), _hc_o, _hc_count, (err));                      \
            if (_hc_ok) {                                                                          \
                __typeof__(cfg) *_hc_all = hc_xmalloc(sizeof *_hc_all * (size_t)_hc_count);        \
                space((target), (shape), _hc_o->level, _hc_all, _hc_count);                        \
                (cfg) = _hc_all[_hc_o->candidate];                                                 \
                free(_hc_all);                                                                     \
            }                                                                                      \
        }                                                                                          \
        _hc_ok;                                                                                    \
    })

/* Sets f->config (f may be NULL) to `print`'s text of the config, in f's arena `a`. */
#define HC_CPU_DESCRIBE_CONFIG(a, f, print, cfg)                                                   \
    do {                                                                                           \
        hc_func *_hc_f = (f);                                                                      \
        if (_hc_f) {                                                                               \
            hc_sb _hc_sb;                                                                          \
            hc_sb_init(&_hc_sb);                                                                   \
            print(&_hc_sb, &(cfg));                                                                \
            _hc_f->config = hc_arena_strdup((a), hc_sb_str(&_hc_sb));                              \
            hc_sb_free(&_hc_sb);                                                                   \
        }                                                                                          \
    } while (0)

#endif
