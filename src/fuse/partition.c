/* partition.c — kernel nodes into fused groups (rules in fuse.h and DESIGN.md). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuse/fuse.h"

typedef struct pnode {
    hc_node *n;
    hc_task *task;   /* NULL: no task (never fused) */
    bool injective;  /* single output, injective task */
    int group;       /* -1 while unassigned */
} pnode;

typedef struct pctx {
    hc_arena *a;
    const hc_target *target;
    const hc_graph *g;
    int n;
    pnode *nodes;
    int *node_of;      /* graph node index -> kernel node index or -1 */
    const hc_node **hkeys; /* open addressing: node pointer -> kernel index */
    int *hvals;
    size_t hcap;
    int *uses;         /* per tensor id: reads by kernel nodes (each input slot counts) */
    int *reader;       /* per tensor id: a kernel node reading it (the only one if uses == 1) */
    bool *escapes;     /* per tensor id: graph output */
    int *owner;        /* per tensor id: group of its producer, -1 */
    HC_VEC(hc_group) groups;
    int *edges;        /* order_groups: consumer groups, by producer group */
} pctx;

static int present_outputs(const hc_node *n) {
    int c = 0;
    for (int i = 0; i < n->noutputs; i++) c += n->outputs[i] != NULL;
    return c;
}

static hc_tensor *only_output(const hc_node *n) {
    for (int i = 0; i < n->noutputs; i++)
        if (n->outputs[i]) return n->outputs[i];
    return NULL;
}

static size_t hslot(const pctx *c, const hc_node *n) {
    size_t h = ((uintptr_t)n >> 4) * 0x9E3779B97F4A7C15ull;
    return h & (c->hcap - 1);
}

static int kidx(const pctx *c, const hc_node *n) {
    for (size_t s = hslot(c, n);; s = (s + 1) & (c->hcap - 1)) {
        if (!c->hkeys[s]) return -1;
        if (c->hkeys[s] == n) return c->hvals[s];
    }
}

static void hput(pctx *c, const hc_node *n, int k) {
    size_t s = hslot(c, n);
    while (c->hkeys[s]) s = (s + 1) & (c->hcap - 1);
    c->hkeys[s] = n, c->hvals[s] = k;
}

/* Task input slot of node input i (task inputs are the present inputs in order). */
static int task_slot(const hc_node *n, int i) {
    int s = 0;
    for (int j = 0; j < i; j++) s += n->inputs[j] != NULL;
    return s;
}

typedef HC_VEC(int) int_vec;

/* At most this many nodes join one anchor as prologue and epilogue: a kernel is one C
 * function, and the C compiler's time grows faster than linearly with its length (a
 * chain of 1000 ReLUs fused into one kernel took gcc 4.7 s, 5000 took 127 s). Longer
 * chains become several kernels, which share one program when they are alike. No model
 * here fuses more than a few dozen. */
#define HC_FUSE_MAX_MEMBERS 64

static bool in_group(const pctx *c, const hc_node *n, int gid) {
    int k = kidx(c, n);
    return k >= 0 && c->nodes[k].group == gid;
}

/* Whether n's operator has a template on the target (then it anchors a templated group). */
static bool templated(const pctx *c, const hc_node *n) {
    return hc_target_template(c->target, n->op) != NULL;
}

/* Whether node k feeds only a templated anchor (which would read it in its packing). */
static bool feeds_template(const pctx *c, int k) {
    const hc_node *n = c->nodes[k].n;
    if (present_outputs(n) != 1) return false;
    const hc_tensor *t = only_output(n);
    if (c->escapes[t->id] || c->uses[t->id] != 1 || c->reader[t->id] < 0) return false;
    const pnode *r = &c->nodes[c->reader[t->id]];
    return !r->injective && templated(c, r->n);
}

