/* py_server.c: httpbench._core._ServerCore, the embedded server's threads
 * (httpbench.Server wraps it). */
#include "py_core.h"

#include <arpa/inet.h>
#include <netinet/in.h>

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

/* The server's numbers into cfg, each in its range. Returns 0, or -1 with
 * an exception. */
static int server_numbers(hb_srv_config *cfg, PyObject *port, PyObject *threads, PyObject *max_body,
                          PyObject *max_buffered, PyObject *const timeouts[3], PyObject *upstream_o)
{
    long long v[4];
    cfg->upstream_timeout = 10.0;
    if ((upstream_o != NULL && hbpy_arg_real(upstream_o, "upstream_timeout", 0, NO_TIMEOUT,
                                             &cfg->upstream_timeout) != 0) ||
        hbpy_arg_int(port, "port", 0, 65535, &v[0]) != 0 ||
        hbpy_arg_int(threads, "threads", 1, HB_SRV_MAX_THREADS, &v[1]) != 0 ||
        hbpy_arg_int(max_body, "max_body", 0, MAX_BYTES, &v[2]) != 0 ||
        hbpy_arg_int(max_buffered, "max_buffered", 1, MAX_BYTES, &v[3]) != 0 ||
        hbpy_arg_real(timeouts[0], "header_timeout", 0, NO_TIMEOUT, &cfg->header_timeout) != 0 ||
        hbpy_arg_real(timeouts[1], "send_timeout", 0, NO_TIMEOUT, &cfg->send_timeout) != 0 ||
        hbpy_arg_real(timeouts[2], "idle_timeout", 0, NO_TIMEOUT, &cfg->idle_timeout) != 0)
        return -1;
    cfg->port = (int)v[0];
    cfg->threads = (int)v[1];
    cfg->max_body = (uint64_t)v[2];
    cfg->max_buffered = (uint64_t)v[3];
    return 0;
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
                             "http2",
                             "max_streams",
                             NULL};
    hb_srv_config cfg;
    int threaded;
    PyObject *port, *threads, *max_body, *max_buffered, *timeouts[3], *tls_o = Py_None;
    PyObject *allow_o = Py_None, *upstream_o = NULL, *streams_o = NULL;
    hb_relay_allow *allow = NULL;
    hb_tls *tls;
    core_state *st = type_state(Py_TYPE(self));
    memset(&cfg, 0, sizeof cfg);
    if (!PyArg_ParseTupleAndKeywords(
            args, kwds, "sOpOzpOOOOsO|OzpOOpO:_ServerCore", kwlist, &cfg.host, &port, &threaded,
            &threads, &cfg.static_dir, &cfg.zero_copy, &max_body, &timeouts[0], &timeouts[1],
            &timeouts[2], &cfg.version, &max_buffered, &tls_o, &cfg.unix_path, &cfg.proxy, &allow_o,
            &upstream_o, &cfg.http2, &streams_o))
        return -1;
    long long streams = 100;
    if (streams_o != NULL &&
        hbpy_arg_int(streams_o, "max_streams", 1, HB_SRV_MAX_STREAMS, &streams) != 0)
        return -1;
    cfg.max_streams = (uint32_t)streams;
    if (server_numbers(&cfg, port, threads, max_body, max_buffered, timeouts, upstream_o) != 0 ||
        hbpy_tls_of(st, tls_o, &tls) != 0)
        return -1;
    if (tls != NULL) {
        cfg.transport = &hb_net_tls;
        cfg.transport_shared = tls;
    }
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

/* stats() -> (connections, requests, rejected, timeouts, relayed, tunnels,
 * h2_connections, h2_streams, h2_calmed) */
static PyObject *ServerCore_stats(ServerCoreObject *self, PyObject *unused)
{
    (void)unused;
    hb_srv_stats st;
    memset(&st, 0, sizeof st);
    if (self->srv != NULL)
        hb_srv_get_stats(self->srv, &st);
    return Py_BuildValue("(KKKKKKKKK)", (unsigned long long)st.connections,
                         (unsigned long long)st.requests, (unsigned long long)st.rejected,
                         (unsigned long long)st.timeouts, (unsigned long long)st.relayed,
                         (unsigned long long)st.tunnels, (unsigned long long)st.h2_connections,
                         (unsigned long long)st.h2_streams, (unsigned long long)st.h2_calmed);
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

PyType_Spec hbpy_server_spec = {
    .name = "httpbench._core._ServerCore",
    .basicsize = sizeof(ServerCoreObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = ServerCore_slots,
};
