/* py_bench.c: httpbench._core._Bench, the timing loop: its settings in,
 * its result out as a dict, with the GIL released while it runs. */
#include "py_core.h"

#include <math.h>

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
            hbpy_arg_real(secs, "a stage's seconds", 0, HB_BENCH_MAX_SECONDS, &v[i]) != 0 ||
            hbpy_arg_real(target, "a stage's target", 1, HB_BENCH_MAX_RATE, &v[n + i]) != 0)
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

/* One scenario request, item (a checked 7-tuple), into r; its variants'
 * pointers and lengths at *p and *lens, which move past them. Returns 0,
 * or -1 with an exception. */
static int scenario_request(PyObject *item, hb_bench_req *r, const char ***pp, size_t **lensp)
{
    PyObject *variants = PyTuple_GET_ITEM(item, 0);
    PyObject *status_ok = PyTuple_GET_ITEM(item, 4), *body = PyTuple_GET_ITEM(item, 5);
    const char **p = *pp;
    size_t *lens = *lensp;
    long long expect_length;
    memset(r, 0, sizeof *r);
    r->variants = p;
    r->lens = lens;
    r->nvariants = (uint32_t)PyList_GET_SIZE(variants);
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(variants); k++) {
        PyObject *v = PyList_GET_ITEM(variants, k);
        if (!PyBytes_Check(v) || PyBytes_GET_SIZE(v) < 1) {
            PyErr_SetString(PyExc_TypeError, "scenario: a variant is a request's bytes");
            return -1;
        }
        *p++ = PyBytes_AS_STRING(v);
        *lens++ = (size_t)PyBytes_GET_SIZE(v);
    }
    *pp = p;
    *lensp = lens;
    r->random = PyObject_IsTrue(PyTuple_GET_ITEM(item, 1));
    r->head = PyObject_IsTrue(PyTuple_GET_ITEM(item, 2));
    if (r->random < 0 || r->head < 0 ||
        hbpy_arg_real(PyTuple_GET_ITEM(item, 3), "weight", 0, 1e6, &r->weight) != 0 ||
        hbpy_arg_int(PyTuple_GET_ITEM(item, 6), "expect_length", -1, INT64_MAX, &expect_length) !=
            0)
        return -1;
    if (!(r->weight > 0)) {
        PyErr_SetString(PyExc_ValueError, "weight must be above 0");
        return -1;
    }
    r->expect_length = expect_length;
    if (status_ok != Py_None) {
        if (!PyBytes_Check(status_ok) || PyBytes_GET_SIZE(status_ok) != 600) {
            PyErr_SetString(PyExc_TypeError, "scenario: status_ok is 600 bytes of flags");
            return -1;
        }
        r->status_ok = (const unsigned char *)PyBytes_AS_STRING(status_ok);
    }
    if (body != Py_None) {
        if (!PyBytes_Check(body) || PyBytes_GET_SIZE(body) < 1 ||
            PyBytes_GET_SIZE(body) > UINT32_MAX) {
            PyErr_SetString(PyExc_TypeError, "scenario: expect_body is bytes");
            return -1;
        }
        r->expect_body = (const unsigned char *)PyBytes_AS_STRING(body);
        r->expect_body_len = (uint32_t)PyBytes_GET_SIZE(body);
    }
    return 0;
}

/* A scenario's requests for the loop, from httpbench.local's list of
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
    for (Py_ssize_t i = 0; i < n; i++)
        if (scenario_request(PyList_GET_ITEM(list, i), &r[i], &p, &lens) != 0)
            goto error;
    *out = r;
    *mem = block;
    return (int)n;
error:
    PyMem_Free(block);
    return -1;
}

/* _Bench(settings): settings is a mapping of hb_bench_config's fields by
 * name (httpbench/local.py writes it from a RunSpec). The numbers and
 * flags are read by the table below (py_args.c's reader, which
 * _ServerCore's table goes through too), converted to their C types only
 * (an int that fits the field, a double): their ranges are
 * hb_bench_check's, the loop's one contract check, whoever calls. The
 * objects (host, port, request, tls, unix_socket, tunnel, stages, vus,
 * scenario, log) are bench_objects'. */
#define AT(member) offsetof(hb_bench_config, member)
/* (name, required): the five a run cannot do without. A U64's top is
 * below LLONG_MAX, which the reader's long long holds. */
