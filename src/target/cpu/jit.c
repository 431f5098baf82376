/* jit.c — compile generated C into cached shared objects and dlopen them.
 *
 * Every file in the cache is written under a temporary name unique to this process and
 * call, then renamed: rename is atomic, so concurrent builders (threads or processes)
 * of the same source race harmlessly and a reader never sees half a file. */
#include "target/cpu/jit.h"

#include "target/cpu/cpu.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct hc_jit_lib {
    void *handle;
    char *path;
    bool cached;
};

/* Keeps logs readable inside hc_error's 4 KiB message, leaving room for the header. */
#define LOG_EXCERPT 3000
#define MAX_ARGS 128

/* Added to every compile. Generated code never reads errno or floating-point exception
 * flags; without these, GCC does not vectorize loops calling sqrtf, floorf, rintf and
 * the like (it keeps the calls for their side effects). */
static const char *const fixed_flags[] = {"-std=gnu11", "-fno-math-errno", "-fno-trapping-math",
                                          "-fPIC", "-shared", "-fopenmp"};

static atomic_uint tmp_counter;

static const char *resolve_cc(const hc_jit_options *opt) {
    if (opt && opt->cc && *opt->cc) return opt->cc;
    const char *env = getenv("HIDETC_CC");
    return env && *env ? env : "cc";
}

static const char *resolve_cflags(const hc_jit_options *opt) {
    if (opt && opt->cflags) return opt->cflags;
    return hc_target_host()->cflags;
}

/* Split on spaces into argv (pointers into the copy `buf`); returns the count. */
static int split_words(char *buf, char **argv, int max) {
    int n = 0;
    for (char *p = buf; *p && n < max;) {
        while (*p == ' ' || *p == '\t') *p++ = '\0';
        if (!*p) break;
        argv[n++] = p;
        while (*p && *p != ' ' && *p != '\t') p++;
    }
    return n;
}

