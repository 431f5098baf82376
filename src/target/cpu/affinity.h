/* Thread placement for a model run: the OpenMP team's threads pinned one per CPU.
 *
 * Why: on a machine whose CPUs idle between requests, a worker that the scheduler wakes
 * on the caller's CPU waits there until the load balancer moves it (up to a scheduler
 * tick, ~4 ms here), and the whole first parallel region waits with it. Pinned, each
 * worker wakes on its own CPU. See docs/runtime.md, "Thread placement". */
#ifndef HC_RUNTIME_AFFINITY_H
#define HC_RUNTIME_AFFINITY_H

#include <stdbool.h>
#include <sched.h>

typedef struct {
    bool active;    /* the caller's thread was pinned; hc_pin_leave restores it */
    cpu_set_t saved; /* the caller's mask before the run */
} hc_pin;

/* Whether runs with `nthreads` threads pin them: HIDETC_BIND=0 never, =1 always when the
 * process may use at least `nthreads` CPUs; unset: when `asked` (the model's pin_threads
 * option: off in the library by default, on in the hidetc program) unless the user placed
 * OpenMP's threads already (OMP_PROC_BIND, OMP_PLACES or GOMP_CPU_AFFINITY set). */
bool hc_pin_wanted(int nthreads, bool asked);

/* Before a run: pins the calling thread to the first CPU the process may use and OpenMP
 * team thread i (i >= 1) to the (i+1)-th, once per process and team size. No-op when not
 * wanted. */
void hc_pin_enter(int nthreads, bool asked, hc_pin *p);
/* After a run: gives the calling thread its mask back. */
void hc_pin_leave(hc_pin *p);

#endif