/* clang-format off */
#define INT_FIELD(name, req) {#name, HBPY_INT, AT(name), INT_MIN, INT_MAX, req}
#define U64_FIELD(name, req) {#name, HBPY_U64, AT(name), 0, 9e18, req}
#define DOUBLE_FIELD(name, req) {#name, HBPY_DOUBLE, AT(name), 0, 0, req}
_Static_assert(HB_PROTO_HTTP2 == 1, "the http2 flag sets the protocol");
#define FLAG_FIELD(name) {#name, HBPY_FLAG, AT(name), 0, 0, 0}
/* clang-format on */
static const hbpy_setting SETTINGS[] = {
    FLAG_FIELD(head),
    U64_FIELD(requests, 1),
    DOUBLE_FIELD(duration, 1),
    INT_FIELD(concurrency, 1),
    INT_FIELD(threads, 1),
    FLAG_FIELD(keepalive),
    DOUBLE_FIELD(rate, 0),
    DOUBLE_FIELD(timeout, 1),
    DOUBLE_FIELD(grace, 0),
    FLAG_FIELD(lengths_vary),
    INT_FIELD(pipeline, 0),
    FLAG_FIELD(idempotent),
    FLAG_FIELD(sequence),
    FLAG_FIELD(turns),
    {"seed", HBPY_SEED, AT(seed), 0, 0, 0},
    FLAG_FIELD(prepared),
    U64_FIELD(warmup_requests, 0),
    DOUBLE_FIELD(warmup_seconds, 0),
    /* (http2= is the protocol: a flag, HB_PROTO_HTTP2 when set) */
    {"http2", HBPY_FLAG, AT(protocol), 0, 0, 0},
    INT_FIELD(streams, 0),
    U64_FIELD(window, 0),
    INT_FIELD(socket_buffer, 0),
    FLAG_FIELD(publish),
};
#undef AT
#undef INT_FIELD
#undef U64_FIELD
#undef DOUBLE_FIELD
#undef FLAG_FIELD
/* The settings bench_objects converts; the first three are needed. */
static const char *const OBJECT_SETTINGS[] = {
    "host", "port", "request", "tls", "unix_socket", "tunnel", "stages", "vus", "scenario", "log",
};

/* What _Bench converts beyond the table, each owned until the run has
 * started (shapes and the scenario's arrays are copied by it). */
typedef struct {
    const char *host;
    long long port;
    PyObject *request, *tls_o, *tunnel, *scen_o; /* borrowed from settings */
    hb_tls *tls;
    int over_unix;
    hb_addr unix_addr;
    hb_shape *shape, *vus;
    void *scen_mem;
    hb_rlog_config log;
    const char **log_names; /* PyMem; the bytes are the settings dict's */
} bench_parts;

static void bench_parts_free(bench_parts *p)
{
    PyMem_Free(p->shape);
    PyMem_Free(p->vus);
    PyMem_Free(p->scen_mem);
    PyMem_Free(p->log_names);
    p->shape = p->vus = NULL;
    p->scen_mem = NULL;
    p->log_names = NULL;
}

/* The log setting, (fd, format, names, sample, seed, delay_ns,
 * ring_records) as httpbench/local.py writes it, into p->log. Returns 0,
 * or -1 with an exception. */
