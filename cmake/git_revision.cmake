# Run at build time (a custom target): writes OUT with the source tree's git revision, or
# "unknown" outside a git checkout, and touches it only when the revision changed, so a commit
# rebuilds main.cpp alone and an unchanged tree rebuilds nothing.
execute_process(COMMAND git -C "${SRC}" describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR rev STREQUAL "")
  set(rev "unknown")
endif()
set(text "#pragma once\nnamespace mtrain {\ninline constexpr const char* kGitRevision = \"${rev}\";\n}\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE "${OUT}" "${text}")
endif()
