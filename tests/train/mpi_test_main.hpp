// Boost.Test global fixture that brings MPI up and down around the test module, for tests that
// build Communicators in-process.
#pragma once
#include <mpi.h>

#include <boost/test/unit_test.hpp>

struct MpiFixture {
  MpiFixture() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) MPI_Init(nullptr, nullptr);
  }
  ~MpiFixture() { MPI_Finalize(); }
};
BOOST_TEST_GLOBAL_FIXTURE(MpiFixture);
