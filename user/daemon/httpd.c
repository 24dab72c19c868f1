// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* httpd: the HTTP serving that the exporter and the check server share
 * (httpd.h): listening, libmicrohttpd's thread pool, the connection
 * deadline and waiting limits, the first steps of a request, replies. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include "core.h"
#include "httpd.h"

#define LISTEN_BACKLOG		256	/* a burst of connects waits for no SYN retry */
/* Slow or stalled clients (slowloris) must not lock out a request. Every
 * connection has HTTP_DEADLINE_S for its whole request, counted from the
 * accept or from the end of its previous request, however it trickles.
 * Connections that wait for a request (not being answered) are limited to
 * HTTP_WAITING_PER_ADDR per client address and HTTP_WAITING_LIMIT in all:
 * past either, the oldest stalled one is closed, never the newcomer, so a
 * scrape or a check gets in even from an address the stalled clients
 * share. Stalled means the client is late, not the server: waiting for
 * HTTP_STALL_NS since its accept (or its last answer) with everything it
 * sent already read. A burst of requests the server has not read yet
 * (its threads busy answering others) is not stalled, and is never closed
 * to make room for itself; the connection limits below still bound it.
 * Nor does the deadline close a request waiting unread: the time it waits
 * is the server's. An answer has HTTP_DEADLINE_S from its request's
 * headers. */
#define HTTP_DEADLINE_S		5
#define HTTP_WAITING_PER_ADDR	8
#define HTTP_WAITING_LIMIT	128
#define HTTP_STALL_NS		(SLUICE_NS_PER_SEC / 2)
#define HTTP_RECHECK_NS		(SLUICE_NS_PER_SEC / 10)
#define HTTP_CONN_LIMIT		256	/* libmicrohttpd's hard limits, */
#define HTTP_CONN_PER_ADDR	64	/* only reached by a connect flood */

/* --- connections: the whole-request deadline and the waiting limits --- */

static void conn_unlink(struct httpd_conns *cs, struct httpd_conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		cs->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	else
		cs->tail = c->prev;
	c->prev = c->next = NULL;
}

static void conn_append(struct httpd_conns *cs, struct httpd_conn *c)
{
	c->prev = cs->tail;
	c->next = NULL;
	if (cs->tail)
		cs->tail->next = c;
	else
		cs->head = c;
	cs->tail = c;
}

/* libmicrohttpd closes the connection at its next event; the fd stays
 * valid until then because it calls on_connection(CLOSED), which takes
 * the lock we hold, before closing it. */
static void conn_shut(struct httpd_conn *c)
{
	c->closing = true;
	shutdown(c->fd, SHUT_RDWR);
}

static bool conn_waiting(const struct httpd_conn *c)
{
	return !c->busy && !c->closing;
}

static bool same_peer(const struct httpd_conn *a, const struct httpd_conn *b)
{
	return !memcmp(&a->peer, &b->peer, sizeof(a->peer));
}

/* Bytes the client sent that the server has not read yet: a request
 * queued behind busy threads, the server's delay and not the client's. */
static bool conn_unread(const struct httpd_conn *c)
{
	int unread = 0;

	return !ioctl(c->fd, FIONREAD, &unread) && unread > 0;
}

/* Waiting long enough, with nothing unread in its socket: the client is
 * the one that is late. */
static bool conn_stalled(const struct httpd_conn *c, __u64 now)
{
	return conn_waiting(c) && now - c->since_ns >= HTTP_STALL_NS && !conn_unread(c);
}

/* Whether c is past its address's limit: that many waiting connections
 * from its address are newer (the list is oldest first). */
static bool conn_over_peer_limit(const struct httpd_conn *c)
{
	unsigned int newer = 0;

	if (c->gateway)
		return false;
	for (const struct httpd_conn *o = c->next; o; o = o->next)
		if (conn_waiting(o) && same_peer(o, c) && ++newer >= HTTP_WAITING_PER_ADDR)
			return true;
	return false;
}

