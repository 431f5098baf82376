# Convenience wrapper around CMake. `make demo` and `make test` are the README's commands.
BUILD ?= build
WERROR ?= 0
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure demo test check-sanitize valgrind bench-gemm clean

all: configure
	cmake --build $(BUILD) -j$(JOBS)

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DHIDETC_WERROR=$(if $(filter 1,$(WERROR)),ON,OFF) $(CMAKE_FLAGS) >/dev/null

# The main job on the embedded default: build a matmul kernel with task mappings, check it
# against the reference and time it; then show a task mapping.
demo: all
	$(BUILD)/hidetc kernel matmul --m 512 --n 512 --k 512 --bench
	$(BUILD)/hidetc mapping 'spatial(4,8).repeat(2,2)' --worker 9

test: all
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# The test suite under AddressSanitizer + UBSan, in its own build tree.
check-sanitize:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DHIDETC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug"

# The test suite under valgrind memcheck (slow).
valgrind: all
	cd $(BUILD) && ctest --output-on-failure -T memcheck

bench-gemm: deps
	bench/gemm.sh

clean:
	rm -rf $(BUILD) build-asan
