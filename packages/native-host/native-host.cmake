# @kiln/native-host, for a GPU backend's CMakeLists.txt (after project()):
#   include(<this file>)       C++20, hidden visibility, PIC, Release by default, and defines
#     KILN_NATIVE_HOST_SOURCES   the shared host's .cpp files (add them to the addon target)
#     KILN_NATIVE_HOST_INCLUDE   its include/ directory (#include "kiln/…", kernels too: op_codes.h, rounding.h)
#   kiln_addon_target(<target>)  makes <target> a Node-API addon (.node, cmake-js headers and
#                                library, node-addon-api with C++ exceptions, the shared host's include/);
#                                on Linux the build fails when a symbol other than Node-API's stays
#                                unresolved (check-undefined.cmake, the addon's `--no-undefined`)
set(KILN_NATIVE_HOST_DIR ${CMAKE_CURRENT_LIST_DIR})
set(KILN_NATIVE_HOST_INCLUDE ${CMAKE_CURRENT_LIST_DIR}/include)
file(GLOB KILN_NATIVE_HOST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/src/*.cpp)

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_CXX_VISIBILITY_PRESET hidden)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Release)
endif()

function(kiln_addon_target target)
  set_target_properties(${target} PROPERTIES PREFIX "" SUFFIX ".node")
  target_include_directories(${target} PRIVATE ${CMAKE_JS_INC} ${KILN_NATIVE_HOST_INCLUDE})
  target_compile_definitions(${target} PRIVATE NAPI_VERSION=8 NODE_ADDON_API_DISABLE_DEPRECATED NAPI_CPP_EXCEPTIONS)
  target_link_libraries(${target} PRIVATE ${CMAKE_JS_LIB})
  if(MSVC AND CMAKE_JS_NODELIB_DEF AND CMAKE_JS_NODELIB_TARGET)
    execute_process(COMMAND ${CMAKE_AR} /def:${CMAKE_JS_NODELIB_DEF} /out:${CMAKE_JS_NODELIB_TARGET} ${CMAKE_STATIC_LINKER_FLAGS})
  endif()
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux" AND NOT CMAKE_CROSSCOMPILING)
    add_custom_command(TARGET ${target} POST_BUILD
                       COMMAND ${CMAKE_COMMAND} -DKILN_ADDON=$<TARGET_FILE:${target}> -P ${KILN_NATIVE_HOST_DIR}/check-undefined.cmake
                       VERBATIM)
  endif()
endfunction()
