/* session_example.c — load a model into a hidetc session, run it once on deterministic
 * inputs, print its outputs and a checksum (docs/install.md).
 *
 *     session_example [MODEL]     MODEL: an ONNX file, builtin:NAME or a compiled-model
 *                                 file; default builtin:bert-tiny
 *
 * Built against an installed hidetc, with CMake (examples/CMakeLists.txt:
 * find_package(hidetc)) or with pkg-config:
 *
 *     cc session_example.c -o session_example $(pkg-config --cflags --libs hidetc)
 *     cc session_example.c -o session_example_static $(pkg-config --cflags hidetc) \
 *        $(pkg-config --static --libs hidetc | sed 's/-lhidetc\b/-l:libhidetc.a/')
 *
 * (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig for a prefix pkg-config does not search, and
 * LD_LIBRARY_PATH=PREFIX/lib to run the shared one from there.) */
#include <hidetc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *dtype_name(hidetc_dtype t) {
    switch (t) {
    case HIDETC_BOOL: return "bool";
    case HIDETC_I8: return "i8";
    case HIDETC_I16: return "i16";
    case HIDETC_I32: return "i32";
    case HIDETC_I64: return "i64";
    case HIDETC_U8: return "u8";
    case HIDETC_U16: return "u16";
    case HIDETC_U32: return "u32";
    case HIDETC_U64: return "u64";
    case HIDETC_F16: return "f16";
    case HIDETC_BF16: return "bf16";
    case HIDETC_F32: return "f32";
    case HIDETC_F64: return "f64";
    }
    return "?";
}

static void print_info(const char *kind, int i, const hidetc_value_info *v) {
    printf("%s %d: %s %s [", kind, i, v->name, dtype_name(v->dtype));
    for (int d = 0; d < v->ndim; d++) {
        if (v->dim_names[d]) printf("%s%s=%lld", d ? ", " : "", v->dim_names[d], (long long)v->dims[d]);
        else printf("%s%lld", d ? ", " : "", (long long)v->dims[d]);
    }
    printf("]\n");
}

static int64_t numel(const hidetc_value_info *v) {
    int64_t n = 1;
    for (int d = 0; d < v->ndim; d++) n *= v->dims[d];
    return n;
}

/* Deterministic values: floats in [-1, 1), small ids 0..9 for integers (1 for a mask). */
static int fill(hidetc_tensor *t, const hidetc_value_info *v) {
    int64_t n = numel(v);
    void *p = hidetc_tensor_data(t);
    int mask = strstr(v->name, "mask") != NULL;
    for (int64_t i = 0; i < n; i++) {
        int64_t id = mask ? 1 : i % 10;
        double x = (double)((i * 37) % 200) / 100.0 - 1.0;
        switch (v->dtype) {
        case HIDETC_F32: ((float *)p)[i] = (float)x; break;
        case HIDETC_F64: ((double *)p)[i] = x; break;
        case HIDETC_I64: ((int64_t *)p)[i] = id; break;
        case HIDETC_I32: ((int32_t *)p)[i] = (int32_t)id; break;
        case HIDETC_U8:
        case HIDETC_I8: ((uint8_t *)p)[i] = (uint8_t)id; break;
        case HIDETC_BOOL: ((uint8_t *)p)[i] = (uint8_t)(mask || i % 2); break;
        default:
            fprintf(stderr, "input %s: dtype %s not handled by this example\n", v->name,
                    dtype_name(v->dtype));
            return -1;
        }
    }
    return 0;
}

/* Element i of an output as a double (0 for dtypes the example does not read). */
static double value_at(const hidetc_tensor *t, int64_t i) {
    const void *p = hidetc_tensor_data(t);
    switch (hidetc_tensor_dtype(t)) {
    case HIDETC_F32: return ((const float *)p)[i];
    case HIDETC_F64: return ((const double *)p)[i];
    case HIDETC_I64: return (double)((const int64_t *)p)[i];
    case HIDETC_I32: return ((const int32_t *)p)[i];
    case HIDETC_BOOL:
    case HIDETC_U8: return ((const uint8_t *)p)[i];
    case HIDETC_I8: return ((const int8_t *)p)[i];
    default: return 0;
    }
}

int main(int argc, char **argv) {
    const char *model = argc > 1 ? argv[1] : "builtin:bert-tiny";
    int rc = 1;
    hidetc_session *s = NULL;
    hidetc_tensor **inputs = NULL, **outputs = NULL;
    int nin = 0, nout = 0;

    printf("hidetc %s (ABI %d)\n", hidetc_version(), hidetc_abi_version());
    hidetc_session_options o;
    hidetc_session_options_init(&o); /* defaults: all cores, this CPU, the default cache */
    if (hidetc_session_create(&s, model, &o) != HIDETC_OK) {
        fprintf(stderr, "session_example: %s: %s\n", model, hidetc_last_error());
        return 1;
    }
    printf("model %s on %s\n", model, hidetc_session_target(s));

    nin = hidetc_session_num_inputs(s);
    nout = hidetc_session_num_outputs(s);
    inputs = calloc(nin > 0 ? nin : 1, sizeof *inputs);
    outputs = calloc(nout > 0 ? nout : 1, sizeof *outputs); /* NULL: the library allocates */
    if (!inputs || !outputs) {
        fprintf(stderr, "session_example: out of memory\n");
        goto done;
    }
    for (int i = 0; i < nin; i++) {
        hidetc_value_info v;
        if (hidetc_session_input_info(s, i, &v) != HIDETC_OK) goto fail;
        print_info("input", i, &v);
        if (hidetc_tensor_alloc(&inputs[i], v.dtype, v.ndim, v.dims) != HIDETC_OK) goto fail;
        if (fill(inputs[i], &v) != 0) goto done;
    }
    for (int j = 0; j < nout; j++) {
        hidetc_value_info v;
        if (hidetc_session_output_info(s, j, &v) != HIDETC_OK) goto fail;
        print_info("output", j, &v);
    }

    /* inputs in the session's order (names NULL), every output (0, NULL) */
    if (hidetc_session_run(s, nin, NULL, inputs, 0, NULL, outputs) != HIDETC_OK) goto fail;

    double checksum = 0;
    for (int j = 0; j < nout; j++) {
        hidetc_value_info v;
        if (hidetc_session_output_info(s, j, &v) != HIDETC_OK) goto fail;
        int64_t dims[HIDETC_MAX_DIMS], n = 1;
        int ndim = hidetc_tensor_dims(outputs[j], dims);
        for (int d = 0; d < ndim; d++) n *= dims[d];
        double sum = 0;
        for (int64_t i = 0; i < n; i++) sum += value_at(outputs[j], i);
        checksum += sum;
        printf("%s:", v.name);
        for (int64_t i = 0; i < n && i < 6; i++) printf(" %.6g", value_at(outputs[j], i));
        printf("%s (%lld values, sum %.9g)\n", n > 6 ? " ..." : "", (long long)n, sum);
    }
    printf("checksum %.9g\n", checksum);
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "session_example: %s\n", hidetc_last_error());
done:
    for (int i = 0; inputs && i < nin; i++)
        if (inputs[i]) hidetc_tensor_free(inputs[i]);
    for (int j = 0; outputs && j < nout; j++)
        if (outputs[j]) hidetc_tensor_free(outputs[j]);
    free(inputs);
    free(outputs);
    hidetc_session_free(s);
    return rc;
}
