/* h2ver.h: the libnghttp2 calls whose forms changed in 1.60, named once
 * for the client (h2.c) and the server (h2srv.c). 1.60 deprecated the
 * ssize_t forms for `*2` ones taking nghttp2_ssize; both take and give
 * the same bytes. Chosen by NGHTTP2_VERSION_NUM, so a newer library's
 * deprecation warnings cannot fail a -Werror build; only 1.52 is tested
 * here. */
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

#endif
