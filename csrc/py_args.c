/* py_args.c: argument ranges and paths, checked before they reach C (see
 * py_core.h). */
#include "py_core.h"

/* Every number a user can pass is checked here before it reaches C: a
 * ValueError naming the argument when it is out of range (negative, NaN,
 * infinite or absurdly large, or a bool), a TypeError when it is no
 * number. */

/* An int (not a bool) from lo to hi (hi at most LLONG_MAX). Returns 0,
 * or -1 with an exception. */
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
    /* True is an int to Python, but a count or a port of True is a slip
     * (httpbench's Python checks refuse it the same way). */
    if (overflow != 0 || v < lo || v > hi || PyBool_Check(o)) {
        PyErr_Format(PyExc_ValueError, "%s must be from %lld to %lld, not %R", name, lo, hi, o);
        return -1;
    }
    *out = v;
    return 0;
}

/* A real number of seconds (or a rate), finite, above zero (or zero too,
 * with zero_ok) and at most max (a whole number), not a bool. Returns 0,
 * or -1 with an exception. */
int hbpy_arg_real(PyObject *o, const char *name, int zero_ok, double max, double *out)
{
    double v = PyFloat_AsDouble(o);
    if (v == -1.0 && PyErr_Occurred())
        return -1;
    if (!(zero_ok ? v >= 0 : v > 0) || !(v <= max) || PyBool_Check(o)) {
        PyErr_Format(PyExc_ValueError, "%s must be a finite number %s and at most %lld, not %R",
                     name, zero_ok ? "from 0" : "above 0", (long long)max, o);
        return -1;
    }
    *out = v;
    return 0;
}

/* One table entry's value into cfg. Returns 0, or -1 with an exception. */
static int put_setting(const hbpy_setting *s, PyObject *v, void *cfg)
{
    char *at = (char *)cfg + s->off;
    long long n;
    switch (s->kind) {
    case HBPY_FLAG: {
        int t = PyObject_IsTrue(v);
        if (t < 0)
            return -1;
        *(int *)at = t;
        return 0;
    }
    case HBPY_INT:
        if (hbpy_arg_int(v, s->name, s->lo, (long long)s->hi, &n) != 0)
            return -1;
        *(int *)at = (int)n;
        return 0;
    case HBPY_U64:
        if (hbpy_arg_int(v, s->name, s->lo, (long long)s->hi, &n) != 0)
            return -1;
        *(uint64_t *)at = (uint64_t)n;
        return 0;
    case HBPY_SEED: {
        unsigned long long u =
            PyLong_Check(v) ? PyLong_AsUnsignedLongLong(v) : (unsigned long long)-1;
        if (!PyLong_Check(v) || (u == (unsigned long long)-1 && PyErr_Occurred())) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "%s must be an int from 0 to 2**64 - 1, not %R", s->name,
                         v);
            return -1;
        }
        *(uint64_t *)at = u;
        return 0;
    }
    case HBPY_REAL:
    case HBPY_REAL_OR_0:
        return hbpy_arg_real(v, s->name, s->kind == HBPY_REAL_OR_0, s->hi, (double *)at);
    case HBPY_DOUBLE: {
        double d = PyFloat_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred())
            return -1;
        *(double *)at = d;
        return 0;
    }
    }
    return 0;
}

static int named(PyObject *key, const char *name)
{
    return PyUnicode_Check(key) && PyUnicode_CompareWithASCIIString(key, name) == 0;
}

int hbpy_read_settings(PyObject *settings, const char *who, const hbpy_setting *table, size_t n,
                       const char *const *objects, size_t nobjects, size_t nrequired, void *cfg)
{
    if (!PyDict_Check(settings)) {
        PyErr_Format(PyExc_TypeError, "%s: the settings must be a dict, not %.100s", who,
                     Py_TYPE(settings)->tp_name);
        return -1;
    }
    PyObject *key;
    Py_ssize_t pos = 0;
    while (PyDict_Next(settings, &pos, &key, NULL)) {
        int known = 0;
        for (size_t i = 0; i < n && !known; i++)
            known = named(key, table[i].name);
        for (size_t i = 0; i < nobjects && !known; i++)
            known = named(key, objects[i]);
        if (!known) {
            PyErr_Format(PyExc_TypeError, "%s: no setting %R", who, key);
            return -1;
        }
    }
    for (size_t i = 0; i < nrequired; i++)
        if (PyDict_GetItemString(settings, objects[i]) == NULL) {
            PyErr_Format(PyExc_TypeError, "%s: the setting %s is needed", who, objects[i]);
            return -1;
        }
    for (size_t i = 0; i < n; i++) {
        PyObject *v = PyDict_GetItemString(settings, table[i].name); /* borrowed */
        if (v == NULL && table[i].required) {
            PyErr_Format(PyExc_TypeError, "%s: the setting %s is needed", who, table[i].name);
            return -1;
        }
        if (v != NULL && put_setting(&table[i], v, cfg) != 0)
            return -1;
    }
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
