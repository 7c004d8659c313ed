/* tls.h: hb_tls_*, TLS on OpenSSL as a transport (hb_net_tls) beside plain
 * TCP, for the client, the loop and the server alike.
 *
 * An hb_tls is an SSL_CTX with its settings, made once and shared by every
 * socket of a client or a server (read-only once made; OpenSSL lets many
 * threads make connections from one SSL_CTX). A socket on hb_net_tls has
 * it in s->shared. Records are read and written by OpenSSL on the socket
 * itself; handshakes and records never leave C.
 *
 * Client side: the handshake is a step of its own (the transport's
 * `handshake`, which hb_sock_open runs in blocking mode), so its time is
 * measured apart; SNI and the name checked as curl does (no SNI for an
 * address; an address is checked against the certificate's IP entries).
 * With `resume`, each socket keeps the last session the server gave it
 * (s->keep) and offers it on its next connect.
 * Server side: the handshake happens inside the first reads; what comes
 * first is looked at before OpenSSL sees it: a plain HTTP request gets
 * nginx's courtesy (a 400 saying so), anything else that is no handshake
 * record is refused at once.
 *
 * Failures are errno EPROTO with the reason as text (the transport's
 * `error`): OpenSSL's reason, "certificate verify failed: " and the
 * verifier's, or what came instead of TLS. An end of stream without
 * close_notify reads as an end of stream (HTTP's framing says whether the
 * response was complete, as over TCP).
 */
#ifndef HB_TLS_H
#define HB_TLS_H

#include "net.h"

#include <stddef.h>

typedef struct hb_tls hb_tls;

/* Protocol versions, as OpenSSL numbers them (TLS1_2_VERSION...). */
#define HB_TLS_1_2 0x0303
#define HB_TLS_1_3 0x0304

/* TLS 1.3's cipher suites unless told otherwise, in browsers' order. */
#define HB_TLS13_SUITES "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"

typedef struct {
    int server; /* the server's side, else the client's */
    /* Client side. */
    int verify;                  /* check the server's certificate and name */
    const char *cafile;          /* PEM trust anchors; NULL: the system's store */
    const char *server_hostname; /* SNI and the name checked; NULL or "": none */
    int resume;                  /* resume sessions on new connections */
    int http2;                   /* client: ALPN offers h2 alone (else http/1.1 alone); server: ALPN
                * picks h2 when offered (else http/1.1) */
    /* Both sides: the own certificate chain and key (PEM files). The server
     * with neither makes a self-signed one (EC P-256, a day) for
     * cert_host and "localhost". A client with neither sends none. */
    const char *certfile, *keyfile;
    const char *cert_host;
    int min_version, max_version; /* HB_TLS_*; 0: OpenSSL's default */
    /* TLS 1.2's list (NULL: OpenSSL's), TLS 1.3's (NULL: HB_TLS13_SUITES). */
    const char *ciphers, *ciphersuites;
} hb_tls_config;

/* Makes a context. Returns it, or NULL with the reason in err. */
hb_tls *hb_tls_new(const hb_tls_config *cfg, char *err, size_t errlen);

/* Frees t; every socket made from it must be closed first. NULL is fine. */
void hb_tls_free(hb_tls *t);

/* The own certificate in PEM (the self-signed one a client then trusts),
 * malloc'ed (the caller frees), or NULL when out of memory or none. */
char *hb_tls_cert_pem(const hb_tls *t);

/* The OpenSSL in use, as it names itself ("OpenSSL 3.0.19 27 Jan 2026"). */
const char *hb_tls_library(void);

/* The TLS transport; a socket on it has its hb_tls in s->shared. */
extern const hb_transport hb_net_tls;

#endif
