/* jit.h — compile generated C with the system compiler into a cached shared object and
 * load it.
 *
 * Cache: the option, else $HIDETC_CACHE_DIR, else ~/.cache/hidetc (the option wins
 * over the environment when both are given). The key is a hash of the source, the flags
 * and the compiler's version string. An object is compiled to a temporary name in the
 * cache and renamed into place, so concurrent processes never see half a file. */
#ifndef HC_JIT_H
#define HC_JIT_H

#include "target/target.h"



/* Build (or find in the cache) and dlopen. On compiler failure the error carries the
 * compiler's output and the path of the kept source file. */
hc_status hc_jit_build(const char *source, const hc_jit_options *opt, hc_jit_lib **out,
                       hc_error *err);
/* Build several sources with up to `jobs` compiler processes at once (jobs <= 0: number
 * of cores). out[i] is set for each (NULL where source i failed: the others are still
 * built and must be closed); on failure the first error is returned. */
hc_status hc_jit_build_many(int n, const char *const *sources, const hc_jit_options *opt,
                            int jobs, hc_jit_lib **out, hc_error *err);
/* Build ONE shared object from n sources (e.g. the candidates of one task split into
 * modules): each source is compiled to an object file in the cache (cc -c, up to `jobs`
 * compilers at once, jobs <= 0: number of cores; an object whose source was compiled
 * before is reused), then all are linked into one .so. Sources from hc_codegen_c link
 * together as long as their kernel names differ (their prelude helpers are static). The
 * .so is cached under a key of all sources (in order), the flags and the compiler
 * version. On failure *out is NULL and the error carries the first compiler (or linker)
 * output and the kept source path; after a failed compile the others are not started. */
hc_status hc_jit_build_parallel(int n, const char *const *sources, const hc_jit_options *opt,
                                int jobs, hc_jit_lib **out, hc_error *err);
/* The same, calling progress(ctx, done, n) after each object is ready (from the calling
 * thread), so that a progress bar can move during a long build. */
typedef void (*hc_jit_progress_fn)(void *ctx, int done, int total);
hc_status hc_jit_build_parallel_progress(int n, const char *const *sources,
                                         const hc_jit_options *opt, int jobs,
                                         hc_jit_progress_fn progress, void *ctx,
                                         hc_jit_lib **out, hc_error *err);
/* Each cached shared object X.so has a stamp X.so.stamp beside it ("hidetc-so 1", its
 * size, a hash of its bytes), written with the .so under an flock of X.so.lock. A .so is
 * dlopened only when it matches its stamp (under the same lock, shared); a missing or
 * mismatched stamp (a damaged or half-written entry) is reported on stderr, the entry
 * removed and rebuilt. Loading an entry touches its stamp: `hidetc cache prune` drops
 * the least recently used entries first. */
typedef struct hc_jit_stamp {
    uint64_t size;
    char hash[33];
} hc_jit_stamp;
bool hc_jit_stamp_parse(const char *text, hc_jit_stamp *out);
void hc_jit_stamp_format(const hc_jit_stamp *s, char *buf, size_t cap);

void *hc_jit_symbol(hc_jit_lib *lib, const char *name); /* NULL if absent */
const char *hc_jit_path(const hc_jit_lib *lib);          /* the .so path */
bool hc_jit_was_cached(const hc_jit_lib *lib);           /* found without compiling */
void hc_jit_close(hc_jit_lib *lib);

#endif
