/* module.c: httpbench._core, the only file that includes Python.h.
 *
 * Types, argument checking, exceptions and the GIL. Everything that touches
 * the network runs with the GIL released; a signal that cuts a wait short
 * takes the GIL back just long enough to run Python's handlers (PEP 475),
 * and a handler that raises (Ctrl-C) ends the request.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "bench.h"
#include "conn.h"
#include "hist.h"
#include "request.h"
#include "route.h"
#include "server.h"
#include "shape.h"
#include "tls.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <unistd.h>

#ifndef HB_VERSION
#define HB_VERSION "0.0.0"
#endif

/* Request bodies up to this size are copied behind the head so the
 * request leaves in one buffer; larger ones go as a second iovec. */
#define COPY_BODY_MAX 16384
#define DEFAULT_MAX_BODY (1ULL << 30)
/* Durations and timeouts are at most a year, the longest the clock's
 * nanoseconds hold with room to spare; timeout=None stands for a year. */
#define NO_TIMEOUT HB_BENCH_MAX_SECONDS
/* Byte limits (max_body, max_buffered) are at most this. */
#define MAX_BYTES (1LL << 62)

typedef struct {
    PyObject *HttpbenchError, *ConnectError, *Timeout, *ProtocolError, *IncompleteResponse;
    PyObject *TLSError;
    PyTypeObject *Connection, *Response, *ServerCore, *Histogram, *Bench, *TLS;
} core_state;

static core_state *state_of(PyObject *module)
{
    return (core_state *)PyModule_GetState(module);
}

/* ------------------------------------------------------- argument ranges */

/* Every number a user can pass is checked here before it reaches C: a
 * ValueError naming the argument when it is out of range (negative, NaN,
 * infinite or absurdly large), a TypeError when it is no number. */

/* An int from lo to hi (hi at most LLONG_MAX). Returns 0, or -1 with an
 * exception. */
static int arg_int(PyObject *o, const char *name, long long lo, long long hi, long long *out)
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
static int arg_real(PyObject *o, const char *name, int zero_ok, double max, double *out)
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

/* --------------------------------------------------------------------- TLS */

/* A TLS context (hb_tls) for a Connection, a run or the server. The
 * settings are checked in Python (httpbench._check); here what would make
 * C misbehave: versions, and files that cannot be read (an OSError naming
 * the file, as open() gives). */
typedef struct {
    PyObject_HEAD
    hb_tls *tls;
} TLSObject;

/* A path argument (str, bytes or os.PathLike; None for none) as bytes in
 * *out (a new reference, or NULL for None), checked readable. Returns 0,
 * or -1 with an exception. */
static int tls_path(PyObject *o, PyObject **out)
{
    *out = NULL;
    if (o == NULL || o == Py_None)
        return 0;
    if (!PyUnicode_FSConverter(o, out))
        return -1;
    if (access(PyBytes_AS_STRING(*out), R_OK) != 0) {
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, o);
        Py_CLEAR(*out);
        return -1;
    }
    return 0;
}

/* An optional text argument (None for none) as UTF-8 in *out. */
static int tls_text(PyObject *o, const char *name, const char **out)
{
    *out = NULL;
    if (o == NULL || o == Py_None)
        return 0;
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str or None, not %.100s", name,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    Py_ssize_t n;
    *out = PyUnicode_AsUTF8AndSize(o, &n);
    if (*out == NULL)
        return -1;
    if (strlen(*out) != (size_t)n) {
        PyErr_Format(PyExc_ValueError, "%s must not contain NUL", name);
        return -1;
    }
    return 0;
}

/* Makes an hb_tls from Python arguments (any may be NULL or None).
 * Returns it, or NULL with an exception: TLSError for what OpenSSL
 * refused. */
static hb_tls *tls_make(core_state *st, int server, int verify, int resume, PyObject *cafile,
                        PyObject *certfile, PyObject *keyfile, PyObject *server_hostname,
                        PyObject *cert_host, PyObject *min_v, PyObject *max_v, PyObject *ciphers,
                        PyObject *ciphersuites)
{
    hb_tls_config cfg = {.server = server, .verify = verify, .resume = resume};
    PyObject *ca = NULL, *cert = NULL, *key = NULL;
    hb_tls *t = NULL;
    long long v;
    if (min_v != NULL && min_v != Py_None) {
        if (arg_int(min_v, "tls_min", HB_TLS_1_2, HB_TLS_1_3, &v) != 0)
            return NULL;
        cfg.min_version = (int)v;
    }
    if (max_v != NULL && max_v != Py_None) {
        if (arg_int(max_v, "tls_max", HB_TLS_1_2, HB_TLS_1_3, &v) != 0)
            return NULL;
        cfg.max_version = (int)v;
    }
    if (tls_text(server_hostname, "server_hostname", &cfg.server_hostname) != 0 ||
        tls_text(cert_host, "cert_host", &cfg.cert_host) != 0 ||
        tls_text(ciphers, "ciphers", &cfg.ciphers) != 0 ||
        tls_text(ciphersuites, "ciphersuites", &cfg.ciphersuites) != 0 ||
        tls_path(cafile, &ca) != 0 || tls_path(certfile, &cert) != 0 ||
        tls_path(keyfile, &key) != 0)
        goto done;
    cfg.cafile = ca ? PyBytes_AS_STRING(ca) : NULL;
    cfg.certfile = cert ? PyBytes_AS_STRING(cert) : NULL;
    cfg.keyfile = key ? PyBytes_AS_STRING(key) : NULL;
    char err[384] = "";
    /* Key generation (a server's own certificate) takes milliseconds. */
    Py_BEGIN_ALLOW_THREADS t = hb_tls_new(&cfg, err, sizeof err);
    Py_END_ALLOW_THREADS if (t == NULL) PyErr_SetString(st->TLSError, err);
done:
    Py_XDECREF(ca);
    Py_XDECREF(cert);
    Py_XDECREF(key);
    return t;
}

static void TLS_dealloc(TLSObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    hb_tls_free(self->tls);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

static int TLS_init(TLSObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"server",          "verify",    "cafile",  "certfile", "keyfile",
                             "server_hostname", "cert_host", "tls_min", "tls_max",  "ciphers",
                             "ciphersuites",    "resume",    NULL};
    int server = 0, verify = 1, resume = 1;
    PyObject *o[10] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|p$pOOOOOOOOOp:_TLS", kwlist, &server, &verify,
                                     &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8],
                                     &resume))
        return -1;
    if (self->tls != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "already initialised");
        return -1;
    }
    core_state *st = (core_state *)PyType_GetModuleState(Py_TYPE(self));
    self->tls =
        tls_make(st, server, verify, resume, o[0], o[1], o[2], o[3], o[4], o[5], o[6], o[7], o[8]);
    return self->tls != NULL ? 0 : -1;
}

static PyObject *TLS_cert_pem(TLSObject *self, PyObject *unused)
{
    (void)unused;
    char *pem = self->tls != NULL ? hb_tls_cert_pem(self->tls) : NULL;
    if (pem == NULL)
        Py_RETURN_NONE;
    PyObject *out = PyUnicode_FromString(pem);
    free(pem);
    return out;
}

static PyMethodDef TLS_methods[] = {
    {"cert_pem", (PyCFunction)TLS_cert_pem, METH_NOARGS,
     "The own certificate in PEM (a server's self-signed one), or None."},
    {0},
};

static PyType_Slot TLS_slots[] = {
    {Py_tp_dealloc, TLS_dealloc},
    {Py_tp_init, TLS_init},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_methods, TLS_methods},
    {Py_tp_doc, "A TLS context for a run or the server; use httpbench.run and httpbench.Server."},
    {0, NULL},
};

