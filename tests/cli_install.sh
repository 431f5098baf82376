#!/bin/bash
# cli_install.sh HIDETC SOURCE_DIR — `cmake --install` of the build tree HIDETC was built
# in, into a temporary prefix (docs/install.md): the files are there, the shared library's
# soname is libhidetc.so.ABI and it exports the hidetc_* API of the installed header and
# nothing else; examples/session_example.c builds against the installed copy four ways
# (find_package(hidetc) with hidetc::hidetc and hidetc::hidetc_static; cc with
# `pkg-config --libs hidetc` and with `pkg-config --static --libs hidetc` on libhidetc.a),
# each links what it should, runs a session on builtin:bert-tiny and prints the same
# checksum; the versions of the package files and of hidetc_version() agree; the CMake
# package still works with the prefix moved elsewhere. Exits 77 without pkg-config, a C
# compiler or binutils.
set -u
HIDETC=$1
SRC=$2
BUILD=$(cd "$(dirname "$HIDETC")" && pwd)
for tool in pkg-config cc nm readelf; do
    if ! command -v $tool >/dev/null 2>&1; then
        echo "SKIP: no $tool"
        exit 77
    fi
done
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
finish() {
    if [ "$fails" -ne 0 ]; then
        echo "$fails failure(s)"
        exit 1
    fi
    echo "cli_install: all checks passed"
    exit 0
}
cache_var() { sed -n "s/^$1:[A-Z]*=//p" "$BUILD/CMakeCache.txt"; }
CMAKE=$(cache_var CMAKE_COMMAND)
[ -x "$CMAKE" ] || CMAKE=cmake
LIBDIR=$(cache_var CMAKE_INSTALL_LIBDIR)
[ -n "$LIBDIR" ] || LIBDIR=lib
# A sanitizer build's library needs the example built and linked with the sanitizers too.
SAN=()
case "$(cache_var HIDETC_SANITIZE)" in
ON | on | 1 | TRUE | true | YES | yes) SAN=(-fsanitize=address,undefined -fno-omit-frame-pointer) ;;
esac
PREFIX=$TMP/prefix
LIB=$PREFIX/$LIBDIR
export HIDETC_CACHE_DIR="$TMP/cache" HIDETC_NO_PROGRESS=1
unset LD_LIBRARY_PATH

# 1. install
"$CMAKE" --install "$BUILD" --prefix "$PREFIX" >"$TMP/install.log" 2>&1 ||
    { fail "cmake --install: exit $? ($(tail -5 "$TMP/install.log"))"; finish; }
for f in include/hidetc.h "$LIBDIR/libhidetc.so" "$LIBDIR/libhidetc.a" \
    "$LIBDIR/pkgconfig/hidetc.pc" "$LIBDIR/cmake/hidetc/hidetc-config.cmake" \
    "$LIBDIR/cmake/hidetc/hidetc-config-version.cmake" "$LIBDIR/cmake/hidetc/hidetc-targets.cmake" \
    bin/hidetc; do
    [ -s "$PREFIX/$f" ] || fail "not installed: $f"
done
cmp -s "$SRC/include/hidetc.h" "$PREFIX/include/hidetc.h" || fail "installed hidetc.h differs from the source's"
[ -f "$LIB/libhidetc.so" ] || finish