static void grow_epilogue(pctx *c, int gid, int_vec *epi) {
    int last = c->groups.data[gid].anchor ? kidx(c, c->groups.data[gid].anchor) : -1;
    bool from_template = templated(c, c->nodes[last].n);
    for (;;) {
        const hc_node *n = c->nodes[last].n;
        if (present_outputs(n) != 1 || epi->len >= HC_FUSE_MAX_MEMBERS) return;
        hc_tensor *t = only_output(n);
        if (c->escapes[t->id] || c->uses[t->id] != 1) return;
        int k = c->reader[t->id];
        if (k < 0) return;
        pnode *e = &c->nodes[k];
        if (e->group >= 0 || !e->injective) return;
        /* An auto-scheduled anchor materializes its reduction before an epilogue that is
         * not elementwise, so an epilogue feeding a template (a 1x1 conv's Im2Col after a
         * pooling) would only add a copy pass: the template reads it in its packing. */
        if (!from_template && feeds_template(c, k)) return;
        int slot = -1;
        for (int i = 0; i < e->n->ninputs; i++)
            if (e->n->inputs[i] == t) slot = task_slot(e->n, i);
        if (slot < 0 || !e->task->inverse[slot]) return;
        if (!hc_tensor_numel_equal(only_output(e->n), t)) return;
        /* the chained input must be its only tensor from this group */
        e->group = gid; /* tentatively: in_group below counts it */
        bool other = false;
        for (int i = 0; i < e->n->ninputs; i++) {
            const hc_tensor *u = e->n->inputs[i];
            if (u && u != t && u->producer && in_group(c, u->producer, gid)) other = true;
        }
        if (other) {
            e->group = -1;
            return;
        }
        hc_vec_push(epi, k);
        last = k;
    }
}

static bool same_shape(const hc_tensor *x, const hc_tensor *y) {
    if (x->ndim != y->ndim) return false;
    for (int d = 0; d < x->ndim; d++)
        if (!hc_tensor_dims_equal(x, d, y, d)) return false;
    return true;
}

/* The inverse map reads output element y at input element y (of shape `t`; a size-1
 * dimension may be read at 0). */
static bool identity_inverse(const hc_inverse_map *inv, const hc_tensor *t) {
    if (!inv || inv->noutput_dims != inv->ninput_axes || inv->noutput_dims != t->ndim)
        return false;
    for (int d = 0; d < inv->noutput_dims; d++) {
        const hc_expr *e = inv->output_idx[d];
        int64_t k;
        bool same = e->kind == HC_E_VAR && e->u.var == inv->input_axes[d];
        if (!same && !(t->shape[d] == 1 && !(t->sym && t->sym[d]) && hc_expr_is_const_int(e, &k) &&
                       k == 0))
            return false;
    }
    return true;
}

/* Whether tensor t is read outside group gid or is a graph output. */
static bool read_outside(const pctx *c, const hc_tensor *t, int gid) {
    if (c->escapes[t->id]) return true;
    if (c->uses[t->id] == 0) return false;
    if (c->uses[t->id] == 1 && c->reader[t->id] >= 0) /* no scan of the graph for it */
        return c->nodes[c->reader[t->id]].group != gid;
    for (int j = 0; j < c->n; j++) {
        if (c->nodes[j].group == gid) continue;
        const hc_node *r = c->nodes[j].n;
        for (int s = 0; s < r->ninputs; s++)
            if (r->inputs[s] == t) return true;
    }
    return false;
}

/* Transcendental math in an expression tree (not through tensor accesses). */
static bool has_costly_math(const hc_expr *e) {
    if (!e) return false;
    switch (e->kind) {
    case HC_E_CALL:
        switch (e->u.call.prim) {
        case HC_PRIM_EXP: case HC_PRIM_LOG: case HC_PRIM_TANH: case HC_PRIM_ERF:
        case HC_PRIM_SIGMOID: case HC_PRIM_SIN: case HC_PRIM_COS: case HC_PRIM_TAN:
        case HC_PRIM_ASIN: case HC_PRIM_ACOS: case HC_PRIM_ATAN: case HC_PRIM_SINH:
        case HC_PRIM_COSH: case HC_PRIM_ASINH: case HC_PRIM_ACOSH: case HC_PRIM_ATANH:
        case HC_PRIM_POW: case HC_PRIM_FMOD: return true;
        default: break;
        }
        for (int i = 0; i < e->u.call.nargs; i++)
            if (has_costly_math(e->u.call.args[i])) return true;
        return false;
    case HC_E_BINARY: return has_costly_math(e->u.bin.a) || has_costly_math(e->u.bin.b);
    case HC_E_UNARY: return has_costly_math(e->u.un.a);
    case HC_E_CAST: return has_costly_math(e->u.cast.a);
    case HC_E_SELECT:
        return has_costly_math(e->u.sel.cond) || has_costly_math(e->u.sel.t) ||
               has_costly_math(e->u.sel.f);
    default: return false;
    }
}

