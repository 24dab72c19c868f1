/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The exporter's HTTP side: its shared state and the setup that points a
 * server at its pages (/, /metrics, a 404 for the rest), for
 * `sluice exporter` and for a server driven without a socket. */
#ifndef SLUICE_EXPORTER_H
#define SLUICE_EXPORTER_H

#include "httpd.h"

/* Shared by every server thread; log_requests is switched off once,
 * atomically. */
struct exporter {
	struct httpd http;
};

/* ex->http answers with the exporter's pages, read from the pins at each
 * request (name, handler, cls and the 405's body set). */
void exporter_http_init(struct exporter *ex);

#endif /* SLUICE_EXPORTER_H */
