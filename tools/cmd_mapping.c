/* cmd_mapping.c — `hidetc mapping EXPR [--worker W] [--json] [--svg FILE]`: show which
 * tasks each worker of a task mapping executes, as text, JSON or an SVG picture. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ir/mapping.h"

#define USAGE "usage: hidetc mapping EXPR [--worker W] [--json] [--svg FILE]\n"
/* Larger grids would make an SVG nobody can open. */
#define SVG_MAX_TASKS (1 << 20)
/* worker2task materialises a worker's list; refuse lists that would not fit in memory */
#define LIST_MAX_TASKS (1 << 26)

typedef struct opts {
    const char *expr, *svg, *worker_arg;
    int64_t worker; /* -1: all; -2: negative */
    bool json;
} opts;

/* Returns 0 on success, 2 on bad usage (message printed), -1 after --help. */
static int parse_args(int argc, char **argv, opts *o) {
    *o = (opts){.worker = -1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "--worker") || !strcmp(a, "--svg")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "hidetc mapping: %s needs a value\n" USAGE, a);
                return 2;
            }
            const char *v = argv[++i];
            if (a[2] == 's') {
                o->svg = v;
                continue;
            }
            char *end;
            errno = 0;
            long long w = strtoll(v, &end, 10);
            if (!*v || *end || errno) {
                fprintf(stderr, "hidetc mapping: --worker: '%s' is not an integer\n" USAGE, v);
                return 2;
            }
            o->worker = w < 0 ? -2 : w; /* negative: reported as out of range later */
            o->worker_arg = v;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf(USAGE);
            return -1;
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "hidetc mapping: unknown option '%s'\n" USAGE, a);
            return 2;
        } else if (o->expr) {
            fprintf(stderr, "hidetc mapping: more than one EXPR ('%s', '%s')\n" USAGE, o->expr, a);
            return 2;
        } else {
            o->expr = a;
        }
    }
    if (!o->expr) {
        fprintf(stderr, "hidetc mapping: missing EXPR\n" USAGE);
        return 2;
    }
    return 0;
}

static void print_shape(FILE *f, int d, const int64_t *s) {
    for (int k = 0; k < d; k++) fprintf(f, "%s%lld", k ? ", " : "", (long long)s[k]);
}

static void print_text(const hc_mapping *m, int64_t w0, int64_t w1) {
    int d = m->ndim;
    int64_t shape[HC_MAX_DIMS];
    hc_map_task_shape(m, shape);
    printf("num_workers: %lld\ntask_shape: [", (long long)hc_map_num_workers(m));
    print_shape(stdout, d, shape);
    printf("]\n");
    for (int64_t w = w0; w < w1; w++) {
        int64_t *t;
        int64_t n = hc_map_worker2task(m, w, &t);
        printf("worker %lld:", (long long)w);
        for (int64_t i = 0; i < n; i++) {
            printf(" (");
            for (int k = 0; k < d; k++) printf("%s%lld", k ? "," : "", (long long)t[i * d + k]);
            printf(")");
        }
        printf("\n");
        free(t);
    }
}

static void print_json(const hc_mapping *m, int64_t w0, int64_t w1) {
    int d = m->ndim;
    int64_t shape[HC_MAX_DIMS];
    hc_map_task_shape(m, shape);
    printf("{\"num_workers\": %lld, \"task_shape\": [", (long long)hc_map_num_workers(m));
    print_shape(stdout, d, shape);
    printf("], \"workers\": {");
    for (int64_t w = w0; w < w1; w++) {
        int64_t *t;
        int64_t n = hc_map_worker2task(m, w, &t);
        printf("%s\"%lld\": [", w > w0 ? ", " : "", (long long)w);
        for (int64_t i = 0; i < n; i++) {
            printf("%s[", i ? ", " : "");
            print_shape(stdout, d, t + i * d);
            printf("]");
        }
        printf("]");
        free(t);
    }
    printf("}}\n");
}

/* ---- SVG ---------------------------------------------------------------------------- */
/* Hues step by the golden angle so that neighbouring worker ids get far-apart colours;
 * lightness alternates in three bands to separate workers whose hues come close. */
static void worker_colour(int64_t w, char *out, size_t n) {
    double hue = fmod((double)w * 137.50776, 360.0);
    int light = 62 + 10 * (int)(w % 3);
    snprintf(out, n, "hsl(%.1f,70%%,%d%%)", hue, light);
}

typedef struct grid {
    int64_t rows, cols;
    int64_t *owner, *order; /* per cell, row-major */
} grid;

