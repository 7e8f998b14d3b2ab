# loom_set_warnings(target): the warning flags for Loom's own targets (tests, examples, bench).
# Warnings are not errors, so a newer compiler's new warning never breaks a user's build.
function(loom_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<CXX_COMPILER_ID:GNU,Clang,AppleClang>:-Wall -Wextra -Wpedantic>
    $<$<CXX_COMPILER_ID:MSVC>:/W4>)
endfunction()
