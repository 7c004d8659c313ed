/* shape.h: hb_shape_*, a load shape: the arrival rate over a run as
 * stages, each ramping linearly from the last one's target (0 before the
 * first, as k6's ramping-arrival-rate starts) to its own over its length.
 *
 * The timing loop asks when the k-th request of the run is due: the
 * instant by which the shape's integral reaches k. Connection g of C takes
 * requests g, g + C, g + 2C, ..., as under a constant rate, so the run's
 * starts follow the shape at any number of connections. Plain arithmetic:
 * no allocation, no system calls.
 */
#ifndef HB_SHAPE_H
#define HB_SHAPE_H

/* Most stages a shape may have. */
#define HB_SHAPE_MAX 1000

typedef struct {
    int n;
    double length;               /* seconds, all stages together */
    double total;                /* requests the shape holds: its integral */
    double t0[HB_SHAPE_MAX];     /* when stage i begins, seconds from the start */
    double dur[HB_SHAPE_MAX];    /* its length, above 0 */
    double from[HB_SHAPE_MAX];   /* the rate it ramps from (req/s) */
    double to[HB_SHAPE_MAX];     /* the rate it ramps to */
    double before[HB_SHAPE_MAX]; /* requests due before it begins */
} hb_shape;

/* Builds s from n stages: stage i lasts seconds[i] (finite, above 0) and
 * ends at rate targets[i] (finite, 0 or above). Returns 0, or -1 when n is
 * not 1..HB_SHAPE_MAX or a value is out of range (s is then unspecified). */
int hb_shape_init(hb_shape *s, const double *seconds, const double *targets, int n);

/* Seconds from the start at which request k (0, 1, ...) is due, or -1 when
 * the shape holds fewer than k + 1 requests (none is due again). */
double hb_shape_due(const hb_shape *s, double k);

/* The rate the shape asks for at t seconds from the start (0 past its end).
 * (A shape of connections, k6's ramping VUs, reads the same: its value.) */
double hb_shape_rate(const hb_shape *s, double t);

/* The first instant at or after t (seconds from the start) at which the
 * shape's value is at least `level` (within 1e-9), or -1 if none. */
double hb_shape_when(const hb_shape *s, double level, double t);

#endif