/* Leading dimensions are flattened into rows; the last dimension gives the columns. */
static bool grid_fill(const hc_mapping *m, grid *g) {
    int d = m->ndim;
    int64_t shape[HC_MAX_DIMS];
    hc_map_task_shape(m, shape);
    g->cols = shape[d - 1];
    g->rows = 1;
    for (int k = 0; k + 1 < d; k++)
        if (__builtin_mul_overflow(g->rows, shape[k], &g->rows)) return false;
    int64_t cells;
    if (__builtin_mul_overflow(g->rows, g->cols, &cells) || cells > SVG_MAX_TASKS) return false;
    g->owner = hc_xcalloc((size_t)cells, sizeof(int64_t));
    g->order = hc_xcalloc((size_t)cells, sizeof(int64_t));
    for (int64_t w = 0; w < hc_map_num_workers(m); w++) {
        int64_t *t;
        int64_t n = hc_map_worker2task(m, w, &t);
        for (int64_t i = 0; i < n; i++) {
            int64_t flat = 0;
            for (int k = 0; k < d; k++) flat = flat * shape[k] + t[i * d + k];
            g->owner[flat] = w, g->order[flat] = i;
        }
        free(t);
    }
    return true;
}

/* Cells are 32 px up to 64 per side; larger grids shrink to keep ~2000 px. */
static double cell_size(const grid *g) {
    int64_t side = HC_MAX(g->rows, g->cols);
    double c = side <= 64 ? 32.0 : 2048.0 / (double)side;
    return c < 1.0 ? 1.0 : c;
}

static void svg_cell(hc_sb *sb, const grid *g, int64_t r, int64_t c, double cs, double x0,
                     double y0) {
    int64_t i = r * g->cols + c, w = g->owner[i];
    char colour[48];
    worker_colour(w, colour, sizeof colour);
    double x = x0 + (double)c * cs, y = y0 + (double)r * cs;
    hc_sb_printf(sb, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"",
                 x, y, cs, cs, colour);
    if (cs >= 6) hc_sb_puts(sb, " stroke=\"#ffffff\" stroke-width=\"0.5\"");
    hc_sb_printf(sb, "><title>task (%lld,%lld) worker %lld order %lld</title></rect>\n",
                 (long long)r, (long long)c, (long long)w, (long long)g->order[i]);
    if (cs < 14) return; /* too small to read: colour and tooltip only */
    char label[24];
    int len = snprintf(label, sizeof label, "%lld", (long long)w);
    double fs = HC_MIN(cs * 0.42, cs * 1.5 / (len > 2 ? len : 2));
    hc_sb_printf(sb, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%.1f\" class=\"w\">%s</text>\n",
                 x + cs / 2, y + cs * 0.55, fs, label);
    if (cs >= 24)
        hc_sb_printf(sb, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%.1f\" class=\"o\">%lld</text>\n",
                     x + cs - 2, y + cs - 2, cs * 0.24, (long long)g->order[i]);
}

static void svg_axes(hc_sb *sb, const grid *g, double cs, double x0, double y0) {
    /* leave room for the widest label (about 7 px per digit at 11 px) */
    int digits = snprintf(NULL, 0, "%lld", (long long)HC_MAX(g->rows, g->cols));
    int64_t step = (int64_t)ceil((7.0 * digits + 6.0) / cs);
    double fs = 11;
    for (int64_t c = 0; c < g->cols; c += step)
        hc_sb_printf(sb, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%.0f\" class=\"a\">%lld</text>\n",
                     x0 + ((double)c + 0.5) * cs, y0 - 4, fs, (long long)c);
    for (int64_t r = 0; r < g->rows; r += step)
        hc_sb_printf(sb, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%.0f\" class=\"r\">%lld</text>\n",
                     x0 - 4, y0 + ((double)r + 0.5) * cs + 4, fs, (long long)r);
}

/* Title line: the expression as given, the worker count and the task shape. */
static char *svg_title(const char *expr, const hc_mapping *m) {
    int64_t shape[HC_MAX_DIMS];
    hc_map_task_shape(m, shape);
    hc_sb sb;
    hc_sb_init(&sb);
    for (const char *p = expr; *p; p++) { /* escape markup characters */
        if (*p == '<') hc_sb_puts(&sb, "&lt;");
        else if (*p == '>') hc_sb_puts(&sb, "&gt;");
        else if (*p == '&') hc_sb_puts(&sb, "&amp;");
        else hc_sb_putc(&sb, *p);
    }
    hc_sb_printf(&sb, " : %lld workers, task shape [", (long long)hc_map_num_workers(m));
    for (int k = 0; k < m->ndim; k++)
        hc_sb_printf(&sb, "%s%lld", k ? ", " : "", (long long)shape[k]);
    hc_sb_putc(&sb, ']');
    return hc_sb_take(&sb);
}

