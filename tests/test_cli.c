#include "test.h"
const test_case cli_tests[] = {{0,0}};
const int n_cli_tests = 0;
