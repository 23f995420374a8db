// The runner's dispatch table of a lab's interface (cml/remote.hpp): one entry per function of
// the lab's tests/remote_calls.hpp, calling the student's definition. Compiled once per lab
// with CML_REMOTE_CALLS_HEADER naming that file.
#include "cml/remote.hpp"
#include CML_REMOTE_CALLS_HEADER

#define CML_ENTRY(R, F, PARAMS, ARGS) {#F, &::cml::remote::Serve<decltype(&F)>::serve<&F>},

const std::vector<cml::remote::Entry>& cml::remote::lab_entries() {
  static const std::vector<Entry> entries = {CML_REMOTE_CALLS(CML_ENTRY)};
  return entries;
}
#undef CML_ENTRY
