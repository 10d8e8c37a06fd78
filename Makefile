# The two commands of the README. Each installs what is missing first (scripts/install-deps.sh).
BUILD ?= build
JOBS ?= $(shell nproc)
BUILD_TYPE ?= RelWithDebInfo
CMAKE_ARGS ?=

.PHONY: all deps configure build test demo bench install clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure --timeout 900

demo: build
	cmake --build $(BUILD) --target run-demo

bench: build
	cmake --build $(BUILD) --target run-bench

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD)
