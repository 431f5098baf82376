/* fuzz_records.c — the tune-record parser (hc_tune_record_parse, src/tune/tune.c) and the
 * kernel cache's entry stamps (hc_jit_stamp_parse, src/target/cpu/jit.c): any text is a
 * consistent record or none; a record read writes back to text that reads the same. */
#include "fuzz.h"

#include "target/cpu/jit.h"
#include "tune/tune.h"

FUZZ_ENTRY(records) {
    if (size > 1 << 16) return 0;
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    hc_tune_record r;
    if (hc_tune_record_parse(text, &r)) {
        FUZZ_CHECK(r.ncand >= 1 && r.best >= 0 && r.best < r.ncand && r.best_ms >= 0,
                   "inconsistent record accepted");
        char again[256];
        snprintf(again, sizeof again, "hidetc-tune 1\nbest %d\nbest_ms %.17g\nncand %d\n", r.best,
                 r.best_ms, r.ncand);
        hc_tune_record s;
        FUZZ_CHECK(hc_tune_record_parse(again, &s) && s.best == r.best && s.ncand == r.ncand,
                   "record does not read back");
    }
    memcpy(text, data, size); /* the parse cut the lines */
    text[size] = '\0';
    hc_jit_stamp st;
    if (hc_jit_stamp_parse(text, &st)) {
        char again[256];
        hc_jit_stamp_format(&st, again, sizeof again);
        hc_jit_stamp s2;
        FUZZ_CHECK(hc_jit_stamp_parse(again, &s2) && s2.size == st.size &&
                   !strcmp(s2.hash, st.hash), "stamp does not read back");
    }
    free(text);
    return 0;
}
