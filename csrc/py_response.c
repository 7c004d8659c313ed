/* py_response.c: httpbench.Response, a response copied out of the
 * connection's buffer. */
#include "py_core.h"

typedef struct {
    PyObject_VAR_HEAD  /* ob_size: number of headers */
    PyObject *head;    /* bytes: the response head as received */
    PyObject *body;    /* bytes */
    PyObject *headers; /* tuple of (name, value), built on first use */
    int status;
    int minor_version;
    int http2; /* it came over HTTP/2 (its head rendered as HTTP/1.1's) */
    uint32_t reason_off, reason_len;
    int folded;
    hb_header fields[1];
} ResponseObject;

static void Response_dealloc(ResponseObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    Py_XDECREF(self->head);
    Py_XDECREF(self->body);
    Py_XDECREF(self->headers);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/* A field value as str; an obs-fold (CRLF or LF, and white space) becomes
 * one SP (RFC 9112 section 5.2). */
static PyObject *field_str(const char *p, size_t n)
{
    if (memchr(p, '\n', n) == NULL)
        return PyUnicode_DecodeLatin1(p, (Py_ssize_t)n, NULL);
    char *tmp = PyMem_Malloc(n);
    if (tmp == NULL)
        return PyErr_NoMemory();
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        /* The parser lets CR or LF into a value only as the line end of a
         * fold: CRLF, or a bare LF in a response. */
        size_t eol = p[i] == '\n' ? 1 : p[i] == '\r' && i + 1 < n && p[i + 1] == '\n' ? 2 : 0;
        if (eol) {
            i += eol;
            while (i < n && (p[i] == ' ' || p[i] == '\t'))
                i++;
            i--;
            tmp[m++] = ' ';
        } else {
            tmp[m++] = p[i];
        }
    }
    PyObject *s = PyUnicode_DecodeLatin1(tmp, (Py_ssize_t)m, NULL);
    PyMem_Free(tmp);
    return s;
}

static PyObject *Response_header_tuple(ResponseObject *self)
{
    if (self->headers != NULL)
        return self->headers;
    Py_ssize_t n = Py_SIZE(self);
    const char *head = PyBytes_AS_STRING(self->head);
    PyObject *t = PyTuple_New(n);
    if (t == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        const hb_header *h = &self->fields[i];
        PyObject *name = PyUnicode_DecodeLatin1(head + h->name_off, h->name_len, NULL);
        PyObject *value = name ? field_str(head + h->value_off, h->value_len) : NULL;
        PyObject *pair = value ? PyTuple_Pack(2, name, value) : NULL;
        Py_XDECREF(name);
        Py_XDECREF(value);
        if (pair == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, pair);
    }
    self->headers = t;
    return t;
}

static PyObject *Response_get_headers(ResponseObject *self, void *closure)
{
    (void)closure;
    PyObject *t = Response_header_tuple(self);
    return t ? PySequence_List(t) : NULL;
}

static PyObject *Response_get_reason(ResponseObject *self, void *closure)
{
    (void)closure;
    return PyUnicode_DecodeLatin1(PyBytes_AS_STRING(self->head) + self->reason_off,
                                  self->reason_len, NULL);
}

static PyObject *Response_get_version(ResponseObject *self, void *closure)
{
    (void)closure;
    if (self->http2)
        return PyUnicode_FromString("HTTP/2");
    return PyUnicode_FromFormat("HTTP/1.%d", self->minor_version);
}

/* header(name, default=None): the value of the named field, matched
 * without regard to case; repeated fields are joined with ", " as a list
 * (RFC 9110 section 5.3). */
