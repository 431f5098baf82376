/* fuzz_mapping.c — the task-mapping parser (hc_map_parse, src/ir/mapping.c): any text
 * gives a mapping or an error; a parsed mapping with few enough tasks covers every task
 * of its task shape exactly once over its workers (DESIGN.md, "Task mappings"). */
#include "fuzz.h"

#include "ir/mapping.h"

enum { MAX_TEXT = 4096, MAX_TASKS = 1 << 14 };

FUZZ_ENTRY(mapping) {
    if (size > MAX_TEXT) return 0;
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    hc_arena a;
    hc_arena_init(&a);
    hc_error err = {0};
    const hc_mapping *m = hc_map_parse(&a, text, &err);
    if (!m) {
        FUZZ_CHECK(err.msg[0], "no message for '%s'", text);
    } else {
        int64_t shape[HC_MAX_DIMS], total = 1, workers = hc_map_num_workers(m);
        hc_map_task_shape(m, shape);
        FUZZ_CHECK(m->ndim >= 1 && m->ndim <= HC_MAX_DIMS && workers >= 1, "'%s'", text);
        bool small = true;
        for (int d = 0; d < m->ndim; d++) {
            FUZZ_CHECK(shape[d] >= 1, "'%s': task dimension %d is %lld", text, d,
                       (long long)shape[d]);
            small = small && !__builtin_mul_overflow(total, shape[d], &total) &&
                    total <= MAX_TASKS;
        }
        if (small && workers <= MAX_TASKS) {
            unsigned char *seen = calloc((size_t)total, 1);
            for (int64_t w = 0; w < workers; w++) {
                int64_t *tasks = NULL, n = hc_map_worker2task(m, w, &tasks);
                for (int64_t t = 0; t < n; t++) {
                    int64_t flat = 0;
                    for (int d = 0; d < m->ndim; d++) {
                        int64_t i = tasks[t * m->ndim + d];
                        FUZZ_CHECK(i >= 0 && i < shape[d], "'%s': task index out of range", text);
                        flat = flat * shape[d] + i;
                    }
                    FUZZ_CHECK(!seen[flat], "'%s': a task twice", text);
                    seen[flat] = 1;
                }
                free(tasks);
            }
            for (int64_t t = 0; t < total; t++) FUZZ_CHECK(seen[t], "'%s': task %lld missed", text, (long long)t);
            free(seen);
        }
    }
    hc_arena_free(&a);
    free(text);
    return 0;
}
