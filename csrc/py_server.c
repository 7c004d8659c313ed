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

/* _ServerCore(settings): settings is a mapping of hb_srv_config's fields
 * by name (httpbench/server.py writes it). The numbers and flags are read
 * by this table through py_args.c's reader (the one _Bench's go
 * through), each checked in its range; the rest by ServerCore_init. */
#define AT(member) offsetof(hb_srv_config, member)
static const hbpy_setting SETTINGS[] = {
    {"port", HBPY_INT, AT(port), 0, 65535, 1},
    {"threads", HBPY_INT, AT(threads), 1, HB_SRV_MAX_THREADS, 1},
    {"zero_copy", HBPY_FLAG, AT(zero_copy), 0, 0, 0},
    {"max_body", HBPY_U64, AT(max_body), 0, MAX_BYTES, 1},
    {"max_buffered", HBPY_U64, AT(max_buffered), 1, MAX_BYTES, 1},
    {"header_timeout", HBPY_REAL, AT(header_timeout), 0, NO_TIMEOUT, 1},
    {"send_timeout", HBPY_REAL, AT(send_timeout), 0, NO_TIMEOUT, 1},
    {"idle_timeout", HBPY_REAL, AT(idle_timeout), 0, NO_TIMEOUT, 1},
    {"upstream_timeout", HBPY_REAL, AT(upstream_timeout), 0, NO_TIMEOUT, 0},
    {"proxy", HBPY_FLAG, AT(proxy), 0, 0, 0},
    {"http2", HBPY_FLAG, AT(http2), 0, 0, 0},
    {"max_streams", HBPY_INT, AT(max_streams), 1, HB_SRV_MAX_STREAMS, 0},
};
#undef AT
/* What ServerCore_init converts itself; the first two are needed. */
static const char *const OBJECT_SETTINGS[] = {
    "host", "version", "threaded", "static_dir", "tls", "unix_socket", "allow",
};

/* settings[name] as a str, or NULL for a missing key or None; -1 with a
 * TypeError for anything else. */
static int text_of(PyObject *settings, const char *name, const char **out)
{
    PyObject *v = PyDict_GetItemString(settings, name); /* borrowed */
    *out = NULL;
    if (v == NULL || v == Py_None)
        return 0;
    if (!PyUnicode_Check(v)) {
        PyErr_Format(PyExc_TypeError, "%s must be a str, not %.100s", name, Py_TYPE(v)->tp_name);
        return -1;
    }
    *out = PyUnicode_AsUTF8(v);
    return *out == NULL ? -1 : 0;
}

/* settings[name], or Py_None (borrowed). */
static PyObject *object_of(PyObject *settings, const char *name)
{
    PyObject *v = PyDict_GetItemString(settings, name);
    return v != NULL ? v : Py_None;
}

static int ServerCore_init(ServerCoreObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"settings", NULL};
    PyObject *settings;
    hb_srv_config cfg;
    hb_relay_allow *allow = NULL;
    hb_tls *tls;
    core_state *st = type_state(Py_TYPE(self));
    memset(&cfg, 0, sizeof cfg);
    cfg.upstream_timeout = 10.0;
    cfg.max_streams = 100;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:_ServerCore", kwlist, &settings) ||
        hbpy_read_settings(settings, "_ServerCore", SETTINGS, COUNT_OF(SETTINGS), OBJECT_SETTINGS,
                           COUNT_OF(OBJECT_SETTINGS), 2, &cfg) != 0 ||
        text_of(settings, "host", &cfg.host) != 0 ||
        text_of(settings, "version", &cfg.version) != 0 ||
        text_of(settings, "static_dir", &cfg.static_dir) != 0 ||
        text_of(settings, "unix_socket", &cfg.unix_path) != 0 ||
        hbpy_tls_of(st, object_of(settings, "tls"), &tls) != 0)
        return -1;
    int threaded = PyObject_IsTrue(object_of(settings, "threaded"));
    if (threaded < 0 || cfg.host == NULL || cfg.version == NULL) {
        if (threaded >= 0)
            PyErr_SetString(PyExc_TypeError, "_ServerCore: host and version must be str");
        return -1;
    }
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
    if (allow_of(object_of(settings, "allow"), &allow, &cfg.nallow) != 0)
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
    PyObject *tls_o = object_of(settings, "tls");
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

/* d[name] = v. Returns 0, or -1 with an exception. */
static int put_count(PyObject *d, const char *name, uint64_t v)
{
    PyObject *n = PyLong_FromUnsignedLongLong(v);
    int rc = n != NULL ? PyDict_SetItemString(d, name, n) : -1;
    Py_XDECREF(n);
    return rc;
}

/* stats() -> {name: count} for each of HB_SRV_COUNTS, in its order. */
static PyObject *ServerCore_stats(ServerCoreObject *self, PyObject *unused)
{
    (void)unused;
    hb_srv_stats st;
    memset(&st, 0, sizeof st);
    if (self->srv != NULL)
        hb_srv_get_stats(self->srv, &st);
    PyObject *d = PyDict_New();
#define PUT(field, source, what)                                                                   \
    if (d != NULL && put_count(d, #field, st.field) != 0)                                          \
        Py_CLEAR(d);
    HB_SRV_COUNTS(PUT)
#undef PUT
    return d;
}

int hbpy_add_server_names(PyObject *m)
{
#define ROW(field, source, what) {#field, what},
    static const char *const rows[][2] = {HB_SRV_COUNTS(ROW)};
#undef ROW
    PyObject *t = PyTuple_New((Py_ssize_t)COUNT_OF(rows));
    for (size_t i = 0; t != NULL && i < COUNT_OF(rows); i++) {
        PyObject *row = Py_BuildValue("(ss)", rows[i][0], rows[i][1]);
        if (row == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, (Py_ssize_t)i, row);
    }
    if (t == NULL || PyModule_AddObject(m, "SERVER_COUNTS", t) != 0) {
        Py_XDECREF(t);
        return -1;
    }
    return 0;
}

static PyGetSetDef ServerCore_getset[] = {
    {"port", (getter)ServerCore_get_port, NULL, "The port, or None once stopped.", NULL},
    {0},
};

static PyMethodDef ServerCore_methods[] = {
    {"stop", (PyCFunction)ServerCore_stop, METH_NOARGS, "Stop serving and free everything."},
    {"stats", (PyCFunction)ServerCore_stats, METH_NOARGS,
     "The counts so far, by name (SERVER_COUNTS names each and says what it counts)."},
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
