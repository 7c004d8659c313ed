/* py_conn.c: httpbench._core.Connection, the blocking keep-alive client
 * connection (httpbench.Connection subclasses it in Python). The request
 * runs with the GIL released; a signal that cuts a wait short takes the GIL
 * back just long enough to run Python's handlers (PEP 475), and a handler
 * that raises (Ctrl-C) ends the request. */
#include "py_core.h"

#include <stdio.h>

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
     * each path and the Proxy-Authorization added (bytes, or NULL); the
     * proxy's host:port for the property (str). NULL without a proxy. */
    PyObject *proxy_origin, *proxy_auth, *proxy_label;
    int busy;  /* a request is under way (GIL released) */
    int ready; /* __init__ succeeded */
} ConnectionObject;

static core_state *conn_state(ConnectionObject *self)
{
    return type_state(Py_TYPE(self));
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

static int Connection_setup(ConnectionObject *self, PyObject *host, PyObject *port_obj,
                            PyObject *timeout_obj, PyObject *max_body_obj, int tls, int http2,
                            int verify, PyObject *cafile, PyObject *server_hostname,
                            PyObject *certfile, PyObject *keyfile, PyObject *unix_socket,
                            PyObject *plan);

static int Connection_init(ConnectionObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"host",     "port",    "timeout",     "max_body",
                             "tls",      "verify",  "cafile",      "server_hostname",
                             "certfile", "keyfile", "unix_socket", "http2",
                             "_via",     NULL};
    PyObject *host, *port_obj, *timeout_obj = NULL, *max_body_obj = NULL;
    PyObject *cafile = NULL, *server_hostname = NULL, *certfile = NULL, *keyfile = NULL;
    PyObject *unix_socket = NULL; /* bytes, from PyUnicode_FSConverter */
    PyObject *plan = Py_None;
    int tls = 0, verify = 1, http2 = 0;

    /* Every conversion (which may run Python code, and so let another
     * thread in) comes before the object is looked at or changed. */
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "UO|O$OppOOOOO&pO:Connection", kwlist, &host,
                                     &port_obj, &timeout_obj, &max_body_obj, &tls, &verify, &cafile,
                                     &server_hostname, &certfile, &keyfile, hbpy_unix_path_arg,
                                     &unix_socket, &http2, &plan))
        return -1;
    /* _via: httpbench._url.ProxyPlan (host, port, tunnel, origin, auth,
     * label), decided in Python (httpbench.Connection's proxy=). */
    int rc = -1;
    if (plan != Py_None && (!PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) != 6))
        PyErr_SetString(PyExc_TypeError, "_via must be a ProxyPlan");
    else if (plan != Py_None && unix_socket != NULL)
        PyErr_SetString(PyExc_ValueError,
                        "proxy and unix_socket are two ways to the server: give one");
    else
        rc = Connection_setup(self, host, port_obj, timeout_obj, max_body_obj, tls, http2, verify,
                              cafile, server_hostname, certfile, keyfile, unix_socket,
                              plan != Py_None ? plan : NULL);
    Py_XDECREF(unix_socket);
    return rc;
}

/* The Host field for host h and port (RFC 9110 section 7.2): an IPv6
 * literal in brackets, the scheme's default port left out (section 4.2).
 * A new reference, or NULL with an exception. */
static PyObject *host_field_of(const char *h, long long port, int tls)
{
    int v6 = strchr(h, ':') != NULL;
    return port == (tls ? 443 : 80) ? PyBytes_FromFormat(v6 ? "[%s]" : "%s", h)
                                    : PyBytes_FromFormat(v6 ? "[%s]:%d" : "%s:%d", h, (int)port);
}

/* The numbers Connection takes, each in its range. Returns 0, or -1 with
 * an exception. */
static int conn_numbers(PyObject *port_obj, PyObject *timeout_obj, PyObject *max_body_obj,
                        long long *port, double *timeout, long long *max_body)
{
    if (hbpy_arg_int(port_obj, "port", 1, 65535, port) != 0)
        return -1;
    if (timeout_obj == Py_None)
        *timeout = NO_TIMEOUT;
    else if (timeout_obj != NULL &&
             hbpy_arg_real(timeout_obj, "timeout", 0, NO_TIMEOUT, timeout) != 0)
        return -1;
    if (max_body_obj != NULL && hbpy_arg_int(max_body_obj, "max_body", 0, MAX_BYTES, max_body) != 0)
        return -1;
    return 0;
}

