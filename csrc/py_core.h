/* py_core.h: what the glue files share, and the only header that includes
 * Python.h.
 *
 * httpbench._core is glue over the plain C core, one file per type, as
 * CPython's _sqlite is laid out: py_tls.c (_TLS), py_response.c
 * (Response), py_conn.c (Connection), py_request.c (a request's parts into
 * hb_req_parts), py_server.c (_ServerCore), py_hist.c (Histogram),
 * py_bench.c (_Bench), py_args.c (argument ranges), module.c (the module:
 * its state, constants and functions). The glue converts between Python
 * objects and C values and raises exceptions; it decides no HTTP and calls
 * no Python module of ours (module.c reads httpbench.exceptions once, at
 * init). URLs and proxy plans are decided in Python before the call.
 */
#ifndef HB_PY_CORE_H
#define HB_PY_CORE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "bench.h"
#include "conn.h"
#include "h2.h"
#include "hist.h"
#include "request.h"
#include "route.h"
#include "server.h"
#include "shape.h"
#include "tls.h"

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

/* The entries of a table. */
#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* The module's state: the exceptions (httpbench.exceptions') and the
 * types. */
typedef struct {
    PyObject *HttpbenchError, *ConnectError, *Timeout, *ProtocolError, *IncompleteResponse;
    PyObject *TLSError, *StreamReset;
    PyTypeObject *Connection, *Response, *ServerCore, *Histogram, *Bench, *TLS;
} core_state;

static inline core_state *state_of(PyObject *module)
{
    return (core_state *)PyModule_GetState(module);
}

/* The module state of one of the module's types, or of a Python subclass
 * of one (httpbench.Connection): the type that carries the module is
 * looked for up the bases (as PyType_GetModuleByDef does, without naming
 * the module's definition: the types know no more of module.c than it
 * gives them, so the glue's files call one way). A Python subclass
 * carries none; the first of ours up its bases does. */
static inline core_state *type_state(PyTypeObject *tp)
{
    while (!(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) || ((PyHeapTypeObject *)tp)->ht_module == NULL)
        tp = tp->tp_base;
    return state_of(((PyHeapTypeObject *)tp)->ht_module);
}

/* The types, each made by module.c from its spec. */
extern PyType_Spec hbpy_tls_spec, hbpy_response_spec, hbpy_connection_spec, hbpy_server_spec,
    hbpy_histogram_spec, hbpy_bench_spec;

/* ---- py_args.c: every number a user can pass is checked before it
 * reaches C: a ValueError naming the argument when it is out of range
 * (negative, NaN, infinite or absurdly large), a TypeError when it is no
 * number. */

/* An int (not a bool) from lo to hi (hi at most LLONG_MAX). Returns 0,
 * or -1 with an exception. */
int hbpy_arg_int(PyObject *o, const char *name, long long lo, long long hi, long long *out);

/* A real number of seconds (or a rate), finite, above zero (or zero too,
 * with zero_ok) and at most max (a whole number), not a bool. Returns 0,
 * or -1 with an exception. */
int hbpy_arg_real(PyObject *o, const char *name, int zero_ok, double max, double *out);

/* A table of settings: a C struct's numbers and flags by name, read from a
 * dict (httpbench/local.py's for _Bench, httpbench/server.py's for
 * _ServerCore) by one reader, each checked in its range. */
typedef enum {
    HBPY_FLAG,      /* int, 0 or 1 from any object's truth */
    HBPY_INT,       /* int, lo to hi */
    HBPY_U64,       /* uint64_t, lo to hi */
    HBPY_SEED,      /* uint64_t, any */
    HBPY_REAL,      /* double, above 0, at most hi */
    HBPY_REAL_OR_0, /* double, 0 or above, at most hi */
    HBPY_DOUBLE     /* double, any (its range the reader's caller checks) */
} hbpy_kind;

typedef struct {
    const char *name;
    hbpy_kind kind;
    size_t off; /* in the struct read into */
    long long lo;
    double hi;
    int required;
} hbpy_setting;

