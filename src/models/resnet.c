/* resnet.c — ResNet (He et al. 2015) as a graph: Conv + BatchNormalization + Relu
 * stages, GlobalAveragePool and a Gemm classifier. BatchNormalization stays a separate
 * node so the BN-folding pass has work to do, as with an exported model.
 *
 * Weights: He-uniform convolutions (variance 2 / fan_in) and BN statistics near
 * identity, so activations keep roughly unit scale through 50 layers; the last BN of
 * each residual branch gets a smaller gamma, which keeps the residual sums from growing
 * with depth (the same reason torchvision offers zero-init there). */
#include "models/build.h"

#include <math.h>
#include <stdio.h>

typedef struct resnet {
    hc_mb b;
    const hc_resnet_config *c;
} resnet;

static hc_tensor *batchnorm(resnet *r, const char *name, hc_tensor *x, int64_t ch,
                            double gamma_hi) {
    hc_mb *b = &r->b;
    hc_arena *a = &b->g->arena;
    hc_tensor *in[5] = {x};
    in[1] = hc_mb_uniform(b, hc_arena_printf(a, "%s.weight", name), 1, &ch, 0.5 * gamma_hi,
                          gamma_hi);
    in[2] = hc_mb_uniform(b, hc_arena_printf(a, "%s.bias", name), 1, &ch, -0.1, 0.1);
    in[3] = hc_mb_uniform(b, hc_arena_printf(a, "%s.running_mean", name), 1, &ch, -0.1, 0.1);
    in[4] = hc_mb_uniform(b, hc_arena_printf(a, "%s.running_var", name), 1, &ch, 0.5, 1.5);
    hc_attr eps = hc_mb_float("epsilon", 1e-5);
    return hc_mb_op(b, HC_OPK_BATCH_NORMALIZATION, name, NULL, 5, in, 1, &eps);
}

/* conv (no bias) -> BN -> optional Relu. */
static hc_tensor *conv_bn(resnet *r, const char *name, hc_tensor *x, int64_t cin, int64_t cout,
                          int k, int stride, bool relu, double gamma_hi) {
    hc_mb *b = &r->b;
    hc_arena *a = &b->g->arena;
    int64_t wshape[4] = {cout, cin, k, k};
    double bound = sqrt(6.0 / (double)(cin * k * k));
    hc_tensor *in[2] = {x, hc_mb_uniform(b, hc_arena_printf(a, "%s.conv.weight", name), 4,
                                         wshape, -bound, bound)};
    hc_attr attrs[5] = {
        hc_mb_ints2(b, "kernel_shape", k, k), hc_mb_ints2(b, "strides", stride, stride),
        hc_mb_ints4(b, "pads", k / 2),        hc_mb_ints2(b, "dilations", 1, 1),
        hc_mb_int("group", 1),
    };
    hc_tensor *y = hc_mb_op(b, HC_OPK_CONV, hc_arena_printf(a, "%s.conv", name), NULL, 2, in, 5,
                            attrs);
    y = batchnorm(r, hc_arena_printf(a, "%s.bn", name), y, cout, gamma_hi);
    if (relu) y = hc_mb_op1(b, HC_OPK_RELU, hc_arena_printf(a, "%s.relu", name), y);
    return y;
}

