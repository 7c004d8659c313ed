/* py_request.c: a request's parts from Python (method, target, headers,
 * body) into hb_req_parts for hb_req_build, and the build_request module
 * function the run and the scenarios build their requests with. */
#include "py_core.h"

/* A request element as bytes: str must be ASCII (or Latin-1 for field
 * values, as http.client sends them); bytes pass through. */
typedef struct {
    const char *p;
    Py_ssize_t n;
    PyObject *owner; /* a new reference when the text had to be encoded */
} text;

static int get_text(PyObject *o, text *t, int latin1, const char *what)
{
    t->owner = NULL;
    if (PyUnicode_Check(o)) {
        if (PyUnicode_IS_ASCII(o)) {
            t->p = (const char *)PyUnicode_DATA(o);
            t->n = PyUnicode_GET_LENGTH(o);
            return 0;
        }
        if (latin1) {
            t->owner = PyUnicode_AsLatin1String(o);
            if (t->owner != NULL) {
                t->p = PyBytes_AS_STRING(t->owner);
                t->n = PyBytes_GET_SIZE(t->owner);
                return 0;
            }
            PyErr_Clear();
        }
        PyErr_Format(PyExc_ValueError, "%s must be %s: %R", what, latin1 ? "Latin-1 text" : "ASCII",
                     o);
        return -1;
    }
    if (PyBytes_Check(o)) {
        t->p = PyBytes_AS_STRING(o);
        t->n = PyBytes_GET_SIZE(o);
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "%s must be str or bytes, not %.100s", what, Py_TYPE(o)->tp_name);
    return -1;
}

/* The caller's headers as fields for hb_req_build: a mapping, or an
 * iterable of (name, value) pairs; the texts they needed encoded are kept
 * alive in `owners` until the request is built. */
typedef struct {
    hb_field *fields;
    size_t n, cap;
    PyObject *owners; /* a list, created on the first encoded text */
} field_list;

static void fields_free(field_list *f)
{
    PyMem_Free(f->fields);
    Py_CLEAR(f->owners);
}

static int keep(field_list *f, PyObject *owner)
{
    if (owner == NULL)
        return 0;
    if (f->owners == NULL && (f->owners = PyList_New(0)) == NULL) {
        Py_DECREF(owner);
        return -1;
    }
    int rc = PyList_Append(f->owners, owner);
    Py_DECREF(owner);
    return rc;
}

/* name and value, which may be Python objects of any kind, become one
 * field; a reference to each of them is held by the caller meanwhile (the
 * pair, or the dict). */
static int add_field(field_list *f, PyObject *name_obj, PyObject *value_obj)
{
    text name, value;
    if (get_text(name_obj, &name, 0, "header name") != 0)
        return -1;
    if (keep(f, name.owner) != 0 || get_text(value_obj, &value, 1, "header value") != 0 ||
        keep(f, value.owner) != 0)
        return -1;
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 16;
        hb_field *p = PyMem_Realloc(f->fields, cap * sizeof *p);
        if (p == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        f->fields = p;
        f->cap = cap;
    }
    f->fields[f->n++] = (hb_field){{name.p, (size_t)name.n}, {value.p, (size_t)value.n}};
    return 0;
}

static int get_fields(PyObject *headers, field_list *f, PyObject **pairs)
{
    *pairs = NULL;
    if (headers == Py_None)
        return 0;
    if (PyDict_Check(headers)) {
        /* A copy of the items: converting one may run Python code. */
        *pairs = PyDict_Items(headers);
    } else if (PyMapping_Check(headers) && PyObject_HasAttrString(headers, "items")) {
        PyObject *items = PyObject_CallMethod(headers, "items", NULL);
        *pairs = items ? PySequence_List(items) : NULL;
        Py_XDECREF(items);
    } else {
        *pairs = PySequence_List(headers);
        if (*pairs == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_SetString(PyExc_TypeError,
                            "headers must be a mapping or an iterable of (name, value) pairs");
        }
    }
    if (*pairs == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(*pairs); i++) {
        PyObject *seq =
            PySequence_Fast(PyList_GET_ITEM(*pairs, i), "each header must be a (name, value) pair");
        if (seq == NULL)
            return -1;
        /* The pair's items stay alive in `pairs`, which now holds seq (and
         * drops what it held, which seq may be). */
        if (PyList_SetItem(*pairs, i, seq) != 0)
            return -1;
        if (PySequence_Fast_GET_SIZE(seq) != 2) {
            PyErr_SetString(PyExc_ValueError, "each header must be a (name, value) pair");
            return -1;
        }
        if (add_field(f, PySequence_Fast_GET_ITEM(seq, 0), PySequence_Fast_GET_ITEM(seq, 1)) != 0)
            return -1;
    }
    return 0;
}

