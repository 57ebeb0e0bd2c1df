/*
 * keys.h — lock key <-> ZooKeeper node name encoding.
 *
 * Pure functions: no PostgreSQL or ZooKeeper calls, so they can be unit-tested
 * on their own (test/unit).
 */
#ifndef ZK_LOCK_KEYS_H
#define ZK_LOCK_KEYS_H

#include <stddef.h>
#include <stdint.h>

/* Key spaces, as core keeps pg_advisory_lock(bigint) apart from (int, int). */
#define ZKL_KEY_TEXT	't'
#define ZKL_KEY_BIGINT	'b'
#define ZKL_KEY_PAIR	'p'			/* (key1 int, key2 int) */
/* A semaphore's key: this letter before a text or bigint key's encoding. */
#define ZKL_KEY_SEMAPHORE	'm'
/* A zk_once job's claim: this letter before its name's text encoding (once.h). */
#define ZKL_KEY_ONCE	'o'

/* Longest text key, in bytes of its UTF-8 form. */
#define ZKL_MAX_KEY_BYTES	256

/* Room for an encoded key: semaphore and kind letters, every byte escaped as %XX, NUL. */
#define ZKL_KEY_BUFLEN	(2 + 3 * ZKL_MAX_KEY_BYTES + 1)

/*
 * Encode a text key (raw bytes, UTF-8) into a single ZooKeeper node name.
 * Returns the encoded length, or -1 when the key is empty or too long.
 */
extern int	zc_keys_encode_text_key(const char *raw, size_t len, char *out, size_t outlen);

/* Encode a bigint key; never fails for outlen >= 22. */
extern int	zc_keys_encode_bigint_key(int64_t key, char *out, size_t outlen);

/* Encode an (int, int) key as "p<key1>.<key2>"; never fails for outlen >= 24. */
extern int	zc_keys_encode_pair_key(int32_t key1, int32_t key2, char *out, size_t outlen);

/*
 * The semaphore key for an encoded text or bigint key (in place: out holds
 * ZKL_KEY_BUFLEN bytes).  Returns the new length.
 */
extern int	zc_keys_semaphore_key(char *encoded);

/* Whether an encoded key is a semaphore's. */
extern int	zc_keys_is_semaphore_key(const char *encoded);

/* The claim key of a zk_once job named by an encoded text key (in place, as above). */
extern int	zc_keys_once_key(char *encoded);

/* Whether an encoded key is a zk_once claim's. */
extern int	zc_keys_is_once_key(const char *encoded);

/*
 * Decode a node name made by the encoders above (a lock's; a semaphore's
 * key is ZKL_KEY_SEMAPHORE and then one of these, a zk_once claim's
 * ZKL_KEY_ONCE and then a text key's).  A pair decodes to
 * "<key1>,<key2>".  Sets *kind, writes the raw
 * text key (or the number's decimal form) NUL-terminated into out and returns
 * its length; -1 when name is not one of ours or out is too small.
 */
extern int	zc_keys_decode_key(const char *name, char *kind, char *out, size_t outlen);

#endif
