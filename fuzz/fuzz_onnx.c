/* fuzz_onnx.c — the ONNX import: protobuf-c decoding, the importer, shape inference and
 * the graph passes, fusion partitioning and scheduling (hc_model_compile with
 * schedule_only: no code is generated, compiled or loaded); for a model with symbolic
 * dimensions, symbolic shape inference (src/graph/ops/sym_infer.c). Any bytes give a graph or an
 * error with a message; so does its compile. External data resolves against a folder
 * that does not exist. */
#include "fuzz.h"

#include "frontend/onnx.h"
#include "graph/ops/rnn.h"
#include "passes/passes.h"
#include "runtime/runtime.h"

FUZZ_ENTRY(onnx) {
    if (size > 1 << 20) return 0;
    static bool once;
    if (!once) { /* tune records and the like go to a private cache, never ~/.cache */
        once = true;
        setenv("HIDETC_CACHE_DIR", "/nonexistent/hidetc-fuzz-cache", 0);
        setenv("HIDETC_NO_PROGRESS", "1", 1);
        /* unrolling is linear in the steps, but thousands of them under ASan outlast the
         * harness's timeout: the limits' own errors are what is fuzzed here */
        hc_rnn_max_steps = 64;
        hc_loop_max_iterations = 64;
    }
    hc_graph *g = NULL;
    hc_error err = {0};
    const char *name = "/nonexistent/fuzz/model.onnx";
    /* with symbols kept: a model that has some gets symbolic shape inference (what
     * `hidetc inspect` runs); one that has none is the static import, compiled below */
    hc_onnx_options so = {.symbolic = true};
    if (hc_onnx_load_memory_with(data, size, name, &so, &g, &err) != HC_OK) {
        FUZZ_CHECK_ERROR(err, name);
        return 0;
    }
    if (hc_graph_has_symbols(g)) {
        err = (hc_error){0};
        if (hc_pass_infer_shapes(g, &err) != HC_OK)
            FUZZ_CHECK(err.msg[0], "symbolic inference failed with no message");
        hc_graph_free(g);
        return 0;
    }
    hc_compile_options opt = {.schedule_only = true, .num_threads = 2,
                              .max_memory = (size_t)1 << 32};
    hc_model *m = NULL;
    err = (hc_error){0};
    if (hc_model_compile(g, &opt, &m, &err) != HC_OK) FUZZ_CHECK(err.msg[0], "compile failed with no message");
    hc_model_free(m);
    return 0;
}
