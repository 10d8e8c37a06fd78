# The two commands of the README. Each installs what is missing first (scripts/install-deps.sh).
BUILD ?= build
JOBS ?= $(shell nproc)
BUILD_TYPE ?= RelWithDebInfo
CMAKE_ARGS ?=

# Sanitizer builds (docs/reliability.md, "Sanitizers"): their own build trees, only what the tests need.
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
SANITIZE_ARGS = -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DZEX_BENCH=OFF -DZEX_EXAMPLES=OFF $(CMAKE_ARGS)

.PHONY: all deps configure build test demo bench install clean test-asan test-tsan

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure --timeout 900 -j $(JOBS)

demo: build
	cmake --build $(BUILD) --target run-demo

bench: build
	cmake --build $(BUILD) --target run-bench

install: build
	cmake --install $(BUILD)

# ASan + UBSan (LeakSanitizer on): the whole suite.
test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DZEX_SANITIZE=ON $(SANITIZE_ARGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure --timeout 1800 -j $(JOBS)

# TSan: the multi-thread tests (CTest label `threads`), so only their binaries and zex-cpu are built.
test-tsan: deps
	cmake -S . -B $(TSAN_BUILD) -DZEX_SANITIZE=thread $(SANITIZE_ARGS)
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target zex_tests driver_conformance zex_device_lost_tests zex_multi_device_tests
	cd $(TSAN_BUILD) && ctest --output-on-failure --timeout 1800 -L threads

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
