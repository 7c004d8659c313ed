/* test_shape.c: a load shape's due instants and turns, against the
 * integral worked by hand: rising, flat, falling, a stage at 0, one stage
 * and many, and the shape's end.
 *
 *   cc -O1 -g -Wall -Wextra -o test_shape tests/c/test_shape.c csrc/shape.c -lm
 *   ./test_shape           prints "N passed, N failed"
 */
#include "../../csrc/shape.h"

#include <math.h>
#include <stdio.h>

static int passed, failed;

static void near(const char *what, double got, double want)
{
    if (fabs(got - want) <= 1e-9 * (1 + fabs(want))) {
        passed++;
    } else {
        failed++;
        printf("FAIL %s: got %.12g, want %.12g\n", what, got, want);
    }
}

int main(void)
{
    hb_shape s;
    /* 0 -> 100/s over 2 s (100 requests), 100/s for 1 s (100), 100 -> 0
     * over 2 s (100), 0 for 1 s, 0 -> 50/s over 1 s (25). */
    double secs[] = {2, 1, 2, 1, 1}, rates[] = {100, 100, 0, 0, 50};
    near("init", hb_shape_init(&s, secs, rates, 5), 0);
    near("total", s.total, 325);
    near("length", s.length, 7);
    /* Rising from 0: k = 25 t^2, so t = sqrt(k / 25). */
    near("first", hb_shape_due(&s, 0), 0);
    near("rising 1", hb_shape_due(&s, 1), sqrt(1 / 25.0));
    near("rising 64", hb_shape_due(&s, 64), sqrt(64 / 25.0));
    near("stage 2 starts", hb_shape_due(&s, 100), 2);
    near("flat", hb_shape_due(&s, 150), 2.5);
    /* Falling from 100: k - 200 = 100 x - 25 x^2. */
    double x = (100 - sqrt(100 * 100 - 4 * 25 * 75.0)) / 50; /* 75 of them */
    near("falling 75", hb_shape_due(&s, 275), 3 + x);
    near("falling last", hb_shape_due(&s, 299.999999), 5 - sqrt(0.000001 / 25));
    /* None in the stage at 0: the next is in the last stage, from 0 again. */
    near("after the pause", hb_shape_due(&s, 300), 6);
    near("last stage 16", hb_shape_due(&s, 316), 6 + sqrt(16 / 25.0));
    near("past the end", hb_shape_due(&s, 325), -1);
    near("rate rising", hb_shape_rate(&s, 1), 50);
    near("rate falling", hb_shape_rate(&s, 4), 50);
    near("rate paused", hb_shape_rate(&s, 5.5), 0);
    near("rate after", hb_shape_rate(&s, 8), 0);
    /* Turns: the shape first at a level, from an instant on. */
    near("when 50", hb_shape_when(&s, 50, 0), 1);
    near("when 100", hb_shape_when(&s, 100, 0), 2);
    near("when now", hb_shape_when(&s, 50, 2.5), 2.5);
    near("when again", hb_shape_when(&s, 25, 5), 6.5);
    near("when never", hb_shape_when(&s, 51, 5), -1);
    /* One stage, ramping from 0 to 20/s over 10 s: k = t^2, 100 in all. */
    double one[] = {10}, r[] = {20};
    near("one", hb_shape_init(&s, one, r, 1), 0);
    near("one due 99", hb_shape_due(&s, 99), sqrt(99.0));
    near("one due 100", hb_shape_due(&s, 100), -1);
    /* Bad stages are refused. */
    double bad_secs[] = {0}, bad_rate[] = {-1}, nan_v[] = {NAN};
    near("zero length", hb_shape_init(&s, bad_secs, r, 1), -1);
    near("negative rate", hb_shape_init(&s, one, bad_rate, 1), -1);
    near("nan", hb_shape_init(&s, nan_v, r, 1), -1);
    near("no stages", hb_shape_init(&s, one, r, 0), -1);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
