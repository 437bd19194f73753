#include "test.h"
const test_case prop_tests[] = {{0,0}};
const int n_prop_tests = 0;
