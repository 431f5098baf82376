/* plan.c — the memory planner: intermediate tensors share one arena; a tensor may reuse
 * the bytes of any tensor whose live range does not intersect its own.
 *
 * Greedy by size: the largest buffers are placed first (they are the hardest to fit),
 * each at the smallest gap between already placed, simultaneously live buffers that
 * holds it (best fit), else above all of them. */
#include <string.h>

#include "runtime/runtime.h"

#define PLAN_ALIGN 64

typedef struct span {
    size_t begin, end;
} span;

static size_t align_up(size_t n) { return (n + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN; }

typedef struct order_ctx {
    const size_t *bytes;
    const int *first;
} order_ctx;

/* qsort has no context argument; the planner is not reentrant only through this. */
static _Thread_local order_ctx sort_ctx;

static int by_size_desc(const void *pa, const void *pb) {
    int a = *(const int *)pa, b = *(const int *)pb;
    size_t sa = sort_ctx.bytes[a], sb = sort_ctx.bytes[b];
    if (sa != sb) return sa > sb ? -1 : 1;
    if (sort_ctx.first[a] != sort_ctx.first[b]) return sort_ctx.first[a] - sort_ctx.first[b];
    return a - b;
}

static int by_begin(const void *pa, const void *pb) {
    const span *a = pa, *b = pb;
    return a->begin < b->begin ? -1 : a->begin > b->begin;
}

/* The best-fitting offset for `size` bytes given the occupied spans (sorted). */
static size_t best_fit(const span *busy, int nbusy, size_t size) {
    size_t cur = 0, best = SIZE_MAX, best_gap = SIZE_MAX;
    for (int k = 0; k < nbusy; k++) {
        if (busy[k].begin > cur) {
            size_t gap = busy[k].begin - cur;
            if (gap >= size && gap < best_gap) best = cur, best_gap = gap;
        }
        if (busy[k].end > cur) cur = busy[k].end;
    }
    return best != SIZE_MAX ? best : cur;
}

size_t hc_plan_memory(int n, const size_t *bytes, const int *first, const int *last,
                      size_t *offsets) {
    if (n <= 0) return 0;
    int *order = hc_xmalloc(sizeof(int) * (size_t)n);
    size_t *size = hc_xmalloc(sizeof(size_t) * (size_t)n);
    bool *placed = hc_xcalloc((size_t)n, sizeof(bool));
    span *busy = hc_xmalloc(sizeof(span) * (size_t)n);
    for (int i = 0; i < n; i++) order[i] = i, size[i] = align_up(bytes[i]);
    sort_ctx = (order_ctx){size, first};
    qsort(order, (size_t)n, sizeof(int), by_size_desc);
    size_t total = 0;
    for (int k = 0; k < n; k++) {
        int i = order[k];
        offsets[i] = 0;
        if (size[i] == 0) continue; /* takes no room: any offset is fine */
        int nbusy = 0;
        for (int j = 0; j < n; j++)
            if (placed[j] && first[j] <= last[i] && first[i] <= last[j])
                busy[nbusy++] = (span){offsets[j], offsets[j] + size[j]};
        qsort(busy, (size_t)nbusy, sizeof(span), by_begin);
        offsets[i] = best_fit(busy, nbusy, size[i]);
        placed[i] = true;
        if (offsets[i] + size[i] > total) total = offsets[i] + size[i];
    }
    free(order), free(size), free(placed), free(busy);
    return total;
}