static PyType_Spec TLS_spec = {
    .name = "httpbench._core._TLS",
    .basicsize = sizeof(TLSObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = TLS_slots,
};

/* The hb_tls of a _TLS object given as an argument, or NULL for None (the
 * object is the caller's to keep alive). -1 with an exception otherwise. */
static int tls_of(core_state *st, PyObject *o, hb_tls **out)
{
    *out = NULL;
    if (o == NULL || o == Py_None)
        return 0;
    if (!PyObject_TypeCheck(o, st->TLS) || ((TLSObject *)o)->tls == NULL) {
        PyErr_Format(PyExc_TypeError, "tls must be a _TLS or None, not %.100s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = ((TLSObject *)o)->tls;
    return 0;
}

/* ---------------------------------------------------------------- Response */

typedef struct {
    PyObject_VAR_HEAD  /* ob_size: number of headers */
    PyObject *head;    /* bytes: the response head as received */
    PyObject *body;    /* bytes */
    PyObject *headers; /* tuple of (name, value), built on first use */
    int status;
    int minor_version;
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
    {"version", (getter)Response_get_version, NULL, "'HTTP/1.1' or 'HTTP/1.0'.", NULL},
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

static PyType_Spec Response_spec = {
    .name = "httpbench.Response",
    .basicsize = offsetof(ResponseObject, fields),
    .itemsize = sizeof(hb_header),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = Response_slots,
};

/* Copies the connection's last response out of its buffer. */
static PyObject *make_response(core_state *st, const hb_conn *c)
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
    self->reason_off = r->reason_off;
    self->reason_len = r->reason_len;
    memcpy(self->fields, r->headers, r->num_headers * sizeof(hb_header));
    return (PyObject *)self;
}

/* -------------------------------------------------------------- Connection */

typedef struct {
    PyObject_HEAD
    hb_conn conn;
    hb_buf tx;      /* the request being built */
    PyObject *host; /* str */
    int port;
    double timeout;        /* seconds; NO_TIMEOUT for None */
    PyObject *host_header; /* bytes: "host:port" */
    hb_tls *tls;           /* NULL for plain TCP */
    /* Through a forward proxy: for an http:// server, the origin put before
     * each path (str) and the Proxy-Authorization added (str or NULL); the
     * proxy's host:port for the property. NULL without a proxy. */
    PyObject *proxy_origin, *proxy_auth, *proxy_label;
    int busy;  /* a request is under way (GIL released) */
    int ready; /* __init__ succeeded */
} ConnectionObject;

static core_state *conn_state(ConnectionObject *self)
{
    return (core_state *)PyType_GetModuleState(Py_TYPE(self));
}

static void Connection_dealloc(ConnectionObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->ready)
        hb_conn_free(&self->conn);
    hb_tls_free(self->tls); /* after the socket that used it */
    hb_buf_free(&self->tx);
    Py_XDECREF(self->host);
    Py_XDECREF(self->host_header);
    Py_XDECREF(self->proxy_origin);
    Py_XDECREF(self->proxy_auth);
    Py_XDECREF(self->proxy_label);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/* "O&" converter for a Unix socket's path: None, or str/bytes/PathLike
 * made bytes by PyUnicode_FSConverter (which refuses a NUL); *out is a new
 * reference, or stays NULL for None. */
static int unix_path_arg(PyObject *o, void *out)
{
    if (o == Py_None)
        return 1;
    return PyUnicode_FSConverter(o, out);
}

static int Connection_setup(ConnectionObject *self, PyObject *host, PyObject *port_obj,
                            PyObject *timeout_obj, PyObject *max_body_obj, int tls, int verify,
                            PyObject *cafile, PyObject *server_hostname, PyObject *certfile,
                            PyObject *keyfile, PyObject *unix_socket, PyObject *plan);

/* httpbench._url.proxy_plan for host:port through proxy: a ProxyPlan
 * (host, port, tunnel, origin, auth, label), or NULL with an exception. */
static PyObject *proxy_plan(PyObject *proxy, PyObject *host, PyObject *port, int tls)
{
    PyObject *mod = PyImport_ImportModule("httpbench._url");
    PyObject *plan = mod ? PyObject_CallMethod(mod, "proxy_plan", "OOOO", proxy, host, port,
                                               tls ? Py_True : Py_False)
                         : NULL;
    Py_XDECREF(mod);
    if (plan != NULL && (!PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) != 6)) {
        Py_DECREF(plan);
        PyErr_SetString(PyExc_TypeError, "proxy_plan() did not give a ProxyPlan");
        return NULL;
    }
    return plan;
}

static int Connection_init(ConnectionObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"host",     "port",    "timeout",     "max_body",
                             "tls",      "verify",  "cafile",      "server_hostname",
                             "certfile", "keyfile", "unix_socket", "proxy",
                             NULL};
    PyObject *host, *port_obj, *timeout_obj = NULL, *max_body_obj = NULL;
    PyObject *cafile = NULL, *server_hostname = NULL, *certfile = NULL, *keyfile = NULL;
    PyObject *unix_socket = NULL; /* bytes, from PyUnicode_FSConverter */
    PyObject *proxy = Py_None, *plan = NULL;
    int tls = 0, verify = 1;

    /* Every conversion (which may run Python code, and so let another
     * thread in) comes before the object is looked at or changed. */
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "UO|O$OppOOOOO&O:Connection", kwlist, &host,
                                     &port_obj, &timeout_obj, &max_body_obj, &tls, &verify, &cafile,
                                     &server_hostname, &certfile, &keyfile, unix_path_arg,
                                     &unix_socket, &proxy))
        return -1;
    int rc = -1;
    if (proxy != Py_None && unix_socket != NULL)
        PyErr_SetString(PyExc_ValueError,
                        "proxy and unix_socket are two ways to the server: give one");
    else if (proxy == Py_None || (plan = proxy_plan(proxy, host, port_obj, tls)) != NULL)
        rc = Connection_setup(self, host, port_obj, timeout_obj, max_body_obj, tls, verify, cafile,
                              server_hostname, certfile, keyfile, unix_socket, plan);
    Py_XDECREF(unix_socket);
    Py_XDECREF(plan);
    return rc;
}

/* Connection_init's work once its arguments are parsed. */
static int Connection_setup(ConnectionObject *self, PyObject *host, PyObject *port_obj,
                            PyObject *timeout_obj, PyObject *max_body_obj, int tls, int verify,
                            PyObject *cafile, PyObject *server_hostname, PyObject *certfile,
                            PyObject *keyfile, PyObject *unix_socket, PyObject *plan)
{
    long long port, max_body = DEFAULT_MAX_BODY;
    double timeout = 30.0;
    core_state *st = conn_state(self);
    if (!tls &&
        ((cafile && cafile != Py_None) || (certfile && certfile != Py_None) ||
         (keyfile && keyfile != Py_None) || (server_hostname && server_hostname != Py_None))) {
        PyErr_SetString(PyExc_ValueError,
                        "cafile, certfile, keyfile and server_hostname are for TLS: pass tls=True "
                        "(or use Connection.from_url with an https:// URL)");
        return -1;
    }
    if (arg_int(port_obj, "port", 1, 65535, &port) != 0)
        return -1;
    if (timeout_obj == Py_None)
        timeout = NO_TIMEOUT;
    else if (timeout_obj != NULL && arg_real(timeout_obj, "timeout", 0, NO_TIMEOUT, &timeout) != 0)
        return -1;
    if (max_body_obj != NULL && arg_int(max_body_obj, "max_body", 0, MAX_BYTES, &max_body) != 0)
        return -1;
    if (self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "Connection is already initialised");
        return -1;
    }
    Py_ssize_t hlen;
    const char *h = PyUnicode_AsUTF8AndSize(host, &hlen);
    if (h == NULL)
        return -1;
    if (hlen == 0 || strlen(h) != (size_t)hlen || strpbrk(h, "\r\n /") != NULL) {
        PyErr_Format(PyExc_ValueError, "invalid host %R", host);
        return -1;
    }
    /* Connected to: the server, or the proxy the plan names. */
    const char *to = h;
    char portbuf[8];
    snprintf(portbuf, sizeof portbuf, "%d", (int)port);
    if (plan != NULL) {
        long to_port = PyLong_AsLong(PyTuple_GET_ITEM(plan, 1));
        to = PyUnicode_AsUTF8(PyTuple_GET_ITEM(plan, 0));
        if (to == NULL || to_port < 1 || to_port > 65535) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "bad proxy port");
            return -1;
        }
        snprintf(portbuf, sizeof portbuf, "%ld", to_port);
    }
    /* An IPv6 literal goes in brackets in Host (RFC 9110 section 7.2); the
     * scheme's default port is left out (section 4.2). */
    int v6 = strchr(h, ':') != NULL;
    PyObject *host_header = port == (tls ? 443 : 80)
                                ? PyBytes_FromFormat(v6 ? "[%s]" : "%s", h)
                                : PyBytes_FromFormat(v6 ? "[%s]:%d" : "%s:%d", h, (int)port);
    if (host_header == NULL)
        return -1;
    hb_tls *t = NULL;
    if (tls) {
        /* The name sent and checked: the host, unless told otherwise. */
        PyObject *name =
            server_hostname != NULL && server_hostname != Py_None ? server_hostname : host;
        t = tls_make(st, 0, verify, 0, cafile, certfile, keyfile, name, NULL, NULL, NULL, NULL,
                     NULL);
        if (t == NULL) {
            Py_DECREF(host_header);
            return -1;
        }
    }
    PyObject *tunnel = plan != NULL ? PyTuple_GET_ITEM(plan, 2) : Py_None;
    if (hb_conn_init(&self->conn, t ? &hb_net_tls : &hb_net_tcp, to, portbuf, timeout,
                     (uint64_t)max_body) != HB_OK ||
        (PyBytes_Check(tunnel) && hb_conn_set_tunnel(&self->conn, PyBytes_AS_STRING(tunnel),
                                                     (size_t)PyBytes_GET_SIZE(tunnel)) != HB_OK)) {
        hb_conn_free(&self->conn);
        Py_DECREF(host_header);
        hb_tls_free(t);
        PyErr_NoMemory();
        return -1;
    }
    self->conn.sock.shared = t;
    self->tls = t;
    if (plan != NULL) {
        PyObject *origin = PyTuple_GET_ITEM(plan, 3), *auth = PyTuple_GET_ITEM(plan, 4);
        self->proxy_origin = origin != Py_None ? Py_NewRef(origin) : NULL;
        self->proxy_auth = auth != Py_None ? Py_NewRef(auth) : NULL;
        self->proxy_label = Py_NewRef(PyTuple_GET_ITEM(plan, 5));
    }
    if (unix_socket != NULL) {
        hb_status us = hb_conn_set_unix(&self->conn, PyBytes_AS_STRING(unix_socket));
        if (us != HB_OK) {
            if (us == HB_ERR_NOMEM)
                PyErr_NoMemory();
            else
                PyErr_Format(PyExc_ValueError, "unix_socket: %s", self->conn.error);
            hb_conn_free(&self->conn);
            self->tls = NULL;
            hb_tls_free(t);
            Py_DECREF(host_header);
            return -1;
        }
    }
    self->host_header = host_header;
    self->host = Py_NewRef(host);
    self->port = (int)port;
    self->timeout = timeout;
    self->ready = 1;
    return 0;
}

/* Runs Python's signal handlers from inside a wait (see net.h). */
typedef struct {
    PyThreadState *ts;
} gil_hold;

static int check_signals(void *arg)
{
    gil_hold *g = arg;
    PyEval_RestoreThread(g->ts);
    int stop = PyErr_CheckSignals() != 0;
    g->ts = PyEval_SaveThread();
    return stop;
}

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