/* A template evaluates a prologue at each load of its input, often scalar and more than
 * once per element (every thread column packs its own copy of A): only data movement and
 * cheap arithmetic go there. Costly math (GELU's erf, ...) stays with its producer: the
 * previous anchor's epilogue, or a vectorized kernel of its own. */
static bool cheap_for_prologue(hc_arena *a, const pnode *p) {
    int n;
    hc_tnode **nodes = hc_task_compute_nodes(a, p->task, &n);
    for (int i = 0; i < n; i++)
        if (has_costly_math(nodes[i]->value)) return false;
    return true;
}

/* After the chain: when its last tensor r has several readers, an elementwise DAG over r
 * (GELU: x * 0.5 * (1 + tanh(k * (x + 0.044715 x^3))) reads x three times). Members are
 * injective nodes after the anchor, in graph order, of r's shape, that read r or earlier
 * members through identity inverse maps, and whose other inputs cannot depend on the
 * group (no producer, or one before the anchor). Only the last member's output may be
 * read outside the group; members are dropped from the end until that holds. The
 * rewrite (rewrite.c, epilogue) checks that every member reads its group tensors at the
 * element it writes. Costly math is welcome here, unlike in a template's prologue: the
 * store phase evaluates it once per element, on vectors (the codegen's 512-bit math
 * helpers), while the accumulators are live; GELU in BERT's and GPT-2's FFN matmuls
 * costs 0.03-0.1 ms there against 0.25 ms for a separate kernel plus the next matmul's
 * prologue reading two tensors (BERT-base 83 -> 80 ms). */
static void grow_epilogue_dag(pctx *c, int gid, int_vec *epi, int anchor) {
    int last = epi->len ? epi->data[epi->len - 1] : anchor;
    if (present_outputs(c->nodes[last].n) != 1) return;
    hc_tensor *r = only_output(c->nodes[last].n);
    if (c->escapes[r->id] || c->uses[r->id] < 2) return;
    size_t base = epi->len;
    for (int k = anchor + 1; k < c->n && epi->len < HC_FUSE_MAX_MEMBERS; k++) {
        pnode *e = &c->nodes[k];
        if (e->group >= 0 || !e->injective || !same_shape(only_output(e->n), r)) continue;
        bool reads = false, ok = true;
        for (int i = 0; i < e->n->ninputs && ok; i++) {
            const hc_tensor *u = e->n->inputs[i];
            if (!u || !u->producer) continue;
            int pk = kidx(c, u->producer);
            bool member = false;
            for (size_t m = base; m < epi->len; m++) member |= epi->data[m] == pk;
            if (u == r || member) {
                reads = true;
                ok = identity_inverse(e->task->inverse[task_slot(e->n, i)], u);
            } else if (pk > anchor || (pk >= 0 && c->nodes[pk].group == gid)) {
                ok = false; /* may depend on the group, or an earlier tensor of it */
            }
        }
        if (!ok || !reads) continue;
        e->group = gid;
        hc_vec_push(epi, k);
    }
    for (;;) {
        bool valid = epi->len > base && !read_outside(c, r, gid);
        for (size_t m = base; valid && m + 1 < epi->len; m++)
            valid = !read_outside(c, only_output(c->nodes[epi->data[m]].n), gid);
        if (valid || epi->len == base) return;
        c->nodes[epi->data[--epi->len]].group = -1;
    }
}

/* Templates that load their input by whole vectors along the blocked channel dimension
 * (docs/nchwc.md): the Winograd input transform, the pools and the depthwise conv. A
 * layout reorder (TO_NCHWC) fused into them turns each vector load into 16 strided scalar
 * loads, so there it runs as a kernel of its own; the dense blocked conv broadcasts input
 * scalars and takes the reorder as its prologue. Inception-V3's first Winograd input
 * transform (Conv2d_2a, after the NCHW stem) took 0.98 ms with the reorder fused. */