/* Where the socket connects: the host and port, or the proxy the plan
 * names (into portbuf). Returns the host, or NULL with an exception. */
static const char *connect_to(const char *h, long long port, PyObject *plan, char *portbuf,
                              size_t portlen)
{
    snprintf(portbuf, portlen, "%lld", port);
    if (plan == NULL)
        return h;
    long to_port = PyLong_AsLong(PyTuple_GET_ITEM(plan, 1));
    const char *to = PyUnicode_AsUTF8(PyTuple_GET_ITEM(plan, 0));
    if (to == NULL || to_port < 1 || to_port > 65535) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "bad proxy port");
        return NULL;
    }
    snprintf(portbuf, portlen, "%ld", to_port);
    return to;
}

/* The plan's parts the requests need (origin and Proxy-Authorization, as
 * bytes) and its label. Returns 0, or -1 with an exception. */
static int take_plan(ConnectionObject *self, PyObject *plan)
{
    PyObject *origin = PyTuple_GET_ITEM(plan, 3), *auth = PyTuple_GET_ITEM(plan, 4);
    if ((origin != Py_None && (self->proxy_origin = PyUnicode_AsASCIIString(origin)) == NULL) ||
        (auth != Py_None && (self->proxy_auth = PyUnicode_AsASCIIString(auth)) == NULL))
        return -1;
    self->proxy_label = Py_NewRef(PyTuple_GET_ITEM(plan, 5));
    return 0;
}

/* Whether an optional argument was given (not left out, not None). */
static int given(PyObject *o)
{
    return o != NULL && o != Py_None;
}

/* The host as UTF-8, or NULL with a ValueError when it is empty or holds
 * CR, LF, a space, a slash or a NUL. */
static const char *host_of(PyObject *host)
{
    Py_ssize_t hlen;
    const char *h = PyUnicode_AsUTF8AndSize(host, &hlen);
    if (h != NULL && (hlen == 0 || strlen(h) != (size_t)hlen || strpbrk(h, "\r\n /") != NULL)) {
        PyErr_Format(PyExc_ValueError, "invalid host %R", host);
        return NULL;
    }
    return h;
}

/* Connection_init's work once its arguments are parsed. */
static int Connection_setup(ConnectionObject *self, PyObject *host, PyObject *port_obj,
                            PyObject *timeout_obj, PyObject *max_body_obj, int tls, int http2,
                            int verify, PyObject *cafile, PyObject *server_hostname,
                            PyObject *certfile, PyObject *keyfile, PyObject *unix_socket,
                            PyObject *plan)
{
    long long port, max_body = DEFAULT_MAX_BODY;
    double timeout = 30.0;
    core_state *st = conn_state(self);
    if (!tls && (given(cafile) || given(certfile) || given(keyfile) || given(server_hostname))) {
        PyErr_SetString(PyExc_ValueError,
                        "cafile, certfile, keyfile and server_hostname are for TLS: pass tls=True "
                        "(or use Connection.from_url with an https:// URL)");
        return -1;
    }
    if (conn_numbers(port_obj, timeout_obj, max_body_obj, &port, &timeout, &max_body) != 0)
        return -1;
    if (self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "Connection is already initialised");
        return -1;
    }
    const char *h = host_of(host);
    if (h == NULL)
        return -1;
    char portbuf[8];
    const char *to = connect_to(h, port, plan, portbuf, sizeof portbuf);
    PyObject *host_header = to != NULL ? host_field_of(h, port, tls) : NULL;
    if (host_header == NULL)
        return -1;
    hb_tls *t = NULL;
    if (tls) {
        /* The name sent and checked: the host, unless told otherwise. */
        PyObject *name = given(server_hostname) ? server_hostname : host;
        t = hbpy_tls_make(st, http2 ? HBPY_TLS_H2 : 0, verify, 0, cafile, certfile, keyfile, name,
                          NULL, NULL, NULL, NULL, NULL);
        if (t == NULL) {
            Py_DECREF(host_header);
            return -1;
        }
    }
    /* From here the one cleanup path is `error`: the connection, its TLS
     * context (after the socket that used it) and the Host field. */
    PyObject *tunnel = plan != NULL ? PyTuple_GET_ITEM(plan, 2) : Py_None;
    if (hb_conn_init(&self->conn, t ? &hb_net_tls : &hb_net_tcp, to, portbuf, timeout,
                     (uint64_t)max_body) != HB_OK ||
        (PyBytes_Check(tunnel) && hb_conn_set_tunnel(&self->conn, PyBytes_AS_STRING(tunnel),
                                                     (size_t)PyBytes_GET_SIZE(tunnel)) != HB_OK) ||
        (http2 && hb_conn_set_http2(&self->conn, 0) != HB_OK)) {
        PyErr_NoMemory();
        goto error;
    }
    self->conn.sock.shared = t;
    if (plan != NULL && take_plan(self, plan) != 0)
        goto error;
    hb_status us =
        unix_socket != NULL ? hb_conn_set_unix(&self->conn, PyBytes_AS_STRING(unix_socket)) : HB_OK;
    if (us != HB_OK) {
        if (us == HB_ERR_NOMEM)
            PyErr_NoMemory();
        else
            PyErr_Format(PyExc_ValueError, "unix_socket: %s", self->conn.error);
        goto error;
    }
    self->tls = t;
    self->host_header = host_header;
    self->host = Py_NewRef(host);
    self->port = (int)port;
    self->timeout = timeout;
    self->ready = 1;
    return 0;
