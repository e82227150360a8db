# Finds NCCL's header and library: NCCL_INCLUDE_DIR, NCCL_LIBRARY, NCCL_VERSION, NCCL_FOUND and the
# imported target NCCL::nccl. Looks under NCCL_ROOT (variable or environment), the CUDA toolkit
# (where the CUDA packages put nccl.h and libnccl), and the Python wheel nvidia-nccl-cu* (its
# nvidia/nccl/{include,lib}, found with Python_EXECUTABLE, else python3 on PATH).
set(_nccl_hints)
foreach(_root IN ITEMS "${NCCL_ROOT}" "$ENV{NCCL_ROOT}")
  if(_root)
    list(APPEND _nccl_hints "${_root}")
  endif()
endforeach()
if(CUDAToolkit_LIBRARY_ROOT)
  list(APPEND _nccl_hints "${CUDAToolkit_LIBRARY_ROOT}")
endif()
if(CUDAToolkit_LIBRARY_DIR)
  list(APPEND _nccl_hints "${CUDAToolkit_LIBRARY_DIR}/..")
endif()
if(Python_EXECUTABLE)
  set(_nccl_python "${Python_EXECUTABLE}")
else()
  find_program(NCCL_PYTHON_EXECUTABLE NAMES python3)
  set(_nccl_python "${NCCL_PYTHON_EXECUTABLE}")
endif()
if(_nccl_python)
  execute_process(COMMAND "${_nccl_python}" -c "import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))"
                  OUTPUT_VARIABLE _nccl_wheel OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _nccl_status)
  if(_nccl_status EQUAL 0 AND _nccl_wheel)
    list(APPEND _nccl_hints "${_nccl_wheel}")
  endif()
endif()

find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${_nccl_hints} PATH_SUFFIXES include)
# The wheel ships libnccl.so.2 alone (no libnccl.so link).
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2 HINTS ${_nccl_hints} PATH_SUFFIXES lib lib64)
if(NCCL_INCLUDE_DIR AND EXISTS "${NCCL_INCLUDE_DIR}/nccl.h")
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nccl_lines REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
  foreach(_part MAJOR MINOR PATCH)
    string(REGEX REPLACE ".*#define NCCL_${_part} ([0-9]+).*" "\\1" _nccl_${_part} "${_nccl_lines}")
  endforeach()
  set(NCCL_VERSION "${_nccl_MAJOR}.${_nccl_MINOR}.${_nccl_PATCH}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_INCLUDE_DIR NCCL_LIBRARY VERSION_VAR NCCL_VERSION)
if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  add_library(NCCL::nccl UNKNOWN IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES IMPORTED_LOCATION "${NCCL_LIBRARY}"
                                              INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
endif()
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY NCCL_PYTHON_EXECUTABLE)