# 2. the shared library: soname, exports
# the soname carries the oldest ABI the library serves; hidetc_abi_version() the newest
abi=$(sed -n 's/^#define HIDETC_ABI_OLDEST \([0-9]*\).*/\1/p' "$SRC/include/hidetc.h")
abi_now=$(sed -n 's/^#define HIDETC_ABI_VERSION \([0-9]*\).*/\1/p' "$SRC/include/hidetc.h")
soname=$(readelf -d "$LIB/libhidetc.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libhidetc.so.$abi" ] || fail "soname '$soname', want libhidetc.so.$abi"
[ -L "$LIB/libhidetc.so" ] && [ -f "$LIB/libhidetc.so.$abi" ] || fail "no libhidetc.so -> libhidetc.so.$abi link"
nm -D --defined-only "$LIB/libhidetc.so" | awk '{print $NF}' | sort >"$TMP/exports"
grep -Ev '^(hidetc_[A-Za-z0-9_]+|_init|_fini|_edata|_end|__bss_start)$' "$TMP/exports" >"$TMP/leaks"
[ -s "$TMP/leaks" ] && fail "libhidetc.so exports $(wc -l <"$TMP/leaks") symbols beyond hidetc_*: $(head -20 "$TMP/leaks" | tr '\n' ' ')"
sed -n 's/^HIDETC_API[^(]*[^A-Za-z0-9_(]\([A-Za-z0-9_]*\)(.*/\1/p' "$PREFIX/include/hidetc.h" | sort -u >"$TMP/declared"
[ "$(wc -l <"$TMP/declared")" -gt 30 ] || fail "found only $(wc -l <"$TMP/declared") HIDETC_API functions in hidetc.h"
missing=$(comm -23 "$TMP/declared" "$TMP/exports")
[ -z "$missing" ] || fail "declared in hidetc.h, not exported: $(echo $missing)"
echo "libhidetc.so ($soname): $(grep -c '^hidetc_' "$TMP/exports") hidetc_* symbols, nothing else"

# 3. the example with CMake: find_package(hidetc) from the prefix
"$CMAKE" -S "$SRC/examples" -B "$TMP/ex" -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS="${SAN[*]}" -DCMAKE_EXE_LINKER_FLAGS="${SAN[*]}" >"$TMP/ex-config.log" 2>&1 ||
    fail "examples: configure: $(tail -20 "$TMP/ex-config.log")"
grep -q "hidetc [0-9.]* from $LIB/cmake/hidetc" "$TMP/ex-config.log" ||
    fail "examples: find_package did not take the installed copy: $(grep 'hidetc' "$TMP/ex-config.log")"
"$CMAKE" --build "$TMP/ex" >"$TMP/ex-build.log" 2>&1 || fail "examples: build: $(tail -20 "$TMP/ex-build.log")"

# 4. the example with pkg-config, shared and static
export PKG_CONFIG_PATH="$LIB/pkgconfig"
pc_version=$(pkg-config --modversion hidetc) || fail "pkg-config --modversion hidetc: exit $?"
cflags=$(pkg-config --cflags hidetc)
libs=$(pkg-config --libs hidetc)
slibs=$(pkg-config --static --libs hidetc | sed 's/-lhidetc\b/-l:libhidetc.a/')
echo "pkg-config: $cflags | $libs | static: $slibs"
mkdir -p "$TMP/pc"
build_example() { # build_example NAME FLAGS...
    local name=$1
    shift
    cc -std=c11 -Wall -Wextra -Werror "${SAN[@]}" "$SRC/examples/session_example.c" \
        -o "$TMP/pc/$name" "$@" 2>"$TMP/pc/$name.log"
}
build_example shared $cflags $libs || fail "cc with pkg-config --libs: $(cat "$TMP/pc/shared.log")"
build_example static $cflags $slibs ||
    fail "cc with pkg-config --static --libs: $(cat "$TMP/pc/static.log")"