/* After a connection joined, and at each wake of the reaper: the oldest
 * stalled connections past their address's limit are closed, then the
 * oldest stalled ones while more than HTTP_WAITING_LIMIT wait in all (not
 * counting those past their address's limit: they go by that one once
 * stalled). Connections that are not stalled are counted but kept. */
static void enforce_waiting_limits(struct httpd_conns *cs, __u64 now)
{
	unsigned int all = 0;

	for (struct httpd_conn *c = cs->head; c; c = c->next)
		if (conn_stalled(c, now) && conn_over_peer_limit(c))
			conn_shut(c);
	for (struct httpd_conn *c = cs->head; c; c = c->next)
		all += conn_waiting(c) && !conn_over_peer_limit(c);
	for (struct httpd_conn *c = cs->head; c && all > HTTP_WAITING_LIMIT; c = c->next)
		if (conn_stalled(c, now) && !conn_over_peer_limit(c)) {
			conn_shut(c);
			all--;
		}
}

void httpd_peer(struct MHD_Connection *mc, struct in6_addr *out)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ci ? ci->client_addr : NULL;

	memset(out, 0, sizeof(*out));
	if (sa && sa->sa_family == AF_INET6) {
		*out = ((const struct sockaddr_in6 *)sa)->sin6_addr;
	} else if (sa && sa->sa_family == AF_INET) {
		out->s6_addr[10] = out->s6_addr[11] = 0xff;
		memcpy(&out->s6_addr[12], &((const struct sockaddr_in *)sa)->sin_addr, 4);
	}
}

static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
			  enum MHD_ConnectionNotificationCode what)
{
	struct httpd *h = cls;
	struct httpd_conns *cs = &h->conns;
	struct httpd_conn *c = *socket_context;
	const union MHD_ConnectionInfo *ci;

	if (what == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!c)
			return;
		pthread_mutex_lock(&cs->lock);
		conn_unlink(cs, c);
		pthread_mutex_unlock(&cs->lock);
		free(c);
		*socket_context = NULL;
		return;
	}
	ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return;
	c = calloc(1, sizeof(*c));
	if (!c) {	/* untracked means no deadline: refuse it */
		shutdown(ci->connect_fd, SHUT_RDWR);
		return;
	}
	c->fd = ci->connect_fd;
	httpd_peer(mc, &c->peer);
	/* On a Unix socket every peer is a gateway: its permissions decide who connects. */
	c->gateway = h->local || (h->gateway && h->gateway(h->cls, &c->peer));
	pthread_mutex_lock(&cs->lock);
	c->since_ns = mono_now_ns();	/* under the lock: the list stays in order */
	conn_append(cs, c);
	enforce_waiting_limits(cs, c->since_ns);
	pthread_cond_signal(&cs->wake);
	pthread_mutex_unlock(&cs->lock);
	*socket_context = c;
}

/* busy: a request's headers are in, and the deadline starts again for its
 * answer; not busy: it was answered, and the deadline starts again for the
 * next request on this connection. */
static void conn_set_busy(struct httpd *h, struct MHD_Connection *mc, bool busy)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct httpd_conns *cs = &h->conns;
	struct httpd_conn *c = ci ? ci->socket_context : NULL;

	if (!c)
		return;
	pthread_mutex_lock(&cs->lock);
	if (c->busy != busy) {
		c->since_ns = mono_now_ns();
		conn_unlink(cs, c);
		conn_append(cs, c);
	}
	c->busy = busy;
	pthread_mutex_unlock(&cs->lock);
}

static void on_completed(void *cls, struct MHD_Connection *mc, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	(void)req_cls;
	(void)toe;
	conn_set_busy(cls, mc, false);
}

