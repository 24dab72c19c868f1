/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What sluice's HTTP servers (the exporter, the check server) share: the
 * --listen address, the listening socket, libmicrohttpd's thread pool with
 * the hardening (whole-request deadline, per-address and total limits on
 * waiting connections, strict parsing), the first steps of every request
 * and the replies. */
#ifndef SLUICE_HTTPD_H
#define SLUICE_HTTPD_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include <linux/types.h>

/* "[V6]:PORT" formatted, and a NUL. */
#define HTTPD_ADDR_STR_MAX	(INET6_ADDRSTRLEN + 16)

/* One open HTTP connection, on the list of struct httpd_conns (oldest first). */
struct httpd_conn {
	struct httpd_conn *prev, *next;
	int fd;
	struct in6_addr peer;		/* the client's address, IPv4 as v4-mapped */
	__u64 since_ns;			/* accepted, or its last request completed */
	bool busy;			/* a request is being answered */
	bool closing;			/* shut down by us; libmicrohttpd closes it */
};

/* Every connection, for the deadline and the waiting limits. Connection
 * callbacks run on the server's threads, the reaper on its own. */
struct httpd_conns {
	pthread_mutex_t lock;
	pthread_cond_t wake;		/* on CLOCK_MONOTONIC */
	struct httpd_conn *head, *tail;
	bool stop;
	pthread_t reaper;
};

/* One server. name prefixes libmicrohttpd's messages; log_requests is
 * switched off once serving, atomically. */
struct httpd {
	const char *name;
	int log_requests;
	struct httpd_conns conns;
	struct MHD_Daemon *d;
};

/* "A.B.C.D:PORT" or "[V6]:PORT"; false on anything else. Port 0 asks the
 * kernel for a free one. */
bool httpd_parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len);

/* A bound, listening socket, or -1 after saying why; bound gets the
 * address it got (HTTPD_ADDR_STR_MAX). example is a --listen to suggest. */
int httpd_listen(const char *spec, const struct sockaddr_storage *ss, socklen_t len,
		 const char *example, char *bound, size_t bound_len);

/* SIGINT and SIGTERM blocked in every thread started from now on (the
 * server's), so only sigwait()/sigtimedwait() on *stop sees them; SIGPIPE
 * ignored. */
void httpd_block_signals(sigset_t *stop);

/* Sets h up (name prefixes libmicrohttpd's messages) and starts its
 * reaper thread: 0, or an errno. */
int httpd_init(struct httpd *h, const char *name);
/* libmicrohttpd with the hardening, every request going to handler with
 * cls: on listening socket fd with a pool of threads, or with fd -1
 * neither (the caller adds connections and runs MHD_run()). NULL when it
 * cannot start (libmicrohttpd said why). */
struct MHD_Daemon *httpd_daemon(struct httpd *h, int fd, unsigned int threads,
				MHD_AccessHandlerCallback handler, void *cls);
/* httpd_init and httpd_daemon on fd; 0, or prints why and returns
 * EXIT_RUNTIME (fd closed). */
int httpd_start(struct httpd *h, const char *name, int fd, unsigned int threads,
		const char *bound, MHD_AccessHandlerCallback handler, void *cls);

/* From now on libmicrohttpd's complaints about requests are not logged
 * (anyone who can connect could fill the journal), unless SLUICE_DEBUG. */
void httpd_serving(struct httpd *h);

/* Stops the server, every connection and the reaper. */
void httpd_stop(struct httpd *h);

/* The first steps of every request: the deadline stops counting, a method
 * that is not a token gets 400, one but GET and HEAD gets 405 (with
 * not_allowed as its body), and the request is read whole, any body
 * dropped. true when the caller answers now; false when it returns *ret. */
bool httpd_request_ready(struct httpd *h, struct MHD_Connection *conn, const char *method,
			 size_t *upload_data_size, void **req_cls, const char *not_allowed,
			 enum MHD_Result *ret);

/* Whether s is an HTTP token (RFC 9110 5.6.2): a method, a header name. */
bool httpd_is_token(const char *s);

/* The peer's address, IPv4 as v4-mapped (all zero if unknown). */
void httpd_peer(struct MHD_Connection *mc, struct in6_addr *out);

/* A reply with Cache-Control: no-store; body freed with MHD_RESPMEM_MUST_FREE
 * whatever happens. extra is NULL or "Name", "value" pairs ended by NULL. */
enum MHD_Result httpd_reply(struct MHD_Connection *conn, unsigned int status, const char *type,
			    const char *body, size_t len, enum MHD_ResponseMemoryMode mem,
			    const char *const *extra);
/* A constant text/plain body. */
enum MHD_Result httpd_reply_text(struct MHD_Connection *conn, unsigned int status,
				 const char *text, const char *const *extra);

#endif /* SLUICE_HTTPD_H */
