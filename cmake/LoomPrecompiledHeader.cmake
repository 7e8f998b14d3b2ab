# Precompiled headers under ccache. Tests and examples each compile one PCH in an owner target and
# reuse it in every program; with GCC, ccache caches those programs only when they are compiled
# with -fpch-preprocess (loom_pch_user). The owner's compile itself bypasses ccache (loom_pch_owner):
# ccache's preprocessor mode keys it by the preprocessed output, which does not determine the PCH.
# An incremental build leaves cmake_pch.hxx.gch beside the header, and with -fpch-preprocess the
# output is then a single `#pragma GCC pch_preprocess` line, so every version of the headers shares
# one cache entry; and a header changed only in comments preprocesses the same, while the PCH
# records each header's checksum. Either way a later build (CI's fresh clone, with the same cache)
# can be handed a PCH of other headers: GCC then includes those headers again in every test, and
# redefinition errors follow. The price: GCC's PCH differs from build to build, so after a fresh
# PCH the programs that use it miss the cache too.
function(loom_pch_user target)
  if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -fpch-preprocess)
  endif()
endfunction()

function(loom_pch_owner target)
  set_target_properties(${target} PROPERTIES CXX_COMPILER_LAUNCHER "")
endfunction()