/* One residual block; returns its output with `cout` channels. */
static hc_tensor *block(resnet *r, const char *name, hc_tensor *x, int64_t cin, int64_t width,
                        int stride, int64_t *cout) {
    hc_arena *a = &r->b.g->arena;
    hc_tensor *y;
    if (r->c->bottleneck) {
        *cout = 4 * width;
        y = conv_bn(r, hc_arena_printf(a, "%s.1", name), x, cin, width, 1, 1, true, 1.0);
        y = conv_bn(r, hc_arena_printf(a, "%s.2", name), y, width, width, 3, stride, true, 1.0);
        y = conv_bn(r, hc_arena_printf(a, "%s.3", name), y, width, *cout, 1, 1, false, 0.3);
    } else {
        *cout = width;
        y = conv_bn(r, hc_arena_printf(a, "%s.1", name), x, cin, width, 3, stride, true, 1.0);
        y = conv_bn(r, hc_arena_printf(a, "%s.2", name), y, width, width, 3, 1, false, 0.3);
    }
    hc_tensor *shortcut = x;
    if (stride != 1 || cin != *cout) {
        shortcut = conv_bn(r, hc_arena_printf(a, "%s.downsample", name), x, cin, *cout, 1,
                           stride, false, 1.0);
    }
    y = hc_mb_op2(&r->b, HC_OPK_ADD, hc_arena_printf(a, "%s.add", name), y, shortcut);
    return hc_mb_op1(&r->b, HC_OPK_RELU, hc_arena_printf(a, "%s.relu", name), y);
}

static hc_tensor *stem(resnet *r, hc_tensor *x) {
    hc_mb *b = &r->b;
    hc_tensor *y = conv_bn(r, "stem", x, 3, r->c->width, 7, 2, true, 1.0);
    hc_attr attrs[3] = {hc_mb_ints2(b, "kernel_shape", 3, 3), hc_mb_ints2(b, "strides", 2, 2),
                        hc_mb_ints4(b, "pads", 1)};
    return hc_mb_op(b, HC_OPK_MAX_POOL, "stem.maxpool", NULL, 1, &y, 3, attrs);
}

static hc_tensor *classifier(resnet *r, hc_tensor *x, int64_t features) {
    hc_mb *b = &r->b;
    hc_tensor *y = hc_mb_op1(b, HC_OPK_GLOBAL_AVERAGE_POOL, "avgpool", x);
    hc_attr axis = hc_mb_int("axis", 1);
    y = hc_mb_op(b, HC_OPK_FLATTEN, "flatten", NULL, 1, &y, 1, &axis);
    int64_t wshape[2] = {r->c->classes, features};
    int64_t classes = r->c->classes;
    double bound = 1.0 / sqrt((double)features);
    hc_tensor *in[3] = {y, hc_mb_uniform(b, "fc.weight", 2, wshape, -bound, bound),
                        hc_mb_uniform(b, "fc.bias", 1, &classes, -bound, bound)};
    hc_attr attrs[3] = {hc_mb_float("alpha", 1.0), hc_mb_float("beta", 1.0),
                        hc_mb_int("transB", 1)};
    return hc_mb_op(b, HC_OPK_GEMM, "fc", "logits", 3, in, 3, attrs);
}

hc_status hc_build_resnet(const hc_resnet_config *c, const char *name, hc_graph **out,
                          hc_error *err) {
    *out = NULL;
    hc_graph *g = hc_graph_new(name, 17);
    resnet r = {.c = c};
    hc_mb_init(&r.b, g, 0x5e5e7u, err);
    int64_t ishape[4] = {1, 3, c->image, c->image};
    hc_tensor *x = hc_graph_add_input(g, "input", HC_F32, 4, ishape);
    x = stem(&r, x);
    int64_t ch = c->width;
    for (int s = 0; s < 4; s++) {
        int64_t width = (int64_t)c->width << s;
        for (int i = 0; i < c->blocks[s]; i++) {
            char bname[32];
            snprintf(bname, sizeof bname, "layer%d.%d", s + 1, i);
            int stride = (s > 0 && i == 0) ? 2 : 1;
            x = block(&r, hc_arena_strdup(&g->arena, bname), x, ch, width, stride, &ch);
        }
    }
    x = classifier(&r, x, ch);
    if (hc_mb_failed(&r.b)) {
        hc_graph_free(g);
        return err ? err->status : HC_ERR_INVALID;
    }
    hc_graph_add_output(g, x);
    *out = g;
    return HC_OK;
}
