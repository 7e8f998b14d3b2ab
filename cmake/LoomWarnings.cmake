# loom_set_warnings(target) and loom_set_program_optimization(target): the warning and optimization
# flags of Loom's own programs (tests, examples, bench).
# Warnings are not errors, so a newer compiler's new warning never breaks a user's build.
function(loom_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<CXX_COMPILER_ID:GNU,Clang,AppleClang>:-Wall -Wextra -Wpedantic>
    $<$<CXX_COMPILER_ID:MSVC>:/W4>)
endfunction()

# Test and example programs: every translation unit instantiates Loom's header-only compiler, and
# at -O1 they build about a third faster than at -O3 while the code under test (JIT kernels) is
# optimized by LLVM regardless. LOOM_PROGRAMS_OPT overrides the level (e.g. -O3).
set(LOOM_PROGRAMS_OPT "-O1" CACHE STRING "Optimization flag for Loom's tests and examples")
function(loom_set_program_optimization target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang" AND LOOM_PROGRAMS_OPT)
    target_compile_options(${target} PRIVATE ${LOOM_PROGRAMS_OPT})
  endif()
endfunction()