/* Start argv with stdout and stderr sent to out_path (or a pipe when out_fd_pipe). */
static int spawn(char **argv, const char *out_path, int pipe_fd, pid_t *pid) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (out_path) {
        posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
    } else {
        posix_spawn_file_actions_adddup2(&fa, pipe_fd, 1);
        posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    }
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    int rc = posix_spawnp(pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

static int wait_exit(pid_t pid) {
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

/* ---- compiler version, read once per compiler command ---------------------------- */
typedef struct cc_version {
    char *cc, *version;
} cc_version;
static pthread_mutex_t version_lock = PTHREAD_MUTEX_INITIALIZER;
static HC_VEC(cc_version) versions;

static char *run_version(const char *cc) {
    char *buf = hc_xstrdup(cc);
    char *argv[MAX_ARGS + 2];
    int n = split_words(buf, argv, MAX_ARGS);
    argv[n++] = "--version";
    argv[n] = NULL;
    int fds[2];
    char line[512] = "";
    if (n > 1 && pipe(fds) == 0) {
        pid_t pid;
        if (spawn(argv, NULL, fds[1], &pid) == 0) {
            close(fds[1]);
            FILE *f = fdopen(fds[0], "r");
            if (f) {
                if (!fgets(line, sizeof line, f)) line[0] = '\0';
                while (fgetc(f) != EOF) { /* drain so the child can exit */ }
                fclose(f);
            } else {
                close(fds[0]);
            }
            if (wait_exit(pid) != 0) line[0] = '\0';
        } else {
            close(fds[0]);
            close(fds[1]);
        }
    }
    free(buf);
    line[strcspn(line, "\n")] = '\0';
    return line[0] ? hc_xstrdup(line) : NULL;
}

/* The version string of cc (NULL if it cannot be run). */
static const char *compiler_version(const char *cc) {
    pthread_mutex_lock(&version_lock);
    const char *v = NULL;
    bool found = false;
    for (size_t i = 0; i < versions.len && !found; i++)
        if (!strcmp(versions.data[i].cc, cc)) v = versions.data[i].version, found = true;
    if (!found) {
        cc_version e = {hc_xstrdup(cc), run_version(cc)};
        hc_vec_push(&versions, e);
        v = e.version;
    }
    pthread_mutex_unlock(&version_lock);
    return v;
}

/* ---- one build ------------------------------------------------------------------- */
typedef struct job {
    const char *source;
    char key[33];
    char *src_path, *so_path, *log_path, *tmp_so, *tmp_log;
    pid_t pid;
    bool running;
    bool shared; /* makes a shared object (stamped), not an object file */
} job;

static char *path_with(const char *dir, const char *key, const char *suffix) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_sb_printf(&sb, "%s/%s%s", dir, key, suffix);
    return hc_sb_take(&sb);
}

static char *tmp_name(const char *base) {
    hc_sb sb;
    hc_sb_init(&sb);
    unsigned n = atomic_fetch_add(&tmp_counter, 1);
    hc_sb_printf(&sb, "%s.tmp.%ld.%u", base, (long)getpid(), n);
    return hc_sb_take(&sb);
}

static void job_free(job *j) {
    free(j->src_path), free(j->so_path), free(j->log_path), free(j->tmp_so), free(j->tmp_log);
}

/* object: the job makes an object file (cc -c) for hc_jit_build_parallel; its key differs
 * from the shared object's of the same source. */
static void job_init(job *j, const char *source, const char *dir, const char *cc,
                     const char *cflags, const char *version, bool object) {
    memset(j, 0, sizeof *j);
    j->source = source;
    hc_hasher h;
    hc_hash_init(&h);
    if (object) hc_hash_str(&h, "object file");
    hc_hash_str(&h, source);
    hc_hash_str(&h, cflags);
    for (size_t i = 0; i < HC_ARRAY_LEN(fixed_flags); i++) hc_hash_str(&h, fixed_flags[i]);
    hc_hash_str(&h, cc);
    hc_hash_str(&h, version);
    hc_hash_hex(&h, j->key);
    j->src_path = path_with(dir, j->key, ".c");
    j->so_path = path_with(dir, j->key, object ? ".o" : ".so");
    j->shared = !object;
    j->log_path = path_with(dir, j->key, ".log");
}

/* ---- cache entry stamps (jit.h) --------------------------------------------------- */
bool hc_jit_stamp_parse(const char *text, hc_jit_stamp *out) {
    unsigned long long size;
    char hash[33];
    int n = 0;
    if (sscanf(text, "hidetc-so 1\nsize %llu\nhash %32[0-9a-f]\n%n", &size, hash, &n) != 2 || !n ||
        strlen(hash) != 32 || text[n])
        return false;
    out->size = size;
    memcpy(out->hash, hash, 33);
    return true;
}

void hc_jit_stamp_format(const hc_jit_stamp *s, char *buf, size_t cap) {
    snprintf(buf, cap, "hidetc-so 1\nsize %llu\nhash %s\n", (unsigned long long)s->size, s->hash);
}

/* The stamp of the file's bytes; false when it cannot be read. */
static bool stamp_of_file(const char *path, hc_jit_stamp *out) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    hc_hasher h;
    hc_hash_init(&h);
    char buf[65536];
    uint64_t size = 0;
    ssize_t k;
    while ((k = read(fd, buf, sizeof buf)) != 0) {
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) break;
        hc_hash_update(&h, buf, (size_t)k);
        size += (uint64_t)k;
    }
    close(fd);
    if (k < 0) return false;
    out->size = size;
    hc_hash_hex(&h, out->hash);
    return true;
}

/* flock on X.so.lock (created); -1 when it cannot be had (then no lock: still safe for
 * readers, who check the stamp anyway). */
static int lock_entry(const char *so_path, int how) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_sb_printf(&sb, "%s.lock", so_path);
    int fd = open(hc_sb_str(&sb), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    hc_sb_free(&sb);
    if (fd >= 0)
        while (flock(fd, how) != 0)
            if (errno != EINTR) {
                close(fd);
                return -1;
            }
    return fd;
}

static void unlock_entry(int fd) {
    if (fd >= 0) close(fd); /* closing releases the flock */
}

static char *stamp_path(const char *so_path) {
    hc_sb sb;
    hc_sb_init(&sb);
    hc_sb_printf(&sb, "%s.stamp", so_path);
    return hc_sb_take(&sb);
}