static int log_of(PyObject *v, bench_parts *p)
{
    long long fd, format, delay, ring;
    double sample;
    PyObject *names, *seed;
    if (!PyTuple_Check(v) || PyTuple_GET_SIZE(v) != 7) {
        PyErr_SetString(PyExc_TypeError, "log must be (fd, format, names, sample, seed, "
                                         "delay_ns, ring_records)");
        return -1;
    }
    names = PyTuple_GET_ITEM(v, 2);
    seed = PyTuple_GET_ITEM(v, 4);
    if (hbpy_arg_int(PyTuple_GET_ITEM(v, 0), "log fd", 0, INT_MAX, &fd) != 0 ||
        hbpy_arg_int(PyTuple_GET_ITEM(v, 1), "log format", 0, 1, &format) != 0 ||
        hbpy_arg_real(PyTuple_GET_ITEM(v, 3), "log_sample", 0, 1, &sample) != 0 ||
        hbpy_arg_int(PyTuple_GET_ITEM(v, 5), "log delay", 0, 3600000000000LL, &delay) != 0 ||
        hbpy_arg_int(PyTuple_GET_ITEM(v, 6), "log ring", 1024, 1 << 24, &ring) != 0)
        return -1;
    if (!PyList_Check(names) || PyList_GET_SIZE(names) > 65535 || !PyLong_Check(seed)) {
        PyErr_SetString(PyExc_TypeError, "log names must be a list of bytes, its seed an int");
        return -1;
    }
    Py_ssize_t n = PyList_GET_SIZE(names);
    p->log_names = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof *p->log_names);
    if (p->log_names == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *s = PyList_GET_ITEM(names, i);
        if (!PyBytes_Check(s) || strlen(PyBytes_AS_STRING(s)) != (size_t)PyBytes_GET_SIZE(s)) {
            PyErr_SetString(PyExc_TypeError, "a log name must be bytes without NUL");
            return -1;
        }
        p->log_names[i] = PyBytes_AS_STRING(s);
    }
    unsigned long long s = PyLong_AsUnsignedLongLongMask(seed);
    if (s == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    p->log = (hb_rlog_config){.fd = (int)fd,
                              .format = (int)format,
                              .ring_records = (uint32_t)ring,
                              .names = p->log_names,
                              .nnames = (int)n,
                              .sample = sample,
                              .seed = s,
                              .delay_ns = delay};
    return 0;
}

/* settings[name], or NULL for a missing key or None (borrowed). */
static PyObject *optional(PyObject *settings, const char *name)
{
    PyObject *v = PyDict_GetItemString(settings, name);
    return v == Py_None ? NULL : v;
}

/* The object settings into p and cfg. Returns 0, or -1 with an exception
 * (p then freed). */
static int bench_objects(core_state *st, PyObject *settings, bench_parts *p, hb_bench_config *cfg)
{
    PyObject *unix_o = NULL, *v;
    p->request = PyDict_GetItemString(settings, "request");
    p->tls_o = PyDict_GetItemString(settings, "tls");
    p->tunnel = optional(settings, "tunnel");
    p->scen_o = optional(settings, "scenario");
    if ((p->host = PyUnicode_AsUTF8(PyDict_GetItemString(settings, "host"))) == NULL ||
        hbpy_arg_int(PyDict_GetItemString(settings, "port"), "port", 1, 65535, &p->port) != 0)
        return -1;
    if (!PyBytes_Check(p->request) || (p->tunnel != NULL && !PyBytes_Check(p->tunnel))) {
        PyErr_SetString(PyExc_TypeError, "request and tunnel must be bytes");
        return -1;
    }
    if ((v = optional(settings, "unix_socket")) != NULL) {
        char uerr[256];
        if (!hbpy_unix_path_arg(v, &unix_o))
            return -1;
        int ok = hb_net_unix(PyBytes_AS_STRING(unix_o), &p->unix_addr, uerr, sizeof uerr);
        Py_DECREF(unix_o);
        if (ok < 0) {
            PyErr_Format(PyExc_ValueError, "unix_socket: %s", uerr);
            return -1;
        }
        p->over_unix = 1;
    }
    if (hbpy_tls_of(st, p->tls_o != NULL ? p->tls_o : Py_None, &p->tls) != 0)
        return -1;
    if ((v = optional(settings, "stages")) != NULL && (p->shape = shape_of(v, "stages")) == NULL)
        return -1;
    if ((v = optional(settings, "vus")) != NULL &&
        (p->vus = shape_of(v, "concurrency_stages")) == NULL)
        goto error;
    if (p->scen_o != NULL) {
        hb_bench_req *reqs;
        int ns = scenario_of(p->scen_o, &reqs, &p->scen_mem);
        if (ns < 0)
            goto error;
        cfg->scenario = reqs;
        cfg->nscenario = ns;
    }
    if ((v = optional(settings, "log")) != NULL) {
        if (log_of(v, p) != 0)
            goto error;
        cfg->log = &p->log;
    }
    if (p->tls != NULL) {
        cfg->transport = &hb_net_tls;
        cfg->transport_shared = p->tls;
    }
    cfg->shape = p->shape;
    cfg->vus = p->vus;
    return 0;
error:
    bench_parts_free(p);
    return -1;
}

/* Resolves the host (or takes the Unix socket's address) into cfg, with
 * the GIL released. Returns 0, or -1 with ConnectError. */