error:
    hb_conn_free(&self->conn); /* safe on a half-built one: hb_conn_init set it up */
    hb_tls_free(t);
    Py_DECREF(host_header);
    Py_CLEAR(self->proxy_origin);
    Py_CLEAR(self->proxy_auth);
    Py_CLEAR(self->proxy_label);
    return -1;
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

static PyObject *raise_status(core_state *st, hb_conn *c, hb_status s)
{
    PyObject *exc;
    switch (s) {
    case HB_ERR_CONNECT: exc = st->ConnectError; break;
    case HB_ERR_TIMEOUT: exc = st->Timeout; break;
    case HB_ERR_PROTOCOL: exc = st->ProtocolError; break;
    case HB_ERR_INCOMPLETE: exc = st->IncompleteResponse; break;
    case HB_ERR_TLS: exc = st->TLSError; break;
    case HB_ERR_RESET: {
        PyObject *e = PyObject_CallFunction(st->StreamReset, "sI", c->error, c->h2_code);
        if (e != NULL) {
            PyErr_SetObject(st->StreamReset, e);
            Py_DECREF(e);
        }
        return NULL;
    }
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

/* request(method, target, headers=None, body=None) -> Response */
static PyObject *Connection_request(ConnectionObject *self, PyObject *const *args, Py_ssize_t nargs,
                                    PyObject *kwnames)
{
    static const char *const names[] = {"method", "target", "headers", "body"};
    PyObject *argv[4] = {NULL, NULL, Py_None, Py_None};
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
    if (argv[3] != Py_None && hbpy_get_body(argv[3], &body) != 0)
        goto done;
    hb_buf *b = &self->tx;
    int flags;
    if (hbpy_build_request(b, argv[0], argv[1], argv[2], &body, self->host_header,
                           self->proxy_origin, self->proxy_auth, COPY_BODY_MAX, &flags) != 0)
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
    result = s == HB_OK ? hbpy_make_response(st, &self->conn) : raise_status(st, &self->conn, s);
done:
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

static PyObject *Connection_get_http2(ConnectionObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->conn.http2);
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
    {"http2", (getter)Connection_get_http2, NULL, "Whether the connection speaks HTTP/2.", NULL},
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
                "cafile=None, server_hostname=None, certfile=None, keyfile=None, unix_socket=None, "
                "http2=False)\n\n"
                "One blocking keep-alive HTTP/1.1 connection, over TLS with tls=True; one HTTP/2 "
                "stream at a time with http2=True."},
    {0, NULL},
};

PyType_Spec hbpy_connection_spec = {
    .name = "httpbench._core.Connection",
    .basicsize = sizeof(ConnectionObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_BASETYPE,
    .slots = Connection_slots,
};