static PyObject *raise_status(core_state *st, hb_conn *c, hb_status s)
{
    PyObject *exc;
    switch (s) {
    case HB_ERR_CONNECT: exc = st->ConnectError; break;
    case HB_ERR_TIMEOUT: exc = st->Timeout; break;
    case HB_ERR_PROTOCOL: exc = st->ProtocolError; break;
    case HB_ERR_INCOMPLETE: exc = st->IncompleteResponse; break;
    case HB_ERR_TLS: exc = st->TLSError; break;
    case HB_ERR_NOMEM: return PyErr_NoMemory();
    case HB_ERR_INTERRUPTED:
        /* A signal handler raised; its exception stands. */
        if (PyErr_Occurred())
            return NULL;
        exc = PyExc_KeyboardInterrupt;
        break;
    default: exc = st->HttpbenchError; break;
    }
    PyErr_SetString(exc, c->error);
    return NULL;
}

/* body: a bytes-like object, or str sent as UTF-8. */
static int get_body(PyObject *o, Py_buffer *body)
{
    if (PyUnicode_Check(o)) {
        Py_ssize_t n;
        const char *p = PyUnicode_AsUTF8AndSize(o, &n);
        return p == NULL || PyBuffer_FillInfo(body, o, (void *)p, n, 1, PyBUF_SIMPLE) != 0 ? -1 : 0;
    }
    return PyObject_GetBuffer(o, body, PyBUF_SIMPLE);
}

/* Converts the request's parts and has hb_req_build check and write them
 * into b. Returns 0 with *flags set, or -1 with an exception: ValueError
 * for what hb_req_build refuses, before anything is sent. */
static int build_request(hb_buf *b, PyObject *method_o, PyObject *target_o, PyObject *headers,
                         const Py_buffer *body, PyObject *host_header, Py_ssize_t copy_max,
                         int *flags)
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
    int built = hb_req_build(
        b, (hb_span){method.p, (size_t)method.n}, (hb_span){target.p, (size_t)target.n},
        fields.fields, fields.n, body_span, (size_t)copy_max,
        (hb_span){PyBytes_AS_STRING(host_header), (size_t)PyBytes_GET_SIZE(host_header)}, flags,
        err, sizeof err);
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

/* What a request through a proxy to an http:// server is built from. */
typedef struct {
    PyObject *target, *headers; /* new references, or NULL */
} proxied_parts;

/* Through a forward proxy, an http:// server's request: the target in
 * absolute form (RFC 9112 section 3.2.2) when given as a path, and the
 * proxy's credentials added. *target and *headers are replaced by new
 * references kept in *own. Returns 0, or -1 with an exception. */
static int proxied(ConnectionObject *self, PyObject **target, PyObject **headers,
                   proxied_parts *own)
{
    PyObject *t = *target;
    if (PyUnicode_Check(t) && PyUnicode_GET_LENGTH(t) > 0 && PyUnicode_READ_CHAR(t, 0) == '/') {
        own->target = PyUnicode_Concat(self->proxy_origin, t);
    } else if (PyBytes_Check(t) && PyBytes_GET_SIZE(t) > 0 && PyBytes_AS_STRING(t)[0] == '/') {
        own->target = PyUnicode_AsASCIIString(self->proxy_origin);
        PyBytes_Concat(&own->target, t); /* leaves NULL on failure */
    } else {
        own->target = Py_NewRef(t);
    }
    if (own->target == NULL)
        return -1;
    *target = own->target;
    if (self->proxy_auth != NULL) {
        PyObject *mod = PyImport_ImportModule("httpbench._url");
        own->headers =
            mod ? PyObject_CallMethod(mod, "with_proxy_auth", "OO", *headers, self->proxy_auth)
                : NULL;
        Py_XDECREF(mod);
        if (own->headers == NULL)
            return -1;
        *headers = own->headers;
    }
    return 0;
}

/* request(method, target, headers=None, body=None) -> Response */
static PyObject *Connection_request(ConnectionObject *self, PyObject *const *args, Py_ssize_t nargs,
                                    PyObject *kwnames)
{
    static const char *const names[] = {"method", "target", "headers", "body"};
    PyObject *argv[4] = {NULL, NULL, Py_None, Py_None};
    proxied_parts own = {NULL, NULL};
    core_state *st = conn_state(self);
    Py_buffer body = {0};
    PyObject *result = NULL;

    if (nargs > 4) {
        PyErr_Format(PyExc_TypeError, "request() takes at most 4 arguments (%zd given)", nargs);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        argv[i] = args[i];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *kw = PyTuple_GET_ITEM(kwnames, k);
        int i = 0;
        while (i < 4 && PyUnicode_CompareWithASCIIString(kw, names[i]) != 0)
            i++;
        if (i == 4 || argv[i] != (i < 2 ? NULL : Py_None) || i < nargs) {
            PyErr_Format(PyExc_TypeError, "request() got an unexpected or repeated argument %R",
                         kw);
            return NULL;
        }
        argv[i] = args[nargs + k];
    }
    if (argv[0] == NULL || argv[1] == NULL) {
        PyErr_SetString(PyExc_TypeError, "request() needs method and target");
        return NULL;
    }
    if (!self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "Connection is not initialised");
        return NULL;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Connection is in use by another thread");
        return NULL;
    }
    /* Taken before anything that can run Python code or release the GIL
     * (the body's buffer, a generator or mapping of headers, the request
     * itself, the Response's allocation) and held until the end, so a second
     * thread never shares the buffer or the socket. */
    self->busy = 1;
    if (argv[3] != Py_None && get_body(argv[3], &body) != 0)
        goto done;
    hb_buf *b = &self->tx;
    int flags;
    if (self->proxy_origin != NULL && proxied(self, &argv[1], &argv[2], &own) != 0)
        goto done;
    if (build_request(b, argv[0], argv[1], argv[2], &body, self->host_header, COPY_BODY_MAX,
                      &flags) != 0)
        goto done;
    struct iovec iov[2] = {{hb_buf_rdptr(b), hb_buf_size(b)}, {body.buf, 0}};
    int iovcnt = 1;
    if (body.obj != NULL && body.len > COPY_BODY_MAX) {
        iov[1].iov_len = (size_t)body.len;
        iovcnt = 2;
    }

    gil_hold hold;
    hb_status s;
    self->conn.sock.interrupted = check_signals;
    self->conn.sock.interrupt_arg = &hold;
    hold.ts = PyEval_SaveThread();
    s = hb_conn_request(&self->conn, iov, iovcnt, flags);
    PyEval_RestoreThread(hold.ts);
    result = s == HB_OK ? make_response(st, &self->conn) : raise_status(st, &self->conn, s);
done:
    Py_XDECREF(own.target);
    Py_XDECREF(own.headers);
    if (body.obj != NULL)
        PyBuffer_Release(&body);
    if (self->tx.cap > (1u << 20))
        hb_buf_free(&self->tx);
    self->busy = 0;
    return result;
}

static PyObject *Connection_close(ConnectionObject *self, PyObject *unused)
{
    (void)unused;
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Connection is in use by another thread");
        return NULL;
    }
    if (self->ready)
        hb_conn_close(&self->conn);
    Py_RETURN_NONE;
}

static PyObject *Connection_enter(ConnectionObject *self, PyObject *unused)
{
    (void)unused;
    return Py_NewRef(self);
}

static PyObject *Connection_exit(ConnectionObject *self, PyObject *args)
{
    (void)args;
    return Connection_close(self, NULL);
}

static PyObject *Connection_repr(ConnectionObject *self)
{
    if (!self->ready)
        return PyUnicode_FromString("<httpbench.Connection (uninitialised)>");
    return PyUnicode_FromFormat("<httpbench.Connection %s%R port %d, %s>", self->tls ? "TLS " : "",
                                self->host, self->port,
                                self->conn.sock.fd >= 0 ? "open" : "closed");
}

#define COUNTER(field, doc)                                                                        \
    static PyObject *Connection_get_##field(ConnectionObject *self, void *closure)                 \
    {                                                                                              \
        (void)closure;                                                                             \
        return PyLong_FromUnsignedLongLong(self->conn.field);                                      \
    }
COUNTER(requests, "")
COUNTER(connects, "")
COUNTER(retries, "")
COUNTER(bytes_sent, "")
COUNTER(bytes_received, "")

static PyObject *Connection_get_timeout(ConnectionObject *self, void *closure)
{
    (void)closure;
    if (self->timeout >= NO_TIMEOUT)
        Py_RETURN_NONE;
    return PyFloat_FromDouble(self->timeout);
}

static PyObject *Connection_get_is_open(ConnectionObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->ready && self->conn.sock.fd >= 0);
}

static PyObject *Connection_get_tls(ConnectionObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->tls != NULL);
}

static PyObject *Connection_get_proxy(ConnectionObject *self, void *closure)
{
    (void)closure;
    return Py_NewRef(self->proxy_label != NULL ? self->proxy_label : Py_None);
}

static PyObject *Connection_get_unix_socket(ConnectionObject *self, void *closure)
{
    (void)closure;
    if (!self->ready || self->conn.unix_path == NULL)
        Py_RETURN_NONE;
    return PyUnicode_DecodeFSDefault(self->conn.unix_path);
}

/* What the open socket's handshake agreed on: None when no TLS socket is
 * open. */
static PyObject *Connection_get_tls_info(ConnectionObject *self, void *closure)
{
    (void)closure;
    hb_sock_info info;
    int resumed;
    if (!self->ready || self->tls == NULL || self->busy || self->conn.sock.fd < 0 ||
        (resumed = hb_net_tls.describe(&self->conn.sock, &info)) < 0)
        Py_RETURN_NONE;
    return Py_BuildValue("{sssssssO}", "protocol", info.protocol, "temp_key", info.temp_key,
                         "server_name", info.server_name, "resumed", resumed ? Py_True : Py_False);
}

/* from_url(url, **kw): a Connection to the URL's host and port, over TLS
 * for https://. */
