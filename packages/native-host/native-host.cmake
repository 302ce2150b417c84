# @kiln/native-host, for a backend's CMakeLists.txt: include(<this file>) defines
#   KILN_NATIVE_HOST_SOURCES   the shared host's .cpp files (add them to the addon target)
#   KILN_NATIVE_HOST_INCLUDE   its include/ directory (#include "kiln/…", also for kernels: op_codes.h, rounding.h)
set(KILN_NATIVE_HOST_INCLUDE ${CMAKE_CURRENT_LIST_DIR}/include)
file(GLOB KILN_NATIVE_HOST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/src/*.cpp)