/* Shuts down every connection past its deadline (but one whose request
 * waits unread: the server is late, not the client; it is looked at again
 * in HTTP_RECHECK_NS) and applies the waiting limits, then sleeps until the
 * next deadline, the next waiting connection old enough to count as
 * stalled (the list is oldest first), or a new connection. */
static void *reaper(void *arg)
{
	struct httpd_conns *cs = arg;
	const __u64 deadline = (__u64)HTTP_DEADLINE_S * SLUICE_NS_PER_SEC;

	pthread_mutex_lock(&cs->lock);
	while (!cs->stop) {
		__u64 now = mono_now_ns(), next = 0;
		struct timespec ts;

		for (struct httpd_conn *c = cs->head; c; c = c->next) {
			if (c->closing)
				continue;
			if (now - c->since_ns < deadline) {
				if (!next || c->since_ns + deadline < next)
					next = c->since_ns + deadline;
				break;
			}
			if (conn_unread(c))
				next = now + HTTP_RECHECK_NS;
			else
				conn_shut(c);
		}
		enforce_waiting_limits(cs, now);
		for (struct httpd_conn *c = cs->head; c; c = c->next)
			if (conn_waiting(c) && now - c->since_ns < HTTP_STALL_NS) {
				if (!next || c->since_ns + HTTP_STALL_NS < next)
					next = c->since_ns + HTTP_STALL_NS;
				break;
			}
		if (!next) {
			pthread_cond_wait(&cs->wake, &cs->lock);
			continue;
		}
		ts.tv_sec = (time_t)(next / SLUICE_NS_PER_SEC);
		ts.tv_nsec = (long)(next % SLUICE_NS_PER_SEC);
		pthread_cond_timedwait(&cs->wake, &cs->lock, &ts);
	}
	pthread_mutex_unlock(&cs->lock);
	return NULL;
}

static int conns_start(struct httpd_conns *cs)
{
	pthread_condattr_t ca;
	int err;

	memset(cs, 0, sizeof(*cs));
	pthread_mutex_init(&cs->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&cs->wake, &ca);
	pthread_condattr_destroy(&ca);
	err = pthread_create(&cs->reaper, NULL, reaper, cs);
	if (err) {
		pthread_cond_destroy(&cs->wake);
		pthread_mutex_destroy(&cs->lock);
	}
	return err;
}

/* After the server stopped: every connection is gone. */
static void conns_stop(struct httpd_conns *cs)
{
	pthread_mutex_lock(&cs->lock);
	cs->stop = true;
	pthread_cond_signal(&cs->wake);
	pthread_mutex_unlock(&cs->lock);
	pthread_join(cs->reaper, NULL);
	pthread_cond_destroy(&cs->wake);
	pthread_mutex_destroy(&cs->lock);
}

enum MHD_Result httpd_reply(struct MHD_Connection *conn, unsigned int status, const char *type,
			    const char *body, size_t len, enum MHD_ResponseMemoryMode mem,
			    const char *const *extra)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, mem);
	enum MHD_Result ret;

	if (!r) {
		if (mem == MHD_RESPMEM_MUST_FREE)
			free((void *)body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	for (; extra && extra[0]; extra += 2)
		MHD_add_response_header(r, extra[0], extra[1]);
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result httpd_reply_page(struct MHD_Connection *conn, const char *type, char *body,
				 size_t len)
{
	if (!body)
		return httpd_reply_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
					"500 out of memory\n", NULL);
	return httpd_reply(conn, MHD_HTTP_OK, type, body, len, MHD_RESPMEM_MUST_FREE, NULL);
}

enum MHD_Result httpd_reply_text(struct MHD_Connection *conn, unsigned int status,
				 const char *text, const char *const *extra)
{
	return httpd_reply(conn, status, "text/plain; charset=utf-8", text, strlen(text),
			   MHD_RESPMEM_PERSISTENT, extra);
}

/* An HTTP method must be a token (RFC 9110 5.6.2); libmicrohttpd passes
 * on anything up to the first space. */
bool httpd_is_token(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s <= ' ' || *s >= 127 || strchr("\"(),/:;<=>?@[\\]{}", *s))
			return false;
	return true;
}