static PyObject *Connection_from_url(PyObject *cls, PyObject *args, PyObject *kwds)
{
    PyObject *url;
    if (!PyArg_ParseTuple(args, "U:from_url", &url))
        return NULL;
    if (kwds != NULL && PyDict_GetItemString(kwds, "tls") != NULL) {
        PyErr_SetString(PyExc_TypeError, "from_url() takes tls from the URL's scheme");
        return NULL;
    }
    PyObject *mod = PyImport_ImportModule("httpbench._url");
    PyObject *parts = mod ? PyObject_CallMethod(mod, "split_url", "O", url) : NULL;
    Py_XDECREF(mod);
    if (parts == NULL)
        return NULL;
    PyObject *kw = kwds ? PyDict_Copy(kwds) : PyDict_New(), *out = NULL, *pos = NULL;
    PyObject *tls = PyObject_GetAttrString(parts, "tls");
    PyObject *host = PyObject_GetAttrString(parts, "host");
    PyObject *port = PyObject_GetAttrString(parts, "port");
    if (kw != NULL && tls != NULL && host != NULL && port != NULL &&
        PyDict_SetItemString(kw, "tls", tls) == 0 && (pos = PyTuple_Pack(2, host, port)) != NULL)
        out = PyObject_Call(cls, pos, kw);
    Py_XDECREF(pos);
    Py_XDECREF(kw);
    Py_XDECREF(tls);
    Py_XDECREF(host);
    Py_XDECREF(port);
    Py_DECREF(parts);
    return out;
}

static PyMemberDef Connection_members[] = {
    {"host", T_OBJECT, offsetof(ConnectionObject, host), READONLY, "The server's host."},
    {"port", T_INT, offsetof(ConnectionObject, port), READONLY, "The server's port."},
    {0},
};

static PyGetSetDef Connection_getset[] = {
    {"timeout", (getter)Connection_get_timeout, NULL, "Seconds allowed per request, or None.",
     NULL},
    {"is_open", (getter)Connection_get_is_open, NULL, "Whether a socket is open now.", NULL},
    {"tls", (getter)Connection_get_tls, NULL, "Whether the connection speaks TLS.", NULL},
    {"proxy", (getter)Connection_get_proxy, NULL,
     "The forward proxy's host:port it goes through, or None.", NULL},
    {"unix_socket", (getter)Connection_get_unix_socket, NULL,
     "The Unix socket's path it connects to, or None (TCP).", NULL},
    {"tls_info", (getter)Connection_get_tls_info, NULL,
     "What the open socket's TLS handshake agreed on (protocol, temp_key, server_name, resumed), "
     "or None.",
     NULL},
    {"requests", (getter)Connection_get_requests, NULL, "Responses received.", NULL},
    {"connects", (getter)Connection_get_connects, NULL, "Sockets opened.", NULL},
    {"retries", (getter)Connection_get_retries, NULL,
     "Requests sent again after a kept-alive socket was found closed.", NULL},
    {"bytes_sent", (getter)Connection_get_bytes_sent, NULL, "Request bytes written.", NULL},
    {"bytes_received", (getter)Connection_get_bytes_received, NULL,
     "Response bytes read, heads and framing included.", NULL},
    {0},
};

static PyMethodDef Connection_methods[] = {
    {"request", (PyCFunction)(void (*)(void))Connection_request, METH_FASTCALL | METH_KEYWORDS,
     "request(method, target, headers=None, body=None) -> Response"},
    {"close", (PyCFunction)Connection_close, METH_NOARGS, "Close the socket."},
    {"from_url", (PyCFunction)(void (*)(void))Connection_from_url,
     METH_CLASS | METH_VARARGS | METH_KEYWORDS,
     "from_url(url, **kw) -> Connection: to the URL's host and port, over TLS for https://"},
    {"__enter__", (PyCFunction)Connection_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)Connection_exit, METH_VARARGS, NULL},
    {0},
};

static PyType_Slot Connection_slots[] = {
    {Py_tp_dealloc, Connection_dealloc},
    {Py_tp_init, Connection_init},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_repr, Connection_repr},
    {Py_tp_members, Connection_members},
    {Py_tp_getset, Connection_getset},
    {Py_tp_methods, Connection_methods},
    {Py_tp_doc, "Connection(host, port, timeout=30.0, *, max_body=2**30, tls=False, verify=True, "
                "cafile=None, server_hostname=None, certfile=None, keyfile=None)\n\n"
                "One blocking keep-alive HTTP/1.1 connection, over TLS with tls=True."},
    {0, NULL},
};

static PyType_Spec Connection_spec = {
    .name = "httpbench.Connection",
    .basicsize = sizeof(ConnectionObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = Connection_slots,
};

/* -------------------------------------------------------------- ServerCore */

/* The running C server; httpbench.server.Server is the public face. */
typedef struct {
    PyObject_HEAD
    hb_srv *srv;
    PyObject *tls; /* the _TLS its sessions use, kept until it has stopped */
    int starting;  /* __init__ is under way with the GIL released */
} ServerCoreObject;

static void ServerCore_stop_now(ServerCoreObject *self)
{
    hb_srv *srv = self->srv;
    self->srv = NULL;
    if (srv != NULL) {
        Py_BEGIN_ALLOW_THREADS hb_srv_stop(srv);
        Py_END_ALLOW_THREADS
    }
}

static void ServerCore_dealloc(ServerCoreObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    ServerCore_stop_now(self);
    Py_CLEAR(self->tls);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/* The relay's allow list from a sequence of (name, port, address) tuples:
 * the address a numeric IPv4 or IPv6 one (Python resolved the name). Sets
 * *out (PyMem_Free it) and *n. Returns 0, or -1 with an exception. */
static int allow_of(PyObject *seq_o, hb_relay_allow **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (seq_o == Py_None)
        return 0;
    PyObject *seq = PySequence_Fast(seq_o, "allow must be a sequence of (name, port, address)");
    if (seq == NULL)
        return -1;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    hb_relay_allow *a = len > 0 ? PyMem_Calloc((size_t)len, sizeof *a) : NULL;
    if (len > 0 && a == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        const char *name, *ip;
        int port;
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyArg_ParseTuple(item, "sis:allow", &name, &port, &ip))
            goto error;
        struct sockaddr_in *in = (struct sockaddr_in *)&a[i].addr.sa;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&a[i].addr.sa;
        if (strlen(name) >= sizeof a[i].name || port < 0 || port > 65535) {
            PyErr_Format(PyExc_ValueError,
                         "allow: a name of at most %zu bytes and a port "
                         "from 0 to 65535, not %R",
                         sizeof a[i].name - 1, item);
            goto error;
        }
        if (inet_pton(AF_INET, ip, &in->sin_addr) == 1) {
            in->sin_family = AF_INET;
            a[i].addr.len = sizeof *in;
        } else if (inet_pton(AF_INET6, ip, &in6->sin6_addr) == 1) {
            in6->sin6_family = AF_INET6;
            a[i].addr.len = sizeof *in6;
        } else {
            PyErr_Format(PyExc_ValueError, "allow: %s is not a numeric address", ip);
            goto error;
        }
        strcpy(a[i].name, name);
        a[i].port = port;
    }
    Py_DECREF(seq);
    *out = a;
    *n = (size_t)len;
    return 0;
error:
    Py_DECREF(seq);
    PyMem_Free(a);
    return -1;
}

static int ServerCore_init(ServerCoreObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"host",
                             "port",
                             "threaded",
                             "threads",
                             "static_dir",
                             "zero_copy",
                             "max_body",
                             "header_timeout",
                             "send_timeout",
                             "idle_timeout",
                             "version",
                             "max_buffered",
                             "tls",
                             "unix_socket",
                             "proxy",
                             "allow",
                             "upstream_timeout",
                             NULL};
    hb_srv_config cfg;
    int threaded;
    PyObject *port, *threads, *max_body, *max_buffered, *timeouts[3], *tls_o = Py_None;
    PyObject *allow_o = Py_None, *upstream_o = NULL;
    hb_relay_allow *allow = NULL;
    long long v;
    hb_tls *tls;
    core_state *st = (core_state *)PyType_GetModuleState(Py_TYPE(self));
    memset(&cfg, 0, sizeof cfg);
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "sOpOzpOOOOsO|OzpOO:_ServerCore", kwlist,
                                     &cfg.host, &port, &threaded, &threads, &cfg.static_dir,
                                     &cfg.zero_copy, &max_body, &timeouts[0], &timeouts[1],
                                     &timeouts[2], &cfg.version, &max_buffered, &tls_o,
                                     &cfg.unix_path, &cfg.proxy, &allow_o, &upstream_o))
        return -1;
    cfg.upstream_timeout = 10.0;
    if (upstream_o != NULL &&
        arg_real(upstream_o, "upstream_timeout", 0, NO_TIMEOUT, &cfg.upstream_timeout) != 0)
        return -1;
    if (tls_of(st, tls_o, &tls) != 0)
        return -1;
    if (tls != NULL) {
        cfg.transport = &hb_net_tls;
        cfg.transport_shared = tls;
    }
    if (arg_int(port, "port", 0, 65535, &v) != 0)
        return -1;
    cfg.port = (int)v;
    if (arg_int(threads, "threads", 1, HB_SRV_MAX_THREADS, &v) != 0)
        return -1;
    cfg.threads = (int)v;
    if (arg_int(max_body, "max_body", 0, MAX_BYTES, &v) != 0)
        return -1;
    cfg.max_body = (uint64_t)v;
    if (arg_int(max_buffered, "max_buffered", 1, MAX_BYTES, &v) != 0)
        return -1;
    cfg.max_buffered = (uint64_t)v;
    if (arg_real(timeouts[0], "header_timeout", 0, NO_TIMEOUT, &cfg.header_timeout) != 0 ||
        arg_real(timeouts[1], "send_timeout", 0, NO_TIMEOUT, &cfg.send_timeout) != 0 ||
        arg_real(timeouts[2], "idle_timeout", 0, NO_TIMEOUT, &cfg.idle_timeout) != 0)
        return -1;
    /* Checked after every conversion, and held while the GIL is released,
     * so that two threads never start two servers for one object. */
    if (self->srv != NULL || self->starting) {
        PyErr_SetString(PyExc_RuntimeError, "the server is already running");
        return -1;
    }
    cfg.mode = threaded ? HB_SRV_THREADS : HB_SRV_EPOLL;
    if (allow_of(allow_o, &allow, &cfg.nallow) != 0)
        return -1;
    cfg.allow = allow;
    char err[256] = "";
    hb_srv *srv;
    self->starting = 1;
    Py_BEGIN_ALLOW_THREADS srv = hb_srv_start(&cfg, err, sizeof err);
    Py_END_ALLOW_THREADS self->starting = 0;
    PyMem_Free(allow); /* the server keeps a copy */
    if (srv == NULL) {
        PyErr_SetString(PyExc_OSError, err);
        return -1;
    }
    self->srv = srv;
    Py_XSETREF(self->tls, tls != NULL ? Py_NewRef(tls_o) : NULL);
    return 0;
}

