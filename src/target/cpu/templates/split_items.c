/* split_items.c — the thread structure the CPU templates share (sched.h). */
#include "ir/mapping.h"
#include "target/cpu/cpu.h"

int hc_sched_split_items(hc_builder *b, int64_t items, int threads, hc_items_setup_fn setup,
                         hc_items_body_fn body, void *ctx) {
    hc_arena *a = b->a;
    if (threads < 1) threads = 1;
    if (threads > items) threads = (int)HC_MAX(items, 1);
    int64_t per = hc_cdiv(items, threads);
    hc_loop_attr attr = threads > 1 ? hc_parallel(threads) : hc_serial();
    HC_FOR(b, th, "t", hc_int(a, threads), attr) {
        hc_var *tv[1], *iv[1];
        static const char *const tnames[1] = {"ti"}, *const inames[1] = {"it"};
        HC_FOR_MAP(b, hc_map_spatial(a, 1, (int64_t[]){threads}), hc_ref(a, th), 1, tv, tnames) {
            if (setup) setup(ctx);
            HC_FOR_MAP(b, hc_map_repeat(a, 1, (int64_t[]){per}, NULL), hc_int(a, 0), 1, iv, inames) {
                hc_expr *w = hc_add(a, hc_mul(a, hc_ref(a, tv[0]), hc_int(a, per)), hc_ref(a, iv[0]));
                if (per * threads == items) {
                    body(ctx, w);
                } else {
                    HC_IF(b, hc_lt(a, w, hc_int(a, items))) { body(ctx, w); }
                }
            }
        }
    }
    return threads;
}

int hc_sched_split_items_expr(hc_builder *b, hc_expr *items, int threads,
                              hc_items_setup_fn setup, hc_items_body_fn body, void *ctx) {
    hc_arena *a = b->a;
    int64_t k;
    if (hc_expr_is_const_int(items, &k)) return hc_sched_split_items(b, k, threads, setup, body, ctx);
    if (threads < 1) threads = 1;
    hc_loop_attr attr = threads > 1 ? hc_parallel(threads) : hc_serial();
    HC_FOR(b, th, "t", hc_int(a, threads), attr) {
        hc_var *tv[1];
        static const char *const tnames[1] = {"ti"};
        HC_FOR_MAP(b, hc_map_spatial(a, 1, (int64_t[]){threads}), hc_ref(a, th), 1, tv, tnames) {
            if (setup) setup(ctx);
            hc_var *per = hc_b_declare(b, "per", hc_type_scalar(HC_INDEX_TYPE),
                                       hc_div(a, hc_add(a, items, hc_int(a, threads - 1)),
                                              hc_int(a, threads)));
            HC_FOR(b, it, "it", hc_ref(a, per), hc_serial()) {
                hc_expr *w = hc_add(a, hc_mul(a, hc_ref(a, tv[0]), hc_ref(a, per)), hc_ref(a, it));
                HC_IF(b, hc_lt(a, w, items)) { body(ctx, w); }
            }
        }
    }
    return threads;
}
