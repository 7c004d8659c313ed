/* head.h: hb_head_*, the one writer of HTTP/1.1 response heads, for the
 * server's own responses (session.c) and the ones its relay forwards
 * (relay.c).
 *
 * Each call writes at w and returns the end of what it wrote; nothing is
 * checked or grown, so the caller reserves the room first (hb_buf_reserve)
 * and commits w's advance after (hb_buf_commit). What each adds at most
 * is stated, so the caller can size the reservation.
 */
#ifndef HB_HEAD_H
#define HB_HEAD_H

#include <stddef.h>
#include <stdint.h>

/* n bytes of p. */
char *hb_head_put(char *w, const char *p, size_t n);

/* A string literal. */
#define HB_HEAD_LIT(w, lit) hb_head_put((w), lit, sizeof(lit) - 1)

/* v in decimal: 20 bytes at most. */
char *hb_head_u64(char *w, uint64_t v);

/* The status line, "HTTP/1.1 NNN reason\r\n" (RFC 9112 section 4): 16
 * bytes besides the reason. status is 100 to 999 (the parsers' range). */
char *hb_head_status(char *w, int status, const char *reason, size_t reason_len);

/* "Name: value\r\n": 4 bytes besides the name and the value. */
char *hb_head_field(char *w, const char *name, size_t name_len, const char *value,
                    size_t value_len);

/* The end of the head: Connection as this response to this client needs
 * it (RFC 9112 section 9.3: close when the connection ends after it;
 * keep-alive to an HTTP/1.0 client that kept it, whose default is to
 * close), and the empty line. 28 bytes at most. */
char *hb_head_end(char *w, int close_after, int minor_version);

/* The room hb_head_end needs. */
#define HB_HEAD_END_MAX 28

#endif