static bool loads_vectors(const hc_node *anchor) {
    switch (anchor->op) {
    case HC_OPK_WINO_INPUT_NCHWC:
    case HC_OPK_MAX_POOL_NCHWC:
    case HC_OPK_AVERAGE_POOL_NCHWC: return true;
    case HC_OPK_CONV_NCHWC: return hc_node_attr_int(anchor, "group", 1) != 1;
    default: return false;
    }
}

static void grow_prologue(pctx *c, int gid, int_vec *members, int_vec *pro) {
    const hc_node *anchor = c->groups.data[gid].anchor;
    bool from_template = templated(c, anchor);
    bool no_reorder = from_template && loads_vectors(anchor);
    size_t limit = 1 + HC_FUSE_MAX_MEMBERS; /* the anchor and at most that many others */
    /* Passes over the members until none joins; a pass also visits the members it adds
     * (one pass for a chain: linear, where restarting after each addition was quadratic).
     * Joining only ever makes others eligible (read_outside), so the set is the same. */
    bool changed = true;
    while (changed) {
        changed = false;
        for (size_t m = 0; m < members->len && members->len < limit; m++) {
            const hc_node *n = c->nodes[members->data[m]].n;
            for (int i = 0; i < n->ninputs && members->len < limit; i++) {
                const hc_tensor *t = n->inputs[i];
                if (!t || !t->producer || t->data || c->escapes[t->id]) continue;
                int k = kidx(c, t->producer);
                if (k < 0) continue;
                pnode *p = &c->nodes[k];
                if (p->group >= 0 || !p->injective) continue;
                if (from_template && !cheap_for_prologue(c->a, p)) continue;
                if (no_reorder && p->n->op == HC_OPK_TO_NCHWC) continue;
                if (read_outside(c, t, gid)) continue; /* every reader in the group */
                p->group = gid;
                hc_vec_push(members, k);
                hc_vec_push(pro, k);
                changed = true;
            }
        }
    }
}

