/* builtin.h — models built through the C graph API with random weights and a fixed
 * seed: the embedded default of the README's demo (no download needed). */
#ifndef HC_BUILTIN_H
#define HC_BUILTIN_H

#include "graph/graph.h"

/* name: "resnet50", "bert", ... (without the "builtin:" prefix). Unknown names give an
 * error listing the known ones. */
hc_status hc_builtin_model(const char *name, hc_graph **out, hc_error *err);
/* NULL-terminated list of names. */
const char *const *hc_builtin_model_names(void);

#endif
