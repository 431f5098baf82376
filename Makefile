# Convenience wrapper around CMake. `make demo` and `make test` are the README's commands.
BUILD ?= build
WERROR ?= 0
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps configure demo test check-sanitize valgrind bench-gemm onnx-test onnx-test-latest test-models clean

all: configure
	cmake --build $(BUILD) -j$(JOBS)

deps:
	@scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DHIDETC_WERROR=$(if $(filter 1,$(WERROR)),ON,OFF) $(CMAKE_FLAGS) >/dev/null

# The main job on the embedded defaults (no download): compile the built-in ResNet-50 and
# BERT-base (random weights, fixed seed), run them and time BERT; then a matmul kernel
# written with task mappings, checked against the reference and timed.
demo: all
	$(BUILD)/hidetc run builtin:resnet50
	$(BUILD)/hidetc bench builtin:bert --warmup 2 --repeat 10
	$(BUILD)/hidetc kernel matmul --m 512 --n 512 --k 512 --bench

test: all
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# The test suite under AddressSanitizer + UBSan, in its own build tree.
check-sanitize:
	$(MAKE) test BUILD=build-asan CMAKE_FLAGS="-DHIDETC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug"

# The test suite under valgrind memcheck (slow).
valgrind: all
	scripts/valgrind-tests.sh $(BUILD)

bench-gemm: deps
	bench/gemm.sh

# The ONNX backend node tests (Debian libonnx-testdata), one line per test.
onnx-test: all
	$(BUILD)/hidetc onnx-test /usr/share/libonnx-testdata/data/node/*/

# The node tests of the current onnx release from PyPI (scripts/onnx-node-tests.sh writes
# them into $(BUILD)/onnx-node-latest once), then Debian's 1.12 set beside them.
onnx-test-latest: all
	@[ -d $(BUILD)/onnx-node-latest ] || scripts/onnx-node-tests.sh $(BUILD)/onnx-node-latest
	$(BUILD)/hidetc onnx-test $(BUILD)/onnx-node-latest/*/ --jobs $(JOBS) > $(BUILD)/onnx-test-latest.log; \
	  rc=$$?; echo "$$(cat $(BUILD)/onnx-node-latest/VERSION): $$(tail -1 $(BUILD)/onnx-test-latest.log)"; \
	  exit $$rc
	$(BUILD)/hidetc onnx-test /usr/share/libonnx-testdata/data/node/*/ --jobs $(JOBS) > $(BUILD)/onnx-test-debian.log; \
	  rc=$$?; echo "Debian libonnx-testdata (1.12): $$(tail -1 $(BUILD)/onnx-test-debian.log)"; exit $$rc

# Full-size model tests (exports the five models from PyTorch; minutes).
test-models: all
	cmake --build $(BUILD) --target test-models

clean:
	rm -rf $(BUILD) build-asan