/* Publish tmp_so as so_path with its stamp, under the entry's lock. */
static hc_status publish_so(const char *tmp_so, const char *so_path, hc_error *err) {
    hc_jit_stamp st;
    if (!stamp_of_file(tmp_so, &st)) {
        unlink(tmp_so);
        return hc_error_set(err, HC_ERR_IO, "cannot read %s: %s", tmp_so, strerror(errno));
    }
    char text[128];
    hc_jit_stamp_format(&st, text, sizeof text);
    char *sp = stamp_path(so_path), *tmp_stamp = tmp_name(sp);
    hc_status s = hc_write_file(tmp_stamp, text, strlen(text), err);
    int lk = lock_entry(so_path, LOCK_EX);
    if (s == HC_OK && rename(tmp_so, so_path) != 0)
        s = hc_error_set(err, HC_ERR_IO, "rename %s: %s", tmp_so, strerror(errno));
    if (s == HC_OK && rename(tmp_stamp, sp) != 0)
        s = hc_error_set(err, HC_ERR_IO, "rename %s: %s", tmp_stamp, strerror(errno));
    unlock_entry(lk);
    unlink(tmp_stamp), unlink(tmp_so); /* no-ops after the renames */
    free(sp), free(tmp_stamp);
    return s;
}

/* Open a cached entry if it matches its stamp (shared lock: no publisher in between).
 * A damaged entry is reported and removed, so the caller rebuilds it. */
static bool open_cached(const char *so_path, hc_jit_lib **out);

static hc_status open_lib(const char *path, bool cached, hc_jit_lib **out, hc_error *err) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) return hc_error_set(err, HC_ERR_COMPILE, "dlopen %s: %s", path, dlerror());
    /* The kernel may be what brought libgomp into the process (the linker drops it from
     * programs that call no omp_* function). Unloading it with the kernel would unmap
     * the code its idle worker threads are running: pin it. */
    dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    hc_jit_lib *lib = hc_xcalloc(1, sizeof *lib);
    lib->handle = h, lib->path = hc_xstrdup(path), lib->cached = cached;
    *out = lib;
    return HC_OK;
}

static bool open_cached(const char *so_path, hc_jit_lib **out) {
    if (access(so_path, F_OK) != 0) return false;
    int lk = lock_entry(so_path, LOCK_SH);
    char *sp = stamp_path(so_path), *text = NULL;
    hc_jit_stamp want, have;
    const char *why = NULL;
    if (hc_read_file(sp, &text, NULL, NULL) != HC_OK) why = "no stamp beside it";
    else if (!hc_jit_stamp_parse(text, &want)) why = "its stamp is damaged";
    else if (!stamp_of_file(so_path, &have)) why = "it cannot be read";
    else if (have.size != want.size) why = "its size differs from its stamp's";
    else if (strcmp(have.hash, want.hash)) why = "its bytes differ from its stamp's hash";
    bool ok = !why && open_lib(so_path, true, out, NULL) == HC_OK;
    if (!why && !ok) why = "dlopen refused it";
    if (ok) utimensat(AT_FDCWD, sp, NULL, 0); /* last use, for `hidetc cache prune` */
    unlock_entry(lk);
    if (why && access(so_path, F_OK) == 0) {
        /* a missing stamp is also what a cache written before stamps existed has: not
         * called damaged, rebuilt all the same (a crash between the two renames is the
         * other way to get one) */
        if (strcmp(why, "no stamp beside it"))
            fprintf(stderr, "hidetc: kernel cache: %s is damaged (%s): rebuilding it\n", so_path,
                    why);
        else
            fprintf(stderr, "hidetc: kernel cache: %s has no stamp (written by an older hidetc, "
                            "or cut short): rebuilding it\n", so_path);
        int ex = lock_entry(so_path, LOCK_EX);
        unlink(so_path), unlink(sp);
        unlock_entry(ex);
    }
    free(text), free(sp);
    return ok;
}

