/// \file
/// The one include for Catch2, whichever major version is installed: Debian/Ubuntu ship
/// 2.13 (a single header), newer systems 3.x (a compiled library).
#pragma once

#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#define CML_CATCH_MAJOR 3
#else
#include <catch2/catch.hpp>
#define CML_CATCH_MAJOR 2
#endif