static PyObject *ServerCore_stop(ServerCoreObject *self, PyObject *unused)
{
    (void)unused;
    ServerCore_stop_now(self);
    Py_RETURN_NONE;
}

static PyObject *ServerCore_get_port(ServerCoreObject *self, void *closure)
{
    (void)closure;
    if (self->srv == NULL)
        Py_RETURN_NONE;
    return PyLong_FromLong(hb_srv_port(self->srv));
}

/* stats() -> (connections, requests, rejected, timeouts, relayed, tunnels) */
static PyObject *ServerCore_stats(ServerCoreObject *self, PyObject *unused)
{
    (void)unused;
    hb_srv_stats st = {0, 0, 0, 0, 0, 0};
    if (self->srv != NULL)
        hb_srv_get_stats(self->srv, &st);
    return Py_BuildValue("(KKKKKK)", (unsigned long long)st.connections,
                         (unsigned long long)st.requests, (unsigned long long)st.rejected,
                         (unsigned long long)st.timeouts, (unsigned long long)st.relayed,
                         (unsigned long long)st.tunnels);
}

static PyGetSetDef ServerCore_getset[] = {
    {"port", (getter)ServerCore_get_port, NULL, "The port, or None once stopped.", NULL},
    {0},
};

static PyMethodDef ServerCore_methods[] = {
    {"stop", (PyCFunction)ServerCore_stop, METH_NOARGS, "Stop serving and free everything."},
    {"stats", (PyCFunction)ServerCore_stats, METH_NOARGS,
     "(connections, requests, rejected, timeouts)"},
    {0},
};

static PyType_Slot ServerCore_slots[] = {
    {Py_tp_dealloc, ServerCore_dealloc},
    {Py_tp_init, ServerCore_init},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_getset, ServerCore_getset},
    {Py_tp_methods, ServerCore_methods},
    {Py_tp_doc, "The embedded server's C half; use httpbench.Server."},
    {0, NULL},
};