/* Write the source (atomically) and start the compiler. */
static hc_status job_start(job *j, const char *cc, const char *cflags, bool verbose,
                           bool object, hc_error *err) {
    char *tmp_src = tmp_name(j->src_path);
    hc_status st = hc_write_file(tmp_src, j->source, strlen(j->source), err);
    if (st == HC_OK && rename(tmp_src, j->src_path) != 0)
        st = hc_error_set(err, HC_ERR_IO, "rename %s: %s", tmp_src, strerror(errno));
    if (st != HC_OK) unlink(tmp_src);
    free(tmp_src);
    if (st != HC_OK) return st;

    j->tmp_so = tmp_name(j->so_path);
    j->tmp_log = tmp_name(j->log_path);
    size_t len = strlen(cc) + strlen(cflags) + 2;
    char *words = hc_xmalloc(len);
    snprintf(words, len, "%s %s", cc, cflags);
    char *argv[MAX_ARGS + 16];
    int n = split_words(words, argv, MAX_ARGS);
    for (size_t i = 0; i < HC_ARRAY_LEN(fixed_flags); i++)
        argv[n++] = object && !strcmp(fixed_flags[i], "-shared") ? "-c" : (char *)fixed_flags[i];
    const char *tail[] = {"-o", j->tmp_so, j->src_path};
    for (size_t i = 0; i < HC_ARRAY_LEN(tail); i++) argv[n++] = (char *)tail[i];
    argv[n] = NULL;
    if (verbose) {
        for (int i = 0; i < n; i++) fprintf(stderr, "%s%s", i ? " " : "", argv[i]);
        fputc('\n', stderr);
    }
    int rc = spawn(argv, j->tmp_log, -1, &j->pid);
    free(words);
    if (rc != 0)
        return hc_error_set(err, HC_ERR_COMPILE, "cannot run compiler '%s': %s (source kept in %s)",
                            cc, strerror(rc), j->src_path);
    j->running = true;
    return HC_OK;
}

static hc_status compile_error(job *j, int code, hc_error *err) {
    char *log = NULL;
    size_t size = 0;
    if (hc_read_file(j->log_path, &log, &size, NULL) != HC_OK) log = hc_xstrdup("(no output)");
    bool cut = size > LOG_EXCERPT;
    if (cut) log[LOG_EXCERPT] = '\0';
    hc_status st = hc_error_set(err, HC_ERR_COMPILE,
                                "compiling %s failed (exit %d):\n%s%s", j->src_path, code, log,
                                cut ? "\n[... compiler output truncated; full log in .log]" : "");
    free(log);
    return st;
}

/* Wait for the compiler and publish its log and output. */
static hc_status job_publish(job *j, hc_error *err) {
    int code = wait_exit(j->pid);
    j->running = false;
    rename(j->tmp_log, j->log_path);
    if (code != 0) {
        unlink(j->tmp_so);
        return compile_error(j, code, err);
    }
    if (j->shared) return publish_so(j->tmp_so, j->so_path, err);
    if (rename(j->tmp_so, j->so_path) != 0) {
        hc_status st = hc_error_set(err, HC_ERR_IO, "rename %s: %s", j->tmp_so, strerror(errno));
        unlink(j->tmp_so);
        return st;
    }
    return HC_OK;
}

/* Wait for the compiler, publish its log and object, and load the object. */
static hc_status job_finish(job *j, hc_jit_lib **out, hc_error *err) {
    hc_status st = job_publish(j, err);
    return st != HC_OK ? st : open_lib(j->so_path, false, out, err);
}

static void keep_first(hc_status *first, hc_status st, hc_error *err, const hc_error *local) {
    *first = st;
    if (err) *err = *local;
}

/* What every build needs first: the compiler's version (part of every key) and the cache
 * directory, created (*dir malloc'ed on success). */
static hc_status jit_prepare(const hc_jit_options *opt, const char *cc, const char **version,
                             char **dir, hc_error *err) {
    *version = compiler_version(cc);
    if (!*version)
        return hc_error_set(err, HC_ERR_COMPILE, "cannot run compiler '%s' (`%s --version` failed)",
                            cc, cc);
    *dir = hc_cache_dir(opt);
    hc_status st = hc_mkdirs(*dir, err);
    if (st != HC_OK) free(*dir), *dir = NULL;
    return st;
}

