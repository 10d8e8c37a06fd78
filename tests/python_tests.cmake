# The Python package (python/zex, pure Python over libzex.so with ctypes): its pytest suite
# (python/tests/), the same under the loader's validation layer, and a real offline install into a
# fresh venv that runs the README's example (examples/python/example.py).
if(NOT TARGET zex_c)
  return()
endif()
# A sanitized libzex cannot be dlopen()ed by an uninstrumented python3; the sanitizer builds skip these.
if(ZEX_SANITIZE_MODE)
  return()
endif()

# The interpreter: the first python3 that has pytest and numpy. Debian's /usr/bin/python3 has them
# (python3-pytest, python3-numpy in scripts/install-deps.sh); a python3 earlier on PATH (pyenv, conda)
# may not. -DZEX_PYTHON=<interpreter> overrides.
set(ZEX_PYTHON "" CACHE FILEPATH "Python 3 for the Python tests (default: the first python3 with pytest and numpy)")
if(NOT ZEX_PYTHON)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  set(candidates /usr/bin/python3)
  if(Python3_EXECUTABLE)
    list(APPEND candidates ${Python3_EXECUTABLE})
  endif()
  foreach(py IN LISTS candidates)
    if(EXISTS ${py})
      execute_process(COMMAND ${py} -c "import pytest, numpy, venv" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
      if(rc EQUAL 0)
        set(ZEX_PYTHON ${py})
        break()
      endif()
    endif()
  endforeach()
  if(NOT ZEX_PYTHON)
    list(GET candidates 0 ZEX_PYTHON)
    message(WARNING "zex: no python3 with pytest and numpy (scripts/install-deps.sh installs python3-pytest "
                    "python3-numpy); the Python tests will fail")
  endif()
endif()

# The README's example runs on the demo's vadd (examples/kernels/vadd.cl); without the examples, on the
# test kernels' vadd, which has the same parameters.
if(TARGET zex_demo_kernels)
  set(example_spv ${CMAKE_BINARY_DIR}/examples/vadd.spv)
else()
  set(example_spv ${ZEX_TEST_KERNEL_SPV})
endif()
set(ZEX_PYTHON_TEST_ENV
  PYTHONPATH=${PROJECT_SOURCE_DIR}/python
  PYTHONDONTWRITEBYTECODE=1
  ZEX_LIBRARY=$<TARGET_SONAME_FILE:zex_c>
  ZEX_TEST_KERNEL_SPV=${ZEX_TEST_KERNEL_SPV}
  ZEX_TEST_KERNEL_SOURCE=${ZEX_TEST_KERNEL_SOURCE}
  ZEX_EXAMPLE_SPV=${example_spv})
set(pytest ${ZEX_PYTHON} -m pytest -q -p no:cacheprovider ${PROJECT_SOURCE_DIR}/python/tests)
zex_add_test(zex_python COMMAND ${pytest} ENV ${ZEX_PYTHON_TEST_ENV})
# The ctypes declarations against include/zex/zex.h, and zex.h's exception struct against the C++
# KernelExceptionInfo (issue 25): no library, no device, so it runs (and fails on drift) anywhere.
zex_add_test(zex_python_header NO_DRIVER
  COMMAND ${ZEX_PYTHON} -m pytest -q -p no:cacheprovider ${PROJECT_SOURCE_DIR}/python/tests/test_header.py
  ENV PYTHONPATH=${PROJECT_SOURCE_DIR}/python PYTHONDONTWRITEBYTECODE=1)
# Again under the loader's validation layer (test_no_driver's child runs without it).
zex_add_test(zex_python_validation COMMAND ${pytest} ENV ${ZEX_PYTHON_TEST_ENV} ${ZEX_VALIDATION_ENV})
# A lost device (ZEX_CPU_LOSE_DEVICE=2 lasts for the process): test_device_lost.py alone, in its own process.
if(ZEX_CPU_DRIVER)
  zex_add_test(zex_python_device_lost
    COMMAND ${ZEX_PYTHON} -m pytest -q -p no:cacheprovider ${PROJECT_SOURCE_DIR}/python/tests/test_device_lost.py
    ENV ${ZEX_PYTHON_TEST_ENV} ZEX_TEST_DEVICE_LOST=python ZEX_CPU_LOSE_DEVICE=2)
endif()
# Two devices of two tiles each (read at zeInit): test_multi_device.py alone, in its own process.
if(ZEX_CPU_DRIVER)
  zex_add_test(zex_python_multi_device
    COMMAND ${ZEX_PYTHON} -m pytest -q -p no:cacheprovider ${PROJECT_SOURCE_DIR}/python/tests/test_multi_device.py
    ENV ${ZEX_PYTHON_TEST_ENV} ZEX_CPU_DEVICES=2 ZEX_CPU_SUBDEVICES=2)
endif()
# pip install --no-build-isolation --no-index into `python3 -m venv --system-site-packages`, then a
# smoke test and (with numpy) the example with the installed package, and the library found next to the
# package: once with the python3 on PATH when the test runs (pyenv's, conda's: not Debian's, without
# setuptools or wheel) and once with Debian's /usr/bin/python3. Each is skipped, saying why, when its
# interpreter is absent (or, for the first, is /usr/bin/python3 itself).
zex_add_test(zex_python_install
  COMMAND ${ZEX_PYTHON} ${PROJECT_SOURCE_DIR}/python/tests/install_check.py --python python3
          --skip-same-as /usr/bin/python3
          --source ${PROJECT_SOURCE_DIR} --work ${CMAKE_CURRENT_BINARY_DIR}/python-install
          --library $<TARGET_SONAME_FILE:zex_c> --spirv ${example_spv}
  ENV PYTHONDONTWRITEBYTECODE=1)
zex_add_test(zex_python_install_debian
  COMMAND ${ZEX_PYTHON} ${PROJECT_SOURCE_DIR}/python/tests/install_check.py --python /usr/bin/python3
          --source ${PROJECT_SOURCE_DIR} --work ${CMAKE_CURRENT_BINARY_DIR}/python-install-debian
          --library $<TARGET_SONAME_FILE:zex_c> --spirv ${example_spv}
  ENV PYTHONDONTWRITEBYTECODE=1)
set_tests_properties(zex_python_install zex_python_install_debian PROPERTIES SKIP_RETURN_CODE 77)
