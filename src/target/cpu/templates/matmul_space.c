/* matmul_space.c — the matmul template's hardware-centric schedule space.
 *
 * The axes come from the target, not from the shape (DESIGN.md, "Hardware-centric
 * schedule space"; docs/tuning.md has the numbers):
 *   register tiles  mr x nr with nr = nv * lanes (nv = 1..4): the tallest mr whose
 *                   accumulators (mr * nv vectors), B vectors (nv) and one broadcast fit
 *                   the vector registers, capped at MAX_TILE_ROWS; and the default tile
 *   kc              the B micro-panel (kc x nr floats) fills KC_L1_FRACTIONS of L1,
 *                   balanced over K as the default does
 *   mc              the A block (mc x kc) takes 1/8 of L2 (the default's rule)
 *   nc              the default's 4096 columns, or the B block (kc x nc) filling a
 *                   quarter of this core's share of L3
 *   thread grids    every factorization tb * tm * tn = num_cores
 *   packing         pack_a, pack_b on / off
 *   loop order      not an axis: every candidate takes the default's rule
 *                   (hc_matmul_rows_first_pays). Offered as an axis, the tuner picked row
 *                   order for K >= 256 convs that were 10-30% faster alone and slower in
 *                   the model (inputs and B blocks colder there), see matmul_cpu.c
 * The shape only filters the product (validity rules below) and clips it: a config is
 * clipped the way hc_matmul_cpu clips it (blocks to the thread tile, kc to K), and
 * configs that clip to the same program appear once.
 *
 * Levels: 0 is the default alone; 1 the default and its neighbours (one axis changed);
 * 2 the whole filtered product. When a level has more than its budget (LEVEL1_MAX,
 * LEVEL2_MAX: sized so that a cold `--tune 2` of ResNet-50 stays within minutes, see
 * docs/tuning.md), the candidates with the least padded work are kept. Candidate 0 is
 * always hc_matmul_default_config itself (not clipped). */
#include <stdlib.h>
#include <string.h>

#include "target/cpu/templates/matmul.h"

/* Budgets (candidates per task, the default included); docs/tuning.md has the
 * measurements behind them. */
#define LEVEL1_MAX 8
#define LEVEL2_MAX 32
/* Taller tiles compile slower (the micro-kernel is fully unrolled) and GCC gains
 * nothing past 8 rows on Zen 4 (templates/matmul_cpu.c). */
#define MAX_TILE_ROWS 16
/* How much of L1 the B micro-panel (kc x nr floats) fills; the default uses 1.5. */
static const double KC_L1_FRACTIONS[] = {1.5, 0.5};

/* ---- the axes ------------------------------------------------------------------------ */
typedef struct tile {
    int mr, nr;
} tile;

typedef struct grid {
    int tb, tm, tn;
} grid;

typedef struct axes {
    tile tiles[8];
    int ntiles;
    grid grids[64];
    int ngrids;
} axes;

static void add_tile(axes *x, int mr, int nr) {
    for (int i = 0; i < x->ntiles; i++)
        if (x->tiles[i].mr == mr && x->tiles[i].nr == nr) return;
    if (x->ntiles < (int)HC_ARRAY_LEN(x->tiles)) x->tiles[x->ntiles++] = (tile){mr, nr};
}

static void build_axes(const hc_target *t, const hc_matmul_config *def, axes *x) {
    memset(x, 0, sizeof *x);
    int lanes = hc_target_f32_lanes(t);
    add_tile(x, def->mr, def->nr);
    for (int nv = 1; nv <= 4; nv++) {
        int mr = (t->caps.num_regs - nv - 1) / nv;
        mr = HC_MIN(HC_MIN(mr, MAX_TILE_ROWS), HC_MIN(HC_MATMUL_MAX_MR, HC_MATMUL_MAX_VECS / nv));
        if (mr >= 1) add_tile(x, mr, nv * lanes);
    }
    int cores = HC_MAX(t->caps.num_cores, 1);
    for (int tb = 1; tb <= cores; tb++)
        for (int tm = 1; tm <= cores / tb; tm++)
            if (cores % (tb * tm) == 0 && x->ngrids < (int)HC_ARRAY_LEN(x->grids))
                x->grids[x->ngrids++] = (grid){tb, tm, cores / (tb * tm)};
}

/* The blocks of a config with register tile (mr, nr): kc from L1 (fraction f), mc from
 * L2, nc from the default rule or from L3 (from_l3). The same formulas as
 * hc_matmul_default_config for f = 1.5 and !from_l3. */
