# Precompiled headers under ccache. Tests and examples each compile one PCH in an owner target and
# reuse it in every program; with GCC, ccache caches those programs only when they are compiled
# with -fpch-preprocess (loom_pch_user). The owner's compile itself must bypass ccache
# (loom_pch_owner): ccache keys it by the preprocessed output, and with -fpch-preprocess the
# cmake_pch.hxx.gch that an earlier build left beside the header turns that output into a single
# `#pragma GCC pch_preprocess` line. Every version of the headers then shares one cache entry,
# and a fresh clone could be handed a PCH of older headers (redefinition errors in every test).
function(loom_pch_user target)
  if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -fpch-preprocess)
  endif()
endfunction()

function(loom_pch_owner target)
  set_target_properties(${target} PROPERTIES CXX_COMPILER_LAUNCHER "")
endfunction()