static PyType_Spec ServerCore_spec = {
    .name = "httpbench._core._ServerCore",
    .basicsize = sizeof(ServerCoreObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = ServerCore_slots,
};

/* --------------------------------------------------------------- Histogram */

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

/* A count or a nanosecond value: an int from 0 to 2**64-1, a ValueError
 * naming `name` otherwise (a TypeError for no int). */
static int arg_u64(PyObject *o, const char *name, unsigned long long *out)
{
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", name, Py_TYPE(o)->tp_name);
        return -1;
    }
    unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (v == (unsigned long long)-1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
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
    if (!(p >= 0 && p <= 100)) {
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
            arg_int(index_o, "bucket index", 0, HB_HIST_BUCKETS - 1, &index) != 0 ||
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

static PyType_Spec Histogram_spec = {
    .name = "httpbench.Histogram",
    .basicsize = sizeof(HistogramObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = Histogram_slots,
};

static PyObject *new_histogram(core_state *st, const hb_hist *h)
{
    HistogramObject *o = (HistogramObject *)st->Histogram->tp_alloc(st->Histogram, 0);
    if (o != NULL)
        memcpy(&o->h, h, sizeof *h);
    return (PyObject *)o;
}

/* ------------------------------------------------------------------- Bench */

/* A run of the timing loop; httpbench.runner drives it. */
typedef struct {
    PyObject_HEAD
    hb_bench *b;
    PyObject *request;  /* bytes, kept alive while the threads use them */
    PyObject *tls;      /* the _TLS the connections use, likewise */
    PyObject *tunnel;   /* bytes: the CONNECT through a proxy, likewise */
    PyObject *scenario; /* the scenario's list (its bytes), likewise */
    int nscenario;
    int starting; /* __init__ is under way with the GIL released */
} BenchObject;

static void Bench_dealloc(BenchObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    if (self->b != NULL) {
        hb_bench *b = self->b;
        self->b = NULL;
        Py_BEGIN_ALLOW_THREADS hb_bench_free(b);
        Py_END_ALLOW_THREADS
    }
    Py_XDECREF(self->request);
    Py_XDECREF(self->tls);
    Py_XDECREF(self->tunnel);
    Py_XDECREF(self->scenario);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/* A load shape from a sequence of (seconds, target rate) pairs, each
 * checked (seconds finite and above 0, at most a year; a rate finite, 0 or
 * above, at most 1e9). Returns it (PyMem_Free it), or NULL with an
 * exception. */
static hb_shape *shape_of(PyObject *stages_o, const char *name)
{
    PyObject *seq = PySequence_Fast(stages_o, "stages must be a sequence of (seconds, value)");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    double *v = PyMem_Calloc(n > 0 ? (size_t)n * 2 : 1, sizeof *v);
    hb_shape *shape = PyMem_Malloc(sizeof *shape);
    if (v == NULL || shape == NULL) {
        PyErr_NoMemory();
        goto error;
    }
    if (n < 1 || n > HB_SHAPE_MAX) {
        PyErr_Format(PyExc_ValueError, "%s: 1 to %d of them, not %zd", name, HB_SHAPE_MAX, n);
        goto error;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, i), *secs, *target;
        if (!PyArg_ParseTuple(pair, "OO:stages", &secs, &target) ||
            arg_real(secs, "a stage's seconds", 0, HB_BENCH_MAX_SECONDS, &v[i]) != 0 ||
            arg_real(target, "a stage's target", 1, HB_BENCH_MAX_RATE, &v[n + i]) != 0)
            goto error;
    }
    if (hb_shape_init(shape, v, v + n, (int)n) != 0 || !(shape->total > 0)) {
        PyErr_Format(PyExc_ValueError, "%s: the shape is 0 throughout", name);
        goto error;
    }
    PyMem_Free(v);
    Py_DECREF(seq);
    return shape;
error:
    PyMem_Free(v);
    PyMem_Free(shape);
    Py_DECREF(seq);
    return NULL;
}

/* A scenario's requests for the loop, from httpbench.runner's list of
 * (variants, random, head, weight, status_ok, expect_body, expect_length):
 * variants a list of bytes, status_ok 600 bytes of flags or None,
 * expect_body bytes or None, expect_length an int (-1: none). The arrays
 * are PyMem'ed in one block (*mem, to free once the run has copied them);
 * the bytes stay the list's. Returns the count, or -1 with an exception. */
static int scenario_of(PyObject *list, hb_bench_req **out, void **mem)
{
    *out = NULL;
    *mem = NULL;
    if (!PyList_Check(list) || PyList_GET_SIZE(list) < 1 ||
        PyList_GET_SIZE(list) > HB_BENCH_MAX_SCENARIO) {
        PyErr_Format(PyExc_ValueError, "scenario: a list of 1 to %d requests",
                     HB_BENCH_MAX_SCENARIO);
        return -1;
    }
    Py_ssize_t n = PyList_GET_SIZE(list), nv = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(list, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 7 ||
            !PyList_Check(PyTuple_GET_ITEM(item, 0)) ||
            PyList_GET_SIZE(PyTuple_GET_ITEM(item, 0)) < 1 ||
            PyList_GET_SIZE(PyTuple_GET_ITEM(item, 0)) > UINT32_MAX) {
            PyErr_SetString(PyExc_TypeError, "scenario: a request is a 7-tuple with variants");
            return -1;
        }
        nv += PyList_GET_SIZE(PyTuple_GET_ITEM(item, 0));
    }
    size_t reqs = (size_t)n * sizeof(hb_bench_req), ptrs = (size_t)nv * sizeof(char *);
    char *block = PyMem_Malloc(reqs + ptrs + (size_t)nv * sizeof(size_t));
    if (block == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    hb_bench_req *r = (hb_bench_req *)block;
    const char **p = (const char **)(block + reqs);
    size_t *lens = (size_t *)(block + reqs + ptrs);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(list, i), *variants = PyTuple_GET_ITEM(item, 0);
        PyObject *status_ok = PyTuple_GET_ITEM(item, 4), *body = PyTuple_GET_ITEM(item, 5);
        long long expect_length;
        memset(&r[i], 0, sizeof r[i]);
        r[i].variants = p;
        r[i].lens = lens;
        r[i].nvariants = (uint32_t)PyList_GET_SIZE(variants);
        for (Py_ssize_t k = 0; k < PyList_GET_SIZE(variants); k++) {
            PyObject *v = PyList_GET_ITEM(variants, k);
            if (!PyBytes_Check(v) || PyBytes_GET_SIZE(v) < 1) {
                PyErr_SetString(PyExc_TypeError, "scenario: a variant is a request's bytes");
                goto error;
            }
            *p++ = PyBytes_AS_STRING(v);
            *lens++ = (size_t)PyBytes_GET_SIZE(v);
        }
        r[i].random = PyObject_IsTrue(PyTuple_GET_ITEM(item, 1));
        r[i].head = PyObject_IsTrue(PyTuple_GET_ITEM(item, 2));
        if (r[i].random < 0 || r[i].head < 0 ||
            arg_real(PyTuple_GET_ITEM(item, 3), "weight", 0, 1e6, &r[i].weight) != 0 ||
            arg_int(PyTuple_GET_ITEM(item, 6), "expect_length", -1, INT64_MAX, &expect_length) != 0)
            goto error;
        if (!(r[i].weight > 0)) {
            PyErr_SetString(PyExc_ValueError, "weight must be above 0");
            goto error;
        }
        r[i].expect_length = expect_length;
        if (status_ok != Py_None) {
            if (!PyBytes_Check(status_ok) || PyBytes_GET_SIZE(status_ok) != 600) {
                PyErr_SetString(PyExc_TypeError, "scenario: status_ok is 600 bytes of flags");
                goto error;
            }
            r[i].status_ok = (const unsigned char *)PyBytes_AS_STRING(status_ok);
        }
        if (body != Py_None) {
            if (!PyBytes_Check(body) || PyBytes_GET_SIZE(body) < 1 ||
                PyBytes_GET_SIZE(body) > UINT32_MAX) {
                PyErr_SetString(PyExc_TypeError, "scenario: expect_body is bytes");
                goto error;
            }
            r[i].expect_body = (const unsigned char *)PyBytes_AS_STRING(body);
            r[i].expect_body_len = (uint32_t)PyBytes_GET_SIZE(body);
        }
    }
    *out = r;
    *mem = block;
    return (int)n;
error:
    PyMem_Free(block);
    return -1;
}

static int Bench_init(BenchObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"host",
                             "port",
                             "request",
                             "head",
                             "requests",
                             "duration",
                             "concurrency",
                             "threads",
                             "keepalive",
                             "rate",
                             "timeout",
                             "lengths_vary",
                             "tls",
                             "unix_socket",
                             "pipeline",
                             "idempotent",
                             "tunnel",
                             "stages",
                             "vus",
                             "scenario",
                             "sequence",
                             "seed",
                             "prepared",
                             "warmup_requests",
                             "warmup_seconds",
                             NULL};
    const char *host;
    PyObject *stages_o = Py_None, *vus_o = Py_None, *scen_o = Py_None;
    unsigned long long seed = 0;
    PyObject *warm_n_o = NULL, *warm_s_o = NULL;
    void *scen_mem = NULL;
    hb_shape *shape = NULL, *vus = NULL;
    PyObject *request, *port_o, *requests_o, *duration_o, *conc_o, *threads_o, *rate_o, *timeout_o;
    PyObject *tls_o = Py_None, *unix_o = NULL, *pipeline_o = NULL, *tunnel_o = Py_None;
    long long pipeline = 1;
    hb_addr unix_addr;
    hb_tls *tls;
    long long port, requests, conc, threads;
    hb_bench_config cfg;
    core_state *st = (core_state *)PyType_GetModuleState(Py_TYPE(self));
    memset(&cfg, 0, sizeof cfg);
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "sOSpOOOOpOOp|OO&OpOOOOpKpOO:_Bench", kwlist,
                                     &host, &port_o, &request, &cfg.head, &requests_o, &duration_o,
                                     &conc_o, &threads_o, &cfg.keepalive, &rate_o, &timeout_o,
                                     &cfg.lengths_vary, &tls_o, unix_path_arg, &unix_o, &pipeline_o,
                                     &cfg.idempotent, &tunnel_o, &stages_o, &vus_o, &scen_o,
                                     &cfg.sequence, &seed, &cfg.prepared, &warm_n_o, &warm_s_o))
        return -1;
    cfg.seed = seed;
    if (tunnel_o != Py_None && !PyBytes_Check(tunnel_o)) {
        Py_XDECREF(unix_o);
        PyErr_SetString(PyExc_TypeError, "tunnel must be bytes or None");
        return -1;
    }
    if (unix_o != NULL) {
        char uerr[256];
        int ok = hb_net_unix(PyBytes_AS_STRING(unix_o), &unix_addr, uerr, sizeof uerr);
        Py_DECREF(unix_o);
        if (ok < 0) {
            PyErr_Format(PyExc_ValueError, "unix_socket: %s", uerr);
            return -1;
        }
    }
    if (pipeline_o != NULL &&
        arg_int(pipeline_o, "pipeline", 1, HB_BENCH_MAX_PIPELINE, &pipeline) != 0)
        return -1;
    long long warm_n = 0;
    if ((warm_n_o != NULL &&
         arg_int(warm_n_o, "warmup_requests", 0, HB_BENCH_MAX_REQUESTS, &warm_n) != 0) ||
        (warm_s_o != NULL &&
         arg_real(warm_s_o, "warmup_seconds", 1, HB_BENCH_MAX_SECONDS, &cfg.warmup_seconds) != 0))
        return -1;
    cfg.warmup_requests = (uint64_t)warm_n;
    cfg.pipeline = (int)pipeline;
    if (tls_of(st, tls_o, &tls) != 0)
        return -1;
    if (tls != NULL) {
        cfg.transport = &hb_net_tls;
        cfg.transport_shared = tls;
    }
    if (arg_int(port_o, "port", 1, 65535, &port) != 0 ||
        arg_int(requests_o, "requests", 0, HB_BENCH_MAX_REQUESTS, &requests) != 0 ||
        arg_real(duration_o, "duration", 1, HB_BENCH_MAX_SECONDS, &cfg.duration) != 0 ||
        arg_int(conc_o, "concurrency", 1, HB_BENCH_MAX_CONCURRENCY, &conc) != 0 ||
        arg_int(threads_o, "threads", 1, HB_BENCH_MAX_THREADS, &threads) != 0 ||
        arg_real(rate_o, "rate", 1, HB_BENCH_MAX_RATE, &cfg.rate) != 0 ||
        arg_real(timeout_o, "timeout", 0, HB_BENCH_MAX_SECONDS, &cfg.timeout) != 0)
        return -1;
    if (cfg.rate > 0 && cfg.pipeline > 1) {
        PyErr_SetString(PyExc_ValueError, "pipeline with rate is not supported");
        return -1;
    }
    if (stages_o != Py_None) {
        if (cfg.rate > 0 || cfg.pipeline > 1) {
            PyErr_SetString(PyExc_ValueError, "stages set the rate: no rate or pipeline beside");
            return -1;
        }
        shape = shape_of(stages_o, "stages");
        if (shape == NULL)
            return -1;
        cfg.shape = shape;
    }
    if (vus_o != Py_None) {
        if (cfg.rate > 0 || shape != NULL) {
            PyMem_Free(shape);
            PyErr_SetString(PyExc_ValueError, "concurrency_stages run closed loop: no rate");
            return -1;
        }
        vus = shape_of(vus_o, "concurrency_stages");
        if (vus == NULL)
            return -1;
        cfg.vus = vus;
    }
    /* Under a rate a connection starts every concurrency/rate seconds. */
    if (cfg.rate > 0 && (double)conc / cfg.rate > HB_BENCH_MAX_SECONDS) {
        PyErr_Format(PyExc_ValueError, "rate %R is too low for %lld connections", rate_o, conc);
        return -1;
    }
    if (scen_o != Py_None) {
        hb_bench_req *reqs;
        int ns = cfg.pipeline > 1 ? -2 : scenario_of(scen_o, &reqs, &scen_mem);
        if (ns < 0) {
            if (ns == -2)
                PyErr_SetString(PyExc_ValueError, "pipeline with a scenario is not supported");
            PyMem_Free(shape);
            PyMem_Free(vus);
            return -1;
        }
        cfg.scenario = reqs;
        cfg.nscenario = ns;
    }
    cfg.requests = (uint64_t)requests;
    cfg.concurrency = (int)conc;
    cfg.threads = (int)threads;
    /* Checked after every conversion, and held while the GIL is released,
     * so that two threads never start two runs for one object. */
    if (self->b != NULL || self->starting) {
        PyMem_Free(shape);
        PyMem_Free(vus);
        PyMem_Free(scen_mem);
        PyErr_SetString(PyExc_RuntimeError, "already started");
        return -1;
    }
    self->starting = 1;
    char portbuf[16], err[256];
    snprintf(portbuf, sizeof portbuf, "%lld", port);
    int n = 1;
    if (unix_o != NULL) {
        cfg.addrs[0] = unix_addr; /* the URL's host names the server, no more */
    } else {
        Py_BEGIN_ALLOW_THREADS n =
            hb_net_resolve(host, portbuf, cfg.addrs, HB_BENCH_MAX_ADDRS, err, sizeof err);
        Py_END_ALLOW_THREADS
    }
    if (n < 1) {
        self->starting = 0;
        PyMem_Free(shape);
        PyMem_Free(vus);
        PyMem_Free(scen_mem);
        PyErr_SetString(st->ConnectError, err);
        return -1;
    }
    cfg.naddrs = n;
    Py_XSETREF(self->request, Py_NewRef(request));
    Py_XSETREF(self->tls, tls != NULL ? Py_NewRef(tls_o) : NULL);
    Py_XSETREF(self->tunnel, tunnel_o != Py_None ? Py_NewRef(tunnel_o) : NULL);
    Py_XSETREF(self->scenario, scen_o != Py_None ? Py_NewRef(scen_o) : NULL);
    self->nscenario = cfg.nscenario;
    if (self->tunnel != NULL) {
        cfg.tunnel = PyBytes_AS_STRING(self->tunnel);
        cfg.tunnel_len = (size_t)PyBytes_GET_SIZE(self->tunnel);
    }
    cfg.request = PyBytes_AS_STRING(request);
    cfg.request_len = (size_t)PyBytes_GET_SIZE(request);
    hb_bench *b;
    Py_BEGIN_ALLOW_THREADS b = hb_bench_start(&cfg);
    Py_END_ALLOW_THREADS self->starting = 0;
    PyMem_Free(shape); /* the run keeps copies */
    PyMem_Free(vus);
    PyMem_Free(scen_mem);
    if (b == NULL) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    self->b = b;
    return 0;
}