static void set_blocks(hc_matmul_config *c, const hc_target *t, const hc_matmul_shape *s,
                       double f, bool from_l3) {
    int64_t l1 = hc_target_l1_bytes(t);
    int64_t l2 = hc_target_l2_bytes(t);
    int64_t l3 = t->caps.l3_bytes > 0 ? t->caps.l3_bytes : 8 << 20;
    int64_t kc = hc_clamp64((int64_t)((double)l1 * f) / (c->nr * 4) / 16 * 16, 64, 1024);
    c->kc = hc_round_up(hc_cdiv(s->k, hc_cdiv(s->k, kc)), 8);
    int64_t mc = hc_clamp64(l2 / 8 / (c->kc * 4), c->mr, 1 << 16);
    c->mc = HC_MAX(mc / c->mr * c->mr, c->mr);
    int64_t nc = from_l3 ? l3 / HC_MAX(t->caps.num_cores, 1) / 4 / (c->kc * 4) : 4096;
    nc = hc_clamp64(nc, c->nr, 1 << 16);
    c->nc = HC_MAX(nc / c->nr * c->nr, c->nr);
}

/* ---- validity rules and clipping ----------------------------------------------------- */
/* Does every one of `parts` threads get at least one of the `tiles` units? */
static bool no_idle_thread(int64_t units, int parts) {
    return (int64_t)(parts - 1) * hc_cdiv(units, parts) < units;
}

/* The rules that filter the product for this shape (the default is exempt: it is
 * candidate 0 whatever it is). The default's thread grid is always allowed: on shapes
 * too small to keep every thread busy it is the split the default chose. */
static bool valid_for_shape(const hc_matmul_config *c, const hc_matmul_shape *s,
                            const hc_matmul_config *def) {
    if (hc_matmul_validate(c, NULL) != HC_OK) return false;
    /* no tile wider than the shape needs: a narrower one covers the same columns */
    if ((int64_t)(c->nr - c->lanes) >= s->n) return false;
    /* no thread without work */
    bool default_grid = c->tb == def->tb && c->tm == def->tm && c->tn == def->tn;
    if (!default_grid && (c->tb > s->batch || !no_idle_thread(hc_cdiv(s->m, c->mr), c->tm) ||
                          !no_idle_thread(hc_cdiv(s->n, c->nr), c->tn)))
        return false;
    /* B read in place re-reads strided rows for every register-tile row of the block:
     * only with few of them (twice the default's threshold) */
    if (!c->pack_b && s->m > 8 * (int64_t)c->mr) return false;
    /* likewise A read in place, for every register-tile column */
    if (!c->pack_a && s->n > 16 * (int64_t)c->nr) return false;
    return true;
}

/* The config as hc_matmul_cpu sees it: blocks clipped to the thread tile, kc to K. Two
 * configs with equal clipped forms produce the same program. */
static hc_matmul_config clipped(const hc_matmul_config *c, const hc_matmul_shape *s) {
    hc_matmul_config k = *c;
    int64_t mpt = hc_cdiv(hc_cdiv(s->m, c->mr), c->tm) * c->mr;
    int64_t npt = hc_cdiv(hc_cdiv(s->n, c->nr), c->tn) * c->nr;
    k.kc = HC_MIN(c->kc, s->k);
    k.mc = HC_MIN(c->mc, mpt);
    k.nc = HC_MIN(c->nc, npt);
    return k;
}

static bool same_config(const hc_matmul_config *x, const hc_matmul_config *y) {
    return x->lanes == y->lanes && x->mr == y->mr && x->nr == y->nr && x->kc == y->kc &&
           x->mc == y->mc && x->nc == y->nc && x->tb == y->tb && x->tm == y->tm &&
           x->tn == y->tn && x->pack_a == y->pack_a && x->pack_b == y->pack_b &&
           x->c_write_once == y->c_write_once && x->rows_first == y->rows_first;
}

/* Padded multiply-adds of the slowest thread plus the packing it repeats (the same
 * rough model as the default's thread split): what the budget cut keeps least of. */
static double padded_work(const hc_matmul_config *c, const hc_matmul_shape *s) {
    double batches = (double)hc_cdiv(s->batch, c->tb);
    double rows = (double)(hc_cdiv(hc_cdiv(s->m, c->mr), c->tm) * c->mr);
    double cols = (double)(hc_cdiv(hc_cdiv(s->n, c->nr), c->tn) * c->nr);
    double packing = (c->pack_b ? cols : 0) + (c->pack_a ? rows : 0);
    return batches * (rows * cols + 8.0 * packing) * (double)s->k;
}