static int bench_addresses(core_state *st, const bench_parts *p, hb_bench_config *cfg)
{
    char portbuf[16], err[256];
    snprintf(portbuf, sizeof portbuf, "%lld", p->port);
    int n = 1;
    if (p->over_unix) {
        cfg->addrs[0] = p->unix_addr; /* the URL's host names the server, no more */
    } else {
        Py_BEGIN_ALLOW_THREADS n =
            hb_net_resolve(p->host, portbuf, cfg->addrs, HB_BENCH_MAX_ADDRS, err, sizeof err);
        Py_END_ALLOW_THREADS
    }
    if (n < 1) {
        PyErr_SetString(st->ConnectError, err);
        return -1;
    }
    cfg->naddrs = n;
    return 0;
}

static int Bench_init(BenchObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"settings", NULL};
    PyObject *settings;
    hb_bench_config cfg;
    bench_parts p;
    char err[160];
    core_state *st = type_state(Py_TYPE(self));
    memset(&cfg, 0, sizeof cfg);
    cfg.grace = HB_BENCH_GRACE_NS / 1e9; /* unless the settings say */
    memset(&p, 0, sizeof p);
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!:_Bench", kwlist, &PyDict_Type, &settings) ||
        hbpy_read_settings(settings, "_Bench", SETTINGS, COUNT_OF(SETTINGS), OBJECT_SETTINGS,
                           COUNT_OF(OBJECT_SETTINGS), 3, &cfg) != 0 ||
        bench_objects(st, settings, &p, &cfg) != 0)
        return -1;
    /* The loop's preconditions (bench.h), whoever calls. */
    if (hb_bench_check(&cfg, err, sizeof err) != 0) {
        bench_parts_free(&p);
        PyErr_SetString(PyExc_ValueError, err);
        return -1;
    }
    /* Checked after every conversion, and held while the GIL is released,
     * so that two threads never start two runs for one object. */
    if (self->b != NULL || self->starting) {
        bench_parts_free(&p);
        PyErr_SetString(PyExc_RuntimeError, "already started");
        return -1;
    }
    self->starting = 1;
    if (bench_addresses(st, &p, &cfg) != 0) {
        self->starting = 0;
        bench_parts_free(&p);
        return -1;
    }
    Py_XSETREF(self->request, Py_NewRef(p.request));
    Py_XSETREF(self->tls, p.tls != NULL ? Py_NewRef(p.tls_o) : NULL);
    Py_XSETREF(self->tunnel, p.tunnel != NULL ? Py_NewRef(p.tunnel) : NULL);
    Py_XSETREF(self->scenario, p.scen_o != NULL ? Py_NewRef(p.scen_o) : NULL);
    self->nscenario = cfg.nscenario;
    if (self->tunnel != NULL) {
        cfg.tunnel = PyBytes_AS_STRING(self->tunnel);
        cfg.tunnel_len = (size_t)PyBytes_GET_SIZE(self->tunnel);
    }
    cfg.request = PyBytes_AS_STRING(self->request);
    cfg.request_len = (size_t)PyBytes_GET_SIZE(self->request);
    hb_bench *b;
    Py_BEGIN_ALLOW_THREADS b = hb_bench_start(&cfg);
    Py_END_ALLOW_THREADS self->starting = 0;
    bench_parts_free(&p); /* the run keeps copies */
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
    if (hbpy_arg_real(arg, "seconds", 1, HB_BENCH_MAX_SECONDS, &seconds) != 0)
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

