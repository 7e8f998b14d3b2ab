# cmake -P driver for one packaging test: in a fresh WORK_DIR, configure, build and run the
# consumer project against Loom in the given MODE (find_package | add_subdirectory | fetchcontent |
# header_only).
cmake_minimum_required(VERSION 3.20)

foreach(var MODE LOOM_SOURCE_DIR LOOM_BINARY_DIR LOOM_VERSION CONSUMER_SOURCE_DIR WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "RunPackageTest.cmake: -D ${var}=... is required")
  endif()
endforeach()

# Runs a command, echoes it and its output, and stops the test when it fails.
function(run_step what)
  list(JOIN ARGN " " cmdline)
  message(STATUS "[${MODE}] ${what}: ${cmdline}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "[${MODE}] ${what} failed (${rc}):\n${out}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

string(TOUPPER "${BUILD_TYPE}" BUILD_TYPE_UPPER)
if(NOT BUILD_TYPE_UPPER)
  set(BUILD_TYPE_UPPER "RELEASE")
endif()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

set(configure_args
  -S "${CONSUMER_SOURCE_DIR}" -B "${WORK_DIR}/build" -G "${GENERATOR}"
  "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
  "-DLOOM_CONSUMER_MODE=${MODE}"
  "-DLOOM_SOURCE_DIR=${LOOM_SOURCE_DIR}")
if(MAKE_PROGRAM)
  list(APPEND configure_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(BUILD_TYPE)
  list(APPEND configure_args "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
endif()
if(MODE MATCHES "^(add_subdirectory|fetchcontent|header_only)$")
  # These compile Loom's definitions again inside the consumer's build (the library, or main.cpp
  # header-only): what is tested is the build plumbing, so without optimization, to save time.
  list(APPEND configure_args "-DCMAKE_CXX_FLAGS_${BUILD_TYPE_UPPER}=-O0")
endif()
if(CCACHE)
  list(APPEND configure_args "-DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE}")
endif()

if(MODE MATCHES "^(find_package|header_only)$")
  # Install this build tree into a private prefix; the consumer must find Loom only there.
  set(prefix "${WORK_DIR}/prefix")
  run_step("install" "${CMAKE_COMMAND}" --install "${LOOM_BINARY_DIR}" --prefix "${prefix}")
  list(APPEND configure_args "-DCMAKE_PREFIX_PATH=${prefix}"
       -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
elseif(NOT MODE MATCHES "^(add_subdirectory|fetchcontent)$")
  message(FATAL_ERROR "RunPackageTest.cmake: unknown MODE '${MODE}'")
endif()

run_step("configure" "${CMAKE_COMMAND}" ${configure_args})
if(MODE MATCHES "^(find_package|header_only)$")
  file(STRINGS "${WORK_DIR}/build/CMakeCache.txt" loom_dir REGEX "^loom_DIR:")
  if(NOT loom_dir MATCHES "=${prefix}/")
    message(FATAL_ERROR "[${MODE}] Loom was not found in the install prefix ${prefix}: ${loom_dir}")
  endif()
endif()
run_step("build" "${CMAKE_COMMAND}" --build "${WORK_DIR}/build")
run_step("run" "${WORK_DIR}/build/loom_consumer")
message("${step_output}")

if(NOT step_output MATCHES "loom ${LOOM_VERSION}\n")
  message(FATAL_ERROR "[${MODE}] the consumer did not print 'loom ${LOOM_VERSION}'")
endif()
if(NOT step_output MATCHES "i")
  message(FATAL_ERROR "[${MODE}] the consumer did not print the expression")
endif()
if(NOT step_output MATCHES "\nok\n")
  message(FATAL_ERROR "[${MODE}] the consumer did not print 'ok'")
endif()
if(HAS_JIT AND NOT MODE STREQUAL "header_only" AND NOT step_output MATCHES "jit ok\n")
  message(FATAL_ERROR "[${MODE}] the consumer did not build and run a kernel with loom::jit")
endif()
message(STATUS "[${MODE}] passed")
