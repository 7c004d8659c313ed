/* h2ver.h: the libnghttp2 calls whose forms changed in 1.60, named once
 * for the client (h2.c) and the server (h2srv.c). 1.60 deprecated the
 * ssize_t forms for `*2` ones taking nghttp2_ssize; both take and give
 * the same bytes. Chosen by NGHTTP2_VERSION_NUM, so a newer library's
 * deprecation warnings cannot fail a -Werror build; only 1.52 is tested
 * here.
 *
 * And the limit on CONTINUATION frames (nghttp2_option_set_max_continuations),
 * which came with CVE-2024-28182's fix: upstream in 1.61, but distributions
 * backported it to older versions (Debian's 1.52 has it), so a version
 * number cannot tell. setup.py's probe links a call to it and defines
 * HB_HAVE_MAX_CONTINUATIONS where it links (HTTPBENCH_NO_MAX_CONTINUATIONS=1
 * turns the probe off). */
#ifndef HB_H2VER_H
#define HB_H2VER_H

#include <nghttp2/nghttp2.h>

#if NGHTTP2_VERSION_NUM >= 0x013c00
typedef nghttp2_ssize hb_h2_ssize;
typedef nghttp2_data_provider2 hb_h2_provider;
#define HB_H2_MEM_RECV nghttp2_session_mem_recv2
#define HB_H2_MEM_SEND nghttp2_session_mem_send2
#define HB_H2_SUBMIT_REQUEST nghttp2_submit_request2
#define HB_H2_SUBMIT_RESPONSE nghttp2_submit_response2
#else
typedef ssize_t hb_h2_ssize;
typedef nghttp2_data_provider hb_h2_provider;
#define HB_H2_MEM_RECV nghttp2_session_mem_recv
#define HB_H2_MEM_SEND nghttp2_session_mem_send
#define HB_H2_SUBMIT_REQUEST nghttp2_submit_request
#define HB_H2_SUBMIT_RESPONSE nghttp2_submit_response
#endif

/* CONTINUATION frames one header block may take, on the client's sessions
 * and the server's. The fix's default is 8, which valid peers exceed
 * (nginx serves a head in up to 99); the server counts its own limit of
 * this many wherever the library has none (h2srv.c). */
#define HB_H2_MAX_CONTINUATIONS 100

/* Sets that limit on a session's options where the library has the
 * option; elsewhere the library's own limit stands (docs/http2.md). */
static inline void hb_h2_limit_continuations(nghttp2_option *opt)
{
#ifdef HB_HAVE_MAX_CONTINUATIONS
    nghttp2_option_set_max_continuations(opt, HB_H2_MAX_CONTINUATIONS);
#else
    (void)opt;
#endif
}

#endif
