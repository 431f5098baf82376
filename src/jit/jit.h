/* jit.h — compile generated C with the system compiler into a cached shared object and
 * load it.
 *
 * Cache: the option, else $HIDETC_CACHE_DIR, else ~/.cache/hidetc (the option wins
 * over the environment when both are given). The key is a hash of the source, the flags
 * and the compiler's version string. An object is compiled to a temporary name in the
 * cache and renamed into place, so concurrent processes never see half a file. */
#ifndef HC_JIT_H
#define HC_JIT_H

#include "core/core.h"

typedef struct hc_jit_options {
    const char *cache_dir; /* NULL: $HIDETC_CACHE_DIR or ~/.cache/hidetc */
    const char *cc;        /* NULL: $HIDETC_CC or "cc" */
    const char *cflags;    /* NULL: the host target's flags */
    bool verbose;          /* print compiler commands to stderr */
} hc_jit_options;

typedef struct hc_jit_lib hc_jit_lib;

/* Build (or find in the cache) and dlopen. On compiler failure the error carries the
 * compiler's output and the path of the kept source file. */
hc_status hc_jit_build(const char *source, const hc_jit_options *opt, hc_jit_lib **out,
                       hc_error *err);
/* Build several sources with up to `jobs` compiler processes at once (jobs <= 0: number
 * of cores). out[i] is set for each (NULL where source i failed: the others are still
 * built and must be closed); on failure the first error is returned. */
hc_status hc_jit_build_many(int n, const char *const *sources, const hc_jit_options *opt,
                            int jobs, hc_jit_lib **out, hc_error *err);
void *hc_jit_symbol(hc_jit_lib *lib, const char *name); /* NULL if absent */
const char *hc_jit_path(const hc_jit_lib *lib);          /* the .so path */
bool hc_jit_was_cached(const hc_jit_lib *lib);           /* found without compiling */
void hc_jit_close(hc_jit_lib *lib);
/* The cache directory these options resolve to (malloc'ed). */
char *hc_jit_cache_dir(const hc_jit_options *opt);

#endif
