/* cmd_cache.c — hidetc cache info|clear|prune --max-size BYTES [--cache-dir DIR]: see and
 * bound the kernel cache (docs/reliability.md, "The kernel cache").
 *
 * An entry is what one key owns: in the cache folder, the files named KEY.* (source, log,
 * shared object and its stamp and lock, object file, temporaries of a build in flight);
 * under tune/, one record; under gpu/, one file. An entry's last use is the newest
 * modification time of its files (loading a shared object touches its stamp). Only files
 * of those names are counted or removed: a cache folder pointed at the wrong place loses
 * nothing else. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "core/core.h"
#include "target/target.h"

enum kind { K_SO, K_OBJ, K_SRC, K_TUNE, K_GPU, K_COUNT };
static const char *const kind_names[K_COUNT] = {
    "shared objects (.so, stamps)", "object files (.o)", "sources and logs (.c, .log)",
    "tune records (tune/)", "gpu binaries (gpu/)"};

typedef struct file {
    char *path;
    off_t bytes;
    enum kind kind;
} file;

typedef struct entry {
    char key[48];
    HC_VEC(file) files;
    off_t bytes;
    time_t last_use;
} entry;

typedef HC_VEC(entry) entry_vec;

static bool is_key(const char *name) {
    for (int i = 0; i < 32; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return false;
    return name[32] == '.';
}

static enum kind kind_of(const char *name) {
    const char *dot = strchr(name, '.');
    if (!strncmp(dot, ".so", 3)) return K_SO;
    if (!strncmp(dot, ".o", 2)) return K_OBJ;
    return K_SRC;
}

static entry *entry_for(entry_vec *v, const char *key) {
    for (size_t i = v->len; i-- > 0;) /* files of one key are listed together, mostly */
        if (!strcmp(v->data[i].key, key)) return &v->data[i];
    entry e = {0};
    snprintf(e.key, sizeof e.key, "%s", key);
    hc_vec_push(v, e);
    return &v->data[v->len - 1];
}

static void add_file(entry *e, const char *path, const struct stat *st, enum kind k) {
    file f = {hc_xstrdup(path), st->st_size, k};
    hc_vec_push(&e->files, f);
    e->bytes += st->st_size;
    if (st->st_mtime > e->last_use) e->last_use = st->st_mtime;
}

static entry_vec *walk_into;
static const char *walk_root;
static int walk_gpu(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)ftw;
    if (type == FTW_F) add_file(entry_for(walk_into, path + strlen(walk_root)), path, st, K_GPU);
    return 0;
}

static void scan(const char *dir, entry_vec *out) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    char path[8192];
    while ((de = readdir(d))) {
        if (!is_key(de->d_name)) continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        struct stat st;
        if (lstat(path, &st) || !S_ISREG(st.st_mode)) continue;
        char key[33];
        memcpy(key, de->d_name, 32), key[32] = '\0';
        add_file(entry_for(out, key), path, &st, kind_of(de->d_name));
    }
    closedir(d);
    snprintf(path, sizeof path, "%s/tune", dir);
    if ((d = opendir(path))) {
        while ((de = readdir(d))) {
            if (de->d_name[0] == '.') continue;
            char p[8192 + 256];
            snprintf(p, sizeof p, "%s/%s", path, de->d_name);
            struct stat st;
            if (lstat(p, &st) || !S_ISREG(st.st_mode)) continue;
            char key[48];
            snprintf(key, sizeof key, "tune/%.40s", de->d_name);
            add_file(entry_for(out, key), p, &st, K_TUNE);
        }
        closedir(d);
    }
    snprintf(path, sizeof path, "%s/gpu", dir);
    walk_into = out, walk_root = dir;
    nftw(path, walk_gpu, 16, FTW_PHYS);
}

static void free_entries(entry_vec *v) {
    for (size_t i = 0; i < v->len; i++) {
        for (size_t j = 0; j < v->data[i].files.len; j++) free(v->data[i].files.data[j].path);
        hc_vec_free(&v->data[i].files);
    }
    hc_vec_free(v);
}

/* Remove an entry's files; its shared object under its lock, so that no process is
 * between checking and loading it (jit.c). */
