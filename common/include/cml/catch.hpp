/// \file
/// The one include for Catch2, whichever major version CMake found: Debian/Ubuntu ship 2.13
/// (a single header), newer systems 3.x (a compiled library). CMake passes
/// CML_CATCH_MAJOR from the package it found, so stray headers of the other version on the
/// include path cannot be picked up by mistake.
#pragma once

#ifndef CML_CATCH_MAJOR
#if __has_include(<catch2/catch_all.hpp>)
#define CML_CATCH_MAJOR 3
#else
#define CML_CATCH_MAJOR 2
#endif
#endif

#if CML_CATCH_MAJOR == 3
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif
