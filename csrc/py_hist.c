/* py_hist.c: httpbench.Histogram, the latency histogram. */
#include "py_core.h"

#include <math.h>

typedef struct {
    PyObject_HEAD
    hb_hist h;
} HistogramObject;

static void Histogram_dealloc(HistogramObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static int Histogram_init(HistogramObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, ":Histogram", kwlist))
        return -1;
    hb_hist_init(&self->h);
    return 0;
}

/* A count or a nanosecond value: an int (not a bool) from 0 to 2**64-1, a
 * ValueError naming `name` otherwise (a TypeError for no int). */
static int arg_u64(PyObject *o, const char *name, unsigned long long *out)
{
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", name, Py_TYPE(o)->tp_name);
        return -1;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(o);
    int slip = PyBool_Check(o); /* an int to Python; a value of True is a slip */
    if (slip || (v == (unsigned long long)-1 && PyErr_Occurred())) {
        if (!slip && !PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Format(PyExc_ValueError, "%s must be from 0 to 2**64-1, not %R", name, o);
        return -1;
    }
    *out = v;
    return 0;
}

static PyObject *Histogram_record(HistogramObject *self, PyObject *arg)
{
    unsigned long long v;
    if (arg_u64(arg, "value", &v) != 0)
        return NULL;
    hb_hist_record(&self->h, v);
    Py_RETURN_NONE;
}

static PyObject *Histogram_merge(HistogramObject *self, PyObject *other)
{
    if (Py_TYPE(other) != Py_TYPE(self)) {
        PyErr_SetString(PyExc_TypeError, "merge() takes a Histogram");
        return NULL;
    }
    hb_hist_merge(&self->h, &((HistogramObject *)other)->h);
    Py_RETURN_NONE;
}

static PyObject *Histogram_percentile(HistogramObject *self, PyObject *arg)
{
    double p = PyFloat_AsDouble(arg);
    if (p == -1.0 && PyErr_Occurred())
        return NULL;
    if (!(p >= 0 && p <= 100) || PyBool_Check(arg)) {
        PyErr_Format(PyExc_ValueError, "p must be from 0 to 100, not %R", arg);
        return NULL;
    }
    /* Percent to parts per million, rounded once: 99.9 is 999000 exactly. */
    uint32_t ppm = (uint32_t)llround(p * (HB_HIST_PPM / 100));
    return PyLong_FromUnsignedLongLong(hb_hist_percentile(&self->h, ppm));
}

/* buckets() -> [(lower_ns, upper_ns, count)] for the buckets in use */
static PyObject *Histogram_buckets(HistogramObject *self, PyObject *unused)
{
    (void)unused;
    PyObject *list = PyList_New(0);
    if (list == NULL)
        return NULL;
    for (int i = 0; i < HB_HIST_BUCKETS; i++) {
        if (self->h.counts[i] == 0)
            continue;
        PyObject *t = Py_BuildValue("(KKK)", (unsigned long long)hb_hist_lower(i),
                                    (unsigned long long)hb_hist_upper(i),
                                    (unsigned long long)self->h.counts[i]);
        if (t == NULL || PyList_Append(list, t) != 0) {
            Py_XDECREF(t);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(t);
    }
    return list;
}

/* state() -> (count, min, max, sum, sumsq, clamped, [(index, count)]): all
 * of it, for saving; restore(state) puts it back exactly. */
static PyObject *Histogram_state(HistogramObject *self, PyObject *unused)
{
    (void)unused;
    const hb_hist *h = &self->h;
    PyObject *list = PyList_New(0);
    for (int i = 0; list != NULL && i < HB_HIST_BUCKETS; i++) {
        if (h->counts[i] == 0)
            continue;
        PyObject *t = Py_BuildValue("(iK)", i, (unsigned long long)h->counts[i]);
        if (t == NULL || PyList_Append(list, t) != 0)
            Py_CLEAR(list);
        Py_XDECREF(t);
    }
    if (list == NULL)
        return NULL;
    return Py_BuildValue("(KKKddKN)", (unsigned long long)h->count,
                         (unsigned long long)(h->count ? h->min : 0), (unsigned long long)h->max,
                         h->sum, h->sumsq, (unsigned long long)h->clamped, list);
}

static PyObject *Histogram_restore(HistogramObject *self, PyObject *state)
{
    PyObject *o[6], *buckets;
    unsigned long long count, min, max, clamped;
    double sum, sumsq;
    if (!PyArg_ParseTuple(state, "OOOOOOO!:restore", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                          &PyList_Type, &buckets))
        return NULL;
    if (arg_u64(o[0], "count", &count) != 0 || arg_u64(o[1], "min", &min) != 0 ||
        arg_u64(o[2], "max", &max) != 0 || arg_u64(o[5], "clamped", &clamped) != 0)
        return NULL;
    sum = PyFloat_AsDouble(o[3]);
    sumsq = PyFloat_AsDouble(o[4]);
    if (PyErr_Occurred())
        return NULL;
    if (!(sum >= 0 && sumsq >= 0 && isfinite(sum) && isfinite(sumsq)) || (count && min > max)) {
        PyErr_SetString(PyExc_ValueError, "not a histogram's state: sums or bounds out of range");
        return NULL;
    }
    hb_hist h;
    hb_hist_init(&h);
    uint64_t total = 0;
    /* Read from a copy: converting an item may run Python code that
     * changes the list. */
    PyObject *items = PySequence_Tuple(buckets);
    if (items == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(items); i++) {
        PyObject *index_o, *n_o;
        long long index;
        unsigned long long n;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(items, i), "OO", &index_o, &n_o) ||
            hbpy_arg_int(index_o, "bucket index", 0, HB_HIST_BUCKETS - 1, &index) != 0 ||
            arg_u64(n_o, "bucket count", &n) != 0) {
            Py_DECREF(items);
            return NULL;
        }
        if (n > UINT64_MAX - total) {
            total = UINT64_MAX; /* cannot add up to count either */
            break;
        }
        h.counts[index] += n;
        total += n;
    }
    Py_DECREF(items);
    if (total != count) {
        PyErr_SetString(PyExc_ValueError, "bucket counts do not add up to count");
        return NULL;
    }
    h.count = count;
    h.min = count ? min : UINT64_MAX;
    h.max = max;
    h.sum = sum;
    h.sumsq = sumsq;
    h.clamped = clamped;
    self->h = h;
    Py_RETURN_NONE;
}

static PyObject *Histogram_get(HistogramObject *self, void *which)
{
    const hb_hist *h = &self->h;
    switch ((int)(intptr_t)which) {
    case 0: return PyLong_FromUnsignedLongLong(h->count);
    case 1: return PyLong_FromUnsignedLongLong(h->count ? h->min : 0);
    case 2: return PyLong_FromUnsignedLongLong(h->max);
    case 3: return PyFloat_FromDouble(hb_hist_mean(h));
    case 4: return PyFloat_FromDouble(hb_hist_stdev(h));
    default: return PyLong_FromUnsignedLongLong(h->clamped);
    }
}

static PyGetSetDef Histogram_getset[] = {
    {"count", (getter)Histogram_get, NULL, "Values recorded.", (void *)0},
    {"min", (getter)Histogram_get, NULL, "Smallest value (exact), 0 when empty.", (void *)1},
    {"max", (getter)Histogram_get, NULL, "Largest value (exact).", (void *)2},
    {"mean", (getter)Histogram_get, NULL, "Mean (exact).", (void *)3},
    {"stdev", (getter)Histogram_get, NULL, "Sample standard deviation.", (void *)4},
    {"clamped", (getter)Histogram_get, NULL, "Values above the range.", (void *)5},
    {0},
};

static PyMethodDef Histogram_methods[] = {
    {"record", (PyCFunction)Histogram_record, METH_O, "record(ns): add one value."},
    {"merge", (PyCFunction)Histogram_merge, METH_O, "merge(other): add other's counts (exact)."},
    {"percentile", (PyCFunction)Histogram_percentile, METH_O,
     "percentile(p): the value below which p percent fall, within 0.4%."},
    {"buckets", (PyCFunction)Histogram_buckets, METH_NOARGS,
     "[(lower_ns, upper_ns, count)] for the buckets in use."},
    {"state", (PyCFunction)Histogram_state, METH_NOARGS, "Everything, for saving."},
    {"restore", (PyCFunction)Histogram_restore, METH_O, "restore(state): back from state()."},
    {0},
};

static PyType_Slot Histogram_slots[] = {
    {Py_tp_dealloc, Histogram_dealloc},
    {Py_tp_init, Histogram_init},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_getset, Histogram_getset},
    {Py_tp_methods, Histogram_methods},
    {Py_tp_doc, "Histogram(): a log-linear latency histogram in nanoseconds "
                "(1 ns to 36 min, within 0.4%), merged exactly."},
    {0, NULL},
};

PyType_Spec hbpy_histogram_spec = {
    .name = "httpbench.Histogram",
    .basicsize = sizeof(HistogramObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = Histogram_slots,
};

PyObject *hbpy_new_histogram(core_state *st, const hb_hist *h)
{
    HistogramObject *o = (HistogramObject *)st->Histogram->tp_alloc(st->Histogram, 0);
    if (o != NULL)
        memcpy(&o->h, h, sizeof *h);
    return (PyObject *)o;
}
