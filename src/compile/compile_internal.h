/* compile_internal.h — what the compile pipeline's files share (compile.c, tune_kernels.c). */
#ifndef HC_COMPILE_INTERNAL_H
#define HC_COMPILE_INTERNAL_H

#include "fuse/fuse.h"
#include "passes/passes.h"
#include "runtime/runtime.h"
#include "runtime/runtime_internal.h"
#include "tune/tune.h"

/* A key that is equal for two programs that differ only in names (compile.c); *cost is
 * the printed length, a proxy for compile time. */
void hc_compile_program_key(hc_arena *a, const hc_func *f, char key[33], size_t *cost);
/* A kernel whose program takes other than its group's inputs and outputs is refused. */
hc_status hc_compile_check_params(const kernel *k, hc_error *err);
/* Tune every templated kernel over its space at m->opt.tune_level (tune_kernels.c). */
hc_status hc_compile_tune_all(hc_model *m, const hc_target *target, hc_error *err);
/* Tests: decide every tuning job's winner with fn instead of timing candidates (NULL:
 * time them). point is the binding of a symbolic kernel's job (the model's nsyms
 * symbols' values, names[i] the i-th) or NULL; a result outside [0, ncand) reads as 0.
 * ms[0..ncand): the candidates' times, as the hook pretends them (0: unknown; all 0 on
 * entry). No records are read or written. Not thread-safe: set it around one compile. */
typedef int (*hc_tune_hook_fn)(void *user, int kernel, const char *const *names,
                               const int64_t *point, int nsyms, int ncand, double *ms);
void hc_compile_set_tune_hook(hc_tune_hook_fn fn, void *user);
/* Reschedule kernels with their constant weights packed once (tune_kernels.c). */
hc_status hc_compile_prepack_all(hc_model *m, const hc_target *target, hc_error *err);

#endif
