/* shape.c: a load shape's due times, by inverting its integral. */
#include "shape.h"

#include <math.h>

int hb_shape_init(hb_shape *s, const double *seconds, const double *targets, int n)
{
    if (n < 1 || n > HB_SHAPE_MAX)
        return -1;
    double t = 0, count = 0, rate = 0;
    for (int i = 0; i < n; i++) {
        if (!isfinite(seconds[i]) || !(seconds[i] > 0) || !isfinite(targets[i]) ||
            !(targets[i] >= 0))
            return -1;
        s->t0[i] = t;
        s->dur[i] = seconds[i];
        s->from[i] = rate;
        s->to[i] = targets[i];
        s->before[i] = count;
        /* A linear ramp's integral: its mean rate times its length. */
        count += (rate + targets[i]) / 2 * seconds[i];
        t += seconds[i];
        rate = targets[i];
    }
    s->n = n;
    s->length = t;
    s->total = count;
    return 0;
}

double hb_shape_due(const hb_shape *s, double k)
{
    if (!(k < s->total))
        return -1;
    /* The stage holding the k-th request: the last that begins at or
     * before it (a stage at rate 0 holds none, so the next one, which
     * begins at the same count, is the one found). */
    int lo = 0, hi = s->n - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (s->before[mid] <= k)
            lo = mid;
        else
            hi = mid - 1;
    }
    /* Within the stage, rate(x) = a + b x, and its integral a x + b x^2 / 2
     * reaches m at x = 2m / (a + sqrt(a^2 + 2 b m)): the root that is
     * stable for a rising ramp, a falling one and a flat one alike. */
    double m = k - s->before[lo];
    double a = s->from[lo], b = (s->to[lo] - s->from[lo]) / s->dur[lo];
    double disc = a * a + 2 * b * m;
    double x = m <= 0 ? 0 : 2 * m / (a + sqrt(disc > 0 ? disc : 0));
    if (!(x <= s->dur[lo]))
        x = s->dur[lo];
    return s->t0[lo] + x;
}

double hb_shape_rate(const hb_shape *s, double t)
{
    for (int i = 0; i < s->n; i++)
        if (t < s->t0[i] + s->dur[i])
            return s->from[i] + (s->to[i] - s->from[i]) * (t - s->t0[i]) / s->dur[i];
    return 0;
}

double hb_shape_when(const hb_shape *s, double level, double t)
{
    level -= 1e-9;
    for (int i = 0; i < s->n; i++) {
        double end = s->t0[i] + s->dur[i];
        if (end <= t)
            continue;
        double x0 = t > s->t0[i] ? t : s->t0[i];
        double v0 = s->from[i] + (s->to[i] - s->from[i]) * (x0 - s->t0[i]) / s->dur[i];
        if (v0 >= level)
            return x0;
        if (s->to[i] >= level) /* rising through it within the stage */
            return s->t0[i] + (level - s->from[i]) / (s->to[i] - s->from[i]) * s->dur[i];
    }
    return -1;
}
