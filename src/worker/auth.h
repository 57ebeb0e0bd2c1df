/*
 * auth.h — zk_lock.auth: the identity, its digest, the ACL (auth.c).
 */
#ifndef ZK_LOCK_AUTH_H
#define ZK_LOCK_AUTH_H

#include "postgres.h"

typedef enum ZklAuthResult
{
	ZKL_AUTH_NONE,
	ZKL_AUTH_OK,
	ZKL_AUTH_UNUSABLE
} ZklAuthResult;

extern void zw_auth_init(void);
extern ZklAuthResult zw_load_credential(char *cred, size_t credlen, char *user, size_t userlen,
										 const char **why);
extern bool zw_digest_id(const char *cred, char *out, size_t outlen);

#endif