static PyObject *Response_header(ResponseObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_Format(PyExc_TypeError, "header() takes 1 or 2 arguments (%zd given)", nargs);
        return NULL;
    }
    if (!PyUnicode_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "header name must be str");
        return NULL;
    }
    PyObject *lower = PyObject_CallMethod(args[0], "lower", NULL);
    if (lower == NULL)
        return NULL;
    Py_ssize_t want_len;
    const char *want = PyUnicode_AsUTF8AndSize(lower, &want_len);
    PyObject *found = NULL;
    if (want == NULL)
        goto done;
    const char *head = PyBytes_AS_STRING(self->head);
    for (Py_ssize_t i = 0; i < Py_SIZE(self); i++) {
        const hb_header *h = &self->fields[i];
        if (!hb_name_is(head + h->name_off, h->name_len, want, (size_t)want_len))
            continue;
        PyObject *v = field_str(head + h->value_off, h->value_len);
        if (v == NULL) {
            Py_CLEAR(found);
            goto done;
        }
        if (found == NULL) {
            found = v;
            continue;
        }
        PyObject *joined = PyUnicode_FromFormat("%U, %U", found, v);
        Py_DECREF(v);
        Py_SETREF(found, joined);
        if (found == NULL)
            goto done;
    }
    if (found == NULL)
        found = Py_NewRef(nargs == 2 ? args[1] : Py_None);
done:
    Py_DECREF(lower);
    return found;
}

static PyObject *Response_repr(ResponseObject *self)
{
    PyObject *reason = Response_get_reason(self, NULL);
    if (reason == NULL)
        return NULL;
    PyObject *r = PyUnicode_FromFormat("<Response [%d %U], %zd body bytes>", self->status, reason,
                                       PyBytes_GET_SIZE(self->body));
    Py_DECREF(reason);
    return r;
}

static PyMemberDef Response_members[] = {
    {"status", T_INT, offsetof(ResponseObject, status), READONLY, "The status code."},
    {"body", T_OBJECT, offsetof(ResponseObject, body), READONLY,
     "The body as bytes, transfer coding removed."},
    {0},
};

static PyGetSetDef Response_getset[] = {
    {"reason", (getter)Response_get_reason, NULL, "The reason phrase.", NULL},
    {"version", (getter)Response_get_version, NULL, "'HTTP/1.1', 'HTTP/1.0' or 'HTTP/2'.", NULL},
    {"headers", (getter)Response_get_headers, NULL,
     "The header fields as a list of (name, value) pairs, in order.", NULL},
    {0},
};

static PyMethodDef Response_methods[] = {
    {"header", (PyCFunction)(void (*)(void))Response_header, METH_FASTCALL,
     "header(name, default=None): a field's value, case-insensitive."},
    {0},
};

static PyType_Slot Response_slots[] = {
    {Py_tp_dealloc, Response_dealloc},
    {Py_tp_repr, Response_repr},
    {Py_tp_members, Response_members},
    {Py_tp_getset, Response_getset},
    {Py_tp_methods, Response_methods},
    {Py_tp_doc, "An HTTP response read by Connection.request."},
    {0, NULL},
};

PyType_Spec hbpy_response_spec = {
    .name = "httpbench.Response",
    .basicsize = offsetof(ResponseObject, fields),
    .itemsize = sizeof(hb_header),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = Response_slots,
};

/* Copies the connection's last response out of its buffer. */
PyObject *hbpy_make_response(core_state *st, const hb_conn *c)
{
    const hb_response *r = &c->resp;
    const char *p = hb_buf_rdptr(&c->rx);
    ResponseObject *self =
        (ResponseObject *)st->Response->tp_alloc(st->Response, (Py_ssize_t)r->num_headers);
    if (self == NULL)
        return NULL;
    self->head = PyBytes_FromStringAndSize(p, (Py_ssize_t)r->head_len);
    self->body = PyBytes_FromStringAndSize(p + c->body_off, (Py_ssize_t)c->body_len);
    if (self->head == NULL || self->body == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->status = r->status;
    self->minor_version = r->minor_version;
    self->http2 = c->http2;
    self->reason_off = r->reason_off;
    self->reason_len = r->reason_len;
    memcpy(self->fields, r->headers, r->num_headers * sizeof(hb_header));
    return (PyObject *)self;
}
