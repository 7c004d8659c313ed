/* module.c: httpbench._core, the module: its state, constants and
 * functions. Each type's glue is a file of its own (py_core.h lists them). */
#include "py_core.h"

static PyMethodDef core_functions[] = {
    {"timeline_percentiles", (PyCFunction)hbpy_timeline_percentiles, METH_O,
     "timeline_percentiles(pairs) -> (p50 ns, p99 ns) of a second's (bucket, count) pairs."},
    {"build_request", (PyCFunction)(void (*)(void))hbpy_build_request_fn,
     METH_VARARGS | METH_KEYWORDS,
     "build_request(method, target, headers, body, host, *, origin=b'', proxy_auth=b'') -> "
     "(bytes, flags): the request Connection.request would send (origin before a path and "
     "Proxy-Authorization added: through a forward proxy to an http:// server)."},
    {0},
};

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
    st->StreamReset = PyObject_GetAttrString(exc, "StreamReset");
    Py_DECREF(exc);
    if (PyErr_Occurred())
        return -1;
    st->Response = (PyTypeObject *)PyType_FromModuleAndSpec(m, &hbpy_response_spec, NULL);
    if (st->Response == NULL)
        return -1;
    st->Connection = (PyTypeObject *)PyType_FromModuleAndSpec(m, &hbpy_connection_spec, NULL);
    if (st->Connection == NULL)
        return -1;
    st->ServerCore = (PyTypeObject *)PyType_FromModuleAndSpec(m, &hbpy_server_spec, NULL);
    if (st->ServerCore == NULL)
        return -1;
    st->Histogram = (PyTypeObject *)PyType_FromModuleAndSpec(m, &hbpy_histogram_spec, NULL);
    st->Bench = (PyTypeObject *)PyType_FromModuleAndSpec(m, &hbpy_bench_spec, NULL);
    st->TLS = (PyTypeObject *)PyType_FromModuleAndSpec(m, &hbpy_tls_spec, NULL);
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
        PyModule_AddIntConstant(m, "MAX_STREAMS", HB_BENCH_MAX_STREAMS) != 0 ||
        PyModule_AddIntConstant(m, "MAX_WINDOW", HB_BENCH_MAX_WINDOW) != 0 ||
        PyModule_AddIntConstant(m, "MAX_SOCKET_BUFFER", HB_BENCH_MAX_SOCKET_BUFFER) != 0 ||
        PyModule_AddIntConstant(m, "MAX_SCENARIO", HB_BENCH_MAX_SCENARIO) != 0 ||
        PyModule_AddIntConstant(m, "MAX_BYTES", MAX_BYTES) != 0 ||
        PyModule_AddObject(m, "MAX_SECONDS", PyFloat_FromDouble(HB_BENCH_MAX_SECONDS)) != 0 ||
        PyModule_AddObject(m, "MAX_RATE", PyFloat_FromDouble(HB_BENCH_MAX_RATE)) != 0 ||
        PyModule_AddObject(m, "GRACE_SECONDS", PyFloat_FromDouble(HB_BENCH_GRACE_NS / 1e9)) != 0 ||
        PyModule_AddStringConstant(m, "OPENSSL_VERSION", hb_tls_library()) != 0 ||
        PyModule_AddIntConstant(m, "H2_MAX_CONTINUATIONS", hb_h2_continuations()) != 0 ||
        PyModule_AddStringConstant(m, "__version__", HB_VERSION) != 0 ||
        hbpy_add_result_names(m) != 0 || hbpy_add_server_names(m) != 0)
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
    Py_VISIT(st->StreamReset);
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
    Py_CLEAR(st->StreamReset);
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

static struct PyModuleDef hbpy_module = {
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
    return PyModuleDef_Init(&hbpy_module);
}
