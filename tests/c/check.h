/* check.h: the plain-C tests' tally: check() counts a case passed or
 * failed (naming a failure), checks_done() prints "N passed, N failed",
 * what tests/package/test_c.py reads, and gives main's exit status. */
#ifndef HB_CHECK_H
#define HB_CHECK_H

#include <stdio.h>

static int passed, failed;

static inline void check(const char *what, int ok)
{
    if (ok) {
        passed++;
    } else {
        failed++;
        printf("FAIL %s\n", what);
    }
}

static inline int checks_done(void)
{
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}

#endif
