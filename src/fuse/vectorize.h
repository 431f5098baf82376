/* vectorize.h — lane expressions as vector code (vectorize.c), for the fusion rewrite. */
#ifndef HC_FUSE_VECTORIZE_H
#define HC_FUSE_VECTORIZE_H

#include "ir/ir.h"

/* The lanes of one vector access: lane variable L (the access's last index + L), `lanes`
 * f32 lanes of vector type vt, `count` valid lanes (masked access) or NULL. For a store's
 * epilogue, vs stands for the stored lane's value and vvalue is the stored vector. */
typedef struct hc_lanes {
    hc_arena *a;
    hc_var *L;
    hc_var *vs;
    hc_expr *vvalue;
    hc_expr *count;
    int lanes;
    const hc_type *vt;
} hc_lanes;

/* s vectorized along L: *isvec false when it is a uniform scalar; NULL when it cannot be
 * (a load neither uniform, contiguous nor strided; a non-f32 lane value; a load under a
 * select that only its condition keeps in bounds). */
hc_expr *hc_lanes_vectorize(const hc_lanes *l, hc_expr *s, bool *isvec);
/* The vector of r (a uniform f32 scalar is broadcast); NULL for a uniform non-f32. */
hc_expr *hc_lanes_as_vector(const hc_lanes *l, hc_expr *r, bool isvec);
/* e at lane 0. */
hc_expr *hc_lanes_at0(const hc_lanes *l, hc_expr *e);
/* s as masked loads, one per block of its one lane-dependent div/mod; *ok: the run-time
 * condition under which the result is exact (NULL: always); NULL when s is not of that
 * form. */
hc_expr *hc_lanes_range_load(const hc_lanes *l, hc_expr *s, hc_expr **ok);

#endif
