// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer target: the exporter's request handling (user/daemon/exporter.c,
 * set up by exporter_http_init). libmicrohttpd runs in this thread with
 * the servers' own callbacks and limits (user/daemon/httpd.c); each input
 * is the raw bytes a client sends on one connection, handed over a
 * socketpair with MHD_add_connection. The client then shuts its side:
 * the server must answer sanely (an HTTP status line with a status the
 * exporter gives), close the connection, and print nothing. No interface
 * is attached (the pin root does not exist), so /metrics is the scrape of
 * zero interfaces. */
#include "fuzz.h"
#include "fuzz_http.h"
#include "exporter.h"

static struct exporter fz_ex;
static struct MHD_Daemon *fz_d;
static char *resp;

/* Sends data as one client from 127.0.0.1. The answer's length. */
static size_t exchange(const uint8_t *data, size_t size)
{
	struct sockaddr_in peer = { .sin_family = AF_INET, .sin_port = htons(40000) };

	peer.sin_addr.s_addr = htonl(0x7f000001);
	return fuzz_http_exchange(fz_d, (struct sockaddr *)&peer, sizeof(peer), data, size, resp);
}

/* Each answer: "HTTP/1.x NNN" with a status the exporter (or
 * libmicrohttpd for a malformed request) gives, headers, and as many bytes
 * of body as Content-Length says (none after a HEAD); then the next
 * answer of pipelined requests, if any. */
static void check_answers(const char *r, size_t len)
{
	static const int ok[] = { 200, 400, 404, 405, 413, 414, 431, 501, 505 };
	size_t at = 0;
	int n = 0;

	/* Closed without a word: nothing to read as a request. */
	while (at < len) {
		const char *p = r + at, *end = strstr(p, "\r\n\r\n"), *cl;
		unsigned long body = 0;
		bool known = false;
		int status;

		FUZZ_CHECK(!strncmp(p, "HTTP/1.1 ", 9) || !strncmp(p, "HTTP/1.0 ", 9),
			   "answer %d does not start with a status line: '%.60s'", n, p);
		FUZZ_CHECK(sscanf(p + 9, "%3d", &status) == 1, "answer %d: no status", n);
		for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
			known |= status == ok[i];
		FUZZ_CHECK(known, "answer %d: status %d", n, status);
		FUZZ_CHECK(end, "answer %d: headers without their end", n);
		cl = strcasestr(p, "\r\nContent-Length: ");
		if (cl && cl < end)
			body = strtoul(cl + 18, NULL, 10);
		at = (size_t)(end + 4 - r);
		/* A HEAD's answer has no body: the end, or the next answer. */
		if (at < len && strncmp(r + at, "HTTP/1.", 7) != 0)
			at += body;
		FUZZ_CHECK(at <= len, "answer %d: %lu bytes of body promised, %zu sent", n, body,
			   len - (size_t)(end + 4 - r));
		n++;
	}
}

/* What the harness must see before it can fuzz anything: a scrape, a
 * 404 and a 405 from the exporter's own code. */
static void self_test(void)
{
	static const struct {
		const char *req, *want;
	} cases[] = {
		{ "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "sluice_scrape_skipped_interfaces 0\n" },
		{ "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", "HTTP/1.1 404" },
		{ "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", "HTTP/1.1 405" },
		{ "GET / HTTP/1.0\r\n\r\n", "HTTP/1.1 200 OK" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = exchange((const uint8_t *)cases[i].req, strlen(cases[i].req));

		FUZZ_CHECK(strstr(resp, cases[i].want), "self-test: '%s' got '%.200s'",
			   cases[i].req, resp);
		check_answers(resp, len);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	signal(SIGPIPE, SIG_IGN);
	/* No pins: a bpffs that does not exist (never the host's real one). */
	opts.bpffs = "/nonexistent/sluice-fuzz-exporter";
	resp = malloc(FUZZ_RESPONSE_MAX + 1);
	exporter_http_init(&fz_ex);
	if (!resp || httpd_init(&fz_ex.http))
		abort();
	fz_ex.http.log_requests = getenv("SLUICE_DEBUG") != NULL;
	/* The exporter's server without a listening socket or a thread pool:
	 * MHD_run() in this thread serves it. */
	fz_d = httpd_daemon(&fz_ex.http, -1, 0);
	if (!fz_d)
		abort();
	self_test();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_capture cap;
	size_t len;

	capture_begin(&cap);
	len = exchange(data, size);
	capture_end(&cap);
	FUZZ_CHECK(cap.out_len == 0 && (cap.err_len == 0 || fz_ex.http.log_requests),
		   "the exporter printed '%s%s'", cap.out_buf, cap.err_buf);
	capture_free(&cap);
	check_answers(resp, len);
	return 0;
}
