/* fuse.h — post-scheduling fusion (DESIGN.md, "Post-scheduling fusion").
 *
 * Partition (partition.c): the graph's kernel nodes are split into groups, each an anchor
 * with injective prologues (producers of its inputs) and epilogues (a chain of consumers
 * of its output):
 *   1. anchors are the non-injective nodes, in graph order; each grows its epilogue while
 *      its group output has exactly one consumer that is injective, unassigned, has an
 *      inverse map for that input, covers the same number of elements and reads no other
 *      tensor of the group; then its prologue while every consumer of a group input is in
 *      the group and the input's producer is injective and unassigned;
 *   2. the injective nodes left become anchors of their own, taken in reverse graph order
 *      so that a chain of injective nodes gathers behind its last node as one group.
 * Groups run in an order that respects their data dependencies.
 *
 * Scheduling a group (schedule.c):
 *   - an anchor with a template (hc_target_template) is scheduled alone, with
 *     write_once outputs when it has an epilogue; then its program is rewritten
 *     (rewrite.c): loads of a prologued input become the prologue expression (inside the
 *     template's packing routines too), stores of the anchor's output become stores of
 *     the epilogue expression at the inverse-mapped index. Vector loads and stores stay
 *     vector code when every access they imply is contiguous or uniform along the lanes;
 *     otherwise they go through a small register array, lane by lane.
 *   - any other group becomes one Task (the members' computations composed, compose.c)
 *     that the rule-based auto-scheduler schedules.
 * When a rewrite cannot apply, the caller splits the group into one kernel per node and
 * reports why: never a wrong kernel. */
#ifndef HC_FUSE_H
#define HC_FUSE_H

#include "graph/graph.h"
#include "target/target.h"

typedef struct hc_group {
    hc_node *anchor;
    int nprologue, nepilogue;
    hc_node **prologue; /* graph order (producers first) */
    hc_node **epilogue; /* chain order: the anchor's consumer first */
    /* Kernel parameters: inputs (read, produced outside the group: graph inputs,
     * constants, other groups' outputs), then outputs (read outside the group or graph
     * outputs). A single-node group lists the node's present inputs and outputs exactly
     * (duplicates included), like an unfused kernel. */
    int ninputs, noutputs;
    hc_tensor **inputs;
    hc_tensor **outputs;
    const char *fallback; /* why this node runs alone although it was grouped, or NULL */
    /* Set by the compiler after partitioning: the group's output is the input of a
     * depthwise NCHW conv, whose threads take contiguous ranges of channel planes
     * (hc_sched_opts.rows_to_consumer). */
    bool feeds_depthwise;
} hc_group;

static inline int hc_group_size(const hc_group *g) { return 1 + g->nprologue + g->nepilogue; }

typedef struct hc_partition {
    int ngroups;
    hc_group *groups; /* execution order */
} hc_partition;

/* Partition the kernel nodes (graph order; a node whose outputs are all constant or empty
 * is not a kernel node and must not be passed). fuse == false: one group per node. The
 * target says which anchors have templates (templated groups take more prologues).
 * Everything is allocated from a. */
hc_status hc_fuse_partition(hc_arena *a, const hc_graph *g, const hc_target *t, int nnodes,
                            hc_node *const *nodes, bool fuse, hc_partition *out,
                            hc_error *err);

/* Replace group i by one group per member (graph order), each marked with `why`. */
void hc_partition_split(hc_arena *a, hc_partition *p, int i, const char *why);

/* Schedule a group: an HC_FN_CPU_KERNEL named fname with params grp->inputs then
 * grp->outputs. *templated tells whether a template made the anchor's program. On a
 * multi-node group whose fusion cannot apply, returns NULL with err->status == HC_OK and
 * *why set (the caller splits the group); errors set err. */
hc_func *hc_fuse_schedule(hc_arena *a, const hc_group *grp, const hc_target *t,
                          const hc_sched_opts *opts, const char *fname, bool *templated,
                          const char **why, hc_error *err);

/* The template rewrite alone: f is the anchor's scheduled program (params: the anchor's
 * present inputs then outputs). NULL with *why set when it cannot apply. */
hc_func *hc_fuse_rewrite(hc_arena *a, const hc_group *grp, const hc_func *f, const char **why);

/* One Task computing the whole group (inputs grp->inputs, outputs grp->outputs). */
hc_task *hc_fuse_compose(hc_arena *a, const hc_group *grp, hc_error *err);

/* The task of a node (hc_op_def.task), NULL with err set when it has none. */
hc_task *hc_fuse_node_task(hc_arena *a, const hc_node *n, hc_error *err);

/* "Conv 'name'" style one-line description of a group for tools. */
void hc_group_print(hc_sb *sb, const hc_group *grp);

#endif