/* The settings `table` names, from the dict `settings`, into the struct
 * at cfg. Every key of settings must be in table or in objects (those the
 * caller converts itself), the first nrequired of objects and every
 * required entry of table must be there. Returns 0, or -1 with an
 * exception: a TypeError naming who and the setting, a ValueError naming
 * the setting out of range. */
int hbpy_read_settings(PyObject *settings, const char *who, const hbpy_setting *table, size_t n,
                       const char *const *objects, size_t nobjects, size_t nrequired, void *cfg);

/* "O&" converter for a Unix socket's path: None, or str/bytes/PathLike
 * made bytes by PyUnicode_FSConverter (which refuses a NUL); *out is a new
 * reference, or stays NULL for None. */
int hbpy_unix_path_arg(PyObject *o, void *out);

/* ---- py_tls.c */

/* Makes an hb_tls from Python arguments (any may be NULL or None), for
 * a server (HBPY_TLS_SERVER) or a client, offering h2 by ALPN
 * (HBPY_TLS_H2) or http/1.1. Returns it, or NULL with an exception:
 * TLSError for what OpenSSL refused. */
#define HBPY_TLS_SERVER 1
#define HBPY_TLS_H2 2
hb_tls *hbpy_tls_make(core_state *st, int flags, int verify, int resume, PyObject *cafile,
                      PyObject *certfile, PyObject *keyfile, PyObject *server_hostname,
                      PyObject *cert_host, PyObject *min_v, PyObject *max_v, PyObject *ciphers,
                      PyObject *ciphersuites);

/* The hb_tls of a _TLS object given as an argument, or NULL for None (the
 * object is the caller's to keep alive). Returns 0, or -1 with an
 * exception. */
int hbpy_tls_of(core_state *st, PyObject *o, hb_tls **out);

/* ---- py_response.c */

/* A Response copied out of the connection's last response, or NULL with
 * an exception. */
PyObject *hbpy_make_response(core_state *st, const hb_conn *c);

/* ---- py_request.c */

/* body: a bytes-like object, or str sent as UTF-8, into *body (released
 * by the caller). Returns 0, or -1 with an exception. */
int hbpy_get_body(PyObject *o, Py_buffer *body);

/* Converts the request's parts (origin and proxy_auth: bytes or NULL, see
 * hb_req_parts) and has hb_req_build check and write them into b. Returns
 * 0 with *flags set, or -1 with an exception: ValueError for what
 * hb_req_build refuses, before anything is sent. */
int hbpy_build_request(hb_buf *b, PyObject *method_o, PyObject *target_o, PyObject *headers,
                       const Py_buffer *body, PyObject *host_header, PyObject *origin,
                       PyObject *proxy_auth, Py_ssize_t copy_max, int *flags);

/* build_request(method, target, headers, body, host, *, origin=b"",
 * proxy_auth=b"") -> (bytes, flags): the module function. */
PyObject *hbpy_build_request_fn(PyObject *module, PyObject *args, PyObject *kwds);

/* ---- py_hist.c */

/* A new Histogram holding a copy of h, or NULL with an exception. */
PyObject *hbpy_new_histogram(core_state *st, const hb_hist *h);

/* ---- py_bench.c */

/* timeline_percentiles(pairs) -> (p50 ns, p99 ns) of one second from its
 * (bucket, count) pairs, as the loop computes a second's own: the module
 * function. */
PyObject *hbpy_timeline_percentiles(PyObject *mod, PyObject *arg);

/* Adds the result's name tables to module m (RESULT_COUNTS,
 * RESULT_SECONDS, RESULT_HISTOGRAMS, RESULT_TEXTS: tuples of str).
 * Returns 0, or -1 with an exception. */
int hbpy_add_result_names(PyObject *m);

/* ---- py_server.c */

/* Adds SERVER_COUNTS to module m: (name, what it counts) for each of the
 * server's counters (server.h's HB_SRV_COUNTS), in the order stats()
 * gives them. Returns 0, or -1 with an exception. */
int hbpy_add_server_names(PyObject *m);

#endif
