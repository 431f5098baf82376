#!/bin/bash
# cli_target.sh HIDETC SOURCE_DIR — checks --target and --dump-ir (docs/targets.md): a
# named ISA compiles the same programs as HIDETC_ISA, an ISA above the CPU's is refused by
# the commands that run and still emitted by inspect/kernel, bad names are usage errors,
# and every stage dump prints every program.
set -u
HIDETC=$1
SRC=${2:-$(dirname "$0")/..}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
M=builtin:resnet18-tiny
host=$(grep -q avx512f /proc/cpuinfo && echo avx512 || echo avx2)

# --target cpu:ISA gives the outputs HIDETC_ISA=ISA gives (the same programs, bit for bit)
for isa in avx2 scalar; do
    "$HIDETC" run "$M" --target cpu:$isa --output-dir "$TMP/t_$isa" >/dev/null 2>&1 ||
        fail "run --target cpu:$isa failed"
    HIDETC_ISA=$isa "$HIDETC" run "$M" --output-dir "$TMP/e_$isa" >/dev/null 2>&1 ||
        fail "run under HIDETC_ISA=$isa failed"
    for f in "$TMP/e_$isa"/*.npy; do
        cmp -s "$f" "$TMP/t_$isa/$(basename "$f")" ||
            fail "--target cpu:$isa and HIDETC_ISA=$isa differ in $(basename "$f")"
    done
    ls "$TMP/e_$isa"/*.npy >/dev/null 2>&1 || fail "no outputs written for $isa"
done

# bad names: usage errors naming the known targets
out=$("$HIDETC" run "$M" --target cpu:sse9 2>&1)
[ $? -eq 2 ] || fail "--target cpu:sse9: expected usage error (2)"
echo "$out" | grep -q "known targets: cpu, cpu:avx512, cpu:avx2, cpu:scalar" ||
    fail "--target cpu:sse9: message does not list the targets: $out"
"$HIDETC" run "$M" --target tpu >/dev/null 2>&1
[ $? -eq 2 ] || fail "--target tpu: expected usage error (2)"
"$HIDETC" run "$M" --dump-ir nowhere >/dev/null 2>&1
[ $? -eq 2 ] || fail "--dump-ir nowhere: expected usage error (2)"

# AVX-512 code is emitted on any host; on a host without it, running it is refused
src=$("$HIDETC" inspect "$M" --target cpu:avx512 --dump-ir source 2>&1 >/dev/null)
echo "$src" | grep -q "== hidetc source" || fail "inspect --dump-ir source printed no source"
echo "$src" | grep -q "_mm512_" || fail "cpu:avx512 source has no AVX-512 intrinsics"
"$HIDETC" inspect "$M" --target cpu:avx2 --dump-ir source 2>&1 >/dev/null | grep -q "_mm512_" &&
    fail "cpu:avx2 source uses AVX-512 intrinsics"
"$HIDETC" kernel matmul --m 7 --n 13 --k 5 --target cpu:avx512 --print-source | grep -q "_mm512_" ||
    fail "kernel --target cpu:avx512 --print-source: no AVX-512 code"
if [ "$host" = avx2 ]; then
    "$HIDETC" run "$M" --target cpu:avx512 >/dev/null 2>&1
    [ $? -eq 2 ] || fail "run --target cpu:avx512 on an AVX2 host: expected a refusal (2)"
fi
# The host detection against CPUID itself: bench/cpuid_avx2.c (the library bench/compare
# --isa avx2 preloads) hides AVX-512 from CPUID by CPUID faulting. Under it, an AVX-512
# host is an AVX2 one to hidetc: the default target compiles what HIDETC_ISA=avx2 does
# (the same outputs, bit for bit) and cpu:avx512 is refused as on a real AVX2 host. The
# library leaves LD_PRELOAD of the programs it starts (the C compiler) and never hides
# AVX2. (ASan's runtime wants to be the first library: verify_asan_link_order=0.)
if cc -O2 -shared -fPIC -o "$TMP/libcpuid_avx2.so" "$SRC/bench/cpuid_avx2.c" &&
    cc -O2 -DHC_CPUID_PROBE -o "$TMP/cpuid_probe" "$SRC/bench/cpuid_avx2.c"; then
    pre() {
        LD_PRELOAD="$TMP/libcpuid_avx2.so" HC_CPUID_AVX2_QUIET=1 \
            ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "$@"
    }
    plain=$("$TMP/cpuid_probe")   # "avx512f A avx2 B faulting F"
    masked=$(pre "$TMP/cpuid_probe")
    read -r _ p512 _ p2 _ _ <<<"$plain"
    read -r _ m512 _ m2 _ mf <<<"$masked"
    [ "$m2" = "$p2" ] || fail "the library changed the AVX2 bit: $plain / $masked"
    if [ "$mf" = 1 ]; then
        [ "$m512" = 0 ] || fail "CPUID faulting on, AVX-512F still seen: $masked"
    else
        [ "$m512" = "$p512" ] || fail "no CPUID faulting, yet the AVX-512F bit changed: $masked"
    fi
    { [ "$p512" = 1 ] && [ "$host" = avx512 ]; } || { [ "$p512" = 0 ] && [ "$host" = avx2 ]; } ||
        fail "the probe ($plain) and /proc/cpuinfo ($host) disagree on AVX-512F"
    left=$(pre env | grep '^LD_PRELOAD=' || true)
    [ -z "$left" ] || fail "the library stays in its children's environment: $left"
    if [ "$host" = avx512 ] && [ "$mf" = 1 ]; then
        pre "$HIDETC" run "$M" --output-dir "$TMP/m_avx2" >/dev/null 2>&1 ||
            fail "run under the CPUID mask failed"
        for f in "$TMP/e_avx2"/*.npy; do
            cmp -s "$f" "$TMP/m_avx2/$(basename "$f")" ||
                fail "an AVX-512 host seen as AVX2 and HIDETC_ISA=avx2 differ in $(basename "$f")"
        done
        pre "$HIDETC" run "$M" --target cpu:avx512 >/dev/null 2>&1
        [ $? -eq 2 ] || fail "run --target cpu:avx512 with AVX-512 hidden: expected a refusal (2)"
    elif [ "$host" = avx512 ]; then
        echo "cli_target: no CPUID faulting here ($masked): the masked host checks not run"
    fi
else
    fail "bench/cpuid_avx2.c did not build"
fi
"$HIDETC" kernel matmul --m 7 --n 13 --k 5 --target cpu:scalar | grep -q "^max_error" ||
    fail "kernel --target cpu:scalar did not check its result"

# every stage prints every kernel's program: fused once per kernel, scheduled at least
# that (a group whose fusion fails is scheduled again member by member)
kernels=$("$HIDETC" inspect "$M" --fusion 2>/dev/null | sed -n 's/^kernels: //p')
[ -n "$kernels" ] || fail "inspect --fusion printed no kernel count"
n=$("$HIDETC" run "$M" --dump-ir scheduled 2>&1 >/dev/null | grep -c "^== hidetc scheduled: ")
[ "$n" -ge "$kernels" ] || fail "--dump-ir scheduled printed $n programs for $kernels kernels"
n=$("$HIDETC" run "$M" --dump-ir fused 2>&1 >/dev/null | grep -c "^== hidetc fused: ")
[ "$n" -eq "$kernels" ] || fail "--dump-ir fused printed $n programs for $kernels kernels"
n=$(HIDETC_DUMP=fused "$HIDETC" run "$M" 2>&1 >/dev/null | grep -c "^== hidetc fused: ")
[ "$n" -eq "$kernels" ] || fail "HIDETC_DUMP=fused printed $n programs for $kernels kernels"
n=$("$HIDETC" run "$M" --dump-ir lowered 2>&1 >/dev/null | grep -c "^== hidetc lowered: ")
[ "$n" -ge 1 ] || fail "--dump-ir lowered printed nothing"
HIDETC_VERIFY=1 "$HIDETC" run "$M" >/dev/null 2>&1 || fail "HIDETC_VERIFY=1 run failed"

[ $fails -eq 0 ] && echo "cli_target: all passed"
exit $((fails > 0))
