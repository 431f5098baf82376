/* test_jit.c — the compile cache: hits, keys, errors, environment, parallel builds. */
#include "target/cpu/jit.h"
#include "test.h"

#include <dirent.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char cache[256];

/* A unique source per run of this test, so the first build really compiles. */
static char *source(int value) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_sb_printf(&sb, "/* run %ld.%f */\nint get(void) { return %d; }\n", (long)getpid(),
                 hc_now_ms(), value);
    return hc_sb_take(&sb);
}

static int call_get(hc_jit_lib *lib) {
    int (*get)(void) = (int (*)(void))hc_jit_symbol(lib, "get");
    CHECK(get != NULL);
    return get ? get() : -1;
}

static void test_cache_hit(void) {
    hc_jit_options opt = {.cache_dir = cache};
    char *src = source(42);
    hc_jit_lib *a = NULL, *b = NULL;
    hc_error err;
    CHECK_EQ_INT(hc_jit_build(src, &opt, &a, &err), HC_OK);
    CHECK(a && !hc_jit_was_cached(a));
    CHECK_EQ_INT(hc_jit_build(src, &opt, &b, &err), HC_OK);
    CHECK(b && hc_jit_was_cached(b));
    if (a && b) {
        CHECK_STR(hc_jit_path(a), hc_jit_path(b));
        CHECK(strncmp(hc_jit_path(a), cache, strlen(cache)) == 0);
        CHECK_EQ_INT(call_get(b), 42);
        CHECK(hc_jit_symbol(b, "no_such_symbol") == NULL);
    }
    /* different flags: a different key, so a different object */
    hc_jit_options opt2 = {.cache_dir = cache, .cflags = "-O1"};
    hc_jit_lib *c = NULL;
    CHECK_EQ_INT(hc_jit_build(src, &opt2, &c, &err), HC_OK);
    if (a && c) {
        CHECK(strcmp(hc_jit_path(a), hc_jit_path(c)) != 0);
        CHECK(!hc_jit_was_cached(c));
        CHECK_EQ_INT(call_get(c), 42);
    }
    hc_jit_close(a), hc_jit_close(b), hc_jit_close(c);
    free(src);
}

static void test_compile_error(void) {
    hc_jit_options opt = {.cache_dir = cache};
    hc_jit_lib *lib = (hc_jit_lib *)1;
    hc_error err;
    const char *bad = "int get(void) { return undeclared_thing + ; }\n";
    CHECK_EQ_INT(hc_jit_build(bad, &opt, &lib, &err), HC_ERR_COMPILE);
    CHECK(lib == NULL);
    CHECK_MSG(strstr(err.msg, "undeclared_thing") != NULL, "message: %s", err.msg);
    const char *path = strstr(err.msg, cache);
    CHECK_MSG(path != NULL, "no source path in: %s", err.msg);
    if (path) { /* the source is kept for inspection */
        char p[512];
        snprintf(p, sizeof p, "%.*s", (int)strcspn(path, " \n:"), path);
        CHECK_MSG(access(p, R_OK) == 0 && strstr(p, ".c"), "kept source %s", p);
    }
    /* a cache directory that cannot be created */
    hc_jit_options nodir = {.cache_dir = "/proc/hidetc-no-such-dir/cache"};
    char *src0 = source(2);
    CHECK_EQ_INT(hc_jit_build(src0, &nodir, &lib, &err), HC_ERR_IO);
    CHECK(strstr(err.msg, "/proc/hidetc-no-such-dir") != NULL);
    free(src0);
    /* a compiler that does not exist */
    hc_jit_options nocc = {.cache_dir = cache, .cc = "/nonexistent/cc"};
    char *src = source(1);
    CHECK_EQ_INT(hc_jit_build(src, &nocc, &lib, &err), HC_ERR_COMPILE);
    CHECK(strstr(err.msg, "/nonexistent/cc") != NULL);
    free(src);
}

