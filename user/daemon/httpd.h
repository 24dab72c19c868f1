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
#include <sys/types.h>
#include <microhttpd.h>
#include <linux/types.h>
#include "cli.h"
#include "privdrop.h"

/* "[V6]:PORT" or "unix:PATH" formatted, and a NUL. */
#define HTTPD_ADDR_STR_MAX	(sizeof("unix:") + 108)

/* One open HTTP connection, on the list of struct httpd_conns (oldest first). */
struct httpd_conn {
	struct httpd_conn *prev, *next;
	int fd;
	struct in6_addr peer;		/* the client's address, IPv4 as v4-mapped */
	__u64 since_ns;			/* accepted, or its last request completed */
	bool busy;			/* a request is being answered */
	bool closing;			/* shut down by us; libmicrohttpd closes it */
	bool gateway;			/* its peer is not held to the per-address limit */
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

/* What a server answers: a complete GET or HEAD request for url (any
 * body dropped; the query string is in the connection's GET arguments). */
typedef enum MHD_Result (*httpd_handler)(void *cls, struct MHD_Connection *conn, const char *url);

/* One server. The caller sets name (it prefixes libmicrohttpd's
 * messages), not_allowed (the body of a 405), handler and cls;
 * log_requests is switched off once serving, atomically. */
struct httpd {
	const char *name;
	const char *not_allowed;
	httpd_handler handler;
	void *cls;
	/* Set for a server whose clients are a few gateways, each with many
	 * connections (the check server behind nginx): a peer it says yes to
	 * is not held to the per-address waiting limit, or its own idle
	 * keep-alive connections would be cut; and libmicrohttpd's
	 * per-address connection limit, which cannot tell peers apart, is
	 * the total one. The total limits hold for everyone. */
	bool (*gateway)(void *cls, const struct in6_addr *peer);
	/* Listening on a Unix socket: a peer has no address (httpd_peer gives
	 * all zero), and the socket's permissions decided who could connect,
	 * so every connection is a gateway's; the total limits still hold. */
	bool local;
	int log_requests;
	int serving;			/* past httpd_serving: its messages are debug lines */
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

/* A bound, listening Unix socket at path (absolute, shorter than
 * sun_path), or -1 after saying why. Its directory is
 * made 0755 if missing; a socket left there by a dead server (nothing
 * accepts on it) is replaced, anything else refused. The socket is owned
 * by this process's user and group gid, mode mode (it is never reachable
 * with looser permissions); bound gets "unix:PATH". */
int httpd_listen_unix(const char *path, gid_t gid, mode_t mode, char *bound, size_t bound_len);

/* Removes a Unix socket when its server exits. Started before the server
 * drops privileges, it keeps the user that may remove the socket in a
 * child that holds nothing else (no descriptor but a pipe, no capability,
 * SIGINT and SIGTERM ignored) and only waits for the pipe to close: on a
 * clean exit (httpd_unlinker_done), and on a crash too. */
struct httpd_unlinker {
	pid_t pid;
	int fd;			/* the pipe's write end; -1 when none runs */
};
void httpd_unlinker_start(struct httpd_unlinker *u, const char *path);
/* Closes the pipe and waits until the socket is gone. */
void httpd_unlinker_done(struct httpd_unlinker *u);

/* SIGINT and SIGTERM blocked in every thread started from now on (the
 * server's), so only sigwait()/sigtimedwait() on *stop sees them; SIGPIPE
 * ignored. */
void httpd_block_signals(sigset_t *stop);

/* Starts h's reaper thread: 0, or an errno. */
int httpd_init(struct httpd *h);
/* libmicrohttpd with the hardening, serving h: on listening socket fd
 * with a pool of threads, or with fd -1 neither (the caller adds
 * connections and runs MHD_run()). NULL when it cannot start
 * (libmicrohttpd said why). Every request is refused or read whole first:
 * a method that is not a token gets 400, one but GET and HEAD 405; then
 * h->handler answers it. */
struct MHD_Daemon *httpd_daemon(struct httpd *h, int fd, unsigned int threads);
/* httpd_init and httpd_daemon on fd; 0, or prints why and returns
 * EXIT_RUNTIME (fd closed). */
int httpd_start(struct httpd *h, int fd, unsigned int threads, const char *bound);

/* From now on libmicrohttpd's complaints about requests are not logged
 * (anyone who can connect could fill the journal), unless -vv (or
 * SLUICE_DEBUG), as debug lines. */
void httpd_serving(struct httpd *h);

/* One request of its own, GET path, handed to the running server's
 * threads over a socketpair: 0 when an HTTP status line comes back within
 * timeout_ms, else -1. It proves the server answers (the watchdog's
 * WATCHDOG=1 waits for it); any status counts. */
int httpd_self_check(struct httpd *h, const char *path, unsigned int timeout_ms);

/* Stops the server, every connection and the reaper. */
void httpd_stop(struct httpd *h);

/* Whether s is an HTTP token (RFC 9110 5.6.2): a method, a header name. */
bool httpd_is_token(const char *s);

/* The peer's address, IPv4 as v4-mapped (all zero if unknown). */
void httpd_peer(struct MHD_Connection *mc, struct in6_addr *out);

/* A reply with Cache-Control: no-store; body freed with MHD_RESPMEM_MUST_FREE
 * whatever happens. extra is NULL or "Name", "value" pairs ended by NULL. */
enum MHD_Result httpd_reply(struct MHD_Connection *conn, unsigned int status, const char *type,
			    const char *body, size_t len, enum MHD_ResponseMemoryMode mem,
			    const char *const *extra);
/* A page made for this request (malloc()ed, freed here): 200, or 500 when
 * body is NULL (out of memory). */
enum MHD_Result httpd_reply_page(struct MHD_Connection *conn, const char *type, char *body,
				 size_t len);
/* A constant text/plain body. */
enum MHD_Result httpd_reply_text(struct MHD_Connection *conn, unsigned int status,
				 const char *text, const char *const *extra);

#endif /* SLUICE_HTTPD_H */