static PyObject *Bench_opened(BenchObject *self, PyObject *unused)
{
    (void)unused;
    hb_sock_info tls;
    if (self->b == NULL || !hb_bench_opened(self->b, &tls))
        Py_RETURN_NONE;
    return Py_BuildValue("(ss)", tls.protocol, tls.temp_key);
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

/* The loop's figures by the names httpbench.Result gives them, written
 * once: the dict Bench.result() returns, the Result built from it
 * (httpbench/local.py), a run that measured nothing and the merge of
 * several all follow these tables, which _core exports (RESULT_COUNTS,
 * ...). A count named here that Result has no field for lands in
 * Result.counts under its name; CONTRIBUTING.md says how to add one. */
#define COUNT_ROW(field, name) RESULT_AT(name, field),
static const result_field RESULT_COUNTS[] = {HB_BENCH_COUNTS(COUNT_ROW)};
#undef COUNT_ROW
static const result_field RESULT_SECONDS[] = {
    RESULT_AT("time_taken", elapsed),        RESULT_AT("cpu_user", cpu_user),
    RESULT_AT("cpu_sys", cpu_sys),           RESULT_AT("conn_rps_min", conn_rps_min),
    RESULT_AT("conn_rps_max", conn_rps_max), RESULT_AT("conn_rps_mean", conn_rps_mean),
    RESULT_AT("conn_rps_sd", conn_rps_sd),   RESULT_AT("conn_rps_within", conn_rps_within),
};
static const result_field RESULT_HISTOGRAMS[] = {
    RESULT_AT("latency", total),
    RESULT_AT("latency_uncorrected", uncorrected),
    RESULT_AT("connect_time", connect),
    RESULT_AT("waiting", waiting),
    RESULT_AT("processing", processing),
    RESULT_AT("tls_handshake", tls_handshake),
    RESULT_AT("conn_first_byte", first_byte),
    RESULT_AT("conn_connect", conn_connect),
};
static const result_field RESULT_TEXTS[] = {
    RESULT_AT("server_software", server),    RESULT_AT("first_error", error),
    RESULT_AT("first_head", first_head),     RESULT_AT("tls_protocol", tls.protocol),
    RESULT_AT("tls_temp_key", tls.temp_key), RESULT_AT("tls_server_name", tls.server_name),
};

/* names' names as a tuple. A new reference, or NULL with an exception. */
static PyObject *names_of(const result_field *names, size_t n)
{
    PyObject *tuple = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; tuple != NULL && i < n; i++) {
        PyObject *s = PyUnicode_FromString(names[i].name);
        if (s == NULL)
            Py_CLEAR(tuple);
        else
            PyTuple_SET_ITEM(tuple, (Py_ssize_t)i, s);
    }
    return tuple;
}

/* m.name = value, taking the reference (NULL: the exception stands).
 * Returns 0, or -1 with an exception. */
static int add_to(PyObject *m, const char *name, PyObject *value)
{
    if (value == NULL)
        return -1;
    if (PyModule_AddObject(m, name, value) != 0) {
        Py_DECREF(value);
        return -1;
    }
    return 0;
}

/* The names _Bench reads, SETTINGS's then OBJECT_SETTINGS's, as a tuple
 * (_core.BENCH_SETTINGS: tests/loop/test_settings.py holds the run settings'
 * declarations to it). A new reference, or NULL with an exception. */
static PyObject *bench_setting_names(void)
{
    size_t n = COUNT_OF(SETTINGS), m = COUNT_OF(OBJECT_SETTINGS);
    PyObject *tuple = PyTuple_New((Py_ssize_t)(n + m));
    for (size_t i = 0; tuple != NULL && i < n + m; i++) {
        PyObject *s = PyUnicode_FromString(i < n ? SETTINGS[i].name : OBJECT_SETTINGS[i - n]);
        if (s == NULL)
            Py_CLEAR(tuple);
        else
            PyTuple_SET_ITEM(tuple, (Py_ssize_t)i, s);
    }
    return tuple;
}

int hbpy_add_result_names(PyObject *m)
{
    return add_to(m, "BENCH_SETTINGS", bench_setting_names()) ||
                   add_to(m, "RESULT_COUNTS", names_of(RESULT_COUNTS, COUNT_OF(RESULT_COUNTS))) ||
                   add_to(m, "RESULT_SECONDS",
                          names_of(RESULT_SECONDS, COUNT_OF(RESULT_SECONDS))) ||
                   add_to(m, "RESULT_HISTOGRAMS",
                          names_of(RESULT_HISTOGRAMS, COUNT_OF(RESULT_HISTOGRAMS))) ||
                   add_to(m, "RESULT_TEXTS", names_of(RESULT_TEXTS, COUNT_OF(RESULT_TEXTS)))
               ? -1
               : 0;
}

/* d[name] = value, taking the reference; -1 (with an exception) when value
 * is NULL or the store fails. */
static int put_item(PyObject *d, const char *name, PyObject *value)
{
    if (value == NULL)
        return -1;
    int rc = PyDict_SetItemString(d, name, value);
    Py_DECREF(value);
    return rc;
}