/* body: a bytes-like object, or str sent as UTF-8. */
int hbpy_get_body(PyObject *o, Py_buffer *body)
{
    if (PyUnicode_Check(o)) {
        Py_ssize_t n;
        const char *p = PyUnicode_AsUTF8AndSize(o, &n);
        return p == NULL || PyBuffer_FillInfo(body, o, (void *)p, n, 1, PyBUF_SIMPLE) != 0 ? -1 : 0;
    }
    return PyObject_GetBuffer(o, body, PyBUF_SIMPLE);
}

/* A bytes object's contents; NULL is empty. */
static hb_span bytes_span(PyObject *o)
{
    return o != NULL ? (hb_span){PyBytes_AS_STRING(o), (size_t)PyBytes_GET_SIZE(o)}
                     : (hb_span){"", 0};
}

/* Converts the request's parts and has hb_req_build check and write them
 * into b. Returns 0 with *flags set, or -1 with an exception: ValueError
 * for what hb_req_build refuses, before anything is sent. */
int hbpy_build_request(hb_buf *b, PyObject *method_o, PyObject *target_o, PyObject *headers,
                       const Py_buffer *body, PyObject *host_header, PyObject *origin,
                       PyObject *proxy_auth, Py_ssize_t copy_max, int *flags)
{
    text method, target;
    field_list fields = {NULL, 0, 0, NULL};
    PyObject *pairs = NULL;
    int rc = -1;
    if (get_text(method_o, &method, 0, "method") != 0 ||
        get_text(target_o, &target, 0, "target") != 0 || get_fields(headers, &fields, &pairs) != 0)
        goto done;
    char err[160];
    hb_span body_span = {body->obj ? body->buf : NULL, body->obj ? (size_t)body->len : 0};
    hb_req_parts req = {{method.p, (size_t)method.n},
                        {target.p, (size_t)target.n},
                        fields.fields,
                        fields.n,
                        body_span,
                        bytes_span(host_header),
                        bytes_span(origin),
                        bytes_span(proxy_auth)};
    int built = hb_req_build(b, &req, (size_t)copy_max, flags, err, sizeof err);
    if (built == -2)
        PyErr_NoMemory();
    else if (built != 0)
        PyErr_SetString(PyExc_ValueError, err);
    else
        rc = 0;
done:
    Py_XDECREF(pairs);
    fields_free(&fields);
    return rc;
}

/* hbpy_build_request(method, target, headers=None, body=None, host=b"") -> (bytes, flags) */
PyObject *hbpy_build_request_fn(PyObject *module, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"method", "target", "headers",    "body",
                             "host",   "origin", "proxy_auth", NULL};
    PyObject *method, *target, *headers = Py_None, *body_o = Py_None, *host;
    PyObject *origin = NULL, *proxy_auth = NULL;
    Py_buffer body = {0};
    hb_buf b = HB_BUF_INIT;
    int flags;
    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOS|$SS:hbpy_build_request", kwlist, &method,
                                     &target, &headers, &body_o, &host, &origin, &proxy_auth))
        return NULL;
    if (body_o != Py_None && hbpy_get_body(body_o, &body) != 0)
        return NULL;
    PyObject *out = NULL;
    if (hbpy_build_request(&b, method, target, headers, &body, host, origin, proxy_auth,
                           PY_SSIZE_T_MAX, &flags) == 0)
        out = Py_BuildValue("(y#i)", hb_buf_rdptr(&b), (Py_ssize_t)hb_buf_size(&b), flags);
    if (body.obj != NULL)
        PyBuffer_Release(&body);
    hb_buf_free(&b);
    return out;
}
