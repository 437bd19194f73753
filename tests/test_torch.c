#include "test.h"
const test_case torch_tests[] = {{0,0}};
const int n_torch_tests = 0;