static int default_jobs(void) { return hc_target_host()->caps.num_cores; }

hc_status hc_jit_build_many(int n, const char *const *sources, const hc_jit_options *opt,
                            int jobs, hc_jit_lib **out, hc_error *err) {
    const char *cc = resolve_cc(opt), *cflags = resolve_cflags(opt), *version;
    bool verbose = opt && opt->verbose;
    for (int i = 0; i < n; i++) out[i] = NULL;
    char *dir;
    hc_status first = jit_prepare(opt, cc, &version, &dir, err);
    if (first != HC_OK) return first;
    if (jobs <= 0) jobs = default_jobs();
    job *js = hc_xcalloc((size_t)(n > 0 ? n : 1), sizeof *js);
    hc_error local;
    int next_wait = 0, running = 0;
    for (int i = 0; i <= n; i++) {
        /* Keep at most `jobs` compilers running; wait for the oldest (FIFO) so we only
         * ever reap our own children. At the end (i == n), drain all. */
        while (next_wait < i && (running >= jobs || i == n)) {
            job *w = &js[next_wait++];
            if (!w->running) continue;
            running--;
            hc_status st = job_finish(w, &out[w - js], &local);
            if (st != HC_OK && first == HC_OK) keep_first(&first, st, err, &local);
        }
        if (i == n) break;
        job *j = &js[i];
        job_init(j, sources[i], dir, cc, cflags, version, false);
        if (open_cached(j->so_path, &out[i])) continue;
        hc_status st = job_start(j, cc, cflags, verbose, false, &local);
        if (st != HC_OK && first == HC_OK) keep_first(&first, st, err, &local);
        if (st == HC_OK) running++;
    }
    for (int i = 0; i < n; i++) job_free(&js[i]);
    free(js);
    free(dir);
    return first;
}

hc_status hc_jit_build(const char *source, const hc_jit_options *opt, hc_jit_lib **out,
                       hc_error *err) {
    return hc_jit_build_many(1, &source, opt, 1, out, err);
}

/* ---- several sources, one shared object ------------------------------------------ */
/* Link the objects into so_path (tmp + rename); the log goes to log_path. */
static hc_status link_objects(int n, job *js, const char *cc, const char *cflags,
                              const char *so_path, const char *log_path, bool verbose,
                              hc_error *err) {
    size_t len = strlen(cc) + strlen(cflags) + 2;
    char *words = hc_xmalloc(len);
    snprintf(words, len, "%s %s", cc, cflags);
    char **argv = hc_xcalloc((size_t)n + MAX_ARGS + 16, sizeof *argv);
    int c = split_words(words, argv, MAX_ARGS);
    static const char *const link_flags[] = {"-fPIC", "-shared", "-fopenmp"};
    for (size_t i = 0; i < HC_ARRAY_LEN(link_flags); i++) argv[c++] = (char *)link_flags[i];
    char *tmp_so = tmp_name(so_path), *tmp_log = tmp_name(log_path);
    argv[c++] = "-o";
    argv[c++] = tmp_so;
    for (int i = 0; i < n; i++) argv[c++] = js[i].so_path;
    argv[c] = NULL;
    if (verbose) {
        for (int i = 0; i < c; i++) fprintf(stderr, "%s%s", i ? " " : "", argv[i]);
        fputc('\n', stderr);
    }
    pid_t pid;
    int rc = spawn(argv, tmp_log, -1, &pid);
    hc_status st = HC_OK;
    if (rc != 0) {
        st = hc_error_set(err, HC_ERR_COMPILE, "cannot run compiler '%s' to link %s: %s", cc,
                          so_path, strerror(rc));
    } else {
        int code = wait_exit(pid);
        rename(tmp_log, log_path);
        if (code != 0) {
            char *log = NULL;
            size_t size = 0;
            if (hc_read_file(log_path, &log, &size, NULL) != HC_OK) log = hc_xstrdup("(no output)");
            if (size > LOG_EXCERPT) log[LOG_EXCERPT] = '\0';
            st = hc_error_set(err, HC_ERR_COMPILE, "linking %d objects into %s failed (exit %d):\n%s",
                              n, so_path, code, log);
            free(log);
        } else {
            st = publish_so(tmp_so, so_path, err);
        }
    }
    unlink(tmp_so), unlink(tmp_log); /* no-ops after the renames */
    free(tmp_so), free(tmp_log), free(argv), free(words);
    return st;
}

