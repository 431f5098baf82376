#include "target/cpu/affinity.h"

#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The CPUs the process may use, in order, read once (the first caller's mask). */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_ncpus;
static int g_cpus[CPU_SETSIZE];
/* Team sizes whose threads are pinned (bit n: a team of n threads); OpenMP keeps its
 * pool threads and gives team thread i the same pool thread for every team of a size. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long g_pinned_teams;

static void read_cpus(void) {
    cpu_set_t s;
    CPU_ZERO(&s);
    if (sched_getaffinity(0, sizeof s, &s) != 0) return;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &s)) g_cpus[g_ncpus++] = c;
}

static bool env_set(const char *name) {
    const char *v = getenv(name);
    return v && *v;
}

bool hc_pin_wanted(int nthreads, bool asked) {
    if (nthreads < 2 || nthreads >= 64) return false;
    const char *b = getenv("HIDETC_BIND");
    if (b && !strcmp(b, "0")) return false;
    bool forced = b && !strcmp(b, "1");
    if (!forced && !asked) return false;
    if (!forced && (env_set("OMP_PROC_BIND") || env_set("OMP_PLACES") ||
                    env_set("GOMP_CPU_AFFINITY")))
        return false;
    pthread_once(&g_once, read_cpus);
    return g_ncpus >= nthreads;
}

static void pin_self(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

void hc_pin_enter(int nthreads, bool asked, hc_pin *p) {
    p->active = false;
    if (!hc_pin_wanted(nthreads, asked)) return;
    if (pthread_getaffinity_np(pthread_self(), sizeof p->saved, &p->saved) != 0) return;
    pin_self(g_cpus[0]);
    p->active = true;
    pthread_mutex_lock(&g_lock);
    if (!(g_pinned_teams >> nthreads & 1)) {
#pragma omp parallel num_threads(nthreads)
        {
            int t = omp_get_thread_num();
            if (t > 0) pin_self(g_cpus[t]);
        }
        g_pinned_teams |= 1ull << nthreads;
    }
    pthread_mutex_unlock(&g_lock);
}

void hc_pin_leave(hc_pin *p) {
    if (p->active) pthread_setaffinity_np(pthread_self(), sizeof p->saved, &p->saved);
    p->active = false;
}
