# ZEX_SANITIZE: OFF, ON (= address: ASan + UBSan, LeakSanitizer on) or thread (TSan).
# Sets, for the rest of the project:
#   ZEX_SANITIZE_MODE      "", "address" or "thread"
#   ZEX_SANITIZE_FLAGS     the compile/link flags, as one string (consumer projects built by the tests
#                          get them too: a sanitized static libzex does not link without its runtime)
#   ZEX_SANITIZE_TEST_ENV  the environment every CTest entry gets (zex_sanitize_tests() applies it)
# docs/reliability.md, "Sanitizers", explains each variable of the environment.
set(ZEX_SANITIZE_MODE "")
if(ZEX_SANITIZE STREQUAL "thread")
  set(ZEX_SANITIZE_MODE thread)
elseif(ZEX_SANITIZE STREQUAL "address" OR ZEX_SANITIZE)   # ON, address, or any other true value
  set(ZEX_SANITIZE_MODE address)
endif()

set(ZEX_SANITIZE_FLAGS "")
set(ZEX_SANITIZE_TEST_ENV "")
if(NOT ZEX_SANITIZE_MODE)
  function(zex_sanitize_tests)
  endfunction()
  return()
endif()

if(ZEX_SANITIZE_MODE STREQUAL "address")
  set(ZEX_SANITIZE_FLAGS "-fsanitize=address,undefined -fno-omit-frame-pointer")
else()
  set(ZEX_SANITIZE_FLAGS "-fsanitize=thread -fno-omit-frame-pointer")
endif()
separate_arguments(zex_sanitize_flag_list UNIX_COMMAND "${ZEX_SANITIZE_FLAGS}")
add_compile_options(${zex_sanitize_flag_list})
add_link_options(${zex_sanitize_flag_list})
if(ZEX_SANITIZE_MODE STREQUAL "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # g++ warns that TSan does not model std::atomic_thread_fence (zex-cpu's zeContextSystemBarrier is
  # one). Known and accepted: a fence TSan ignores can only make it report a race that the fence
  # prevents, never hide one; the warning would otherwise break the no-warnings rule of this build.
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-Wno-tsan>)
endif()

# libOpenCL (ocl-icd) loads every ICD in /etc/OpenCL/vendors. intel-opencl-icd's libigdrcl.so is
# dlopen()ed with RTLD_DEEPBIND, which ASan refuses (it aborts the process) and which would bind that
# library past TSan's interceptors. zex-cpu needs only PoCL, so sanitized test processes get a vendors
# directory in the build tree with PoCL's ICD file alone (OCL_ICD_VENDORS).
set(ZEX_SANITIZE_OCL_VENDORS ${CMAKE_BINARY_DIR}/sanitize/ocl-vendors)
find_file(ZEX_POCL_ICD NAMES pocl.icd PATHS /etc/OpenCL/vendors NO_DEFAULT_PATH
          DOC "PoCL's ICD file (Debian: pocl-opencl-icd)")
if(ZEX_POCL_ICD)
  file(REMOVE_RECURSE ${ZEX_SANITIZE_OCL_VENDORS})
  configure_file(${ZEX_POCL_ICD} ${ZEX_SANITIZE_OCL_VENDORS}/pocl.icd COPYONLY)
elseif(ZEX_CPU_DRIVER)
  message(FATAL_ERROR "ZEX_SANITIZE: PoCL's ICD file (pocl.icd) is not in /etc/OpenCL/vendors; "
                      "install pocl-opencl-icd or set ZEX_POCL_ICD=<path to pocl.icd>")
endif()

set(zex_supp_dir ${PROJECT_SOURCE_DIR}/tests/sanitizers)
list(APPEND ZEX_SANITIZE_TEST_ENV "OCL_ICD_VENDORS=${ZEX_SANITIZE_OCL_VENDORS}")
if(ZEX_SANITIZE_MODE STREQUAL "address")
  # halt_on_error: a UBSan report fails the test (g++ builds -fsanitize=undefined recoverable).
  # LSan runs at exit of every process; lsan.supp lists the leaks of libraries we do not build.
  list(APPEND ZEX_SANITIZE_TEST_ENV
    "ASAN_OPTIONS=detect_leaks=1"
    # use_tls=0: g++ 12's LSan misreads the dynamic TLS of a library the Level Zero loader dlopen()s with
    # the validation layer on (a "DTLS" block at 0x7be, 16 GB long) and its tracer dies with SIGSEGV at
    # every exit of such a process. Without TLS as roots LSan can only report more, never less.
    "LSAN_OPTIONS=suppressions=${zex_supp_dir}/lsan.supp:print_suppressions=0:use_tls=0"
    "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")
else()
  # A race report makes the process exit with 66 at its end (TSan's default), which fails the test.
  # (zex-cpu translates SPIR-V in process by itself under any sanitizer: a child forked from a
  # multi-threaded TSan or ASan process can hang in the sanitizer's locks; compiler/translate.cpp.)
  list(APPEND ZEX_SANITIZE_TEST_ENV
    "TSAN_OPTIONS=suppressions=${zex_supp_dir}/tsan.supp:print_suppressions=0:second_deadlock_stack=1")
endif()

# zex_sanitize_tests(): appends ZEX_SANITIZE_TEST_ENV to every test of the calling directory. CMake 3.25
# can set a test's properties only from the directory that added it, so each test directory defers a
# call to its end: cmake_language(DEFER CALL zex_sanitize_tests).
function(zex_sanitize_tests)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT ${ZEX_SANITIZE_TEST_ENV})
  endforeach()
endfunction()
