/* py_args.c: argument ranges and paths, checked before they reach C (see
 * py_core.h). */
#include "py_core.h"

/* Every number a user can pass is checked here before it reaches C: a
 * ValueError naming the argument when it is out of range (negative, NaN,
 * infinite or absurdly large), a TypeError when it is no number. */

/* An int from lo to hi (hi at most LLONG_MAX). Returns 0, or -1 with an
 * exception. */
int hbpy_arg_int(PyObject *o, const char *name, long long lo, long long hi, long long *out)
{
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", name, Py_TYPE(o)->tp_name);
        return -1;
    }
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow != 0 || v < lo || v > hi) {
        PyErr_Format(PyExc_ValueError, "%s must be from %lld to %lld, not %R", name, lo, hi, o);
        return -1;
    }
    *out = v;
    return 0;
}

/* A real number of seconds (or a rate), finite, above zero (or zero too,
 * with zero_ok) and at most max (a whole number). Returns 0, or -1 with an
 * exception. */
int hbpy_arg_real(PyObject *o, const char *name, int zero_ok, double max, double *out)
{
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred())
        return -1;
    if (!(zero_ok ? v >= 0 : v > 0) || !(v <= max)) {
        PyErr_Format(PyExc_ValueError, "%s must be a finite number %s and at most %lld, not %R",
                     name, zero_ok ? "from 0" : "above 0", (long long)max, o);
        return -1;
    }
    *out = v;
    return 0;
}

/* "O&" converter for a Unix socket's path: None, or str/bytes/PathLike
 * made bytes by PyUnicode_FSConverter (which refuses a NUL); *out is a new
 * reference, or stays NULL for None. */
int hbpy_unix_path_arg(PyObject *o, void *out)
{
    if (o == Py_None)
        return 1;
    return PyUnicode_FSConverter(o, out);
}