static PyObject *Bench_wait(BenchObject *self, PyObject *arg)
{
    double seconds;
    if (arg_real(arg, "seconds", 1, HB_BENCH_MAX_SECONDS, &seconds) != 0)
        return NULL;
    if (self->b == NULL)
        Py_RETURN_TRUE;
    int done;
    Py_BEGIN_ALLOW_THREADS done = hb_bench_wait(self->b, (int64_t)(seconds * 1e9));
    Py_END_ALLOW_THREADS return PyBool_FromLong(done);
}

static PyObject *Bench_stop(BenchObject *self, PyObject *unused)
{
    (void)unused;
    if (self->b != NULL)
        hb_bench_stop(self->b);
    Py_RETURN_NONE;
}

static PyObject *Bench_progress(BenchObject *self, PyObject *unused)
{
    (void)unused;
    uint64_t n = 0, c = 0, f = 0;
    if (self->b != NULL)
        hb_bench_progress(self->b, &n, &c, &f);
    return Py_BuildValue("(KKK)", (unsigned long long)n, (unsigned long long)c,
                         (unsigned long long)f);
}

static PyObject *Bench_prepared(BenchObject *self, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(self->b == NULL || hb_bench_prepared(self->b));
}

/* go(start): a prepared start's measured part begins at `start`, seconds
 * since the epoch (time.time()'s clock: machines agree on it). */
static PyObject *Bench_go(BenchObject *self, PyObject *arg)
{
    double at = PyFloat_AsDouble(arg);
    if (at == -1.0 && PyErr_Occurred())
        return NULL;
    if (!isfinite(at) || at < 0 || at > 1e11) {
        PyErr_Format(PyExc_ValueError, "start must be seconds since the epoch, not %R", arg);
        return NULL;
    }
    if (self->b != NULL) {
        hb_bench *b = self->b;
        Py_BEGIN_ALLOW_THREADS hb_bench_go(b, (int64_t)(at * 1e9));
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_NONE;
}

/* The run's figures by name, each named once: what result() returns. */
#define RESULT_AT(name, member)                                                                    \
    {                                                                                              \
        name, offsetof(hb_bench_result, member)                                                    \
    }
typedef struct {
    const char *name;
    size_t off;
} result_field;

static const result_field RESULT_COUNTS[] = {
    RESULT_AT("issued", issued),
    RESULT_AT("complete", complete),
    RESULT_AT("failed", failed),
    RESULT_AT("cancelled", cancelled),
    RESULT_AT("connect", fail_connect),
    RESULT_AT("receive", fail_receive),
    RESULT_AT("length", fail_length),
    RESULT_AT("exceptions", fail_exceptions),
    RESULT_AT("timeout", fail_timeout),
    RESULT_AT("tls", fail_tls),
    RESULT_AT("check", fail_check),
    RESULT_AT("tls_full_handshakes", tls_full),
    RESULT_AT("tls_resumed_handshakes", tls_resumed),
    RESULT_AT("non_2xx", non_2xx),
    RESULT_AT("bytes_received", bytes_received),
    RESULT_AT("body_bytes", body_bytes),
    RESULT_AT("bytes_sent", bytes_sent),
    RESULT_AT("keepalive_requests", keepalive_requests),
    RESULT_AT("connects", connects),
    RESULT_AT("reconnects", reconnects),
};
static const result_field RESULT_SECONDS[] = {
    RESULT_AT("elapsed", elapsed),
    RESULT_AT("cpu_user", cpu_user),
    RESULT_AT("cpu_sys", cpu_sys),
};
static const result_field RESULT_HISTOGRAMS[] = {
    RESULT_AT("total", total),           RESULT_AT("uncorrected", uncorrected),
    RESULT_AT("connect_time", connect),  RESULT_AT("waiting", waiting),
    RESULT_AT("processing", processing), RESULT_AT("tls_handshake", tls_handshake),
};
static const result_field RESULT_TEXTS[] = {
    RESULT_AT("server_software", server),    RESULT_AT("error", error),
    RESULT_AT("first_head", first_head),     RESULT_AT("tls_protocol", tls.protocol),
    RESULT_AT("tls_temp_key", tls.temp_key), RESULT_AT("tls_server_name", tls.server_name),
};
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* d[name] = value, taking the reference; -1 (with an exception) when value
 * is NULL or the store fails. */
static int put(PyObject *d, const char *name, PyObject *value)
{
    if (value == NULL)
        return -1;
    int rc = PyDict_SetItemString(d, name, value);
    Py_DECREF(value);
    return rc;
}

/* [(second, complete, failed, p50 ns, p99 ns)] per second of the run. */
static PyObject *timeline_list(const hb_bench_result *r)
{
    PyObject *list = PyList_New(r->nseconds);
    for (int s = 0; list != NULL && s < r->nseconds; s++) {
        const hb_second *sec = &r->timeline[s];
        uint64_t p50, p99;
        hb_bench_second_percentiles(sec, &p50, &p99);
        PyObject *t = Py_BuildValue("(iIIKK)", s, sec->complete, sec->failed,
                                    (unsigned long long)p50, (unsigned long long)p99);
        if (t == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, s, t);
    }
    return list;
}

/* [[(bucket, count), ...]] per second: each second's timeline buckets in
 * use, so seconds of runs on several machines merge exactly (their
 * percentiles could not be). */
static PyObject *timeline_buckets(const hb_bench_result *r)
{
    PyObject *list = PyList_New(r->nseconds);
    for (int s = 0; list != NULL && s < r->nseconds; s++) {
        PyObject *pairs = PyList_New(0);
        for (int k = 0; pairs != NULL && k < HB_TL_BUCKETS; k++) {
            if (r->timeline[s].buckets[k] == 0)
                continue;
            PyObject *pair = Py_BuildValue("(iI)", k, r->timeline[s].buckets[k]);
            if (pair == NULL || PyList_Append(pairs, pair) != 0)
                Py_CLEAR(pairs);
            Py_XDECREF(pair);
        }
        if (pairs == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, s, pairs);
    }
    return list;
}

/* timeline_percentiles(pairs) -> (p50 ns, p99 ns) of one second from its
 * (bucket, count) pairs, as the loop computes a second's own. */
static PyObject *core_timeline_percentiles(PyObject *mod, PyObject *arg)
{
    (void)mod;
    hb_second sec;
    memset(&sec, 0, sizeof sec);
    PyObject *seq = PySequence_Fast(arg, "timeline_percentiles takes (bucket, count) pairs");
    if (seq == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        long long k, n;
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, i), *ko, *no;
        if (!PyArg_ParseTuple(pair, "OO:timeline_percentiles", &ko, &no) ||
            arg_int(ko, "bucket", 0, HB_TL_BUCKETS - 1, &k) != 0 ||
            arg_int(no, "count", 0, UINT32_MAX, &n) != 0 ||
            (uint64_t)sec.complete + (uint64_t)n > UINT32_MAX) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "timeline_percentiles: too many in a second");
            Py_DECREF(seq);
            return NULL;
        }
        sec.buckets[k] += (uint32_t)n;
        sec.complete += (uint32_t)n;
    }
    Py_DECREF(seq);
    uint64_t p50, p99;
    hb_bench_second_percentiles(&sec, &p50, &p99);
    return Py_BuildValue("(KK)", (unsigned long long)p50, (unsigned long long)p99);
}

/* {status: count} for the statuses seen. */
static PyObject *status_dict(const hb_bench_result *r)
{
    PyObject *d = PyDict_New();
    for (int i = 0; d != NULL && i < 600; i++) {
        if (r->status[i] == 0)
            continue;
        PyObject *k = PyLong_FromLong(i), *v = PyLong_FromUnsignedLongLong(r->status[i]);
        int rc = k && v ? PyDict_SetItem(d, k, v) : -1;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (rc != 0)
            Py_CLEAR(d);
    }
    return d;
}

static PyObject *result_dict(core_state *st, const hb_bench_result *r)
{
    PyObject *d = PyDict_New();
    if (d == NULL)
        return NULL;
    const char *base = (const char *)r;
    for (size_t i = 0; i < COUNT_OF(RESULT_COUNTS); i++)
        if (put(d, RESULT_COUNTS[i].name,
                PyLong_FromUnsignedLongLong(*(const uint64_t *)(base + RESULT_COUNTS[i].off))))
            goto error;
    for (size_t i = 0; i < COUNT_OF(RESULT_SECONDS); i++)
        if (put(d, RESULT_SECONDS[i].name,
                PyFloat_FromDouble(*(const double *)(base + RESULT_SECONDS[i].off))))
            goto error;
    for (size_t i = 0; i < COUNT_OF(RESULT_HISTOGRAMS); i++)
        if (put(d, RESULT_HISTOGRAMS[i].name,
                new_histogram(st, (const hb_hist *)(base + RESULT_HISTOGRAMS[i].off))))
            goto error;
    for (size_t i = 0; i < COUNT_OF(RESULT_TEXTS); i++) {
        const char *text = base + RESULT_TEXTS[i].off;
        if (put(d, RESULT_TEXTS[i].name,
                PyUnicode_DecodeLatin1(text, (Py_ssize_t)strlen(text), NULL)))
            goto error;
    }
    if (put(d, "document_length", PyLong_FromLongLong(r->document_length)) ||
        put(d, "status_counts", status_dict(r)) || put(d, "timeline", timeline_list(r)) ||
        put(d, "timeline_buckets", timeline_buckets(r)))
        goto error;
    return d;
error:
    Py_DECREF(d);
    return NULL;
}

