// The guest suites' main: a re-executed child runs its child mode
// (tests/support/self_children.h); otherwise the tests run inside the
// delegated scope they assume (tests/v2guest/delegated_scope.h).
#include <gtest/gtest.h>

#include "tests/support/self_children.h"
#include "tests/v2guest/delegated_scope.h"

int main(int argc, char** argv) {
  vri::testing::runChildMode(argc, argv);
  ::testing::AddGlobalTestEnvironment(new vri::testing::DelegatedScope);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
