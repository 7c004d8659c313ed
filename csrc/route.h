/* route.h: hb_route_*, the embedded server's endpoints.
 *
 * Routing only decides: from the method and target it makes a plan (status,
 * where the body comes from, a delay) that the session carries out. It
 * opens a static file when one is asked for, and nothing else touches the
 * system.
 *
 *   GET|HEAD /rnd?c=N       N bytes of printable pseudo-random content
 *   POST|PUT /echo          the request body back, Content-Type echoed
 *   GET|HEAD /static/PATH   a file under the static directory
 *   GET|HEAD /status/CODE   an empty response with that status
 *   GET|HEAD /delay?ms=N    an empty 200 after N milliseconds
 *   GET|HEAD /chunked?c=N   N bytes of /rnd's content, chunked
 */
#ifndef HB_ROUTE_H
#define HB_ROUTE_H

#include <stddef.h>
#include <stdint.h>

/* Largest N for /rnd and /chunked (1 GiB); larger is a 400. */
#define HB_RND_MAX (1ULL << 30)
/* Longest /delay (one minute). */
#define HB_DELAY_MAX_MS 60000

/* Where a response body comes from. */
typedef enum {
    HB_SRC_NONE = 0, /* no body, Content-Length 0 (or none for 204/304) */
    HB_SRC_TEXT,     /* a static string: text */
    HB_SRC_RND,      /* length bytes of the shared random block */
    HB_SRC_CHUNKED,  /* length bytes of the random block, chunked */
    HB_SRC_ECHO,     /* the request body */
    HB_SRC_FILE,     /* length bytes of file_fd from offset 0 */
} hb_src;

typedef struct {
    int status;
    hb_src src;
    uint64_t length;
    const char *text;         /* HB_SRC_TEXT */
    const char *content_type; /* NULL: none */
    const char *allow;        /* for 405: the methods allowed */
    int file_fd;              /* HB_SRC_FILE; owned by the plan, -1 otherwise */
    int64_t delay_ns;
    unsigned head_only : 1; /* HEAD: headers as for GET, no body */
    unsigned keep_body : 1; /* the request body is needed (echo) */
    unsigned unframed : 1;  /* no Content-Length or Transfer-Encoding: the body ends
                             * where the connection closes (RFC 9112 section 6.3) */
} hb_plan;

/* The static directory, opened once: a directory fd, or -1 for none. */
typedef struct {
    int dir_fd;
} hb_route_static;

/* Opens dir for serving (NULL: no static files). Returns 0, or -1 with errno. */
int hb_route_static_open(hb_route_static *st, const char *dir);
void hb_route_static_close(hb_route_static *st);

/* Plans the answer to method and target (not NUL-terminated). The plan
 * starts zeroed with file_fd -1; on a HB_SRC_FILE plan the caller closes
 * file_fd when done. */
void hb_route(const hb_route_static *st, const char *method, size_t mlen, const char *target,
              size_t tlen, hb_plan *plan);

/* Turns a plan into an error response with a short text body naming why. */
void hb_route_error(hb_plan *plan, int status, const char *why);

/* The reason phrase for a status code ("Unknown" when none is known). */
const char *hb_route_reason(int status);

#endif