/* ---- the list of candidates ---------------------------------------------------------- */
typedef struct cand {
    hc_matmul_config c; /* clipped (candidate 0: the default as it is) */
    double work;
    int order; /* enumeration order, for a stable sort */
} cand;

typedef struct list {
    cand *v;
    int n, cap;
} list;

static void push(list *l, const hc_matmul_config *c, const hc_matmul_shape *s, bool is_default) {
    hc_matmul_config k = clipped(c, s);
    for (int i = 0; i < l->n; i++) {
        hc_matmul_config o = clipped(&l->v[i].c, s);
        if (same_config(&o, &k)) return;
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = hc_xrealloc(l->v, (size_t)l->cap * sizeof *l->v);
    }
    l->v[l->n] = (cand){is_default ? *c : k, padded_work(c, s), l->n};
    l->n++;
}

/* One point of the product; added when the rules allow it. */
static void try_point(list *l, const hc_target *t, const hc_matmul_shape *s,
                      const hc_matmul_config *def, tile tl, double f, bool from_l3, grid g,
                      bool pack_a, bool pack_b) {
    hc_matmul_config c = {0};
    c.lanes = hc_target_f32_lanes(t);
    c.nr = tl.nr;
    c.mr = (int)HC_MIN((int64_t)tl.mr, s->m); /* no padded rows for tiny M (as the default) */
    set_blocks(&c, t, s, f, from_l3);
    c.tb = g.tb, c.tm = g.tm, c.tn = g.tn;
    c.pack_a = pack_a, c.pack_b = pack_b;
    c.rows_first = hc_matmul_rows_first_pays(&c, s, t);
    if (valid_for_shape(&c, s, def)) push(l, &c, s, false);
}

static int by_work(const void *x, const void *y) {
    const cand *a = x, *b = y;
    if (a->work != b->work) return a->work < b->work ? -1 : 1;
    return a->order - b->order;
}

static int by_order(const void *x, const void *y) {
    return ((const cand *)x)->order - ((const cand *)y)->order;
}

int hc_matmul_space(const hc_target *t, const hc_matmul_shape *s, int level,
                    hc_matmul_config *out, int max) {
    hc_matmul_config def = hc_matmul_default_config(t, s);
    list l = {0};
    push(&l, &def, s, true);
    if (level >= 1 && hc_matmul_validate_shape(s, NULL) == HC_OK) {
        axes x;
        build_axes(t, &def, &x);
        tile dt = {def.mr, def.nr};
        grid dg = {def.tb, def.tm, def.tn};
        if (level == 1) { /* the default's neighbours: one axis changed */
            for (int i = 0; i < x.ntiles; i++)
                try_point(&l, t, s, &def, x.tiles[i], KC_L1_FRACTIONS[0], false, dg, def.pack_a,
                          def.pack_b);
            for (size_t i = 1; i < HC_ARRAY_LEN(KC_L1_FRACTIONS); i++)
                try_point(&l, t, s, &def, dt, KC_L1_FRACTIONS[i], false, dg, def.pack_a, def.pack_b);
            try_point(&l, t, s, &def, dt, KC_L1_FRACTIONS[0], true, dg, def.pack_a, def.pack_b);
            for (int i = 0; i < x.ngrids; i++)
                try_point(&l, t, s, &def, dt, KC_L1_FRACTIONS[0], false, x.grids[i], def.pack_a,
                          def.pack_b);
            for (int p = 0; p < 4; p++)
                try_point(&l, t, s, &def, dt, KC_L1_FRACTIONS[0], false, dg, p & 1, p >> 1);
        } else {
            for (int i = 0; i < x.ntiles; i++)
                for (size_t f = 0; f < HC_ARRAY_LEN(KC_L1_FRACTIONS); f++)
                    for (int l3 = 0; l3 < 2; l3++)
                        for (int g = 0; g < x.ngrids; g++)
                            for (int p = 3; p >= 0; p--) /* packed first */
                                try_point(&l, t, s, &def, x.tiles[i], KC_L1_FRACTIONS[f], l3,
                                          x.grids[g], p & 1, p >> 1);
        }
        /* over budget: keep the default and the least padded work */
        int budget = level == 1 ? LEVEL1_MAX : LEVEL2_MAX;
        if (l.n > budget) {
            qsort(l.v + 1, (size_t)l.n - 1, sizeof *l.v, by_work);
            l.n = budget;
            /* back to enumeration order: the order of a level does not depend on costs */
            qsort(l.v + 1, (size_t)l.n - 1, sizeof *l.v, by_order);
        }
    }
    int n = l.n;
    for (int i = 0; out && i < n && i < max; i++) out[i] = l.v[i].c;
    free(l.v);
    return n;
}
