// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Unit tests of the error funnel and the JSON writer (user/lib/output.c)
 * under -j: an error reported while a command's JSON document is open
 * replaces the document, so stdout holds one {"error", "hint"} object and
 * nothing of the half-written array around it; a document without an error
 * comes out whole; a document for another stream is written as it goes.
 *
 * It can fail: with the writer printing values straight to stdout (as it
 * did), the error object lands inside the open array, "[{...}\n]".
 *
 * usage: test_output [CASE]    only the cases whose name contains CASE */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "opts.h"
#include "output.h"
#include "harness.h"

struct options opts;

static int saved_fd = -1;
static FILE *capture;

/* stdout into a temporary file until captured() */
static void capture_stdout(void)
{
	fflush(stdout);
	capture = tmpfile();
	saved_fd = dup(STDOUT_FILENO);
	dup2(fileno(capture), STDOUT_FILENO);
}

/* What stdout got since capture_stdout(), in buf. */
static void captured(char *buf, size_t len)
{
	size_t n;

	fflush(stdout);
	dup2(saved_fd, STDOUT_FILENO);
	close(saved_fd);
	rewind(capture);
	n = fread(buf, 1, len - 1, capture);
	buf[n] = '\0';
	fclose(capture);
}

/* A command under -j begins its document on stdout, captured. */
static void json_doc_begin(struct json *j)
{
	opts.json = true;
	capture_stdout();
	json_begin(j, stdout);
}

/* What the command printed, in buf; -j off again. */
static void json_doc_printed(char *buf, size_t len)
{
	captured(buf, len);
	opts.json = false;
}

static void case_error_replaces_open_array(void)
{
	char out[512];
	struct json j;

	json_doc_begin(&j);
	json_arr_open(&j, NULL);
	json_obj_open(&j, NULL);
	json_str(&j, "prefix", "198.18.0.0/24");
	json_obj_close(&j);
	runtime_err("cannot read the ban table: Permission denied");
	json_arr_close(&j);
	json_end(&j);
	json_doc_printed(out, sizeof(out));
	CHECK(!strcmp(out, "{\"error\":\"cannot read the ban table\",\"hint\":\"Permission denied\"}\n"),
	      "stdout: '%s'", out);
}

static void case_document_whole(void)
{
	char out[512];
	struct json j;

	json_doc_begin(&j);
	json_arr_open(&j, NULL);
	json_u64(&j, NULL, 1);
	json_u64(&j, NULL, 2);
	json_arr_close(&j);
	json_end(&j);
	json_doc_printed(out, sizeof(out));
	CHECK(!strcmp(out, "[1,2]\n"), "stdout: '%s'", out);
}

/* An error after the document was written leaves the document as it is. */
static void case_error_after_document(void)
{
	char out[512];
	struct json j;

	json_doc_begin(&j);
	json_obj_open(&j, NULL);
	json_bool(&j, "ok", true);
	json_obj_close(&j);
	json_end(&j);
	usage_err("bad word 'x': see 'sluice help'");
	json_doc_printed(out, sizeof(out));
	CHECK(!strcmp(out, "{\"ok\":true}\n{\"error\":\"bad word 'x'\",\"hint\":\"see 'sluice help'\"}\n"),
	      "stdout: '%s'", out);
}

static void case_other_stream_unbuffered(void)
{
	char out[64] = "";
	struct json j;
	FILE *f = tmpfile();

	json_begin(&j, f);
	json_obj_open(&j, NULL);
	json_u64(&j, "n", 7);
	fflush(f);
	rewind(f);
	CHECK(fgets(out, sizeof(out), f) && !strcmp(out, "{\"n\":7"), "written so far: '%s'", out);
	json_obj_close(&j);
	json_end(&j);
	fclose(f);
}

static const struct test_case cases[] = {
	{ "error_replaces_open_array", case_error_replaces_open_array },
	{ "document_whole", case_document_whole },
	{ "error_after_document", case_error_after_document },
	{ "other_stream_unbuffered", case_other_stream_unbuffered },
};

int main(int argc, char **argv)
{
	return run_cases("test_output", cases, ARRAY_LEN(cases), argc, argv);
}
