// leak_probe.c — leaks on purpose. .ci/run builds it with the sanitizer flags
// and expects LeakSanitizer to report it: proof that the SAN stage's leak
// checks are really on on this machine, not silently off.
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    volatile char *p = malloc(4096);
    p[0] = 1;
    p = NULL;  // the only pointer is gone: a definite leak
    printf("leak probe: leaked 4096 bytes\n");
    return 0;
}