# 5. each links what it should and runs: the same checksum four times
declare -A kind=([ex/session_example]=shared [ex/session_example_static]=static [pc/shared]=shared [pc/static]=static)
sums=()
for exe in ex/session_example ex/session_example_static pc/shared pc/static; do
    [ -x "$TMP/$exe" ] || continue
    needed=$(readelf -d "$TMP/$exe" | grep -c "NEEDED.*libhidetc")
    if [ "${kind[$exe]}" = shared ]; then
        [ "$needed" -eq 1 ] || fail "$exe: no NEEDED libhidetc.so.$abi"
        LD_LIBRARY_PATH="$LIB" ldd "$TMP/$exe" | grep -q "libhidetc.so.$abi => $LIB/" ||
            fail "$exe: does not load the installed libhidetc.so: $(ldd "$TMP/$exe" | grep hidetc)"
    else
        [ "$needed" -eq 0 ] || fail "$exe: links libhidetc.so (want libhidetc.a)"
    fi
    LD_LIBRARY_PATH="$LIB" "$TMP/$exe" >"$TMP/$exe.out" 2>"$TMP/$exe.err" ||
        { fail "$exe: exit $? ($(head -c 600 "$TMP/$exe.err"))"; continue; }
    sum=$(sed -n 's/^checksum //p' "$TMP/$exe.out")
    [ -n "$sum" ] || { fail "$exe: no checksum line: $(cat "$TMP/$exe.out")"; continue; }
    sums+=("$exe=$sum")
    [ "$sum" = "$(sed -n 's/^checksum //p' "$TMP/ex/session_example.out" 2>/dev/null)" ] ||
        fail "$exe: checksum $sum differs from ex/session_example's"
done
[ ${#sums[@]} -eq 4 ] || fail "ran ${#sums[@]} of 4 examples"
[ -f "$TMP/ex/session_example.out" ] && cat "$TMP/ex/session_example.out"
echo "checksums: ${sums[*]}"
out=$TMP/ex/session_example.out
if [ -s "$out" ]; then
    grep -q "^input 0: input_ids i64 \[" "$out" || fail "example: no input line: $(cat "$out")"
    grep -q "^output 0: " "$out" || fail "example: no output line: $(cat "$out")"
    # versions: hidetc_version(), pkg-config, the CMake package's version file
    lib_version=$(sed -n 's/^hidetc \([0-9.]*\) (ABI \([0-9]*\))$/\1/p' "$out")
    lib_abi=$(sed -n 's/^hidetc \([0-9.]*\) (ABI \([0-9]*\))$/\2/p' "$out")
    cm_version=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$LIB/cmake/hidetc/hidetc-config-version.cmake")
    [ -n "$lib_version" ] && [ "$lib_version" = "$pc_version" ] && [ "$lib_version" = "$cm_version" ] ||
        fail "versions: hidetc_version() '$lib_version', hidetc.pc '$pc_version', CMake '$cm_version'"
    [ "$lib_abi" = "$abi_now" ] || fail "hidetc_abi_version() $lib_abi, header $abi_now"
    [ -f "$LIB/libhidetc.so.$abi.$lib_version" ] || fail "no $LIBDIR/libhidetc.so.$abi.$lib_version"
fi

# 6. a failing session: nonzero exit with the library's message
if [ -x "$TMP/pc/static" ]; then
    "$TMP/pc/static" builtin:no-such-model >"$TMP/bad.out" 2>"$TMP/bad.err" && fail "unknown model: exit 0"
    grep -q "unknown builtin model" "$TMP/bad.err" || fail "unknown model: message: $(cat "$TMP/bad.err")"
fi

# 7. hidetc.pc names the prefix; the CMake package follows the prefix moved elsewhere
[ "$(pkg-config --variable=prefix hidetc)" = "$PREFIX" ] ||
    fail "hidetc.pc: prefix '$(pkg-config --variable=prefix hidetc)', want $PREFIX"
mv "$PREFIX" "$TMP/moved"
M=$TMP/moved
"$CMAKE" -S "$SRC/examples" -B "$TMP/ex-moved" -DCMAKE_PREFIX_PATH="$M" >"$TMP/ex-moved.log" 2>&1 &&
    grep -q "hidetc [0-9.]* from $M/$LIBDIR/cmake/hidetc" "$TMP/ex-moved.log" ||
    fail "moved prefix: find_package: $(tail -5 "$TMP/ex-moved.log")"
grep -rq "$PREFIX" "$M/$LIBDIR/cmake/hidetc" && fail "the CMake package names the install prefix"

finish