static off_t remove_entry(const char *dir, entry *e) {
    int lk = -1;
    if (strlen(e->key) == 32) { /* a kernel entry (not tune/ or gpu/) */
        char lock[8192];
        snprintf(lock, sizeof lock, "%s/%s.so.lock", dir, e->key);
        lk = open(lock, O_RDWR | O_CLOEXEC);
        if (lk >= 0) flock(lk, LOCK_EX);
    }
    off_t freed = 0;
    for (size_t j = 0; j < e->files.len; j++)
        if (unlink(e->files.data[j].path) == 0 || errno == ENOENT) freed += e->files.data[j].bytes;
    if (lk >= 0) close(lk);
    return freed;
}

static int cmp_last_use(const void *x, const void *y) {
    const entry *a = x, *b = y;
    return (a->last_use > b->last_use) - (a->last_use < b->last_use);
}

static int usage(void) {
    fprintf(stderr, "usage: hidetc cache info|clear|prune --max-size BYTES [--cache-dir DIR]\n"
                    "  the kernel cache: HIDETC_CACHE_DIR, default ~/.cache/hidetc\n");
    return 2;
}

static bool parse_size(const char *s, off_t *out) {
    char *end = NULL;
    errno = 0;
    unsigned long long v = s && *s && *s != '-' ? strtoull(s, &end, 10) : 0;
    int shift = 0;
    if (end && *end && !end[1] && strchr("KMGT", *end))
        shift = 10 * (int)(strchr("KMGT", *end) - "KMGT" + 1), end++;
    if (!end || end == s || *end || errno || v > ((unsigned long long)INT64_MAX >> shift))
        return false;
    *out = (off_t)(v << shift);
    return true;
}

int cmd_cache(int argc, char **argv) {
    if (argc < 2) return usage();
    const char *what = argv[1];
    const char *dir_opt = NULL;
    off_t max = -1;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--cache-dir") && i + 1 < argc) dir_opt = argv[++i];
        else if (!strcmp(argv[i], "--max-size") && i + 1 < argc) {
            if (!parse_size(argv[++i], &max)) {
                fprintf(stderr, "hidetc cache: --max-size expects a number of bytes (a K, M, G "
                                "or T suffix for 1024s), got '%s'\n", argv[i]);
                return 2;
            }
        } else return usage();
    }
    bool info = !strcmp(what, "info"), clear = !strcmp(what, "clear"),
         prune = !strcmp(what, "prune");
    if (!info && !clear && !prune) return usage();
    if (prune != (max >= 0)) {
        fprintf(stderr, "hidetc cache: %s\n", prune ? "prune needs --max-size BYTES"
                                                    : "--max-size goes with prune");
        return 2;
    }
    hc_jit_options jo = {.cache_dir = dir_opt};
    char *dir = hc_cache_dir(&jo);
    entry_vec v = {0};
    scan(dir, &v);
    off_t total = 0;
    for (size_t i = 0; i < v.len; i++) total += v.data[i].bytes;
    int rc = 0;
    if (info) {
        long long count[K_COUNT] = {0}, bytes[K_COUNT] = {0};
        for (size_t i = 0; i < v.len; i++)
            for (size_t j = 0; j < v.data[i].files.len; j++) {
                const file *f = &v.data[i].files.data[j];
                count[f->kind]++, bytes[f->kind] += f->bytes;
            }
        printf("cache: %s\n", dir);
        printf("entries: %zu, %lld bytes\n", v.len, (long long)total);
        for (int k = 0; k < K_COUNT; k++)
            printf("  %-30s %6lld files %14lld bytes\n", kind_names[k], count[k], bytes[k]);
    } else {
        qsort(v.data, v.len, sizeof *v.data, cmp_last_use); /* least recently used first */
        size_t removed = 0;
        off_t freed = 0;
        for (size_t i = 0; i < v.len && (clear || total - freed > max); i++) {
            freed += remove_entry(dir, &v.data[i]);
            removed++;
        }
        printf("%s: removed %zu of %zu entries, %lld bytes; %lld bytes left\n", dir, removed,
               v.len, (long long)freed, (long long)(total - freed));
    }
    free_entries(&v);
    free(dir);
    return rc;
}