static int cmp_int(const void *x, const void *y) {
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

typedef HC_VEC(hc_tensor *) tensor_vec;

static void push_unique(tensor_vec *v, hc_tensor *t) {
    for (size_t i = 0; i < v->len; i++)
        if (v->data[i] == t) return;
    hc_vec_push(v, t);
}

/* Inputs and outputs of a group from its members. */
static void group_io(pctx *c, hc_group *grp, int gid) {
    int nm = hc_group_size(grp);
    hc_node **mem = HC_NEW_ARRAY(c->a, hc_node *, nm);
    int k = 0;
    for (int i = 0; i < grp->nprologue; i++) mem[k++] = grp->prologue[i];
    mem[k++] = grp->anchor;
    for (int i = 0; i < grp->nepilogue; i++) mem[k++] = grp->epilogue[i];
    tensor_vec ins = {0}, outs = {0};
    if (nm == 1) {
        const hc_node *n = grp->anchor;
        for (int i = 0; i < n->ninputs; i++)
            if (n->inputs[i]) hc_vec_push(&ins, n->inputs[i]);
        for (int i = 0; i < n->noutputs; i++)
            if (n->outputs[i]) hc_vec_push(&outs, n->outputs[i]);
    } else {
        for (int m = 0; m < nm; m++) {
            const hc_node *n = mem[m];
            for (int i = 0; i < n->ninputs; i++) {
                hc_tensor *t = n->inputs[i];
                if (t && !(t->producer && in_group(c, t->producer, gid))) push_unique(&ins, t);
            }
        }
        for (int m = 0; m < nm; m++) {
            const hc_node *n = mem[m];
            for (int i = 0; i < n->noutputs; i++) {
                hc_tensor *t = n->outputs[i];
                if (t && read_outside(c, t, gid)) push_unique(&outs, t);
            }
        }
    }
    grp->ninputs = (int)ins.len, grp->noutputs = (int)outs.len;
    grp->inputs = HC_NEW_ARRAY(c->a, hc_tensor *, ins.len + 1);
    grp->outputs = HC_NEW_ARRAY(c->a, hc_tensor *, outs.len + 1);
    if (ins.len) memcpy(grp->inputs, ins.data, sizeof(hc_tensor *) * ins.len);
    if (outs.len) memcpy(grp->outputs, outs.data, sizeof(hc_tensor *) * outs.len);
    hc_vec_free(&ins);
    hc_vec_free(&outs);
}

static int make_group(pctx *c, int anchor) {
    int gid = (int)c->groups.len;
    hc_group grp = {.anchor = c->nodes[anchor].n};
    hc_vec_push(&c->groups, grp);
    c->nodes[anchor].group = gid;
    return gid;
}

static void finish_group(pctx *c, int gid, int_vec *pro, int_vec *epi) {
    hc_group *grp = &c->groups.data[gid];
    if (pro->len) qsort(pro->data, pro->len, sizeof(int), cmp_int);
    grp->nprologue = (int)pro->len, grp->nepilogue = (int)epi->len;
    grp->prologue = HC_NEW_ARRAY(c->a, hc_node *, pro->len + 1);
    grp->epilogue = HC_NEW_ARRAY(c->a, hc_node *, epi->len + 1);
    for (size_t i = 0; i < pro->len; i++) grp->prologue[i] = c->nodes[pro->data[i]].n;
    for (size_t i = 0; i < epi->len; i++) grp->epilogue[i] = c->nodes[epi->data[i]].n;
}

static void build_group(pctx *c, int anchor, bool epilogue_first) {
    int gid = make_group(c, anchor);
    int_vec members = {0}, pro = {0}, epi = {0};
    hc_vec_push(&members, anchor);
    if (epilogue_first) {
        grow_epilogue(c, gid, &epi);
        grow_epilogue_dag(c, gid, &epi, anchor);
    }
    for (size_t i = 0; i < epi.len; i++) hc_vec_push(&members, epi.data[i]);
    grow_prologue(c, gid, &members, &pro);
    finish_group(c, gid, &pro, &epi);
    hc_vec_free(&members);
    hc_vec_free(&pro);
    hc_vec_free(&epi);
}

/* Kahn's algorithm over groups, earliest anchor first; false on a cycle. The ready
 * groups wait in a binary heap on their anchor's position, so 100k groups (a long chain
 * with --no-fusion) cost n log n, not a scan of every group per step. */
static void heap_push(int *heap, int *len, const int *key, int g) {
    int i = (*len)++;
    for (; i > 0 && key[heap[(i - 1) / 2]] > key[g]; i = (i - 1) / 2) heap[i] = heap[(i - 1) / 2];
    heap[i] = g;
}

static int heap_pop(int *heap, int *len, const int *key) {
    int top = heap[0], last = heap[--*len], i = 0;
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        int km = key[last];
        if (l < *len && key[heap[l]] < km) m = l, km = key[heap[l]];
        if (r < *len && key[heap[r]] < km) m = r;
        if (m == i) break;
        heap[i] = heap[m];
        i = m;
    }
    if (*len) heap[i] = last;
    return top;
}

static bool order_groups(pctx *c, hc_partition *out) {
    int ng = (int)c->groups.len;
    for (int gi = 0; gi < ng; gi++) group_io(c, &c->groups.data[gi], gi);
    int *first = HC_NEW_ARRAY(c->a, int, ng + 1);
    for (int gi = 0; gi < ng; gi++) first[gi] = kidx(c, c->groups.data[gi].anchor);
    /* edges producer group -> consumer group, one per input read (CSR by producer) */
    int *indeg = HC_NEW_ARRAY(c->a, int, ng + 1), *start = HC_NEW_ARRAY(c->a, int, ng + 2);
    for (int pass = 0; pass < 2; pass++) {
        int *fill = pass ? HC_NEW_ARRAY(c->a, int, ng + 1) : NULL;
        int *edges = pass ? HC_NEW_ARRAY(c->a, int, start[ng] + 1) : NULL;
        for (int gi = 0; gi < ng; gi++) {
            const hc_group *grp = &c->groups.data[gi];
            for (int i = 0; i < grp->ninputs; i++) {
                const hc_tensor *t = grp->inputs[i];
                int k = t->producer ? kidx(c, t->producer) : -1;
                if (k < 0 || c->nodes[k].group == gi) continue;
                int pg = c->nodes[k].group;
                if (pass == 0) start[pg + 1]++, indeg[gi]++;
                else edges[start[pg] + fill[pg]++] = gi;
            }
        }
        if (pass == 0)
            for (int gi = 0; gi < ng; gi++) start[gi + 1] += start[gi];
        else
            c->edges = edges;
    }
    int *heap = HC_NEW_ARRAY(c->a, int, ng + 1), hlen = 0;
    for (int gi = 0; gi < ng; gi++)
        if (!indeg[gi]) heap_push(heap, &hlen, first, gi);
    out->groups = HC_NEW_ARRAY(c->a, hc_group, ng + 1);
    out->ngroups = 0;
    while (hlen) {
        int pick = heap_pop(heap, &hlen, first);
        out->groups[out->ngroups++] = c->groups.data[pick];
        for (int e = start[pick]; e < start[pick + 1]; e++)
            if (--indeg[c->edges[e]] == 0) heap_push(heap, &hlen, first, c->edges[e]);
    }
    return out->ngroups == ng;
}

