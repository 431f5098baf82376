/* onnx_wire.c — a pre-check of protobuf wire data before protobuf-c decodes it.
 *
 * protobuf-c decodes nested messages recursively with no depth limit, so a small file of
 * deeply nested attribute graphs would overflow the stack. This walk follows only the
 * fields the schema says are messages, iteratively within a message, and refuses nesting
 * deeper than a real model has. Anything else that is wrong with the bytes is left to
 * protobuf-c, which reports it. */
#include "frontend/onnx_internal.h"

/* Models nest model > graph > node > attribute > graph > ... ; control flow several
 * levels deep stays far below this. */
#define HC_ONNX_MAX_DEPTH 100

static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    *v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return true;
    }
    return false;
}

bool hc_onnx_nesting_ok(const ProtobufCMessageDescriptor *desc, const uint8_t *p, size_t n,
                        int depth) {
    if (depth > HC_ONNX_MAX_DEPTH) return false;
    const uint8_t *end = p + n;
    while (p < end) {
        uint64_t tag, len;
        if (!read_varint(&p, end, &tag)) return true; /* malformed: protobuf-c says so */
        switch (tag & 7) {
        case PROTOBUF_C_WIRE_TYPE_VARINT:
            if (!read_varint(&p, end, &len)) return true;
            break;
        case PROTOBUF_C_WIRE_TYPE_64BIT:
            if ((size_t)(end - p) < 8) return true;
            p += 8;
            break;
        case PROTOBUF_C_WIRE_TYPE_32BIT:
            if ((size_t)(end - p) < 4) return true;
            p += 4;
            break;
        case PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED: {
            if (!read_varint(&p, end, &len) || len > (uint64_t)(end - p)) return true;
            const ProtobufCFieldDescriptor *f =
                tag >> 3 <= UINT32_MAX
                    ? protobuf_c_message_descriptor_get_field(desc, (unsigned)(tag >> 3))
                    : NULL;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
                !hc_onnx_nesting_ok(f->descriptor, p, (size_t)len, depth + 1))
                return false;
            p += len;
            break;
        }
        default: return true;
        }
    }
    return true;
}