/* Startup errors always; once serving, a malformed request is answered,
 * not logged (anyone who can connect could fill the journal), unless -vv
 * (or SLUICE_DEBUG): then as a debug line. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct httpd *h = cls;
	char msg[256];
	size_t n;

	if (!__atomic_load_n(&h->log_requests, __ATOMIC_RELAXED))
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	log_event(__atomic_load_n(&h->serving, __ATOMIC_RELAXED) ? LOG_DEBUG : LOG_ERR, "%s: %s",
		  h->name, msg);
}

/* "A.B.C.D:PORT" or "[V6]:PORT"; false on anything else. Port 0 asks the
 * kernel for a free one. */
bool httpd_parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *port;
	__u64 p;

	memset(ss, 0, sizeof(*ss));
	if (s[0] == '[') {
		colon = strchr(s, ']');
		if (!colon || colon[1] != ':' || (size_t)(colon - s - 1) >= sizeof(host))
			return false;
		memcpy(host, s + 1, (size_t)(colon - s - 1));
		host[colon - s - 1] = '\0';
		port = colon + 2;
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1)
			return false;
		s6->sin6_family = AF_INET6;
		*len = sizeof(*s6);
	} else {
		colon = strrchr(s, ':');
		if (!colon || (size_t)(colon - s) >= sizeof(host))
			return false;
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = '\0';
		port = colon + 1;
		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1)
			return false;
		s4->sin_family = AF_INET;
		*len = sizeof(*s4);
	}
	if (!parse_u64(port, 0, 65535, &p))
		return false;
	if (ss->ss_family == AF_INET6)
		s6->sin6_port = htons((__u16)p);
	else
		s4->sin_port = htons((__u16)p);
	return true;
}

static void format_sockaddr(const struct sockaddr_storage *ss, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, ntohs(s6->sin6_port));
	} else {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(s4->sin_port));
	}
}

/* A bound, listening socket, or -1 after saying why. */
int httpd_listen(const char *spec, const struct sockaddr_storage *ss, socklen_t len,
		 const char *example, char *bound, size_t bound_len)
{
	struct sockaddr_storage got;
	socklen_t got_len = sizeof(got);
	int one = 1, fd, err;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err_msg("cannot create a socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)ss, len) || listen(fd, LISTEN_BACKLOG)) {
		err = errno;
		close(fd);
		if (err == EADDRINUSE)
			err_msg("cannot listen on %s: address in use: stop the other server "
				"or pick another --listen", spec);
		else if (err == EADDRNOTAVAIL)
			err_msg("cannot listen on %s: no local interface has that address: "
				"try %s", spec, example);
		else if (err == EACCES)
			err_msg("cannot listen on %s: ports below 1024 need root or "
				"CAP_NET_BIND_SERVICE", spec);
		else
			err_msg("cannot listen on %s: %s", spec, strerror(err));
		return -1;
	}
	if (getsockname(fd, (struct sockaddr *)&got, &got_len))
		got = *ss;
	format_sockaddr(&got, bound, bound_len);
	return fd;
}

/* --- a Unix socket --- */

static socklen_t unix_addr(const char *path, struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	snprintf(sun->sun_path, sizeof(sun->sun_path), "%s", path);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(sun->sun_path) + 1);
}

