// The checker's proxies of a lab's interface (cml/remote.hpp): one definition per function of
// the lab's tests/remote_calls.hpp, each sending its call to the runner. Compiled once per lab
// with CML_REMOTE_CALLS_HEADER naming that file.
#include "cml/remote.hpp"
#include CML_REMOTE_CALLS_HEADER

#define CML_PROXY(R, F, PARAMS, ARGS) \
  R F PARAMS { return ::cml::remote::Call<decltype(&F)>{#F} ARGS; }
CML_REMOTE_CALLS(CML_PROXY)
#undef CML_PROXY