/* [(second, complete, failed, p50 ns, p99 ns, non_2xx)] per second of the run. */
static PyObject *timeline_list(const hb_bench_result *r)
{
    PyObject *list = PyList_New(r->nseconds);
    for (int s = 0; list != NULL && s < r->nseconds; s++) {
        const hb_second *sec = &r->timeline[s];
        uint64_t p50, p99;
        hb_bench_second_percentiles(sec, &p50, &p99);
        PyObject *t = Py_BuildValue("(iIIKKI)", s, sec->complete, sec->failed,
                                    (unsigned long long)p50, (unsigned long long)p99, sec->non_2xx);
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
PyObject *hbpy_timeline_percentiles(PyObject *mod, PyObject *arg)
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
            hbpy_arg_int(ko, "bucket", 0, HB_TL_BUCKETS - 1, &k) != 0 ||
            hbpy_arg_int(no, "count", 0, UINT32_MAX, &n) != 0 ||
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

/* {code name: count} of the RST_STREAMs, those counted only. */
static PyObject *reset_codes_dict(const hb_bench_result *r)
{
    PyObject *d = PyDict_New();
    for (int k = 0; d != NULL && k < HB_BENCH_RESET_CODES; k++) {
        if (r->reset_codes[k] == 0)
            continue;
        const char *name = k == HB_BENCH_RESET_CODES - 1 ? "other" : hb_h2_code_name((uint32_t)k);
        if (put_item(d, name, PyLong_FromUnsignedLongLong(r->reset_codes[k])))
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
        if (put_item(d, RESULT_COUNTS[i].name,
                     PyLong_FromUnsignedLongLong(*(const uint64_t *)(base + RESULT_COUNTS[i].off))))
            goto error;
    for (size_t i = 0; i < COUNT_OF(RESULT_SECONDS); i++)
        if (put_item(d, RESULT_SECONDS[i].name,
                     PyFloat_FromDouble(*(const double *)(base + RESULT_SECONDS[i].off))))
            goto error;
    for (size_t i = 0; i < COUNT_OF(RESULT_HISTOGRAMS); i++)
        if (put_item(d, RESULT_HISTOGRAMS[i].name,
                     hbpy_new_histogram(st, (const hb_hist *)(base + RESULT_HISTOGRAMS[i].off))))
            goto error;
    for (size_t i = 0; i < COUNT_OF(RESULT_TEXTS); i++) {
        const char *text = base + RESULT_TEXTS[i].off;
        if (put_item(d, RESULT_TEXTS[i].name,
                     PyUnicode_DecodeLatin1(text, (Py_ssize_t)strlen(text), NULL)))
            goto error;
    }
    if (put_item(d, "streams_allowed",
                 r->streams_limited ? PyLong_FromUnsignedLong(r->streams_allowed)
                                    : Py_NewRef(Py_None)) ||
        put_item(d, "streams_unlimited",
                 PyBool_FromLong(r->streams_heard && !r->streams_limited)) ||
        put_item(d, "streams_max_used", PyLong_FromUnsignedLong(r->streams_max_used)) ||
        put_item(d, "reset_codes", reset_codes_dict(r)))
        goto error;
    /* The client's own figures (httpbench.ClientFigures is made of them). */
    if (put_item(d, "busy_mean", PyFloat_FromDouble(r->busy_mean)) ||
        put_item(d, "busy_max", PyFloat_FromDouble(r->busy_max)) ||
        put_item(d, "unsent", PyLong_FromUnsignedLongLong(r->unsent)) ||
        put_item(d, "late", hbpy_new_histogram(st, &r->late)))
        goto error;
    if (put_item(d, "document_length", PyLong_FromLongLong(r->document_length)) ||
        put_item(d, "status_counts", status_dict(r)) || put_item(d, "timeline", timeline_list(r)) ||
        put_item(d, "timeline_buckets", timeline_buckets(r)))
        goto error;
    return d;
error:
    Py_DECREF(d);
    return NULL;
}

typedef void (*figures_of)(hb_bench *b, int i, hb_bench_result *out);

/* hb_bench_collect's, for the whole run (i < 0) or one request. */
static void collected(hb_bench *b, int i, hb_bench_result *out)
{
    if (i < 0)
        hb_bench_collect(b, out);
    else
        hb_bench_collect_request(b, i, out);
}

/* The figures get gives, of the whole run with a scenario's requests each
 * alone in its order ("by_request"), as result() returns them. */
static PyObject *figures_dict(BenchObject *self, figures_of get)
{
    core_state *st = type_state(Py_TYPE(self));
    hb_bench_result *r = PyMem_Malloc(sizeof *r);
    if (r == NULL)
        return PyErr_NoMemory();
    get(self->b, -1, r);
    PyObject *out = result_dict(st, r);
    hb_bench_result_free(r);
    PyObject *each = out != NULL ? PyList_New(self->nscenario) : NULL;
    for (int i = 0; each != NULL && i < self->nscenario; i++) {
        get(self->b, i, r);
        PyObject *d = result_dict(st, r);
        hb_bench_result_free(r);
        if (d == NULL)
            Py_CLEAR(each);
        else
            PyList_SET_ITEM(each, i, d);
    }
    PyMem_Free(r);
    if (out != NULL && put_item(out, "by_request", each) != 0)
        Py_CLEAR(out);
    return out;
}

/* result() -> dict: every figure of the run; call after wait() is True. */
static PyObject *Bench_result(BenchObject *self, PyObject *unused)
{
    (void)unused;
    if (self->b == NULL || !hb_bench_wait(self->b, 0)) {
        PyErr_SetString(PyExc_RuntimeError, "the run has not ended");
        return NULL;
    }
    return figures_dict(self, collected);
}

/* log_status() -> (written, dropped, errno) of the per-request log, once
 * the run has ended; zeros without a log. */
static PyObject *Bench_log_status(BenchObject *self, PyObject *unused)
{
    (void)unused;
    if (self->b == NULL || !hb_bench_wait(self->b, 0)) {
        PyErr_SetString(PyExc_RuntimeError, "the run has not ended");
        return NULL;
    }
    uint64_t written, dropped;
    int err = hb_bench_log_status(self->b, &written, &dropped);
    return Py_BuildValue("(KKi)", (unsigned long long)written, (unsigned long long)dropped, err);
}

/* snapshot() -> dict: the figures the loop threads last published (each
 * second, and at their end), as result() gives them but without the
 * timeline, the CPU time or the per-connection rates; empty figures
 * unless the run was made with publish=True. */
static PyObject *Bench_snapshot(BenchObject *self, PyObject *unused)
{
    (void)unused;
    if (self->b == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the run was not started");
        return NULL;
    }
    /* The whole and each request's parts from the same publications: a
     * thread that published between them makes the set be read again (a
     * thread publishes once a second, so once is nearly always enough). */
    for (int tries = 0;; tries++) {
        uint64_t before = hb_bench_publications(self->b);
        PyObject *d = figures_dict(self, hb_bench_snapshot);
        if (d == NULL || tries == 9 || hb_bench_publications(self->b) == before)
            return d;
        Py_DECREF(d);
    }
}

static PyMethodDef Bench_methods[] = {
    {"wait", (PyCFunction)Bench_wait, METH_O, "wait(seconds) -> True once the run has ended."},
    {"stop", (PyCFunction)Bench_stop, METH_NOARGS, "End the run early."},
    {"progress", (PyCFunction)Bench_progress, METH_NOARGS, "(issued, complete, failed) so far."},
    {"opened", (PyCFunction)Bench_opened, METH_NOARGS,
     "None until a connection has opened, then (tls_protocol, tls_temp_key) of the first TLS "
     "handshake (empty strings over plain TCP)."},
    {"prepared", (PyCFunction)Bench_prepared, METH_NOARGS,
     "True once a prepared start has warmed up and waits for go()."},
    {"go", (PyCFunction)Bench_go, METH_O,
     "go(start): a prepared start's measured part begins at start (time.time()'s clock)."},
    {"result", (PyCFunction)Bench_result, METH_NOARGS, "Every figure of the ended run."},
    {"log_status", (PyCFunction)Bench_log_status, METH_NOARGS,
     "(written, dropped, errno) of the per-request log, once the run has ended."},
    {"snapshot", (PyCFunction)Bench_snapshot, METH_NOARGS,
     "The figures published at the last second boundary (publish=True)."},
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

PyType_Spec hbpy_bench_spec = {
    .name = "httpbench._core._Bench",
    .basicsize = sizeof(BenchObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = Bench_slots,
};