/* Makes path's directory (0755) when it is missing; its parent must exist. */
static int make_socket_dir(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (!slash || slash == path)
		return 0;	/* in / */
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (!stat(dir, &st)) {
		if (S_ISDIR(st.st_mode))
			return 0;
		err_msg("cannot listen on %s: %s is not a directory: pick another --socket", path,
			dir);
		return -1;
	}
	/* chmod: whatever the umask took away from 0755 */
	if (errno != ENOENT || mkdir(dir, 0755) || chmod(dir, 0755)) {
		err_msg("cannot create the directory %s for %s: %s", dir, path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Whether a server accepts on the socket at path; a socket file nothing
 * accepts on (ECONNREFUSED) was left by a dead one. */
static bool socket_live(const struct sockaddr_un *sun, socklen_t len)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return true;	/* cannot tell: keep it */
	live = connect(fd, (const struct sockaddr *)sun, len) == 0 || errno != ECONNREFUSED;
	close(fd);
	return live;
}

int httpd_listen_unix(const char *path, gid_t gid, mode_t mode, char *bound, size_t bound_len)
{
	struct sockaddr_un sun;
	socklen_t len = unix_addr(path, &sun);
	struct stat st;
	mode_t old;
	int fd, err;

	if (make_socket_dir(path))
		return -1;
	if (!lstat(path, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			err_msg("cannot listen on %s: it exists and is not a socket: remove it or "
				"pick another --socket", path);
			return -1;
		}
		if (socket_live(&sun, len)) {
			err_msg("cannot listen on %s: another server is listening there: stop it "
				"or pick another --socket", path);
			return -1;
		}
		if (unlink(path) && errno != ENOENT) {
			err_msg("cannot remove the stale socket %s: %s", path, strerror(errno));
			return -1;
		}
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err_msg("cannot create a socket: %s", strerror(errno));
		return -1;
	}
	/* Created owner-only, then given to the group: never looser. */
	old = umask(0177);
	err = bind(fd, (const struct sockaddr *)&sun, len) ? errno : 0;
	umask(old);
	if (err) {
		close(fd);
		err_msg("cannot listen on %s: %s", path, strerror(err));
		return -1;
	}
	if (chown(path, (uid_t)-1, gid) || chmod(path, mode) || listen(fd, LISTEN_BACKLOG)) {
		err = errno;
		close(fd);
		unlink(path);
		err_msg("cannot listen on %s: %s", path, strerror(err));
		return -1;
	}
	snprintf(bound, bound_len, "unix:%s", path);
	return fd;
}

/* The unlinker's child: drops every capability (the directory's owner
 * needs none to remove an entry), then waits for the pipe to close. The
 * socket goes only if it is still the one the server made. */
static void unlinker_run(int rfd, const char *path, const struct stat *made)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct none[2] = {};
	struct stat st;
	char c;

	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	if (rfd > 3)
		syscall(SYS_close_range, 3U, (unsigned int)rfd - 1, 0U);
	syscall(SYS_close_range, (unsigned int)rfd + 1, ~0U, 0U);
	syscall(SYS_capset, &hdr, none);
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	while (read(rfd, &c, 1) < 0 && errno == EINTR)
		;
	if (!lstat(path, &st) && S_ISSOCK(st.st_mode) && st.st_dev == made->st_dev &&
	    st.st_ino == made->st_ino)
		unlink(path);
	_exit(0);
}

void httpd_unlinker_start(struct httpd_unlinker *u, const char *path)
{
	struct stat made;
	int p[2];

	u->pid = -1;
	u->fd = -1;
	if (lstat(path, &made) || pipe(p))
		return;		/* then the next start replaces the stale socket */
	/* The write end must not outlive the server in a program it runs. */
	fcntl(p[1], F_SETFD, FD_CLOEXEC);
	fflush(NULL);
	u->pid = fork();
	if (u->pid == 0) {
		close(p[1]);
		unlinker_run(p[0], path, &made);
	}
	close(p[0]);
	if (u->pid < 0)
		close(p[1]);
	else
		u->fd = p[1];
}

void httpd_unlinker_done(struct httpd_unlinker *u)
{
	if (u->fd < 0)
		return;
	close(u->fd);
	u->fd = -1;
	while (waitpid(u->pid, NULL, 0) < 0 && errno == EINTR)
		;
}

void httpd_block_signals(sigset_t *stop)
{
	sigemptyset(stop);
	sigaddset(stop, SIGINT);
	sigaddset(stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, stop, NULL);
	signal(SIGPIPE, SIG_IGN);
}

int httpd_init(struct httpd *h)
{
	h->log_requests = 1;
	h->serving = 0;
	h->d = NULL;
	return conns_start(&h->conns);
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
				 const char *method, const char *version, const char *upload_data,
				 size_t *upload_data_size, void **req_cls);

struct MHD_Daemon *httpd_daemon(struct httpd *h, int fd, unsigned int threads)
{
	struct MHD_OptionItem o[] = {
		{ MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)on_mhd_log, h },
		{ MHD_OPTION_CONNECTION_LIMIT, HTTP_CONN_LIMIT, NULL },
		{ MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		  h->gateway || h->local ? HTTP_CONN_LIMIT : HTTP_CONN_PER_ADDR, NULL },
		{ MHD_OPTION_CONNECTION_TIMEOUT, HTTP_DEADLINE_S, NULL },
		{ MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, h },
		{ MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, h },
		{ MHD_OPTION_STRICT_FOR_CLIENT, 1, NULL },
		{ MHD_OPTION_LISTEN_SOCKET, fd, NULL },
		{ MHD_OPTION_THREAD_POOL_SIZE, threads, NULL },
		{ MHD_OPTION_END, 0, NULL },
	};
	unsigned int flags = MHD_USE_ERROR_LOG;

	/* ITC: a connection handed over (httpd_self_check) is served at once. */
	if (fd >= 0)
		flags |= MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC;
	else	/* no socket, no threads: the caller runs MHD_run() */
		o[7].option = MHD_OPTION_END;
	return MHD_start_daemon(flags, 0, NULL, NULL, on_access, h, MHD_OPTION_ARRAY, o,
				MHD_OPTION_END);
}

