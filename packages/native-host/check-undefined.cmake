# @kiln/native-host: the Linux stand-in for `-Wl,--no-undefined`, run after an addon links
# (kiln_addon_target adds it as a POST_BUILD step):
#   cmake -DKILN_ADDON=<path to the .node> -P check-undefined.cmake
# A Node-API addon cannot link with --no-undefined: its napi_* / node_api_* symbols are resolved
# from the node executable when the addon is loaded. This asks the dynamic loader (`ldd -r`) which
# symbols stay unresolved against the libraries the addon links, and fails the build when any is
# not Node's, so a declared but never defined function fails at build time, not at require().
# When a library the addon needs is missing here (a CUDA build on a machine without the driver),
# the check is skipped with a message, since the loader cannot tell what that library defines.
if(NOT KILN_ADDON)
  message(FATAL_ERROR "check-undefined.cmake: pass -DKILN_ADDON=<path to the .node>")
endif()
find_program(KILN_LDD ldd)
if(NOT KILN_LDD)
  message(STATUS "check-undefined: ldd not found; unresolved symbols of ${KILN_ADDON} not checked")
  return()
endif()
execute_process(COMMAND ${KILN_LDD} -r ${KILN_ADDON} OUTPUT_VARIABLE report ERROR_VARIABLE report_errors RESULT_VARIABLE status)
string(APPEND report "${report_errors}")
if(report MATCHES "=> not found")
  message(STATUS "check-undefined: a library ${KILN_ADDON} needs is not installed here; unresolved symbols not checked")
  return()
endif()
string(REGEX MATCHALL "undefined symbol: [^ \t\n]+" undefined "${report}")
set(unresolved "")
foreach(line IN LISTS undefined)
  string(REPLACE "undefined symbol: " "" symbol "${line}")
  if(NOT symbol MATCHES "^(napi_|node_api_)")
    list(APPEND unresolved ${symbol})
  endif()
endforeach()
if(unresolved)
  list(JOIN unresolved "\n  " names)
  message(FATAL_ERROR "${KILN_ADDON} links with symbols that nothing defines (only Node-API's may stay unresolved):\n  ${names}\n"
                      "Define them, add the source file that does to the target, or link the library that exports them.")
endif()
