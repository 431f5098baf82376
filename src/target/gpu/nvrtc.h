/* nvrtc.h — NVRTC internals shared by nvrtc.c (hc_nvrtc_compile) and cuda_api.c (cubins
 * for the device's own architecture). */
#ifndef HC_TARGET_GPU_NVRTC_H
#define HC_TARGET_GPU_NVRTC_H

#include "target/gpu/gpu.h"

typedef enum hc_nvrtc_output { HC_NVRTC_PTX, HC_NVRTC_CUBIN } hc_nvrtc_output;

/* Compiles CUDA C for arch "sm_XY": PTX for the virtual arch compute_XY, or a cubin for the
 * real arch sm_XY. *out is malloc'ed, *size its bytes (PTX: NUL-terminated, the NUL not
 * counted). `src_path`, when not NULL, names the file the caller keeps the source in: its
 * base name is the program name in NVRTC's log, the path is quoted in the error.
 * Errors: HC_ERR_UNSUPPORTED (no libnvrtc), HC_ERR_COMPILE (with NVRTC's log). */
hc_status hc_nvrtc_build(const char *src, const char *arch, hc_nvrtc_output kind,
                         const char *src_path, char **out, size_t *size, hc_error *err);

#endif