static void test_env(void) {
    char dir[300];
    snprintf(dir, sizeof dir, "%s/env-dir", cache);
    char *old = getenv("HIDETC_CACHE_DIR") ? hc_xstrdup(getenv("HIDETC_CACHE_DIR")) : NULL;
    setenv("HIDETC_CACHE_DIR", dir, 1);
    char *resolved = hc_cache_dir(NULL);
    CHECK_STR(resolved, dir);
    free(resolved);
    hc_jit_options opt = {.cache_dir = cache};
    resolved = hc_cache_dir(&opt); /* the option wins */
    CHECK_STR(resolved, cache);
    free(resolved);
    char *src = source(7);
    hc_jit_lib *lib = NULL;
    hc_error err;
    CHECK_EQ_INT(hc_jit_build(src, NULL, &lib, &err), HC_OK);
    if (lib) {
        CHECK(strncmp(hc_jit_path(lib), dir, strlen(dir)) == 0);
        CHECK_EQ_INT(call_get(lib), 7);
    }
    hc_jit_close(lib);
    free(src);
    /* HIDETC_CC: a compiler that is not there */
    setenv("HIDETC_CC", "/nonexistent/hidetc-cc", 1);
    src = source(8);
    CHECK_EQ_INT(hc_jit_build(src, NULL, &lib, &err), HC_ERR_COMPILE);
    CHECK(strstr(err.msg, "hidetc-cc") != NULL);
    unsetenv("HIDETC_CC");
    free(src);
    if (old) setenv("HIDETC_CACHE_DIR", old, 1);
    else unsetenv("HIDETC_CACHE_DIR");
    free(old);
}

static void test_many(void) {
    enum { N = 5 };
    char *srcs[N];
    hc_jit_lib *libs[N];
    for (int i = 0; i < N; i++) srcs[i] = source(100 + i);
    hc_jit_options opt = {.cache_dir = cache};
    hc_error err;
    double t0 = hc_now_ms();
    CHECK_EQ_INT(hc_jit_build_many(N, (const char *const *)srcs, &opt, 2, libs, &err), HC_OK);
    double ms = hc_now_ms() - t0;
    for (int i = 0; i < N; i++) {
        CHECK(libs[i] != NULL);
        if (libs[i]) CHECK_EQ_INT(call_get(libs[i]), 100 + i);
        hc_jit_close(libs[i]);
    }
    /* a failing source among good ones: error returned, the good ones still built */
    free(srcs[2]);
    srcs[2] = hc_xstrdup("this is not C;\n");
    CHECK_EQ_INT(hc_jit_build_many(N, (const char *const *)srcs, &opt, 0, libs, &err),
                 HC_ERR_COMPILE);
    CHECK(libs[2] == NULL && libs[0] && libs[4]);
    for (int i = 0; i < N; i++) hc_jit_close(libs[i]), free(srcs[i]);
    printf("build_many: %d sources in %.0f ms\n", N, ms);
}

typedef struct race_arg {
    const char *src;
    hc_jit_lib *lib;
    hc_status st;
} race_arg;

static void *race_main(void *p) {
    race_arg *r = p;
    hc_jit_options opt = {.cache_dir = cache};
    hc_error err;
    r->st = hc_jit_build(r->src, &opt, &r->lib, &err);
    return NULL;
}

static void test_threads(void) {
    char *src = source(314);
    race_arg r[2] = {{src, NULL, HC_OK}, {src, NULL, HC_OK}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, race_main, &r[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ_INT(r[i].st, HC_OK);
        if (r[i].lib) CHECK_EQ_INT(call_get(r[i].lib), 314);
        hc_jit_close(r[i].lib);
    }
    free(src);
}

/* Remove this run's cache (files and one level of subdirectories). */
static void remove_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) remove_tree(p);
        else unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

int main(void) {
    const char *base = getenv("HIDETC_CACHE_DIR");
    snprintf(cache, sizeof cache, "%s/jit-test-%ld", base && *base ? base : "/tmp",
             (long)getpid());
    test_cache_hit();
    test_compile_error();
    test_env();
    test_many();
    test_threads();
    remove_tree(cache);
    TEST_DONE();
}
