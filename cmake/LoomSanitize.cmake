# LOOM_SANITIZE=address,undefined (or thread): compiles Loom's test programs with those sanitizers and
# defines loom_sanitize_tests, one test program made of the tests that matter most under a sanitizer,
# so that scripts/sanitize.sh builds only it instead of every layer.
set(LOOM_SANITIZE "" CACHE STRING
    "Sanitizers for Loom's tests: address,undefined or thread (empty: none); see scripts/sanitize.sh")

if(LOOM_SANITIZE)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    message(FATAL_ERROR "LOOM_SANITIZE needs GCC or Clang (compiler: ${CMAKE_CXX_COMPILER_ID})")
  endif()
  if(LOOM_SANITIZE MATCHES "thread" AND LOOM_SANITIZE MATCHES "address")
    message(FATAL_ERROR "LOOM_SANITIZE: ThreadSanitizer cannot be combined with AddressSanitizer; "
                        "configure two build directories (scripts/sanitize.sh does)")
  endif()
  message(STATUS "Loom tests: sanitizers ${LOOM_SANITIZE}")
  # Directory-wide (included from the top-level CMakeLists.txt), so the library and the shared test
  # objects (doctest main, tests/support) get them too. Every finding stops the program
  # (-fno-sanitize-recover), so a finding always fails the run.
  add_compile_options(-fsanitize=${LOOM_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer -g1)
  add_link_options(-fsanitize=${LOOM_SANITIZE})
endif()

# Called at the end of tests/CMakeLists.txt, once the shared test targets exist.
function(loom_add_sanitize_tests)
  if(NOT LOOM_SANITIZE OR NOT TARGET loom::jit)
    return()
  endif()
  set(_dir "${PROJECT_SOURCE_DIR}/tests")
  # hostile_inputs_test.cpp builds kernels with the LLVM backend; jit_cache_test.cpp holds the
  # concurrency tests: build() from 8 threads, one Kernel (with a parallel loop) called from 8
  # threads, two processes sharing one disk cache; thread_pool_stress_test.cpp has several threads
  # calling the pool back to back. None needs tests/support's JIT half.
  set(_srcs "${_dir}/hostile/hostile_inputs_test.cpp" "${_dir}/jit/jit_cache_test.cpp"
            "${_dir}/runtime/thread_pool_stress_test.cpp")
  if(NOT LOOM_SANITIZE MATCHES "thread")
    # Argument checks, the interpreter, the error catalog, and the fuzzer (LOOM_FUZZ_ITERS runs).
    list(APPEND _srcs "${_dir}/errors/catalog_test.cpp" "${_dir}/fuzz/schedule_fuzz_test.cpp")
    # interpret_checked, interpreter only (the JIT half would cost two more LLVM-heavy files).
    if(EXISTS "${_dir}/support/interpret_checked_interpreter.cpp")
      list(APPEND _srcs "${_dir}/runtime/arg_check_test.cpp" "${_dir}/runtime/interpreter_test.cpp"
                        "${_dir}/support/interpret_checked_interpreter.cpp")
    endif()
  endif()
  add_executable(loom_sanitize_tests ${_srcs} $<TARGET_OBJECTS:loom_doctest_main>)
  loom_test_setup(loom_sanitize_tests)
  target_link_libraries(loom_sanitize_tests PRIVATE loom::jit)
  target_compile_definitions(loom_sanitize_tests PRIVATE LOOM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  target_precompile_headers(loom_sanitize_tests REUSE_FROM loom_tests_pch)
endfunction()