/* result() -> dict: every figure of the run; call after wait() is True. */
static PyObject *Bench_result(BenchObject *self, PyObject *unused)
{
    (void)unused;
    core_state *st = (core_state *)PyType_GetModuleState(Py_TYPE(self));
    if (self->b == NULL || !hb_bench_wait(self->b, 0)) {
        PyErr_SetString(PyExc_RuntimeError, "the run has not ended");
        return NULL;
    }
    hb_bench_result *r = PyMem_Malloc(sizeof *r);
    if (r == NULL)
        return PyErr_NoMemory();
    hb_bench_collect(self->b, r);
    PyObject *out = result_dict(st, r);
    hb_bench_result_free(r);
    /* A scenario's requests, each alone, in its order. */
    PyObject *each = out != NULL ? PyList_New(self->nscenario) : NULL;
    for (int i = 0; each != NULL && i < self->nscenario; i++) {
        hb_bench_collect_request(self->b, i, r);
        PyObject *d = result_dict(st, r);
        hb_bench_result_free(r);
        if (d == NULL)
            Py_CLEAR(each);
        else
            PyList_SET_ITEM(each, i, d);
    }
    PyMem_Free(r);
    if (out != NULL && put(out, "by_request", each) != 0)
        Py_CLEAR(out);
    return out;
}

static PyMethodDef Bench_methods[] = {
    {"wait", (PyCFunction)Bench_wait, METH_O, "wait(seconds) -> True once the run has ended."},
    {"stop", (PyCFunction)Bench_stop, METH_NOARGS, "End the run early."},
    {"progress", (PyCFunction)Bench_progress, METH_NOARGS, "(issued, complete, failed) so far."},
    {"prepared", (PyCFunction)Bench_prepared, METH_NOARGS,
     "True once a prepared start has warmed up and waits for go()."},
    {"go", (PyCFunction)Bench_go, METH_O,
     "go(start): a prepared start's measured part begins at start (time.time()'s clock)."},
    {"result", (PyCFunction)Bench_result, METH_NOARGS, "Every figure of the ended run."},
    {0},
};

static PyType_Slot Bench_slots[] = {
    {Py_tp_dealloc, Bench_dealloc},
    {Py_tp_init, Bench_init},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_methods, Bench_methods},
    {Py_tp_doc, "A run of the C timing loop; use httpbench.run."},
    {0, NULL},
};

static PyType_Spec Bench_spec = {
    .name = "httpbench._core._Bench",
    .basicsize = sizeof(BenchObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = Bench_slots,
};

/* build_request(method, target, headers=None, body=None, host=b"") -> (bytes, flags) */
static PyObject *core_build_request(PyObject *module, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"method", "target", "headers", "body", "host", NULL};
    PyObject *method, *target, *headers = Py_None, *body_o = Py_None, *host;
    Py_buffer body = {0};
    hb_buf b = HB_BUF_INIT;
    int flags;
    (void)module;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOS:build_request", kwlist, &method, &target,
                                     &headers, &body_o, &host))
        return NULL;
    if (body_o != Py_None && get_body(body_o, &body) != 0)
        return NULL;
    PyObject *out = NULL;
    if (build_request(&b, method, target, headers, &body, host, PY_SSIZE_T_MAX, &flags) == 0)
        out = Py_BuildValue("(y#i)", hb_buf_rdptr(&b), (Py_ssize_t)hb_buf_size(&b), flags);
    if (body.obj != NULL)
        PyBuffer_Release(&body);
    hb_buf_free(&b);
    return out;
}

static PyMethodDef core_functions[] = {
    {"timeline_percentiles", (PyCFunction)core_timeline_percentiles, METH_O,
     "timeline_percentiles(pairs) -> (p50 ns, p99 ns) of a second's (bucket, count) pairs."},
    {"build_request", (PyCFunction)(void (*)(void))core_build_request, METH_VARARGS | METH_KEYWORDS,
     "build_request(method, target, headers, body, host) -> (bytes, flags): the request "
     "Connection.request would send."},
    {0},
};

/* ------------------------------------------------------------------ module */

static int core_exec(PyObject *m)
{
    core_state *st = state_of(m);
    PyObject *exc = PyImport_ImportModule("httpbench.exceptions");
    if (exc == NULL)
        return -1;
    st->HttpbenchError = PyObject_GetAttrString(exc, "HttpbenchError");
    st->ConnectError = PyObject_GetAttrString(exc, "ConnectError");
    st->Timeout = PyObject_GetAttrString(exc, "Timeout");
    st->ProtocolError = PyObject_GetAttrString(exc, "ProtocolError");
    st->IncompleteResponse = PyObject_GetAttrString(exc, "IncompleteResponse");
    st->TLSError = PyObject_GetAttrString(exc, "TLSError");
    Py_DECREF(exc);
    if (PyErr_Occurred())
        return -1;
    st->Response = (PyTypeObject *)PyType_FromModuleAndSpec(m, &Response_spec, NULL);
    if (st->Response == NULL)
        return -1;
    st->Connection = (PyTypeObject *)PyType_FromModuleAndSpec(m, &Connection_spec, NULL);
    if (st->Connection == NULL)
        return -1;
    st->ServerCore = (PyTypeObject *)PyType_FromModuleAndSpec(m, &ServerCore_spec, NULL);
    if (st->ServerCore == NULL)
        return -1;
    st->Histogram = (PyTypeObject *)PyType_FromModuleAndSpec(m, &Histogram_spec, NULL);
    st->Bench = (PyTypeObject *)PyType_FromModuleAndSpec(m, &Bench_spec, NULL);
    st->TLS = (PyTypeObject *)PyType_FromModuleAndSpec(m, &TLS_spec, NULL);
    if (st->Histogram == NULL || st->Bench == NULL || st->TLS == NULL)
        return -1;
    if (PyModule_AddType(m, st->Response) != 0 || PyModule_AddType(m, st->Connection) != 0 ||
        PyModule_AddType(m, st->ServerCore) != 0 || PyModule_AddType(m, st->Histogram) != 0 ||
        PyModule_AddType(m, st->Bench) != 0 || PyModule_AddType(m, st->TLS) != 0)
        return -1;
    if (PyModule_AddIntConstant(m, "MAX_LINE", HB_MAX_LINE) != 0 ||
        PyModule_AddIntConstant(m, "MAX_HEAD", HB_MAX_HEAD) != 0 ||
        PyModule_AddIntConstant(m, "MAX_HEADERS", HB_MAX_HEADERS) != 0 ||
        PyModule_AddObject(m, "RND_MAX", PyLong_FromUnsignedLongLong(HB_RND_MAX)) != 0 ||
        PyModule_AddIntConstant(m, "DELAY_MAX_MS", HB_DELAY_MAX_MS) != 0 ||
        PyModule_AddIntConstant(m, "REQ_HEAD", HB_REQ_HEAD) != 0 ||
        PyModule_AddIntConstant(m, "TLS_1_2", HB_TLS_1_2) != 0 ||
        PyModule_AddIntConstant(m, "TLS_1_3", HB_TLS_1_3) != 0 ||
        /* The limits, defined here once: httpbench._check reads them. */
        PyModule_AddIntConstant(m, "MAX_REQUESTS", HB_BENCH_MAX_REQUESTS) != 0 ||
        PyModule_AddIntConstant(m, "MAX_CONCURRENCY", HB_BENCH_MAX_CONCURRENCY) != 0 ||
        PyModule_AddIntConstant(m, "MAX_THREADS", HB_BENCH_MAX_THREADS) != 0 ||
        PyModule_AddIntConstant(m, "MAX_PIPELINE", HB_BENCH_MAX_PIPELINE) != 0 ||
        PyModule_AddIntConstant(m, "MAX_SCENARIO", HB_BENCH_MAX_SCENARIO) != 0 ||
        PyModule_AddIntConstant(m, "MAX_BYTES", MAX_BYTES) != 0 ||
        PyModule_AddObject(m, "MAX_SECONDS", PyFloat_FromDouble(HB_BENCH_MAX_SECONDS)) != 0 ||
        PyModule_AddObject(m, "MAX_RATE", PyFloat_FromDouble(HB_BENCH_MAX_RATE)) != 0 ||
        PyModule_AddObject(m, "GRACE_SECONDS", PyFloat_FromDouble(HB_BENCH_GRACE_NS / 1e9)) != 0 ||
        PyModule_AddStringConstant(m, "OPENSSL_VERSION", hb_tls_library()) != 0 ||
        PyModule_AddStringConstant(m, "__version__", HB_VERSION) != 0)
        return -1;
    return 0;
}

static int core_traverse(PyObject *m, visitproc visit, void *arg)
{
    core_state *st = state_of(m);
    Py_VISIT(st->HttpbenchError);
    Py_VISIT(st->ConnectError);
    Py_VISIT(st->Timeout);
    Py_VISIT(st->ProtocolError);
    Py_VISIT(st->IncompleteResponse);
    Py_VISIT(st->TLSError);
    Py_VISIT(st->TLS);
    Py_VISIT(st->Connection);
    Py_VISIT(st->Response);
    Py_VISIT(st->ServerCore);
    Py_VISIT(st->Histogram);
    Py_VISIT(st->Bench);
    return 0;
}

static int core_clear(PyObject *m)
{
    core_state *st = state_of(m);
    Py_CLEAR(st->HttpbenchError);
    Py_CLEAR(st->ConnectError);
    Py_CLEAR(st->Timeout);
    Py_CLEAR(st->ProtocolError);
    Py_CLEAR(st->IncompleteResponse);
    Py_CLEAR(st->TLSError);
    Py_CLEAR(st->TLS);
    Py_CLEAR(st->Connection);
    Py_CLEAR(st->Response);
    Py_CLEAR(st->ServerCore);
    Py_CLEAR(st->Histogram);
    Py_CLEAR(st->Bench);
    return 0;
}

static void core_free(void *m)
{
    core_clear((PyObject *)m);
}

static PyModuleDef_Slot core_slots[] = {
    {Py_mod_exec, core_exec},
    {0, NULL},
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "httpbench._core",
    .m_doc = "httpbench's C core: the HTTP/1.1 client connection and the embedded server.",
    .m_size = sizeof(core_state),
    .m_slots = core_slots,
    .m_methods = core_functions,
    .m_traverse = core_traverse,
    .m_clear = core_clear,
    .m_free = core_free,
};

PyMODINIT_FUNC PyInit__core(void)
{
    return PyModuleDef_Init(&core_module);
}
