/*
 * auth.c — zk_lock.auth: the ZooKeeper identity the worker authenticates
 * as, and keeping its secret out of every place PostgreSQL would show it.
 *
 * The setting holds either "user:password" (ZooKeeper's digest scheme) or
 * the absolute path of a file holding that line, which must belong to the
 * server's OS user and be unreadable by anyone else.  With an identity set,
 * every node zk_lock creates can be changed only by that identity.
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/cryptohash.h"
#include "common/sha1.h"
#include "storage/fd.h"
#include "utils/resowner.h"
#include "utils/elog.h"

#include "auth.h"
#include "settings.h"
#include "zk_client.h"

#define AUTH_GUC_QUOTED	"\"zk_lock.auth\""

static emit_log_hook_type prev_emit_log_hook = NULL;

/*
 * PostgreSQL logs a reloaded parameter's new value, and a rejected value in
 * its error; for zk_lock.auth, keep the message up to the parameter's name.
 */
static void
hide_auth_in_log(ErrorData *edata)
{
	const char *p;

	if (edata->message != NULL && (p = strstr(edata->message, AUTH_GUC_QUOTED)) != NULL)
		edata->message = psprintf("%.*s (value hidden)",
								  (int) (p - edata->message + strlen(AUTH_GUC_QUOTED)),
								  edata->message);
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

void
zw_auth_init(void)
{
	prev_emit_log_hook = emit_log_hook;
	emit_log_hook = hide_auth_in_log;
}

/*
 * Read the credential file; false with *why set when it is unusable.  The
 * checks are made on the open file (fstat), and a link is refused, so the
 * file checked is the file read.  A line too long for the buffer is an
 * error, never silently cut.
 */
static bool
read_credential_file(const char *path, char *out, size_t outlen, const char **why)
{
	struct stat st;
	int			fd;
	ssize_t		n;
	size_t		len;

	fd = OpenTransientFile(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
	{
		*why = psprintf(errno == ELOOP ? "file \"%s\" is a symbolic link" :
						"cannot read file \"%s\": %m", path);
		return false;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
		(st.st_mode & (S_IRWXG | S_IRWXO)) != 0)
	{
		CloseTransientFile(fd);
		*why = psprintf("file \"%s\" must be a regular file owned by the server's user, without access for group or others (chmod 600)",
						path);
		return false;
	}
	n = read(fd, out, outlen);
	CloseTransientFile(fd);
	if (n < 0)
	{
		*why = psprintf("cannot read file \"%s\": %m", path);
		return false;
	}
	/* one line; a trailing newline is not part of it */
	len = 0;
	while (len < (size_t) n && out[len] != '\n' && out[len] != '\r')
		len++;
	if (len >= outlen)
	{
		explicit_bzero(out, outlen);
		*why = psprintf("the line in file \"%s\" is too long (at most %zu bytes)",
						path, outlen - 1);
		return false;
	}
	out[len] = '\0';
	return true;
}

/*
 * The credential zk_lock.auth names, into cred ("user:password"), with its
 * user into user.  Returns ZKL_AUTH_NONE when unset, ZKL_AUTH_OK, or
 * ZKL_AUTH_UNUSABLE with *why saying why (never quoting the secret).
 */
ZklAuthResult
zw_load_credential(char *cred, size_t credlen, char *user, size_t userlen, const char **why)
{
	const char *colon;

	*why = NULL;
	if (zkl_auth == NULL || zkl_auth[0] == '\0')
		return ZKL_AUTH_NONE;
	if (zkl_auth[0] == '/')
	{
		if (!read_credential_file(zkl_auth, cred, credlen, why))
			return ZKL_AUTH_UNUSABLE;
	}
	else if (strlcpy(cred, zkl_auth, credlen) >= credlen)
	{
		*why = "the credential is too long";
		return ZKL_AUTH_UNUSABLE;
	}
	colon = strchr(cred, ':');
	if (colon == NULL || colon == cred || colon[1] == '\0')
	{
		*why = zkl_auth[0] == '/' ?
			psprintf("file \"%s\" must hold one line user:password", zkl_auth) :
			"it must be user:password, or the absolute path of a file holding that";
		return ZKL_AUTH_UNUSABLE;
	}
	strlcpy(user, cred, Min(userlen, (size_t) (colon - cred) + 1));
	return ZKL_AUTH_OK;
}

/* Read access for anyone is not granted: our own clusters share the identity. */
struct ACL_vector *
zw_node_acl(bool authenticated)
{
	return authenticated ? &ZOO_CREATOR_ALL_ACL : &ZOO_OPEN_ACL_UNSAFE;
}

/*
 * The id ZooKeeper's digest scheme derives from "user:password", as it
 * appears in a node's ACL: "user:" and base64(SHA-1("user:password")).
 * False if it cannot be computed.
 */
static bool
sha1(const char *text, uint8 *digest)
{
	pg_cryptohash_ctx *ctx = pg_cryptohash_create(PG_SHA1);
	bool		ok;

	if (ctx == NULL)
		return false;
	ok = pg_cryptohash_init(ctx) == 0 &&
		pg_cryptohash_update(ctx, (const uint8 *) text, strlen(text)) == 0 &&
		pg_cryptohash_final(ctx, digest, SHA1_DIGEST_LENGTH) == 0;
	pg_cryptohash_free(ctx);
	return ok;
}

bool
zw_digest_id(const char *cred, char *out, size_t outlen)
{
	uint8		digest[SHA1_DIGEST_LENGTH];
	const char *colon = strchr(cred, ':');
	ResourceOwner saved = CurrentResourceOwner;
	bool		ok;
	int			n;

	if (colon == NULL)
		return false;
	/* the worker runs without a resource owner; the hash (OpenSSL's) needs one */
	if (saved == NULL)
		CurrentResourceOwner = ResourceOwnerCreate(NULL, "zk_lock digest");
	ok = sha1(cred, digest);
	if (saved == NULL)
	{
		ResourceOwner temp = CurrentResourceOwner;

		CurrentResourceOwner = NULL;
		ResourceOwnerRelease(temp, RESOURCE_RELEASE_BEFORE_LOCKS, true, false);
		ResourceOwnerDelete(temp);
	}
	if (!ok)
		return false;
	n = colon - cred + 1;
	if ((size_t) n + pg_b64_enc_len(sizeof(digest)) + 1 > outlen)
		return false;
	memcpy(out, cred, n);
	n += pg_b64_encode((const char *) digest, sizeof(digest), out + n, (int) outlen - n - 1);
	out[n] = '\0';
	explicit_bzero(digest, sizeof(digest));
	return true;
}
