# Installs tally to a scratch prefix, then configures, builds and runs examples/consumer against
# it: the exported package (find_package(tally) + tally::tally, and tally::patterns) works for a
# user's project.
set(prefix "${BUILD_DIR}/install-test")
set(consumer "${BUILD_DIR}/consumer-test")
file(REMOVE_RECURSE "${prefix}" "${consumer}")
foreach(step
    "${CMAKE_COMMAND};--install;${BUILD_DIR};--prefix;${prefix}"
    "${CMAKE_COMMAND};-S;${SOURCE_DIR}/examples/consumer;-B;${consumer};-DCMAKE_PREFIX_PATH=${prefix};-DCMAKE_BUILD_TYPE=Release"
    "${CMAKE_COMMAND};--build;${consumer}")
  execute_process(COMMAND ${step} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "step failed: ${step}\n${out}")
  endif()
endforeach()
execute_process(COMMAND "${consumer}/consumer" RESULT_VARIABLE status OUTPUT_VARIABLE out)
if(NOT status EQUAL 0 OR NOT out MATCHES "^2 1 2 \n1 3 1 1 0 0 0 1 \\| underflow 1")
  message(FATAL_ERROR "consumer printed (exit ${status}):\n${out}")
endif()
message(STATUS "consumer: ${out}")
execute_process(COMMAND "${consumer}/patterns_consumer" RESULT_VARIABLE status OUTPUT_VARIABLE out)
if(NOT status EQUAL 0 OR NOT out STREQUAL "0.119 0.622 0.953\n96\n6\n")
  message(FATAL_ERROR "patterns_consumer printed (exit ${status}):\n${out}")
endif()
message(STATUS "patterns_consumer: ${out}")