hc_status hc_fuse_partition(hc_arena *a, const hc_graph *g, const hc_target *t, int nnodes,
                            hc_node *const *nodes, bool fuse, hc_partition *out,
                            hc_error *err) {
    (void)err;
    pctx c = {.a = a, .target = t, .g = g, .n = nnodes};
    c.nodes = HC_NEW_ARRAY(a, pnode, nnodes + 1);
    c.node_of = HC_NEW_ARRAY(a, int, g->nodes.len + 1);
    size_t nt = g->tensors.len + 1;
    c.uses = HC_NEW_ARRAY(a, int, nt);
    c.reader = HC_NEW_ARRAY(a, int, nt);
    c.escapes = HC_NEW_ARRAY(a, bool, nt);
    for (size_t i = 0; i < g->nodes.len; i++) c.node_of[i] = -1;
    c.hcap = 16;
    while (c.hcap < (size_t)nnodes * 2 + 2) c.hcap *= 2;
    c.hkeys = HC_NEW_ARRAY(a, const hc_node *, c.hcap);
    c.hvals = HC_NEW_ARRAY(a, int, c.hcap);
    for (size_t i = 0; i < nt; i++) c.reader[i] = -1;
    for (size_t i = 0; i < g->outputs.len; i++) c.escapes[g->outputs.data[i]->id] = true;
    size_t gi = 0;
    for (int k = 0; k < nnodes; k++) {
        while (gi < g->nodes.len && g->nodes.data[gi] != nodes[k]) gi++;
        HC_ASSERT_MSG(gi < g->nodes.len, "hc_fuse_partition: nodes not in graph order");
        c.node_of[gi] = k;
        hput(&c, nodes[k], k);
        pnode *p = &c.nodes[k];
        p->n = nodes[k];
        p->group = -1;
        if (fuse) {
            p->task = hc_fuse_node_task(a, nodes[k], NULL);
            p->injective = p->task && present_outputs(nodes[k]) == 1 &&
                           p->task->noutputs == 1 &&
                           hc_op_class_of(nodes[k]->op) == HC_OPC_INJECTIVE &&
                           hc_task_is_injective(p->task);
        }
        for (int i = 0; i < nodes[k]->ninputs; i++) {
            const hc_tensor *t = nodes[k]->inputs[i];
            if (!t) continue;
            c.uses[t->id]++;
            c.reader[t->id] = k;
        }
    }
    /* tensors read by nodes that are not kernels (rare) escape too */
    for (size_t i = 0; i < g->nodes.len; i++) {
        if (c.node_of[i] >= 0) continue;
        const hc_node *n = g->nodes.data[i];
        for (int j = 0; j < n->ninputs; j++)
            if (n->inputs[j]) c.escapes[n->inputs[j]->id] = true;
    }
    if (!fuse) {
        for (int k = 0; k < nnodes; k++) {
            int gid = make_group(&c, k);
            int_vec e = {0};
            finish_group(&c, gid, &e, &e);
        }
    } else {
        for (int k = 0; k < nnodes; k++)
            if (!c.nodes[k].injective && c.nodes[k].group < 0) build_group(&c, k, true);
        for (int k = nnodes - 1; k >= 0; k--)
            if (c.nodes[k].group < 0) build_group(&c, k, false);
    }
    bool ok = order_groups(&c, out);
    if (!ok) { /* a dependency cycle between groups: no fusion at all */
        hc_vec_free(&c.groups);
        hc_partition flat;
        hc_status st = hc_fuse_partition(a, g, t, nnodes, nodes, false, &flat, err);
        for (int i = 0; i < flat.ngroups; i++)
            flat.groups[i].fallback = "fusion made a dependency cycle between groups";
        *out = flat;
        return st;
    }
    hc_vec_free(&c.groups);
    return HC_OK;
}

