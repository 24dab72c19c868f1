// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* auth: what the agent proves to Redis, read once before it starts: the
 * password (from a file only root or the agent's user can read, or from
 * the environment, never from the command line, which ps shows) and the
 * TLS terms of rediss:// (the CA that signs the server, a client cert). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include "core.h"
#include "redis.h"
#include "rcluster.h"

/* The password file's first line into r->password: 0, or a usage error. */
static int read_password_file(struct redis *r, const char *path)
{
	char buf[REDIS_PASSWORD_MAX + 2];
	struct stat st;
	ssize_t n;
	size_t len;
	int fd;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return usage_err("cannot open --redis-password-file %s: %s", path, strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return usage_err("--redis-password-file %s is not a regular file", path);
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		close(fd);
		return usage_err("--redis-password-file %s is owned by uid %u, neither root nor the "
				 "agent's user: chown it", path, (unsigned int)st.st_uid);
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		close(fd);
		return usage_err("--redis-password-file %s has mode %04o: others may read it; "
				 "chmod 0600 it", path, (unsigned int)(st.st_mode & 07777));
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return usage_err("cannot read --redis-password-file %s: %s", path, strerror(errno));
	buf[n] = '\0';
	len = strcspn(buf, "\r\n");
	if (len > REDIS_PASSWORD_MAX - 1 || (len == (size_t)n && n == (ssize_t)sizeof(buf) - 1)) {
		explicit_bzero(buf, sizeof(buf));
		return usage_err("--redis-password-file %s: the password is longer than %u bytes",
				 path, REDIS_PASSWORD_MAX - 1);
	}
	memcpy(r->password, buf, len);
	r->password[len] = '\0';
	explicit_bzero(buf, sizeof(buf));
	if (!len)
		return usage_err("--redis-password-file %s: its first line is empty", path);
	return 0;
}

static int read_password(struct redis *r, const char *file)
{
	const char *env = getenv(REDIS_PASSWORD_ENV);

	if (file && env)
		return usage_err("both --redis-password-file and $%s are set: give one",
				 REDIS_PASSWORD_ENV);
	if (file)
		return read_password_file(r, file);
	if (env) {
		if (!*env || strlen(env) >= sizeof(r->password))
			return usage_err("$%s must hold 1 to %u bytes", REDIS_PASSWORD_ENV,
					 REDIS_PASSWORD_MAX - 1);
		snprintf(r->password, sizeof(r->password), "%s", env);
	}
	if (r->url.user[0] && !r->password[0])
		return usage_err("the URL names the user %s but no password is given: put it in "
				 "--redis-password-file FILE or $%s", r->url.user,
				 REDIS_PASSWORD_ENV);
	return 0;
}

/* A usage error about FILE of OPTION, with OpenSSL's first queued error. */
static int tls_file_err(const char *option, const char *file)
{
	char why[160] = "unknown error";
	unsigned long e = ERR_get_error();

	if (e)
		ERR_error_string_n(e, why, sizeof(why));
	ERR_clear_error();
	return usage_err("cannot load %s %s: %s", option, file, why);
}

static int tls_setup(struct redis *r, const struct redis_auth_files *f)
{
	bool tls = r->url.kind == REDIS_TLS;

	if (!tls && (f->ca || f->cert || f->key))
		return usage_err("--redis-ca, --redis-cert and --redis-key are for a rediss:// URL "
				 "(TLS), not %s", r->url.text);
	if (!!f->cert != !!f->key)
		return usage_err("--redis-cert and --redis-key go together: the client's "
				 "certificate and its key");
	if (!tls)
		return 0;
	r->tls = SSL_CTX_new(TLS_client_method());
	if (!r->tls)
		return runtime_err("cannot set up TLS: out of memory");
	SSL_CTX_set_min_proto_version(r->tls, TLS1_2_VERSION);
	SSL_CTX_set_verify(r->tls, SSL_VERIFY_PEER, NULL);
	/* Without --redis-ca, the system's CAs: a self-signed server is refused. */
	if (f->ca ? SSL_CTX_load_verify_locations(r->tls, f->ca, NULL) != 1 :
		    SSL_CTX_set_default_verify_paths(r->tls) != 1)
		return tls_file_err("--redis-ca", f->ca ? f->ca : "(the system's CAs)");
	if (f->cert && SSL_CTX_use_certificate_chain_file(r->tls, f->cert) != 1)
		return tls_file_err("--redis-cert", f->cert);
	if (f->key && SSL_CTX_use_PrivateKey_file(r->tls, f->key, SSL_FILETYPE_PEM) != 1)
		return tls_file_err("--redis-key", f->key);
	if (f->key && SSL_CTX_check_private_key(r->tls) != 1)
		return usage_err("--redis-key %s is not the key of --redis-cert %s", f->key, f->cert);
	return 0;
}

int redis_setup(struct redis *r, const struct redis_auth_files *f)
{
	int err = read_password(r, f->password_file);

	if (!err)
		err = tls_setup(r, f);
	if (err)
		redis_teardown(r);
	return err;
}

void redis_teardown(struct redis *r)
{
	explicit_bzero(r->password, sizeof(r->password));
	rcluster_free(r);
	if (r->tls)
		SSL_CTX_free(r->tls);
	r->tls = NULL;
}
