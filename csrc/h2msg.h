/* h2msg.h: the rules an HTTP/2 response's messages keep (RFC 9113 section
 * 8), checked here so that the client's session runs with nghttp2's own
 * HTTP messaging off (NGHTTP2_OPT_NO_HTTP_MESSAGING): it checked every
 * field's name and value byte by byte through a table and looked each
 * name up as a token, 1,585 instructions a response of the embedded
 * server's (callgrind, 14% of the client's); these checks reach the same
 * verdicts, each naming the defect, for a fraction (names and values
 * eight bytes at a step). Nothing here knows nghttp2. */
#ifndef HB_H2MSG_H
#define HB_H2MSG_H

#include <stddef.h>
#include <stdint.h>

/* One response's state, through its header blocks and DATA. */
typedef struct {
    int64_t clen;      /* its content-length, -1 when it has none */
    uint64_t got;      /* DATA received */
    int status;        /* the final head's status, 0 before it */
    int nobody;        /* the request was HEAD: no body, whatever its length says */
    int trailers;      /* the block being decoded follows the final head */
    int block_status;  /* that block's :status, 0 before one came */
    int block_regular; /* a regular field came in it */
} hb_h2m;

/* A response to a request (head: a HEAD request) begins. */
void hb_h2m_start(hb_h2m *m, int head);

/* A header block begins. */
void hb_h2m_block(hb_h2m *m);

/* One field of the block. Returns NULL when it keeps the rules, else the
 * defect in words (a static string) and, for a status code that is none,
 * 1 in *bad_status (the caller names it as HTTP/1.1's parser does). */
const char *hb_h2m_field(hb_h2m *m, const char *name, size_t nlen, const char *value, size_t vlen,
                         int *bad_status);

/* The block ended (end_stream: with END_STREAM). Returns NULL or the
 * defect. After it, m->status is set when the block was the final head. */
const char *hb_h2m_block_end(hb_h2m *m, int end_stream);

/* n bytes of DATA came. Returns NULL or the defect. */
const char *hb_h2m_data(hb_h2m *m, size_t n);

/* END_STREAM came (on the DATA or the HEADERS just checked). Returns NULL
 * when the response is whole, or the defect (a body unlike its length). */
const char *hb_h2m_end(hb_h2m *m);

/* RFC 9113 section 8.2.2: whether the field means something to one
 * connection only (TE may say trailers), any case: such a field is not
 * sent over HTTP/2, and a response that has one is malformed. */
int hb_h2m_connection_specific(const char *name, size_t nlen, const char *value, size_t vlen);

/* Whether a field value keeps RFC 9113 section 8.2.1 and RFC 9110 section
 * 5.5 as nghttp2 reads them: no control character but HTAB, no DEL, no
 * whitespace at either end. */
int hb_h2m_value_ok(const char *p, size_t n);

/* Whether a field name is a lowercase token (RFC 9113 section 8.2.1). */
int hb_h2m_name_ok(const char *p, size_t n);

#endif