hc_status hc_jit_build_parallel_progress(int n, const char *const *sources,
                                         const hc_jit_options *opt, int jobs,
                                         hc_jit_progress_fn progress, void *ctx,
                                         hc_jit_lib **out, hc_error *err) {
    *out = NULL;
    if (n < 1) return hc_error_set(err, HC_ERR_INVALID, "jit: no sources to build");
    const char *cc = resolve_cc(opt), *cflags = resolve_cflags(opt), *version;
    bool verbose = opt && opt->verbose;
    char *dir;
    hc_status first = jit_prepare(opt, cc, &version, &dir, err);
    if (first != HC_OK) return first;
    /* the library's key: every source, in order, and everything that shapes an object */
    hc_hasher h;
    hc_hash_init(&h);
    hc_hash_str(&h, "parallel shared object");
    char count[32];
    snprintf(count, sizeof count, "%d", n);
    hc_hash_str(&h, count);
    for (int i = 0; i < n; i++) hc_hash_str(&h, sources[i]);
    hc_hash_str(&h, cflags);
    for (size_t i = 0; i < HC_ARRAY_LEN(fixed_flags); i++) hc_hash_str(&h, fixed_flags[i]);
    hc_hash_str(&h, cc);
    hc_hash_str(&h, version);
    char key[33];
    hc_hash_hex(&h, key);
    char *so_path = path_with(dir, key, ".so"), *log_path = path_with(dir, key, ".log");
    if (open_cached(so_path, out)) {
        if (progress) progress(ctx, n, n);
        free(so_path), free(log_path), free(dir);
        return HC_OK;
    }
    if (jobs <= 0) jobs = default_jobs();
    job *js = hc_xcalloc((size_t)n, sizeof *js);
    hc_error local;
    int next_wait = 0, running = 0, done = 0;
    for (int i = 0; i <= n; i++) {
        while (next_wait < i && (running >= jobs || i == n)) { /* FIFO, as in build_many */
            job *w = &js[next_wait++];
            if (!w->running) continue;
            running--;
            hc_status st = job_publish(w, &local);
            if (st != HC_OK && first == HC_OK) keep_first(&first, st, err, &local);
            if (progress) progress(ctx, ++done, n);
        }
        if (i == n) break;
        job *j = &js[i];
        job_init(j, sources[i], dir, cc, cflags, version, true);
        if (access(j->so_path, F_OK) == 0) { /* the same source was compiled before */
            if (progress) progress(ctx, ++done, n);
            continue;
        }
        hc_status st = first == HC_OK ? job_start(j, cc, cflags, verbose, true, &local) : HC_OK;
        if (st != HC_OK && first == HC_OK) keep_first(&first, st, err, &local);
        if (st == HC_OK && j->running) running++;
    }
    if (first == HC_OK)
        first = link_objects(n, js, cc, cflags, so_path, log_path, verbose, err);
    if (first == HC_OK) first = open_lib(so_path, false, out, err);
    for (int i = 0; i < n; i++) job_free(&js[i]);
    free(js), free(so_path), free(log_path), free(dir);
    return first;
}

hc_status hc_jit_build_parallel(int n, const char *const *sources, const hc_jit_options *opt,
                                int jobs, hc_jit_lib **out, hc_error *err) {
    return hc_jit_build_parallel_progress(n, sources, opt, jobs, NULL, NULL, out, err);
}

void *hc_jit_symbol(hc_jit_lib *lib, const char *name) {
    return lib ? dlsym(lib->handle, name) : NULL;
}

const char *hc_jit_path(const hc_jit_lib *lib) { return lib->path; }
bool hc_jit_was_cached(const hc_jit_lib *lib) { return lib->cached; }

void hc_jit_close(hc_jit_lib *lib) {
    if (!lib) return;
    dlclose(lib->handle);
    free(lib->path);
    free(lib);
}
