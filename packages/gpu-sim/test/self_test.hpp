// Shared by gpu-sim's C++ self-tests: the check reporter every self-test prints through
// ("ok <name>", its detail under it when there is one, or "FAIL <name>: <why>"), the failure
// count main() returns from, and substring search for the simulator's fault messages.
#pragma once

#include <cstdio>
#include <string>

namespace self_test {

/** Checks that failed so far: main() returns 1 when it is not zero. */
inline int failures = 0;

/** Prints "ok name" (and the detail, when given) or "FAIL name: detail", counting the failure. */
inline void check(bool condition, const char* name, const std::string& detail = "") {
  if (condition) {
    std::printf("ok %s\n", name);
    if (!detail.empty()) std::printf("   message: %s\n", detail.c_str());
  } else {
    std::printf("FAIL %s: %s\n", name, detail.c_str());
    failures++;
  }
}

/** True when `part` occurs in `text`. */
inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace self_test