void hc_partition_split(hc_arena *a, hc_partition *p, int i, const char *why) {
    hc_group old = p->groups[i];
    int nm = hc_group_size(&old);
    hc_node **all = HC_NEW_ARRAY(a, hc_node *, nm), **mem = HC_NEW_ARRAY(a, hc_node *, nm);
    int k = 0;
    for (int j = 0; j < old.nprologue; j++) all[k++] = old.prologue[j];
    all[k++] = old.anchor;
    for (int j = 0; j < old.nepilogue; j++) all[k++] = old.epilogue[j];
    /* a topological order of the members: a member runs once no unplaced member
     * produces one of its inputs */
    bool *placed = HC_NEW_ARRAY(a, bool, nm);
    for (int done = 0; done < nm;) {
        for (int j = 0; j < nm; j++) {
            if (placed[j]) continue;
            bool ready = true;
            for (int t = 0; t < all[j]->ninputs && ready; t++)
                for (int q = 0; q < nm; q++)
                    if (!placed[q] && q != j && all[j]->inputs[t] &&
                        all[j]->inputs[t]->producer == all[q])
                        ready = false;
            if (ready) {
                placed[j] = true;
                mem[done++] = all[j];
            }
        }
    }
    hc_group *ng = HC_NEW_ARRAY(a, hc_group, p->ngroups + nm);
    memcpy(ng, p->groups, sizeof(hc_group) * (size_t)i);
    for (int j = 0; j < nm; j++) {
        hc_group s = {.anchor = mem[j], .fallback = why};
        const hc_node *n = mem[j];
        int ni = 0, no = 0;
        for (int t = 0; t < n->ninputs; t++) ni += n->inputs[t] != NULL;
        for (int t = 0; t < n->noutputs; t++) no += n->outputs[t] != NULL;
        s.inputs = HC_NEW_ARRAY(a, hc_tensor *, ni + 1);
        s.outputs = HC_NEW_ARRAY(a, hc_tensor *, no + 1);
        for (int t = 0; t < n->ninputs; t++)
            if (n->inputs[t]) s.inputs[s.ninputs++] = n->inputs[t];
        for (int t = 0; t < n->noutputs; t++)
            if (n->outputs[t]) s.outputs[s.noutputs++] = n->outputs[t];
        s.prologue = HC_NEW_ARRAY(a, hc_node *, 1);
        s.epilogue = HC_NEW_ARRAY(a, hc_node *, 1);
        ng[i + j] = s;
    }
    memcpy(ng + i + nm, p->groups + i + 1, sizeof(hc_group) * (size_t)(p->ngroups - i - 1));
    p->groups = ng;
    p->ngroups += nm - 1;
}

static const char *op_label(const hc_node *n) {
    const char *o = hc_op_onnx_name(n->op);
    return o && *o ? o : hc_op_name(n->op);
}

void hc_group_print(hc_sb *sb, const hc_group *grp) {
    hc_sb_printf(sb, "%s '%s'", op_label(grp->anchor), grp->anchor->name);
    if (grp->nprologue) {
        hc_sb_puts(sb, " | prologue:");
        for (int i = 0; i < grp->nprologue; i++)
            hc_sb_printf(sb, " %s '%s'", op_label(grp->prologue[i]), grp->prologue[i]->name);
    }
    if (grp->nepilogue) {
        hc_sb_puts(sb, " | epilogue:");
        for (int i = 0; i < grp->nepilogue; i++)
            hc_sb_printf(sb, " %s '%s'", op_label(grp->epilogue[i]), grp->epilogue[i]->name);
    }
    if (grp->fallback) hc_sb_printf(sb, " | unfused: %s", grp->fallback);
}