static char *svg_render(const char *expr, const hc_mapping *m, const grid *g) {
    double cs = cell_size(g), x0 = 40, y0 = 56;
    char *title = svg_title(expr, m);
    double width = x0 + (double)g->cols * cs + 16, height = y0 + (double)g->rows * cs + 16;
    width = HC_MAX(width, HC_MAX(8.5 * (double)strlen(title) + 16, 440));
    hc_sb sb;
    hc_sb_init(&sb);
    hc_sb_printf(&sb, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                      "viewBox=\"0 0 %.0f %.0f\">\n", width, height, width, height);
    hc_sb_puts(&sb, "<style>text{font-family:sans-serif;fill:#111}"
                    ".w{text-anchor:middle;dominant-baseline:middle;font-weight:bold}"
                    ".o{text-anchor:end;fill:#333}.a{text-anchor:middle;fill:#555}"
                    ".r{text-anchor:end;fill:#555}</style>\n");
    hc_sb_puts(&sb, "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n");
    hc_sb_printf(&sb, "<text x=\"8\" y=\"18\" font-size=\"14\">%s</text>\n", title);
    hc_sb_printf(&sb, "<text x=\"8\" y=\"34\" font-size=\"11\" fill=\"#555\">cell: worker id "
                      "(bold), order within the worker (corner)%s</text>\n",
                 m->ndim > 2 ? "; rows: leading dimensions flattened" : "");
    free(title);
    svg_axes(&sb, g, cs, x0, y0);
    for (int64_t r = 0; r < g->rows; r++)
        for (int64_t c = 0; c < g->cols; c++) svg_cell(&sb, g, r, c, cs, x0, y0);
    hc_sb_puts(&sb, "</svg>\n");
    return hc_sb_take(&sb);
}

static int write_svg(const char *path, const char *expr, const hc_mapping *m) {
    grid g = {0};
    if (!grid_fill(m, &g)) {
        fprintf(stderr, "hidetc mapping: task grid too large to draw (limit %d tasks)\n",
                SVG_MAX_TASKS);
        return 1;
    }
    char *svg = svg_render(expr, m, &g);
    hc_error err;
    hc_status st = hc_write_file(path, svg, strlen(svg), &err);
    free(svg);
    free(g.owner);
    free(g.order);
    if (st != HC_OK) {
        fprintf(stderr, "hidetc mapping: %s\n", err.msg);
        return 1;
    }
    return 0;
}

/* Every worker of a mapping executes the same number of tasks: size / num_workers. */
static bool tasks_listable(const hc_mapping *m) {
    int64_t shape[HC_MAX_DIMS], per_worker = 1, nw = hc_map_num_workers(m);
    hc_map_task_shape(m, shape);
    for (int k = 0; k < m->ndim; k++) {
        int64_t g = hc_gcd(nw, shape[k]); /* divide out workers first to avoid overflow */
        nw /= g;
        if (__builtin_mul_overflow(per_worker, shape[k] / g, &per_worker)) return false;
    }
    return per_worker <= LIST_MAX_TASKS;
}

int cmd_mapping(int argc, char **argv) {
    opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    hc_arena arena;
    hc_arena_init(&arena);
    hc_error err;
    const hc_mapping *m = hc_map_parse(&arena, o.expr, &err);
    if (!m) {
        fprintf(stderr, "hidetc mapping: %s\n", err.msg);
        hc_arena_free(&arena);
        return 1;
    }
    int64_t nw = hc_map_num_workers(m), w0 = 0, w1 = nw;
    if (o.worker != -1) {
        if (o.worker < 0 || o.worker >= nw) {
            fprintf(stderr, "hidetc mapping: worker %s out of range [0, %lld)\n",
                    o.worker_arg, (long long)nw);
            hc_arena_free(&arena);
            return 1;
        }
        w0 = o.worker, w1 = o.worker + 1;
    }
    if (!tasks_listable(m)) {
        fprintf(stderr, "hidetc mapping: more than %d tasks per worker, too many to list\n",
                LIST_MAX_TASKS);
        hc_arena_free(&arena);
        return 1;
    }
    if (o.svg) rc = write_svg(o.svg, o.expr, m);
    if (rc == 0) {
        if (o.json) print_json(m, w0, w1);
        else print_text(m, w0, w1);
    }
    hc_arena_free(&arena);
    return rc;
}
