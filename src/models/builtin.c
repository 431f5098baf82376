/* builtin.c — the table of builtin models (builtin.h). The full-size models are the
 * README demo's default; the -tiny variants keep the structure at a size that compiles
 * and runs in seconds, for tests. */
#include "models/builtin.h"

#include <string.h>

#include "models/build.h"

typedef struct builtin {
    const char *name;
    const hc_resnet_config *resnet; /* exactly one of resnet / bert is set */
    const hc_bert_config *bert;
} builtin;

static const hc_resnet_config resnet50 = {true, {3, 4, 6, 3}, 64, 224, 1000};
static const hc_resnet_config resnet18 = {false, {2, 2, 2, 2}, 64, 224, 1000};
/* one block per stage, 8 base channels, 32x32 images: every op of the big one */
static const hc_resnet_config resnet50_tiny = {true, {1, 1, 1, 1}, 8, 32, 10};
static const hc_resnet_config resnet18_tiny = {false, {1, 1, 1, 1}, 8, 32, 10};

static const hc_bert_config bert_base = {12, 768, 12, 3072, 30522, 128};
/* 2 layers, hidden 64, 4 heads, FFN 128, vocab 100, 16 tokens */
static const hc_bert_config bert_tiny = {2, 64, 4, 128, 100, 16};

/*        name             resnet          bert */
#define BUILTINS(X)                                \
    X("resnet50",      &resnet50,      NULL)       \
    X("resnet18",      &resnet18,      NULL)       \
    X("bert",          NULL,           &bert_base) \
    X("resnet50-tiny", &resnet50_tiny, NULL)       \
    X("resnet18-tiny", &resnet18_tiny, NULL)       \
    X("bert-tiny",     NULL,           &bert_tiny)

#define ROW(n, r, b) {n, r, b},
static const builtin builtins[] = {BUILTINS(ROW)};
#undef ROW
#define NAME(n, r, b) n,
static const char *const builtin_names[] = {BUILTINS(NAME) NULL};
#undef NAME

const char *const *hc_builtin_model_names(void) { return builtin_names; }

static hc_status unknown(const char *name, hc_error *err) {
    hc_sb sb;
    hc_sb_init(&sb);
    for (size_t i = 0; i < HC_ARRAY_LEN(builtins); i++) {
        hc_sb_printf(&sb, "%s%s", i ? ", " : "", builtins[i].name);
    }
    hc_error_set(err, HC_ERR_INVALID, "unknown builtin model '%s' (known: %s)", name,
                 hc_sb_str(&sb));
    hc_sb_free(&sb);
    return HC_ERR_INVALID;
}

hc_status hc_builtin_model(const char *name, hc_graph **out, hc_error *err) {
    *out = NULL;
    /* builders report through the error's status, so they always get one */
    hc_error local;
    hc_error *e = err ? err : &local;
    e->status = HC_OK;
    for (size_t i = 0; i < HC_ARRAY_LEN(builtins); i++) {
        const builtin *m = &builtins[i];
        if (strcmp(m->name, name) != 0) continue;
        return m->resnet ? hc_build_resnet(m->resnet, m->name, out, e)
                         : hc_build_bert(m->bert, m->name, out, e);
    }
    return unknown(name, e);
}
