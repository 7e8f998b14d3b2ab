# cmake -P check of Loom's include graph (docs/architecture.md, "What may include what"):
#   cmake -D INCLUDE_DIR=<repo>/include -P cmake/CheckLayers.cmake
# fails, listing every violation, when a header under include/loom
#   - includes a header of a higher layer (the order is LOOM_LAYERS below);
#   - includes a sibling backend (codegen/llvm <-> codegen/cuda, backend/cpu <-> backend/cuda);
#   - includes an implementation file (*/impl/) other than at its end for header-only mode
#     (#if LOOM_HEADER_ONLY), unless it is an implementation file itself;
#   - includes LLVM outside codegen/llvm/ and backend/cpu/;
#   - takes part in an include cycle (the header-only includes of implementation files aside);
#   - is reached from the public headers in separate compilation but is not one of them (the list
#     LOOM_PUBLIC_HEADERS in cmake/LoomPublicHeaders.cmake): what a user's file parses stays
#     declarations only.
# With -D PLANT=1 it instead proves that it can fail: it copies the headers, plants an upward
# include (ir/expr.hpp includes lower/pipeline.hpp) and a cycle (ir/dtype.hpp includes
# ir/expr.hpp, which includes it), and checks that the check fails naming both.
cmake_minimum_required(VERSION 3.20)

if(NOT INCLUDE_DIR)
  message(FATAL_ERROR "CheckLayers.cmake: -D INCLUDE_DIR=<repo>/include is required")
endif()
# A relative INCLUDE_DIR is taken from the working directory (file(GLOB) alone would not).
get_filename_component(INCLUDE_DIR "${INCLUDE_DIR}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")

# The layers, lowest first: a header may include its own layer and the layers before it.
set(LOOM_LAYERS support ir te schedule lower codegen runtime interp sim backend tune lib top)

# The headers a user's file reaches (LOOM_PUBLIC_HEADERS) and the entry points (LOOM_PUBLIC_ROOTS).
include("${CMAKE_CURRENT_LIST_DIR}/LoomPublicHeaders.cmake")

