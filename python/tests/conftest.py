"""Fixtures of the zex Python suite. CTest (tests/python/CMakeLists.txt) runs it with PYTHONPATH=<src>/python,
ZEX_LIBRARY=<build>/src/libzex.so.1, ZEX_TEST_KERNEL_SPV / ZEX_TEST_KERNEL_SOURCE (tests/kernels),
ZEX_EXAMPLE_SPV (examples/kernels/vadd.cl) and zex-cpu's environment (ZE_ENABLE_ALT_DRIVERS)."""
import os
import re

import pytest

import zex


def env_path(name):
    p = os.environ.get(name)
    if not p:
        pytest.skip("%s is not set (the CTest entry zex_python sets it)" % name)
    return p


@pytest.fixture(scope="session")
def kernel_spv():
    return env_path("ZEX_TEST_KERNEL_SPV")


@pytest.fixture(scope="session")
def kernel_lines():
    """{marker: line} of the LINE: markers of tests/kernels/runtime/zex_test_kernels.cl."""
    lines = {}
    with open(env_path("ZEX_TEST_KERNEL_SOURCE")) as f:
        for i, text in enumerate(f, 1):
            m = re.search(r"// LINE:(\w+)", text)
            if m:
                lines[m.group(1)] = i
    return lines


@pytest.fixture(scope="session")
def ctx():
    with zex.Context() as c:
        yield c


@pytest.fixture(scope="session")
def dev(ctx):
    return ctx.device(0)


@pytest.fixture(scope="session")
def mod(dev, kernel_spv):
    return zex.Module(dev, kernel_spv)


@pytest.fixture(scope="session")
def vadd(mod):
    return mod.kernel("vadd")


@pytest.fixture
def stream(dev):
    with zex.Stream(dev) as s:
        yield s
