# The layering rules of docs/architecture.md, checked on the sources: the public headers include
# no CUDA header and no internal one, the base layer (src/base) nothing of the libraries built on
# it, and the parallel patterns none of the histogram library's internals (src/core, src/cuda).
function(check_includes what forbidden)
  foreach(file ${ARGN})
    file(STRINGS "${file}" lines REGEX "^#include")
    foreach(line ${lines})
      if(line MATCHES "${forbidden}")
        message(SEND_ERROR "${what}: ${file} has ${line}")
      endif()
    endforeach()
  endforeach()
endfunction()

file(GLOB_RECURSE public "${SOURCE_DIR}/include/tally/*.hpp")
check_includes("public headers are CUDA-free and self-contained" "cuda|\"(core|base|cpu|patterns)/" ${public})
file(GLOB_RECURSE base "${SOURCE_DIR}/src/base/*")
check_includes("the base layer stands alone" "\"(core|cuda|cpu|patterns)/" ${base})
file(GLOB_RECURSE patterns "${SOURCE_DIR}/src/patterns/*.hpp" "${SOURCE_DIR}/src/patterns/*.cpp"
     "${SOURCE_DIR}/src/patterns/*.cu" "${SOURCE_DIR}/src/patterns/*.cuh" "${SOURCE_DIR}/include/tally/patterns/*")
check_includes("the patterns use no histogram internals" "\"(core|cuda|cpu)/|tally/(plan|histogram|device|axis|edges|strategy|serialize|nccl)\\.hpp" ${patterns})
