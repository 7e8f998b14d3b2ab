# cmake -P script that runs one example (-D EXAMPLE=<program>) for ctest: prints its output and
# fails unless it exits 0 and the last non-empty line of its stdout is exactly `ok`.
cmake_minimum_required(VERSION 3.20)

if(NOT EXAMPLE)
  message(FATAL_ERROR "RunExample.cmake: -D EXAMPLE=<program> is required")
endif()

execute_process(COMMAND "${EXAMPLE}"
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE err)

# Echo the program's output for ctest's log (a quoted argument keeps its semicolons).
message("${out}")
if(NOT err STREQUAL "")
  message("[stderr]\n${err}")
endif()

if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "${EXAMPLE} exited with ${rc}")
endif()

# The last non-empty line, without a trailing carriage return or spaces.
string(REGEX REPLACE "[ \t\r\n]+$" "" trimmed "${out}")
string(FIND "${trimmed}" "\n" last_newline REVERSE)
if(last_newline EQUAL -1)
  set(last_line "${trimmed}")
else()
  math(EXPR start "${last_newline} + 1")
  string(SUBSTRING "${trimmed}" ${start} -1 last_line)
endif()
string(REGEX REPLACE "\r$" "" last_line "${last_line}")

if(NOT last_line STREQUAL "ok")
  message(FATAL_ERROR "${EXAMPLE}: the last line of its output is '${last_line}', expected 'ok'")
endif()