int httpd_start(struct httpd *h, int fd, unsigned int threads, const char *bound)
{
	int err = httpd_init(h);

	if (err) {
		close(fd);
		return runtime_err("cannot start a thread: %s", strerror(err));
	}
	h->d = httpd_daemon(h, fd, threads);
	if (!h->d) {
		close(fd);
		conns_stop(&h->conns);
		return runtime_err("cannot start the HTTP server on %s: see the messages above",
				   bound);
	}
	return 0;
}

void httpd_serving(struct httpd *h)
{
	__atomic_store_n(&h->serving, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&h->log_requests, log_enabled(LOG_DEBUG), __ATOMIC_RELAXED);
}

void httpd_stop(struct httpd *h)
{
	MHD_stop_daemon(h->d);	/* closes the socket and every connection too */
	h->d = NULL;
	conns_stop(&h->conns);
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
				 const char *method, const char *version, const char *upload_data,
				 size_t *upload_data_size, void **req_cls)
{
	static const char *const allow[] = { MHD_HTTP_HEADER_ALLOW, "GET, HEAD", NULL };
	struct httpd *h = cls;

	(void)version;
	(void)upload_data;
	conn_set_busy(h, conn, true);
	/* Refused at once, before any body is read (the connection closes).
	 * HEAD gets GET's headers; libmicrohttpd leaves the body out. */
	if (!httpd_is_token(method))
		return httpd_reply_text(conn, MHD_HTTP_BAD_REQUEST,
					"400 bad request: malformed method\n", NULL);
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return httpd_reply_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, h->not_allowed, allow);
	/* The first call brings the headers; answering on the next one, with
	 * the request complete, lets libmicrohttpd keep the connection alive. */
	if (!*req_cls) {
		*req_cls = conn;	/* any non-NULL mark */
		return MHD_YES;
	}
	if (*upload_data_size) {	/* a body we do not want */
		*upload_data_size = 0;
		return MHD_YES;
	}
	return h->handler(h->cls, conn, url);
}
