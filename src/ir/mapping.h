/* mapping.h — task mappings (DESIGN.md, "Task mappings — exact semantics").
 *
 * A mapping M has num_workers(M), task_shape(M) and worker2task(M, w), the ordered list
 * of task indices worker w executes. Mappings are immutable and arena-allocated. */
#ifndef HC_MAPPING_H
#define HC_MAPPING_H

#include "ir/ir.h"

const hc_mapping *hc_map_spatial(hc_arena *a, int ndim, const int64_t *shape);
/* attrs may be NULL (all serial) */
const hc_mapping *hc_map_repeat(hc_arena *a, int ndim, const int64_t *shape,
                                const hc_loop_attr *attrs);
/* outer.inner; both must have the same rank */
const hc_mapping *hc_map_compose(hc_arena *a, const hc_mapping *outer, const hc_mapping *inner);
/* From the innermost dimension outwards: spatial part g = gcd(remaining workers, s),
 * repeat part s / g; the result is repeat(...).spatial(...). Returns NULL (and sets err)
 * when the workers cannot be placed entirely (remaining workers != 1 at the end). */
const hc_mapping *hc_map_auto(hc_arena *a, int ndim, const int64_t *shape, int64_t workers,
                              hc_error *err);

/* Convenience for 1-D and 2-D mappings. */
const hc_mapping *hc_map_spatial2(hc_arena *a, int64_t s0, int64_t s1);
const hc_mapping *hc_map_repeat2(hc_arena *a, int64_t s0, int64_t s1);

int64_t hc_map_num_workers(const hc_mapping *m);
void hc_map_task_shape(const hc_mapping *m, int64_t *shape_out); /* ndim entries */

/* Ordered tasks of worker w: writes ntasks * ndim indices into a malloc'ed array
 * (row by row); returns the number of tasks. */
int64_t hc_map_worker2task(const hc_mapping *m, int64_t w, int64_t **tasks_out);

/* Parse "spatial(4,8).repeat(2u,2)" (u: unroll, p: parallel after a repeat extent) and
 * "auto_map((8,96),64)". Errors name the position in the text. */
const hc_mapping *hc_map_parse(hc_arena *a, const char *text, hc_error *err);

/* Lowering: replace every FOR_MAPPING statement in s by loops and index arithmetic.
 * Spatial dimensions become arithmetic on the worker expression, repeat dimensions loops
 * (with their attributes), composition a * inner_shape + b. */
hc_stmt *hc_lower_mappings(hc_arena *a, hc_stmt *s);

#endif
