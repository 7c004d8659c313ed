/* py_tls.c: httpbench._core._TLS, an OpenSSL context made once from
 * Python's arguments and shared by a run's or a server's connections. */
#include "py_core.h"

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
hb_tls *hbpy_tls_make(core_state *st, int flags, int verify, int resume, PyObject *cafile,
                      PyObject *certfile, PyObject *keyfile, PyObject *server_hostname,
                      PyObject *cert_host, PyObject *min_v, PyObject *max_v, PyObject *ciphers,
                      PyObject *ciphersuites)
{
    hb_tls_config cfg = {.server = (flags & HBPY_TLS_SERVER) != 0,
                         .http2 = (flags & HBPY_TLS_H2) != 0,
                         .verify = verify,
                         .resume = resume};
    PyObject *ca = NULL, *cert = NULL, *key = NULL;
    hb_tls *t = NULL;
    long long v;
    if (min_v != NULL && min_v != Py_None) {
        if (hbpy_arg_int(min_v, "tls_min", HB_TLS_1_2, HB_TLS_1_3, &v) != 0)
            return NULL;
        cfg.min_version = (int)v;
    }
    if (max_v != NULL && max_v != Py_None) {
        if (hbpy_arg_int(max_v, "tls_max", HB_TLS_1_2, HB_TLS_1_3, &v) != 0)
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
                             "ciphersuites",    "resume",    "http2",   NULL};
    int server = 0, verify = 1, resume = 1, http2 = 0;
    PyObject *o[10] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|p$pOOOOOOOOOpp:_TLS", kwlist, &server, &verify,
                                     &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8],
                                     &resume, &http2))
        return -1;
    if (self->tls != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "already initialised");
        return -1;
    }
    core_state *st = type_state(Py_TYPE(self));
    int flags = (server ? HBPY_TLS_SERVER : 0) | (http2 ? HBPY_TLS_H2 : 0);
    self->tls = hbpy_tls_make(st, flags, verify, resume, o[0], o[1], o[2], o[3], o[4], o[5], o[6],
                              o[7], o[8]);
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

PyType_Spec hbpy_tls_spec = {
    .name = "httpbench._core._TLS",
    .basicsize = sizeof(TLSObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = TLS_slots,
};

/* The hb_tls of a _TLS object given as an argument, or NULL for None (the
 * object is the caller's to keep alive). -1 with an exception otherwise. */
int hbpy_tls_of(core_state *st, PyObject *o, hb_tls **out)
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