if(PLANT)
  get_filename_component(_work "${CMAKE_CURRENT_BINARY_DIR}/loom-layers-planted" ABSOLUTE)
  file(REMOVE_RECURSE "${_work}")
  file(COPY "${INCLUDE_DIR}/loom" DESTINATION "${_work}")
  file(APPEND "${_work}/loom/ir/expr.hpp" "\n#include \"loom/lower/pipeline.hpp\"\n")
  file(APPEND "${_work}/loom/ir/dtype.hpp" "\n#include \"loom/ir/expr.hpp\"\n")
  execute_process(COMMAND "${CMAKE_COMMAND}" -D "INCLUDE_DIR=${_work}" -P "${CMAKE_CURRENT_LIST_FILE}"
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  file(REMOVE_RECURSE "${_work}")
  if(_rc EQUAL 0)
    message(FATAL_ERROR "the layer check passed headers with a planted violation:\n${_out}")
  endif()
  foreach(_expected "loom/ir/expr.hpp includes loom/lower/pipeline.hpp, a header of a higher layer (lower)"
                    "loom/ir/dtype.hpp -> loom/ir/expr.hpp")
    string(FIND "${_out}" "${_expected}" _at)
    if(_at EQUAL -1)
      message(FATAL_ERROR "the layer check failed on the planted violations but did not say\n  ${_expected}\n"
                          "It said:\n${_out}")
    endif()
  endforeach()
  message(STATUS "the layer check fails on planted violations, naming them")
  return()
endif()

function(layer_of path out)
  string(REPLACE "/" ";" parts "${path}")
  list(LENGTH parts n)
  list(GET parts 1 first)
  if(n EQUAL 2 OR first STREQUAL "impl")
    set(${out} top PARENT_SCOPE)
  else()
    set(${out} ${first} PARENT_SCOPE)
  endif()
endfunction()

function(sub_of path out)  # codegen/llvm, backend/cuda, ...: the backend a file belongs to
  string(REPLACE "/" ";" parts "${path}")
  list(LENGTH parts n)
  set(${out} "" PARENT_SCOPE)
  if(n GREATER 3)
    list(GET parts 1 first)
    list(GET parts 2 second)
    if(first MATCHES "^(codegen|backend)$" AND NOT second STREQUAL "impl")
      set(${out} "${first}/${second}" PARENT_SCOPE)
    endif()
  endif()
endfunction()

file(GLOB_RECURSE _files RELATIVE "${INCLUDE_DIR}" "${INCLUDE_DIR}/loom/*.hpp")
if(NOT _files)
  message(FATAL_ERROR "CheckLayers.cmake: no headers under ${INCLUDE_DIR}/loom: pass Loom's include directory")
endif()
list(SORT _files)
set(_violations "")
set(_nodes "")
foreach(f IN LISTS _files)
  string(MAKE_C_IDENTIFIER "${f}" id)
  list(APPEND _nodes "${f}")
  set(edges_${id} "")      # includes outside #if LOOM_HEADER_ONLY
  file(STRINGS "${INCLUDE_DIR}/${f}" lines REGEX "^[ \t]*#[ \t]*(include|if|endif)")
  layer_of("${f}" lf)
  sub_of("${f}" sf)
  list(FIND LOOM_LAYERS "${lf}" rank_f)
  set(header_only_block OFF)
  foreach(line IN LISTS lines)
    if(line MATCHES "^[ \t]*#[ \t]*if[ \t]+LOOM_HEADER_ONLY")
      set(header_only_block ON)
      continue()
    elseif(line MATCHES "^[ \t]*#[ \t]*endif")
      set(header_only_block OFF)
      continue()
    endif()
    if(line MATCHES "#[ \t]*include[ \t]*<llvm/")
      if(NOT f MATCHES "^loom/(codegen/llvm|backend/cpu)/")
        list(APPEND _violations "${f} includes LLVM; only codegen/llvm/ and backend/cpu/ may")
      endif()
      continue()
    endif()
    if(NOT line MATCHES "#[ \t]*include[ \t]*[\"<](loom/[^\">]+)[\">]")
      continue()
    endif()
    set(i "${CMAKE_MATCH_1}")
    layer_of("${i}" li)
    sub_of("${i}" si)
    list(FIND LOOM_LAYERS "${li}" rank_i)
    if(rank_i GREATER rank_f)
      list(APPEND _violations "${f} includes ${i}, a header of a higher layer (${li})")
    endif()
    if(lf STREQUAL li AND sf AND si AND NOT sf STREQUAL si)
      list(APPEND _violations "${f} includes ${i}: ${sf} and ${si} are separate backends")
    endif()
    if(i MATCHES "/impl/" AND NOT f MATCHES "/impl/" AND NOT header_only_block)
      list(APPEND _violations "${f} includes the implementation file ${i}; include its public header, or "
                              "include it under #if LOOM_HEADER_ONLY at the end of that header")
    endif()
    if(NOT header_only_block)
      list(APPEND edges_${id} "${i}")
    endif()
  endforeach()
endforeach()

# Include cycles: a depth-first walk; state_<id> is 1 while a file is on the walk's path.
set(_path "")
function(walk f)
  string(MAKE_C_IDENTIFIER "${f}" id)
  set(state_${id} 1 PARENT_SCOPE)
  set(state_${id} 1)
  list(APPEND _path "${f}")
  set(_path "${_path}" PARENT_SCOPE)
  foreach(i IN LISTS edges_${id})
    string(MAKE_C_IDENTIFIER "${i}" iid)
    if("${state_${iid}}" STREQUAL "1")
      list(FIND _path "${i}" at)
      list(SUBLIST _path ${at} -1 cycle)
      list(APPEND cycle "${i}")
      list(JOIN cycle " -> " text)
      list(APPEND _violations "include cycle: ${text}")
      set(_violations "${_violations}" PARENT_SCOPE)
    elseif(NOT "${state_${iid}}" STREQUAL "2")
      walk("${i}")
      foreach(n IN LISTS _nodes)  # the walk's results, back into this scope
        string(MAKE_C_IDENTIFIER "${n}" nid)
        if(DEFINED state_${nid})
          set(state_${nid} "${state_${nid}}" PARENT_SCOPE)
        endif()
      endforeach()
      set(_violations "${_violations}" PARENT_SCOPE)
    endif()
  endforeach()
  set(state_${id} 2 PARENT_SCOPE)
  list(POP_BACK _path)
  set(_path "${_path}" PARENT_SCOPE)
endfunction()
foreach(f IN LISTS _nodes)
  string(MAKE_C_IDENTIFIER "${f}" id)
  if(NOT DEFINED state_${id})
    walk("${f}")
  endif()
endforeach()

# What a user's file parses in separate compilation.
set(_queue ${LOOM_PUBLIC_ROOTS})
set(_seen "")
while(_queue)
  list(POP_FRONT _queue f)
  if(f IN_LIST _seen)
    continue()
  endif()
  list(APPEND _seen "${f}")
  if(NOT f IN_LIST LOOM_PUBLIC_HEADERS)
    list(APPEND _violations "${f} is reached from the public headers in separate compilation but is not "
                            "one of them (cmake/LoomPublicHeaders.cmake, LOOM_PUBLIC_HEADERS): declare what users "
                            "need in a public header and keep the rest in an internal one")
  endif()
  string(MAKE_C_IDENTIFIER "${f}" id)
  list(APPEND _queue ${edges_${id}})
endwhile()

list(REMOVE_DUPLICATES _violations)
list(LENGTH _files nfiles)
if(_violations)
  list(LENGTH _violations nv)
  list(JOIN _violations "\n  " text)
  message(FATAL_ERROR "${nv} include rule violation(s) in ${nfiles} headers (docs/architecture.md):\n  ${text}")
endif()
message(STATUS "include rules hold for ${nfiles} headers")
