# Helpers shared by Loom's CMake files.

# loom_add_library(name SRCS... [DEPENDS tgt...] [LINK lib...])
# A static library that links the shared libMLIR.so and libLLVM.so (never the
# per-component static MLIR libraries: mixing both in one process breaks
# MLIR's global registries). Position-independent: the Python module
# (python/) links the compiler into a shared object.
function(loom_add_library name)
  cmake_parse_arguments(ARG "" "" "DEPENDS;LINK" ${ARGN})
  add_library(${name} STATIC ${ARG_UNPARSED_ARGUMENTS})
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  target_link_libraries(${name} PUBLIC ${ARG_LINK} MLIR LLVM)
endfunction()

# loom_add_tool(name SRCS... [LINK lib...]): an executable in build/bin.
function(loom_add_tool name)
  cmake_parse_arguments(ARG "" "" "LINK" ${ARGN})
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE ${ARG_LINK} MLIR LLVM)
endfunction()
